#!/usr/bin/env bash
# Dense CHECK violations: ROWS records into (id int PRIMARY KEY, n int
# CHECK (n > 0)), every BAD_EVERY-th with n = -1, loaded by sluice (the
# records that break the CHECK rejected, with their lines), against the hand
# workflow (psql \copy into an UNLOGGED staging table without the CHECK,
# INSERT ... SELECT of the rows that pass it, \copy of the others out to a
# file), and against the same file without the bad records loaded by psql
# \copy (which stops at the first bad record of the whole file) and by
# sluice; interleaved rounds into the emptied table, each round's seconds and
# the medians' ratios. Checks that every path loaded the same rows. Not a test.
#
#   PGHOST=... PGPORT=... PGUSER=... [BAD_EVERY=10] bash bench/dense_checks.sh [ROWS] [ROUNDS] [SLUICE]
set -euo pipefail
rows=${1:-2000000}
rounds=${2:-5}
sluice=${3:-sluice}
bad_every=${BAD_EVERY:-10}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$rows" "$dir" "$bad_every" <<'EOF'
import sys
rows, out, bad_every = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
with open(f"{out}/dirty.csv", "w") as dirty, open(f"{out}/clean.csv", "w") as clean:
    for i in range(1, rows + 1):
        if i % bad_every == 0:
            dirty.write(f"{i},-1\n")
        else:
            dirty.write(f"{i},{i % 1000 + 1}\n")
            clean.write(f"{i},{i % 1000 + 1}\n")
EOF
sql() { psql -X -q -v ON_ERROR_STOP=1 -c "$1"; }
sql 'SET client_min_messages = warning; DROP TABLE IF EXISTS checked, checked_stage'
sql 'CREATE TABLE checked (id int PRIMARY KEY, n int CHECK (n > 0))'
sql 'CREATE UNLOGGED TABLE checked_stage (id int, n int)'
now() { date +%s.%N; }
declare -A times
paths=(sluice_dirty hand_sql sluice_clean psql_clean)
run() {
  local path=$1 start
  sql 'TRUNCATE checked, checked_stage'; sql 'CHECKPOINT'
  rm -f "$dir/rejects"
  start=$(now)
  case $path in
    sluice_dirty) "$sluice" load "$dir/dirty.csv" --table checked --rejects "$dir/rejects" --quiet --restart \
                    || [ $? -eq 1 ] ;;
    hand_sql) sql "\\copy checked_stage FROM '$dir/dirty.csv' WITH (format csv)"
              sql 'INSERT INTO checked SELECT id, n FROM checked_stage WHERE (n > 0) IS NOT FALSE'
              sql "\\copy (SELECT id, n FROM checked_stage WHERE (n > 0) IS FALSE) TO '$dir/rejects' WITH (format csv)" ;;
    sluice_clean) "$sluice" load "$dir/clean.csv" --table checked --quiet --restart ;;
    psql_clean) sql "\\copy checked FROM '$dir/clean.csv' WITH (format csv)" ;;
  esac
  times[$path]+="$(echo "$(now) - $start" | bc) "
  loaded=$(psql -X -Atc "SELECT count(*) || ' ' || sum(id) || ' ' || sum(n) FROM checked")
}
for round in $(seq "$rounds"); do
  sums=()
  for path in "${paths[@]}"; do run "$path"; sums+=("$loaded"); done
  for sum in "${sums[@]}"; do
    [ "$sum" = "${sums[0]}" ] || { echo "the paths loaded different rows: ${sums[*]}" >&2; exit 1; }
  done
  echo "round $round: $(for p in "${paths[@]}"; do printf '%s %s s  ' "$p" "$(echo "${times[$p]}" | awk '{print $NF}')"; done)"
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
base=$(median "${times[sluice_dirty]}")
for path in "${paths[@]}"; do
  m=$(median "${times[$path]}")
  echo "median $path: $m s; sluice on the file with its bad records runs at $(echo "scale=2; $m / $base" | bc)x its speed"
done
sql 'DROP TABLE checked, checked_stage'
