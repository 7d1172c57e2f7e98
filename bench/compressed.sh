#!/usr/bin/env bash
# Compressed input: ROWS records of store_sales (CSV, 16 columns), compressed
# by each tool in TOOLS (default: bzip2; xz, gzip, zstd, lz4 also work: xz
# writes with -T0), loaded into the emptied table by sluice from the file, by
# BEFORE (another sluice binary, optional) from the file, and by the tool's
# -dc piped into psql \copy; interleaved rounds, each round's seconds and the
# medians' ratios to psql's. Checks that every path loaded the same rows.
# Not a test.
#
#   PGHOST=... PGPORT=... PGUSER=... [TOOLS="bzip2 xz"] bash bench/compressed.sh [ROWS] [ROUNDS] [SLUICE] [BEFORE]
set -euo pipefail
rows=${1:-1M}
rounds=${2:-5}
sluice=${3:-sluice}
before=${4:-}
tools=${TOOLS:-bzip2}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$sluice" gen store_sales --rows "$rows" -o "$dir/sales.csv"
sql() { psql -X -q -v ON_ERROR_STOP=1 -c "$1"; }
sql 'SET client_min_messages = warning; DROP TABLE IF EXISTS store_sales'
"$sluice" gen store_sales --ddl | psql -X -q -v ON_ERROR_STOP=1
source "$(dirname "$0")/rounds.sh"
load_by() {
  case $1 in
    sluice) "$sluice" load "$file" --table store_sales --quiet --restart ;;
    before) "$before" load "$file" --table store_sales --quiet --restart ;;
    psql) "$tool" -dc "$file" | psql -X -q -v ON_ERROR_STOP=1 -c '\copy store_sales FROM STDIN WITH (format csv)' ;;
  esac
}
for tool in $tools; do
  case $tool in
    xz) xz -T0 -c "$dir/sales.csv" >"$dir/sales.csv.xz" ;;
    *) "$tool" -c "$dir/sales.csv" >"$dir/sales.csv.$tool" ;;
  esac
  file=$(ls "$dir"/sales.csv.*)
  paths=(sluice psql)
  [ -z "$before" ] || paths=(sluice before psql)
  declare -A times=()
  run_rounds "$rounds" "$tool" "${paths[@]}"
  print_medians "$tool median" psql "psql's pipe" "${paths[@]}"
  rm -f "$file"
  unset times
done
sql 'DROP TABLE store_sales'
