#!/usr/bin/env bash
# Lines above the header: ROWS records of store_sales (CSV, 16 columns) under
# a header and two lines of title (one with an open quote), loaded into the
# emptied table by sluice --skip-lines 2 --header, by `tail -n +3 | psql
# \copy ... csv header` (COPY has no way to skip them), and, for what the
# skipping costs, by sluice --header on the same file without the title;
# interleaved rounds, each round's seconds and the medians' ratios to psql's.
# Checks that every path loaded the same rows. Not a test.
#
#   PGHOST=... PGPORT=... PGUSER=... bash bench/skip_lines.sh [ROWS] [ROUNDS] [SLUICE]
set -euo pipefail
rows=${1:-1M}
rounds=${2:-7}
sluice=${3:-sluice}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sql() { psql -X -q -v ON_ERROR_STOP=1 -c "$1"; }
sql 'SET client_min_messages = warning; DROP TABLE IF EXISTS store_sales'
"$sluice" gen store_sales --ddl | psql -X -q -v ON_ERROR_STOP=1
columns=$(psql -X -Atc "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute \
  WHERE attrelid = 'store_sales'::regclass AND attnum > 0 AND NOT attisdropped")
{ echo "$columns"; "$sluice" gen store_sales --rows "$rows"; } >"$dir/headed.csv"
{ printf 'Store sales export "Q4\nWritten by sluice gen\n'; cat "$dir/headed.csv"; } >"$dir/titled.csv"
source "$(dirname "$0")/rounds.sh"
load_by() {
  case $1 in
    skip_lines) "$sluice" load "$dir/titled.csv" --table store_sales --header --skip-lines 2 --quiet --restart ;;
    psql) tail -n +3 "$dir/titled.csv" | psql -X -q -v ON_ERROR_STOP=1 -c '\copy store_sales FROM STDIN WITH (format csv, header)' ;;
    no_title) "$sluice" load "$dir/headed.csv" --table store_sales --header --quiet --restart ;;
  esac
}
paths=(skip_lines psql no_title)
declare -A times=()
run_rounds "$rounds" titled "${paths[@]}"
print_medians "titled median" psql "psql's pipe" "${paths[@]}"
sql 'DROP TABLE store_sales'
