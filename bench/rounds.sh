# Sourced by the shell benchmarks of store_sales: interleaved rounds of the
# caller's `load_by PATH` (each path's seconds kept in the global associative
# array `times`, space-separated), the check that every path of a round
# loaded the same rows, and the lines that report rounds and medians. The
# benchmarks of a generated dataset (analyze.sh, utf16.sh) take its median,
# the fresh table, timed load, COPY options and interleaved rounds below.
now() { date +%s.%N; }
# SLUICE DATASET TABLE: TABLE dropped and made again as `sluice gen DATASET
# --ddl` writes it, then a checkpoint, so that no load pays for another's.
fresh_table() {
  psql -X -q -c "DROP TABLE IF EXISTS $3" >/dev/null 2>&1
  "$1" gen "$2" --ddl --table "$3" | psql -X -q
  psql -X -q -c "CHECKPOINT"
}
# TABLE ROWS COMMAND...: COMMAND's seconds; exits unless TABLE then holds ROWS rows.
timed_load() {
  local table=$1 rows=$2 start end
  shift 2
  start=$(now)
  "$@" >/dev/null
  end=$(now)
  [ "$(psql -X -qAtc "SELECT count(*) FROM $table")" = "$rows" ] || { echo "wrong row count: $*" >&2; exit 1; }
  echo "$end - $start" | bc
}
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# DATASET: psql \copy's options for what `sluice gen DATASET` writes (the
# text format's tabs, or CSV).
copy_options_for() { case $1 in transactions|flights) echo "" ;; *) echo "csv" ;; esac; }
# ROUNDS LOADER...: interleaved rounds of the caller's `load_with LOADER`
# (its seconds), each after the caller's `fresh`: each round's line, then
# each loader's median, also kept in the global associative array `medians`.
declare -A medians
interleaved() {
  local rounds=$1 round loader t line
  shift
  declare -A seconds
  for round in $(seq "$rounds"); do
    line="round $round"
    for loader in "$@"; do
      fresh
      t=$(load_with "$loader")
      seconds[$loader]+="$t "
      line+=" $loader=$t"
    done
    echo "$line"
  done
  for loader in "$@"; do
    medians[$loader]=$(median "${seconds[$loader]}")
    echo "median $loader ${medians[$loader]} s"
  done
}
# Each path's table, as `count sum(hashtext(row))`: exits unless all are the same.
same_rows() {
  local sum
  for sum in "$@"; do
    [ "$sum" = "$1" ] || { echo "the paths loaded different rows: $*" >&2; exit 1; }
  done
}
# LABEL PATH...: each path's seconds in the last round.
print_round() {
  local label=$1 path
  shift
  echo "$label: $(for path in "$@"; do printf '%s %s s  ' "$path" "$(echo "${times[$path]}" | awk '{print $NF}')"; done)"
}
# LABEL BASE WHAT PATH...: each path's median, and how many times as long
# BASE's median is (WHAT names it: "psql's pipe").
print_medians() {
  local label=$1 base what=$3 m path
  base=$(median "${times[$2]}")
  shift 3
  for path in "$@"; do
    m=$(median "${times[$path]}")
    echo "$label $path: $m s; $what takes $(echo "scale=2; $base / $m" | bc)x as long"
  done
}
# ROUNDS LABEL PATH...: ROUNDS rounds, each loading store_sales by every
# path in turn (`load_by PATH`), emptied and checkpointed first, timed.
run_rounds() {
  local rounds=$1 label=$2 round path start sums
  shift 2
  for round in $(seq "$rounds"); do
    sums=()
    for path in "$@"; do
      psql -X -q -v ON_ERROR_STOP=1 -c 'TRUNCATE store_sales' -c 'CHECKPOINT'
      start=$(now)
      load_by "$path"
      times[$path]+="$(echo "$(now) - $start" | bc) "
      sums+=("$(psql -X -Atc "SELECT count(*) || ' ' || sum(hashtext(s::text)) FROM store_sales s")")
    done
    same_rows "${sums[@]}"
    print_round "$label round $round" "$@"
  done
}
