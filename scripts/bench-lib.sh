# Sourced by the bench-*.sh scripts. bench_row prints one row of `make bench`'s table
# (scripts/bench.sh collects the lines starting with BENCH):
#   bench_row WORKLOAD CEVAL ANCHOR-NAME ANCHOR UNIT TARGET
# CEVAL and ANCHOR are numbers in UNIT, measured in the same run (ANCHOR "-" if none).
# TARGET is Nx (CEVAL/ANCHOR at most N), +N (CEVAL-ANCHOR at most N UNIT), <N (CEVAL under
# N UNIT), or - (reported, no target). A new workload is one more bench_row call.
bench_row() {
  [ $# -eq 6 ] || { echo "bench_row: want 6 arguments, got $#: $*" >&2; return 1; }
  printf 'BENCH\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@"
}

# median N... prints the median of its arguments.
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
