#!/usr/bin/env bash
# N (default 50) trivial runs as one `ceval run` experiment at -j 1 and -j 2, beside the same
# N containers started with `ctr run --rm --seccomp` (one at a time, then two at a time): wall
# time per run, ceval's peak RSS, and the ratios. Targets (issue 39): ceval's per-run time at
# most 0.9x bare ctr run at -j 1 and 0.6x at -j 2 (warm sandboxes: the next runs are prepared
# while one runs, and deleted after it, off its path; ctr creates, starts and deletes in turn).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
N=${N:-50}
BIN=${BIN:-bin/ceval}
SOCK=${CEVAL_CONTAINERD_ADDRESS:?set CEVAL_CONTAINERD_ADDRESS}
NS=${CEVAL_NAMESPACE:-ceval}
IMG=ceval.local/default:latest
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now() { date +%s%N; }

# peak_rss_kb CMD... runs CMD and sets $peak_kb to its peak RSS (KiB): /usr/bin/time when
# present, else VmHWM polled from /proc.
peak_kb=0
run_measured() {
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f '%M' -o "$work/rss" "$@" >"$work/out" 2>"$work/err" || { cat "$work/err" >&2; return 1; }
    peak_kb=$(tail -1 "$work/rss")
  else
    "$@" >"$work/out" 2>"$work/err" &
    local pid=$! hwm=0 v
    while kill -0 "$pid" 2>/dev/null; do
      v=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
      [ -n "$v" ] && hwm=$v
      sleep 0.05
    done
    wait "$pid" || { cat "$work/err" >&2; return 1; }
    peak_kb=$hwm
  fi
}

ctr_one() { ctr -a "$SOCK" -n "$NS" run --rm --seccomp "$IMG" "ceval-bench-exp-$$-$1" /bin/true >/dev/null; }
export -f ctr_one
export SOCK NS IMG

"$BIN" images build-default >/dev/null                                       # warm: the image exists
"$BIN" run --runs-dir "$work/runs" bench/trivial.yaml >/dev/null 2>&1 || true # warm the preflight cache and init
ctr_one warm

declare -A ceval_ms ctr_ms rss_kb
for j in 1 2; do
  t0=$(now)
  run_measured "$BIN" run --runs-dir "$work/runs" -j "$j" --repeats "$N" bench/experiment.yaml
  t1=$(now)
  grep -q '"complete": true' "$(ls -d "$work"/runs/*/ | tail -1)summary.json" || { echo "experiment at -j $j incomplete" >&2; exit 1; }
  seq 1 "$N" | xargs -P "$j" -I{} bash -c 'ctr_one "j'"$j"'-{}"'
  t2=$(now)
  ceval_ms[$j]=$(( (t1 - t0) / 1000000 )); ctr_ms[$j]=$(( (t2 - t1) / 1000000 )); rss_kb[$j]=$peak_kb
  rm -rf "$work/runs"
done

for j in 1 2; do
  target=$([ "$j" = 1 ] && echo 0.9 || echo 0.6)
  awk -v j="$j" -v n="$N" -v a="${ceval_ms[$j]}" -v b="${ctr_ms[$j]}" -v rss="${rss_kb[$j]}" -v t="$target" 'BEGIN {
    printf "-j %d: ceval experiment %d runs in %.1f s = %.0f ms/run (peak RSS %.1f MiB); ctr run --rm --seccomp: %.1f s = %.0f ms/run; ratio %.2fx (target <= %sx)\n",
      j, n, a / 1000, a / n, rss / 1024, b / 1000, b / n, a / b, t }'
  bench_row "ceval experiment, $N trivial runs at -j $j (per run)" "$(( ceval_ms[$j] / N ))" "ctr run --rm --seccomp, $j at a time" "$(( ctr_ms[$j] / N ))" ms "${target}x"
done
