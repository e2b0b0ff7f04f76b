#!/usr/bin/env bash
# Where a trivial `ceval run` spends its time: N (default 9) runs of bench/trivial.yaml with
# CEVAL_PHASE_TIMES set (package internal/phasetime), interleaved with `ctr run --rm --seccomp`
# of the same image, and the median of each stretch: its start after the exec of ceval and
# its length, in ms. Not a row of make bench's table (the timing writes cost a little); run it
# beside scripts/bench-run.sh to see what a change moved.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
N=${N:-9}
BIN=${BIN:-bin/ceval}
SOCK=${CEVAL_CONTAINERD_ADDRESS:?set CEVAL_CONTAINERD_ADDRESS}
NS=${CEVAL_NAMESPACE:-ceval}
IMG=ceval.local/default:latest
TASK=${TASK:-bench/trivial.yaml}
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
now() { date +%s%N; }
"$BIN" images build-default >/dev/null
"$BIN" run --runs-dir "$work/runs" "$TASK" >/dev/null 2>&1 || true
ctr_ms=()
for i in $(seq 1 "$N"); do
  t0=$(now)
  CEVAL_PHASE_TIMES="$work/phases.$i" "$BIN" run --runs-dir "$work/runs" "$TASK" >/dev/null 2>&1 || true
  t1=$(now)
  echo "$t0 $t1" >"$work/t.$i"
  ctr -a "$SOCK" -n "$NS" run --rm --seccomp "$IMG" "ceval-phases-$$-$i" /bin/true >/dev/null
  ctr_ms+=($(( ($(now) - t1) / 1000000 )))
  echo "${ctr_ms[-1]}" >"$work/ctr.$i"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); ctr run --rm --seccomp median $(median "${ctr_ms[@]}") ms"
python3 - "$work" "$N" <<'PY'
import os, statistics, sys
work, n = sys.argv[1], int(sys.argv[2])
starts, lens, totals = {}, {}, []
order = []
for i in range(1, n + 1):
    t0, t1 = map(int, open(os.path.join(work, f"t.{i}")).read().split())
    totals.append((t1 - t0) / 1e6)
    seen = {}
    for line in open(os.path.join(work, f"phases.{i}")):
        name, a, b = line.rstrip("\n").split("\t")
        if name in seen:  # a stretch met twice in one run: the sum of its lengths
            seen[name] = (seen[name][0], seen[name][1] + (int(b) - int(a)) / 1e6)
            continue
        seen[name] = ((int(a) - t0) / 1e6, (int(b) - int(a)) / 1e6)
    for name, (s, l) in seen.items():
        if name not in starts:
            order.append(name)
        starts.setdefault(name, []).append(s)
        lens.setdefault(name, []).append(l)
order.sort(key=lambda k: statistics.median(starts[k]))
print(f"ceval run end to end: median {statistics.median(totals):.0f} ms over {n} runs")
print(f"{'stretch':40} {'start':>8} {'length':>8}  (medians, ms after ceval's exec)")
for k in order:
    print(f"{k:40} {statistics.median(starts[k]):8.1f} {statistics.median(lens[k]):8.1f}")
PY
