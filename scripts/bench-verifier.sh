#!/usr/bin/env bash
# One container-tier criterion graded by `ceval grade --workspace` (a fresh hardened verifier
# container over a copy of the workspace) beside `ctr run --rm --seccomp` of the same image
# and command, and beside the same check in the WASM sandbox; interleaved so all three see the
# same machine state. Prints the medians and the ratios. Target: verifier within 1.1x of ctr
# (issue 39; 1.3x before).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
N=${N:-15}
BIN=${BIN:-bin/ceval}
SOCK=${CEVAL_CONTAINERD_ADDRESS:?set CEVAL_CONTAINERD_ADDRESS}
NS=${CEVAL_NAMESPACE:-ceval}
IMG=ceval.local/default:latest
WS=bench/verifier/ws
CMD='grep -q 42 answer.txt'

now() { date +%s%N; }
"$BIN" images build-default >/dev/null
"$BIN" grade bench/verifier/container.yaml --workspace "$WS" >/dev/null   # warm: preflight cache, init
"$BIN" grade bench/verifier/wasm.yaml --workspace "$WS" >/dev/null        # warm: compilation cache
v_ms=(); c_ms=(); w_ms=()
for i in $(seq 1 "$N"); do
  t0=$(now); "$BIN" grade bench/verifier/container.yaml --workspace "$WS" >/dev/null; t1=$(now)
  ctr -a "$SOCK" -n "$NS" run --rm --seccomp --cwd /workspace --mount "type=bind,src=$PWD/$WS,dst=/workspace,options=rbind:ro" \
    "$IMG" "ceval-bench-verifier-$$-$i" /bin/sh -c "$CMD" >/dev/null; t2=$(now)
  "$BIN" grade bench/verifier/wasm.yaml --workspace "$WS" >/dev/null; t3=$(now)
  v_ms+=($(( (t1 - t0) / 1000000 ))); c_ms+=($(( (t2 - t1) / 1000000 ))); w_ms+=($(( (t3 - t2) / 1000000 )))
done
mv=$(median "${v_ms[@]}"); mc=$(median "${c_ms[@]}"); mw=$(median "${w_ms[@]}")
echo "ceval grade, one sandbox: container criterion: median ${mv} ms over $N runs"
echo "ctr run --rm --seccomp (same image and command): median ${mc} ms over $N runs"
echo "ceval grade, the same check in WASM:             median ${mw} ms over $N runs"
awk -v a="$mv" -v b="$mc" -v w="$mw" 'BEGIN { printf "ratio verifier/ctr: %.2fx (target <= 1.1x); verifier/wasm: %.2fx\n", a / b, a / w }'
bench_row "ceval grade, one sandbox: container criterion" "$mv" "ctr run --rm --seccomp, same command" "$mc" ms 1.1x
bench_row "ceval grade, the same check in WASM" "$mw" "ceval grade, container tier" "$mv" ms -
