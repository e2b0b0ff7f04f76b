#!/usr/bin/env bash
# End-to-end `ceval run` of a trivial task beside `ctr run --rm --seccomp` of the same image
# and command, interleaved so both see the same machine state; prints the medians and their
# ratio, and the median of the runs' timings.reap (the agent's exit to its task deleted).
# Targets: ceval within 1.2x of ctr; reap under 50 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
N=${N:-15}
BIN=${BIN:-bin/ceval}
SOCK=${CEVAL_CONTAINERD_ADDRESS:?set CEVAL_CONTAINERD_ADDRESS}
NS=${CEVAL_NAMESPACE:-ceval}
IMG=ceval.local/default:latest
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT

now() { date +%s%N; }
"$BIN" images build-default >/dev/null          # warm: the image exists, like any later run
"$BIN" run --runs-dir "$runs" bench/trivial.yaml >/dev/null 2>&1   # warm the preflight cache and init
ceval_ms=(); ctr_ms=(); reap_ms=()
for i in $(seq 1 "$N"); do
  t0=$(now); "$BIN" run --json --runs-dir "$runs" bench/trivial.yaml >"$runs/result.json" 2>/dev/null; t1=$(now)
  ctr -a "$SOCK" -n "$NS" run --rm --seccomp "$IMG" "ceval-bench-$$-$i" /bin/true >/dev/null; t2=$(now)
  ceval_ms+=($(( (t1 - t0) / 1000000 ))); ctr_ms+=($(( (t2 - t1) / 1000000 )))
  reap_ms+=($(awk -F'[:,]' '/"reap":/ { printf "%.1f", $2 * 1000; exit }' "$runs/result.json"))
done
mc=$(median "${ceval_ms[@]}"); mr=$(median "${ctr_ms[@]}"); mreap=$(median "${reap_ms[@]}")
echo "ceval run (trivial task, end to end): median ${mc} ms over $N runs"
echo "ctr run --rm --seccomp (same image):  median ${mr} ms over $N runs"
awk -v a="$mc" -v b="$mr" 'BEGIN { printf "ratio ceval/ctr: %.2fx (target <= 1.2x)\n", a / b }'
echo "timings.reap: median ${mreap} ms (target < 50 ms); each run: ${reap_ms[*]}"
bench_row "ceval run, trivial task (median)" "$mc" "ctr run --rm --seccomp" "$mr" ms 1.2x
bench_row "ceval run: timings.reap (median)" "$mreap" "-" "-" ms "<50"
