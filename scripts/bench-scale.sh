#!/usr/bin/env bash
# The scale benchmark (issue 39): N (default 1000) trivial runs as one experiment at -j auto,
# then the same experiment at -j 1. Reports the -j auto wall time, runs/min and ceval's peak
# RSS (target < 64 MiB, and flat: within 1.15x of the peak of a tenth of the runs), checks that the
# two summary.json files agree on every status count, pass rate and mean score, and that
# nothing is left: scratch mounts, nsfs mounts, ID slot locks, processes in ceval's ID range,
# containerd containers, tasks, active snapshots and ceval's leases. Exits 1 on a mismatch
# or a leftover.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
N=${N:-1000}
BIN=${BIN:-bin/ceval}
SOCK=${CEVAL_CONTAINERD_ADDRESS:?set CEVAL_CONTAINERD_ADDRESS}
NS=${CEVAL_NAMESPACE:-ceval}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
now() { date +%s%N; }
# An ID range of its own (64 slots from 3<<30 + 32<<16), so its slots and processes are its own
# to count on a host where other cevals run.
LO=$(( 3221225472 + 32 * 65536 )); HI=$(( LO + 64 * 65536 ))
printf 'id_range: {start: %d, slots: 64}\n' "$LO" >"$work/config.yaml"

# leftovers prints one line per kind of thing ceval may leave, with its count.
leftovers() {
  echo "scratch mounts $(grep -c "$work" /proc/self/mountinfo || true)"
  echo "nsfs mounts $(grep -c ' nsfs ' /proc/self/mountinfo || true)"
  echo "id slot locks $(find /run/ceval/idslots -name '*.lock' 2>/dev/null | sed 's|.*/||; s|\.lock||' | awk -v lo="$LO" -v hi="$HI" '$1 >= lo && $1 < hi' | wc -l)"
  echo "processes in the id range $(ps -eo uid= | awk -v lo="$LO" -v hi="$HI" '$1 >= lo && $1 < hi' | wc -l)"
  echo "containers $(ctr -a "$SOCK" -n "$NS" containers ls -q | wc -l)"
  echo "tasks $(ctr -a "$SOCK" -n "$NS" tasks ls -q | wc -l)"
  echo "active snapshots $(ctr -a "$SOCK" -n "$NS" snapshots ls | awk '$3 == "Active"' | wc -l)"
  echo "ceval leases $(ctr -a "$SOCK" -n "$NS" leases ls | grep -c 'dev.ceval.container' || true)"
}

# rss_run OUT CMD... runs CMD and writes its peak RSS (KiB) to OUT.
rss_run() { local out=$1; shift; /usr/bin/time -f '%M' -o "$out" "$@" >/dev/null 2>"$work/stderr" || { tail -5 "$work/stderr" >&2; return 1; }; }

"$BIN" images build-default >/dev/null
"$BIN" run --runs-dir "$work/warmup" bench/trivial.yaml >/dev/null 2>&1 || true
leftovers >"$work/before"

tenth=$(( N / 10 > 0 ? N / 10 : 1 ))
rss_run "$work/rss-tenth" "$BIN" run --config "$work/config.yaml" --runs-dir "$work/tenth" -j auto --repeats "$tenth" bench/experiment.yaml || true
t0=$(now)
rss_run "$work/rss-auto" "$BIN" run --config "$work/config.yaml" --runs-dir "$work/auto" -j auto --repeats "$N" bench/experiment.yaml || { echo "-j auto failed" >&2; exit 1; }
t1=$(now)
rss_run "$work/rss-one" "$BIN" run --config "$work/config.yaml" --runs-dir "$work/one" -j 1 --repeats "$N" bench/experiment.yaml || { echo "-j 1 failed" >&2; exit 1; }
t2=$(now)
leftovers >"$work/after"

ok=1
python3 - "$work/auto" "$work/one" <<'PY' || ok=0
import glob, json, sys
def load(d):
    s = json.load(open(glob.glob(d + "/*/summary.json")[0]))
    strip = lambda st: {k: st[k] for k in ("runs", "passed", "pass_rate", "mean_score", "statuses") if k in st}
    return s, [strip(v) for v in s["variants"]], [strip(t) for t in s["tasks"]]
(sa, va, ta), (so, vo, to) = load(sys.argv[1]), load(sys.argv[2])
c = sa.get("concurrency", {})
print(f"-j auto: {c.get('low')}..{c.get('high')} at once (final {c.get('final')}, {len(c.get('changes', []))} choices); complete {sa['complete']}, -j 1 complete {so['complete']}")
if (va, ta) != (vo, to) or not sa["complete"] or not so["complete"]:
    print("summary.json differs between -j auto and -j 1:", va, vo, file=sys.stderr)
    sys.exit(1)
print("summary.json: statuses, pass rates and mean scores identical at -j auto and -j 1")
PY
# What grew is left behind (what shrank is another process's, on a shared host).
left=$(paste -d' ' "$work/before" "$work/after" | awk '{ n = NF / 2; if ($NF > $n) { s += $NF - $n; print "left: " $0 > "/dev/stderr" } } END { print s + 0 }')
if [ "$left" != 0 ]; then
  paste "$work/before" "$work/after" >&2
  ok=0
fi
ms=$(( (t1 - t0) / 1000000 )); ms1=$(( (t2 - t1) / 1000000 ))
rss=$(tail -1 "$work/rss-auto"); rss10=$(tail -1 "$work/rss-tenth" 2>/dev/null || echo 0)
awk -v n="$N" -v a="$ms" -v b="$ms1" -v r="$rss" -v r10="$rss10" 'BEGIN {
  printf "%d runs at -j auto: %.1f s, %.0f runs/min, peak RSS %.1f MiB (%.1f MiB at %d runs); at -j 1: %.1f s, %.0f runs/min\n",
    n, a / 1000, n * 60000 / a, r / 1024, r10 / 1024, n / 10, b / 1000, n * 60000 / b }'
bench_row "experiment of $N trivial runs at -j auto: wall time" "$(( ms / 1000 ))" "the same at -j 1" "$(( ms1 / 1000 ))" s -
bench_row "experiment of $N runs at -j auto: runs/min" "$(( N * 60000 / ms ))" "-" "-" runs/min -
bench_row "experiment of $N runs at -j auto: peak RSS" "$(( rss / 1024 ))" "at $tenth runs" "$(( rss10 / 1024 ))" MiB "<64"
# Flat: the peak of N runs within 1.15x of a tenth of them (nothing kept per run; was 1.35x).
bench_row "experiment of $N runs at -j auto: peak RSS, flat" "$(( rss / 1024 ))" "at $tenth runs" "$(( rss10 / 1024 ))" MiB 1.15x
bench_row "experiment of $N runs: leftovers (mounts, namespaces, ID slots, containerd objects)" "$left" "-" "-" count "<1"
[ "$ok" = 1 ]
