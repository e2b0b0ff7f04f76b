#!/usr/bin/env bash
# A task with one service (busybox httpd, ready on its port) beside the same task without
# it, and beside `ctr run` of the service (detached, until the agent is done) plus
# `ctr run --rm --seccomp` of the agent, and beside that `ctr run` of the agent alone,
# interleaved so all see the same machine state. Prints the medians, the service's cost in
# ms (with minus without, in ceval and in ctr) and the ratios. Target: the task with its
# service within 1.5x of the ctr pair; the other ratios are reported.
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
ctr_pair() {
  local svc="ceval-bench-svc-$$-$1"
  ctr -a "$SOCK" -n "$NS" run -d --seccomp "$IMG" "$svc" httpd -f -p 8080 >/dev/null
  # ready as ceval waits for it: until its port accepts, inside its network namespace
  until nsenter -t "$(ctr -a "$SOCK" -n "$NS" task ls | awk -v s="$svc" '$1 == s {print $2}')" -n \
    bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080' 2>/dev/null; do sleep 0.02; done
  ctr -a "$SOCK" -n "$NS" run --rm --seccomp "$IMG" "ceval-bench-agent-$$-$1" /bin/true >/dev/null
  ctr -a "$SOCK" -n "$NS" task kill -s KILL "$svc" >/dev/null
  while ctr -a "$SOCK" -n "$NS" task ls | awk -v s="$svc" '$1 == s && $3 != "STOPPED" {f=1} END {exit !f}'; do sleep 0.01; done
  ctr -a "$SOCK" -n "$NS" task delete "$svc" >/dev/null 2>&1
  ctr -a "$SOCK" -n "$NS" container delete "$svc" >/dev/null
}
"$BIN" images build-default >/dev/null
"$BIN" run --runs-dir "$runs" bench/trivial.yaml >/dev/null 2>&1   # warm: preflight cache, init
"$BIN" run --runs-dir "$runs" bench/service.yaml >/dev/null 2>&1
without=(); with=(); pair=(); alone=(); ready=()
for i in $(seq 1 "$N"); do
  t0=$(now); "$BIN" run --runs-dir "$runs" bench/trivial.yaml >/dev/null 2>&1; t1=$(now)
  "$BIN" run --json --runs-dir "$runs" bench/service.yaml >"$runs/result.json" 2>/dev/null; t2=$(now)
  ctr_pair "$i"; t3=$(now)
  ctr -a "$SOCK" -n "$NS" run --rm --seccomp "$IMG" "ceval-bench-alone-$$-$i" /bin/true >/dev/null; t4=$(now)
  without+=($(( (t1 - t0) / 1000000 ))); with+=($(( (t2 - t1) / 1000000 ))); pair+=($(( (t3 - t2) / 1000000 ))); alone+=($(( (t4 - t3) / 1000000 )))
  ready+=($(awk -F'[:,]' '/"ready_seconds":/ { printf "%.1f", $2 * 1000; exit }' "$runs/result.json"))
done
mo=$(median "${without[@]}"); mw=$(median "${with[@]}"); mp=$(median "${pair[@]}"); ma=$(median "${alone[@]}"); mr=$(median "${ready[@]}")
echo "ceval run, trivial task:                 median ${mo} ms over $N runs"
echo "ceval run, the same task with a service: median ${mw} ms over $N runs (the service's cost: $((mw - mo)) ms; ready after ${mr} ms)"
echo "ctr run of the service + the agent:      median ${mp} ms over $N runs (the service's cost: $((mp - ma)) ms)"
echo "ctr run of the agent alone:              median ${ma} ms over $N runs"
awk -v a="$mw" -v b="$mp" 'BEGIN { printf "ratio ceval with a service / ctr pair: %.2fx (target <= 1.5x)\n", a / b }'
bench_row "ceval run, trivial task with one service" "$mw" "ctr run of the service + the agent" "$mp" ms 1.5x
bench_row "ceval run, the task with one service vs without it" "$mw" "ceval run, the same task without" "$mo" ms -
bench_row "one service's cost in ms: ceval (with - without) vs ctr (pair - agent alone)" "$((mw - mo))" "ctr: the pair - the agent alone" "$((mp - ma))" ms -
