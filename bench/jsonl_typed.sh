#!/usr/bin/env bash
# JSON lines into typed columns: the hand workflow (psql \copy into an
# UNLOGGED jsonb staging table, then INSERT ... SELECT with ->> casts) against
# one `sluice load`, in interleaved rounds; prints each round's seconds and
# the median ratio. Not a test.
#
#   sluice gen cname --rows 5000000 -o cname.jsonl
#   PGHOST=... PGPORT=... PGUSER=... bash bench/jsonl_typed.sh cname.jsonl [ROUNDS] [SLUICE]
set -euo pipefail
data=$1
rounds=${2:-3}
sluice=${3:-sluice}
sql() { psql -X -q -v ON_ERROR_STOP=1 -c "$1"; }
sql 'SET client_min_messages = warning; DROP TABLE IF EXISTS jsonl_stage, jsonl_typed'
sql 'CREATE UNLOGGED TABLE jsonl_stage (doc jsonb)'
sql 'CREATE TABLE jsonl_typed ("timestamp" bigint, name text, type text, value text)'
now() { date +%s.%N; }
hand=() ours=()
for round in $(seq "$rounds"); do
  sql 'TRUNCATE jsonl_stage, jsonl_typed'; sql 'CHECKPOINT'
  start=$(now)
  sql "\\copy jsonl_stage FROM '$data' WITH (format csv, quote e'\\x01', delimiter e'\\x02')"
  sql "INSERT INTO jsonl_typed SELECT (doc->>'timestamp')::bigint, doc->>'name', doc->>'type', doc->>'value' FROM jsonl_stage"
  hand+=("$(echo "$(now) - $start" | bc)")
  rows_hand=$(psql -X -Atc 'SELECT count(*) FROM jsonl_typed')
  sql 'TRUNCATE jsonl_stage, jsonl_typed'; sql 'CHECKPOINT'
  start=$(now)
  "$sluice" load "$data" --table jsonl_typed --quiet --restart
  ours+=("$(echo "$(now) - $start" | bc)")
  rows_ours=$(psql -X -Atc 'SELECT count(*) FROM jsonl_typed')
  [ "$rows_hand" = "$rows_ours" ] || { echo "row counts differ: $rows_hand against $rows_ours" >&2; exit 1; }
  echo "round $round: hand ${hand[-1]} s, sluice ${ours[-1]} s ($rows_ours rows)"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "medians: hand $(median "${hand[@]}") s, sluice $(median "${ours[@]}") s: $(echo "scale=2; $(median "${hand[@]}") / $(median "${ours[@]}")" | bc)x"
sql 'DROP TABLE jsonl_stage, jsonl_typed'
