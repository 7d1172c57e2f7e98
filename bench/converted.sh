#!/usr/bin/env bash
# Decimal commas and Unix times (--decimal-comma, --unix-times ms) against
# the hand workflow (psql \copy into an UNLOGGED text staging table, then
# INSERT ... SELECT with replace() and epoch arithmetic), and against the
# same rows already written as the server reads them (ISO times, decimal
# points) loaded by psql \copy and by sluice, in interleaved rounds; prints
# each round's seconds and the medians' ratios. Checks that every path
# loaded the same sum. Not a test. NUMBERS=thousands writes the prices with
# commas between thousands and a decimal point (1,234,567.89) instead, for
# --thousands ',' (and replace(price, ',', '') by hand). NUMBERS=currency
# writes them as amounts in dollars ($1,234,567.89), one in ten negative in
# accounting's parentheses (($12.50)), for --currency '$' --thousands ','
# (and translate() with a CASE by hand). NUMBERS=percent writes them as
# percentages of a hundredth of the price (123456789% for 1234567.89), for
# --percent (and rtrim(price, '%')::numeric / 100 by hand). NUMBERS=sap
# writes them as SAP exports them (1.234.567,89), one in ten negative with
# its minus after the digits (12,50-), for --decimal-comma --trailing-minus
# (and rtrim() and replace() with a CASE by hand). NUMBERS=pandas writes the
# integer ids as pandas writes an integer column that has a missing value,
# as floats (1234.0), and the prices plainly, for --zero-fractions (and
# id::numeric::int by hand).
#
#   PGHOST=... PGPORT=... PGUSER=... [NUMBERS=thousands|currency|percent|sap|pandas] bash bench/converted.sh [ROWS] [ROUNDS] [SLUICE]
set -euo pipefail
rows=${1:-2000000}
rounds=${2:-5}
sluice=${3:-sluice}
numbers=${NUMBERS:-decimal-comma}
id_by_hand="id::int"
case $numbers in
  decimal-comma) number_flag=(--decimal-comma); by_hand="replace(replace(price, '.', ''), ',', '.')" ;;
  thousands) number_flag=(--thousands ,); by_hand="replace(price, ',', '')" ;;
  currency) number_flag=(--currency '$' --thousands ,)
            by_hand="(CASE WHEN price LIKE '(%' THEN -1 ELSE 1 END) * translate(price, '\$,()', '')" ;;
  percent) number_flag=(--percent); by_hand="rtrim(price, '%')::numeric / 100" ;;
  sap) number_flag=(--decimal-comma --trailing-minus)
       by_hand="(CASE WHEN price LIKE '%-' THEN -1 ELSE 1 END) * replace(replace(rtrim(price, '-'), '.', ''), ',', '.')::numeric" ;;
  pandas) number_flag=(--zero-fractions); by_hand="price"; id_by_hand="id::numeric::int" ;;
  *) echo "NUMBERS is decimal-comma, thousands, currency, percent, sap or pandas" >&2; exit 2 ;;
esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$rows" "$dir" "$numbers" <<'EOF'
import datetime, random, sys
rows, out, numbers = int(sys.argv[1]), sys.argv[2], sys.argv[3]
random.seed(7)
epoch = datetime.datetime(1970, 1, 1)
with open(f"{out}/converted.csv", "w") as converted, open(f"{out}/plain.csv", "w") as plain:
    for i in range(rows):
        whole, cents = random.randrange(1, 10**7), random.randrange(100)
        ms = random.randrange(1_500_000_000_000, 1_800_000_000_000)
        sign, id = "", i
        if numbers == "pandas":
            price, id = f"{whole}.{cents:02d}", f"{i}.0"
        elif numbers == "thousands":
            price = f"{whole:,}.{cents:02d}"
        elif numbers == "percent":
            price = f"{whole}{cents:02d}%"
        elif numbers == "currency":
            price = f"${whole:,}.{cents:02d}"
            if i % 10 == 3:
                price, sign = f"({price})", "-"
        else:
            price = f"{whole:,}".replace(",", ".") + f",{cents:02d}"
            if numbers == "sap" and i % 10 == 3:
                price, sign = f"{price}-", "-"
        converted.write(f"{id};{price};{ms};{ms}\n")
        iso = (epoch + datetime.timedelta(milliseconds=ms)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        plain.write(f"{i};{sign}{whole}.{cents:02d};{iso}+00;{iso}\n")
EOF
sql() { psql -X -q -v ON_ERROR_STOP=1 -c "$1"; }
sql 'SET client_min_messages = warning; DROP TABLE IF EXISTS converted, converted_stage'
sql 'CREATE TABLE converted (id int, price numeric(12,2), at timestamptz, ts timestamp)'
sql 'CREATE UNLOGGED TABLE converted_stage (id text, price text, at text, ts text)'
now() { date +%s.%N; }
declare -A times
paths=(sluice_converting hand_sql sluice_plain psql_plain)
run() {
  local path=$1 start
  sql 'TRUNCATE converted, converted_stage'; sql 'CHECKPOINT'
  start=$(now)
  case $path in
    sluice_converting) "$sluice" load "$dir/converted.csv" --table converted --delimiter ';' "${number_flag[@]}" \
                         --unix-times ms --quiet --restart ;;
    hand_sql) sql "\\copy converted_stage FROM '$dir/converted.csv' WITH (format csv, delimiter ';')"
              sql "INSERT INTO converted SELECT $id_by_hand, $by_hand::numeric,
                     'epoch'::timestamptz + at::int8 * interval '1 millisecond',
                     ('epoch'::timestamptz + ts::int8 * interval '1 millisecond') AT TIME ZONE 'UTC'
                   FROM converted_stage" ;;
    sluice_plain) "$sluice" load "$dir/plain.csv" --table converted --delimiter ';' --quiet --restart ;;
    psql_plain) sql "\\copy converted FROM '$dir/plain.csv' WITH (format csv, delimiter ';')" ;;
  esac
  times[$path]+="$(echo "$(now) - $start" | bc) "
  loaded=$(psql -X -Atc "SELECT count(*) || ' ' || sum(price) || ' ' || sum(extract(epoch FROM at)) || ' ' || sum(extract(epoch FROM ts)) FROM converted")
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
base=$(median "${times[sluice_converting]}")
for path in "${paths[@]}"; do
  m=$(median "${times[$path]}")
  echo "median $path: $m s; sluice ${number_flag[*]} --unix-times ms runs at $(echo "scale=2; $m / $base" | bc)x its speed"
done
sql 'DROP TABLE converted, converted_stage'
