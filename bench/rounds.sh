# Sourced by the shell benchmarks of store_sales: interleaved rounds of the
# caller's `load_by PATH` (each path's seconds kept in the global associative
# array `times`, space-separated), the check that every path of a round
# loaded the same rows, and the lines that report rounds and medians.
now() { date +%s.%N; }
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
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
