#!/usr/bin/env bash
# What ANALYZE after a load costs: ROWS of a generated dataset loaded into a
# fresh table by psql \copy, by sluice (its default --analyze auto, which on a
# server with autovacuum off analyzes the table), by sluice --analyze no, and
# by psql \copy then ANALYZE; interleaved rounds, each round's seconds, the
# medians and their ratios. Checks each load's row count. Not a test.
#
#   PGHOST=... PGPORT=... PGUSER=... bash bench/analyze.sh [DATASET] [ROWS] [ROUNDS] [SLUICE]
set -euo pipefail
source "$(dirname "$0")/rounds.sh"  # median, fresh_table, timed_load
dataset=${1:-transactions}
rows=${2:-10M}
rounds=${3:-7}
sluice=${4:-sluice}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$sluice" gen "$dataset" --rows "$rows" -o "$dir/data"
expected=$(wc -l < "$dir/data")
case $dataset in
  transactions|flights) copy_options="" ;;
  *) copy_options="csv" ;;
esac
psql -X -qAtc "SHOW autovacuum" | sed 's/^/autovacuum: /'

fresh() { fresh_table "$sluice" "$dataset" analyzed_load; }
timed() { timed_load analyzed_load "$expected" "$@"; }
copy="\\copy analyzed_load from '$dir/data' $copy_options"
declare -A seconds
for round in $(seq "$rounds"); do
  line="round $round"
  for loader in psql sluice sluice_analyze_no psql_then_analyze; do
    fresh
    case $loader in
      psql) t=$(timed psql -X -q -v ON_ERROR_STOP=1 -c "$copy") ;;
      sluice) t=$(timed "$sluice" load "$dir/data" --table analyzed_load --quiet --restart) ;;
      sluice_analyze_no) t=$(timed "$sluice" load "$dir/data" --table analyzed_load --quiet --restart --analyze no) ;;
      psql_then_analyze) t=$(timed psql -X -q -v ON_ERROR_STOP=1 -c "$copy" -c "ANALYZE analyzed_load") ;;
    esac
    seconds[$loader]+="$t "
    line+=" $loader=$t"
  done
  echo "$line"
done
psql -X -q -c "DROP TABLE analyzed_load"
declare -A m
for loader in psql sluice sluice_analyze_no psql_then_analyze; do
  m[$loader]=$(median "${seconds[$loader]}")
  echo "median $loader ${m[$loader]} s"
done
echo "psql / sluice --analyze no: $(echo "scale=2; ${m[psql]} / ${m[sluice_analyze_no]}" | bc)x"
echo "psql / sluice: $(echo "scale=2; ${m[psql]} / ${m[sluice]}" | bc)x"
echo "psql then ANALYZE / sluice: $(echo "scale=2; ${m[psql_then_analyze]} / ${m[sluice]}" | bc)x"
