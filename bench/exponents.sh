#!/usr/bin/env bash
# Numbers with an exponent (4.39563e-5, as Python writes floats below 1e-4
# and from 1e16) into a numeric column: psql \copy and sluice load the same
# file, and sluice loads the same values written out plain (0.0000439563),
# in interleaved rounds; prints each round's seconds, sluice's CPU, and the
# medians' ratios. Checks that every path loaded the same sum. Not a test.
#
#   PGHOST=... PGPORT=... PGUSER=... bash bench/exponents.sh [ROWS] [ROUNDS] [SLUICE]
set -euo pipefail
rows=${1:-2000000}
rounds=${2:-7}
sluice=${3:-sluice}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$rows" "$dir" <<'PY'
import decimal, random, sys
rows, out = int(sys.argv[1]), sys.argv[2]
random.seed(7)
with open(f"{out}/exponents.tsv", "w") as exponents, open(f"{out}/plain.tsv", "w") as plain:
    for i in range(rows):
        digits, power = random.randrange(100000, 1000000), random.randrange(-9, 10)
        value = f"{digits // 100000}.{digits % 100000:05d}e{power}"
        exponents.write(f"{i}\t{value}\n")
        plain.write(f"{i}\t{format(decimal.Decimal(value), 'f')}\n")
PY
sql() { psql -X -q -v ON_ERROR_STOP=1 -c "$1"; }
fresh() { sql 'SET client_min_messages = warning; DROP TABLE IF EXISTS exponents; CREATE TABLE exponents (id int, price numeric)'; }
# Seconds of a command, wall and CPU (user + system), as "wall cpu".
timed() { /usr/bin/time -f '%e %U %S' "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%s %.2f", $1, $2 + $3}'; }
sums=()
for round in $(seq "$rounds"); do
  line="round $round:"
  for path in psql sluice sluice-plain; do
    fresh
    case $path in
      psql) t=$(timed psql -X -q -c "\\copy exponents FROM '$dir/exponents.tsv'") ;;
      sluice) t=$(timed "$sluice" load "$dir/exponents.tsv" --table exponents --restart -q --rejects /dev/null) ;;
      sluice-plain) t=$(timed "$sluice" load "$dir/plain.tsv" --table exponents --restart -q --rejects /dev/null) ;;
    esac
    sums+=("$(psql -X -At -c 'SELECT count(*), sum(price) FROM exponents')")
    line+=" $path ${t% *} s (cpu ${t#* })"
    echo "$path ${t% *} ${t#* }" >> "$dir/times"
  done
  echo "$line"
done
[ "$(printf '%s\n' "${sums[@]}" | sort -u | wc -l)" = 1 ] || { echo "the paths loaded different sums" >&2; exit 1; }
median() { grep "^$1 " "$dir/times" | awk -v c="$2" '{print $c}' | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
psql_s=$(median psql 2)
for path in sluice sluice-plain; do
  s=$(median "$path" 2)
  echo "$path: median $s s, CPU $(median "$path" 3) s, psql \\copy / $path = $(echo "scale=2; $psql_s / $s" | bc)x"
done
