#!/usr/bin/env bash
# End-to-end `ceval run` of a trivial task beside `ctr run --rm --seccomp` of the same image
# and command, interleaved so both see the same machine state; prints the medians and their
# ratio. Target: ceval within 1.5x of ctr (goal 1.2x).
set -euo pipefail
cd "$(dirname "$0")/.."
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
ceval_ms=(); ctr_ms=()
for i in $(seq 1 "$N"); do
  t0=$(now); "$BIN" run --runs-dir "$runs" bench/trivial.yaml >/dev/null 2>&1; t1=$(now)
  ctr -a "$SOCK" -n "$NS" run --rm --seccomp "$IMG" "ceval-bench-$$-$i" /bin/true >/dev/null; t2=$(now)
  ceval_ms+=($(( (t1 - t0) / 1000000 ))); ctr_ms+=($(( (t2 - t1) / 1000000 )))
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mc=$(median "${ceval_ms[@]}"); mr=$(median "${ctr_ms[@]}")
echo "ceval run (trivial task, end to end): median ${mc} ms over $N runs"
echo "ctr run --rm --seccomp (same image):  median ${mr} ms over $N runs"
awk -v a="$mc" -v b="$mr" 'BEGIN { printf "ratio ceval/ctr: %.2fx (target <= 1.5x, goal 1.2x)\n", a / b }'
