#!/usr/bin/env bash
# A UTF-16 file (with its byte-order mark, as Windows PowerShell writes
# them) loaded by the usual hand workflow, `iconv -f utf-16 -t utf-8 | psql
# \copy ... FROM STDIN` (PostgreSQL takes no UTF-16), against sluice, which
# reads the mark and transcodes on its own; ROWS of a generated dataset into
# a fresh table, interleaved rounds, each round's seconds, the medians and
# their ratio. Checks each load's row count. Not a test.
#
#   PGHOST=... PGPORT=... PGUSER=... bash bench/utf16.sh [DATASET] [ROWS] [ROUNDS] [SLUICE]
set -euo pipefail
source "$(dirname "$0")/rounds.sh"  # fresh_table, timed_load, copy_options_for, interleaved
dataset=${1:-transactions}
rows=${2:-2M}
rounds=${3:-5}
sluice=${4:-sluice}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$sluice" gen "$dataset" --rows "$rows" -o "$dir/utf8"
{ printf '\xff\xfe'; iconv -f utf-8 -t utf-16le "$dir/utf8"; } > "$dir/data"
rm "$dir/utf8"
expected=$(iconv -f utf-16 -t utf-8 "$dir/data" | wc -l)
copy_options=$(copy_options_for "$dataset")

fresh() { fresh_table "$sluice" "$dataset" utf16_load; }
timed() { timed_load utf16_load "$expected" bash -c "$1"; }
load_with() {
  case $1 in
    iconv_psql) timed "iconv -f utf-16 -t utf-8 '$dir/data' | psql -X -q -v ON_ERROR_STOP=1 -c '\\copy utf16_load from stdin $copy_options'" ;;
    sluice) timed "'$sluice' load '$dir/data' --table utf16_load --quiet --restart --analyze no" ;;
  esac
}
interleaved "$rounds" iconv_psql sluice
psql -X -q -c "DROP TABLE utf16_load"
echo "iconv | psql / sluice: $(echo "scale=2; ${medians[iconv_psql]} / ${medians[sluice]}" | bc)x"
