#!/usr/bin/env bash
# One JSON array of documents into jsonb: `jq -c '.[]' | psql \copy` (the
# usual fix, which holds the whole array in memory), psql \copy of the same
# documents as JSON lines, sluice on the JSON lines and sluice on the array
# itself, in interleaved rounds; prints each round's seconds and peak RSS and
# the median ratios to sluice on the array. Not a test.
#
#   sluice gen cname --rows 5000000 -o cname.jsonl
#   (printf '['; sed '$!s/$/,/' cname.jsonl | tr -d '\n'; printf ']') > cname.json
#   PGHOST=... PGPORT=... PGUSER=... bash bench/json_array.sh cname.jsonl cname.json [ROUNDS] [SLUICE]
set -euo pipefail
lines=$1
array=$2
rounds=${3:-3}
sluice=${4:-sluice}
sql() { psql -X -q -v ON_ERROR_STOP=1 -c "$1"; }
sql 'SET client_min_messages = warning; DROP TABLE IF EXISTS json_array_docs'
sql 'CREATE TABLE json_array_docs (doc jsonb)'
copy="\\copy json_array_docs FROM STDIN WITH (format csv, quote e'\\x01', delimiter e'\\x02')"
declare -A runs=()
# Runs "$@" after emptying the table; appends "seconds rss_kb" to runs[$name].
timed() {
  local name=$1; shift
  sql 'TRUNCATE json_array_docs'; sql 'CHECKPOINT'
  /usr/bin/time -f '%e %M' -o "$tmp" "$@" >/dev/null
  local rows; rows=$(psql -X -Atc 'SELECT count(*) FROM json_array_docs')
  [ -z "${want:-}" ] && want=$rows
  [ "$rows" = "$want" ] || { echo "$name loaded $rows rows, not $want" >&2; exit 1; }
  runs[$name]+="$(cut -d' ' -f1 "$tmp") "
  echo "round $round: $name $(cat "$tmp") (s, KB)"
}
tmp=$(mktemp)
for round in $(seq "$rounds"); do
  timed sluice_array "$sluice" load "$array" --table json_array_docs --quiet --restart
  timed sluice_lines "$sluice" load "$lines" --table json_array_docs --quiet --restart
  timed psql_lines bash -c "psql -X -q -c \"$copy\" < '$lines'"
  timed jq_psql_array bash -c "jq -c '.[]' '$array' | psql -X -q -c \"$copy\""
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
base=$(median ${runs[sluice_array]})
for name in sluice_array sluice_lines psql_lines jq_psql_array; do
  m=$(median ${runs[$name]})
  echo "median $name: $m s, $(echo "scale=2; $m / $base" | bc)x sluice on the array"
done
rm -f "$tmp"
sql 'DROP TABLE json_array_docs'
