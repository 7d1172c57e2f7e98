# Sourced by the shell benchmarks: the time, medians, the check that every
# path of a round loaded the same rows, and the lines that report rounds and
# medians from the global associative array `times` (path -> seconds of each
# round, space-separated).
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
