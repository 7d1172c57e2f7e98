#!/usr/bin/env bash
# What ANALYZE after a load costs: ROWS of a generated dataset loaded into a
# fresh table by psql \copy, by sluice (its default --analyze auto, which on a
# server with autovacuum off analyzes the table), by sluice --analyze no, and
# by psql \copy then ANALYZE; interleaved rounds, each round's seconds, the
# medians and their ratios. Checks each load's row count. Not a test.
#
#   PGHOST=... PGPORT=... PGUSER=... bash bench/analyze.sh [DATASET] [ROWS] [ROUNDS] [SLUICE]
set -euo pipefail
source "$(dirname "$0")/rounds.sh"  # fresh_table, timed_load, copy_options_for, interleaved
dataset=${1:-transactions}
rows=${2:-10M}
rounds=${3:-7}
sluice=${4:-sluice}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$sluice" gen "$dataset" --rows "$rows" -o "$dir/data"
expected=$(wc -l < "$dir/data")
copy_options=$(copy_options_for "$dataset")
psql -X -qAtc "SHOW autovacuum" | sed 's/^/autovacuum: /'

fresh() { fresh_table "$sluice" "$dataset" analyzed_load; }
timed() { timed_load analyzed_load "$expected" "$@"; }
copy="\\copy analyzed_load from '$dir/data' $copy_options"
load_with() {
  case $1 in
    psql) timed psql -X -q -v ON_ERROR_STOP=1 -c "$copy" ;;
    sluice) timed "$sluice" load "$dir/data" --table analyzed_load --quiet --restart ;;
    sluice_analyze_no) timed "$sluice" load "$dir/data" --table analyzed_load --quiet --restart --analyze no ;;
    psql_then_analyze) timed psql -X -q -v ON_ERROR_STOP=1 -c "$copy" -c "ANALYZE analyzed_load" ;;
  esac
}
interleaved "$rounds" psql sluice sluice_analyze_no psql_then_analyze
psql -X -q -c "DROP TABLE analyzed_load"
echo "psql / sluice --analyze no: $(echo "scale=2; ${medians[psql]} / ${medians[sluice_analyze_no]}" | bc)x"
echo "psql / sluice: $(echo "scale=2; ${medians[psql]} / ${medians[sluice]}" | bc)x"
echo "psql then ANALYZE / sluice: $(echo "scale=2; ${medians[psql_then_analyze]} / ${medians[sluice]}" | bc)x"
