#!/usr/bin/env bash
# `make bench`: runs every workload script below, keeps their full output in a log, and
# prints one table of the rows they report (see bench_row in scripts/bench-lib.sh): each
# workload, ceval's figure, the anchor measured beside it in the same run, the ratio (or
# difference) and the target. Adding a workload is one line in WORKLOADS (a script that
# calls bench_row), or one bench_row call in an existing script.
set -euo pipefail
cd "$(dirname "$0")/.."
WORKLOADS=(
  scripts/bench-startup.sh      # ceval start-up (--help, version, a cold grade) vs ctr --help
  scripts/bench-run.sh          # ceval run of a trivial task vs ctr run --rm --seccomp; reap
  scripts/bench-experiment.sh   # 50 runs as an experiment at -j 1 and -j 2 vs ctr run
  scripts/bench-warm.sh         # run due -> the agent's first instruction, warm sandboxes vs none
  scripts/bench-scale.sh        # 1,000 runs at -j auto: wall time, runs/min, RSS, same summary as -j 1, no leftovers
  scripts/bench-mockd.sh        # protected mock call in the container vs /bin/true
  scripts/bench-grade.sh        # cold ceval grade: run_command vs static criterion
  scripts/bench-verifier.sh     # a sandbox: container criterion vs ctr run, and vs WASM
  scripts/bench-pytest.sh       # a warm 20-test pytest criterion in WASM vs native pytest
  scripts/bench-services.sh     # a task with one service vs without, and vs ctr run of both
  scripts/bench-packages.sh     # package image: cold/cached build, size, ceval run vs ctr run
  scripts/bench-registry.sh     # ceval images pull of 100 MB vs ctr images pull; a pinned run, registry down
  scripts/bench-pathshape.sh    # 100k empty files, 255-byte names, 64 deep: ceval grade
  scripts/bench-go.sh           # Go benchmarks: snapshot, mock client, model gateway vs direct
  scripts/bench-report.sh       # 1,000-run report: size, write time, load in headless Chromium
  scripts/bench-rootless.sh     # rootless ceval run vs rootless ctr run, as an unprivileged user
  scripts/bench-kube.sh         # ceval run --backend kubernetes vs a bare Pod; runs/min at -j 4
)
LOG=${LOG:-$(mktemp -t ceval-bench.XXXXXX.log)}
: >"$LOG"
rows=$(mktemp) out=$(mktemp)
trap 'rm -f "$rows" "$out"' EXIT
load() { awk '{print $1, $2, $3}' /proc/loadavg; }
echo "bench: full output in $LOG; load average before: $(load) on $(nproc) CPUs" >&2
for w in "${WORKLOADS[@]}"; do
  echo "bench: $w" >&2
  echo "=== $w" >>"$LOG"
  if "$w" >"$out" 2>&1; then
    grep '^BENCH	' "$out" >>"$rows" || true
  else
    echo "bench: $w failed; see $LOG" >&2
    printf 'BENCH\t%s\t-\t-\t-\t-\tFAILED\n' "$w" >>"$rows"
  fi
  cat "$out" >>"$LOG"
done
echo "bench: load average after: $(load)" >&2
awk -F'\t' '
function num(v) { return v ~ /^-?[0-9.]+$/ }
{
  w = $2; c = $3; an = $4; a = $5; u = $6; t = $7
  ratio = "-"; verdict = ""
  if (t == "FAILED") { verdict = "FAILED"; t = "-" }
  else if (num(c) && num(a) && a > 0) ratio = sprintf("%.2fx", c / a)
  if (t ~ /x$/ && num(c) && num(a) && a > 0) verdict = (c / a <= t + 0 ? "met" : "MISSED")
  else if (t ~ /^\+/ && num(c) && num(a)) { ratio = sprintf("%+.0f %s", c - a, u); verdict = (c - a <= substr(t, 2) + 0 ? "met" : "MISSED") }
  else if (t ~ /^</ && num(c)) verdict = (c < substr(t, 2) + 0 ? "met" : "MISSED")
  if (t ~ /^[+<]/) t = t " " u
  n++; W[n] = w; C[n] = (num(c) ? c " " u : c); AN[n] = an; A[n] = (num(a) ? a " " u : a); R[n] = ratio; T[n] = t; V[n] = verdict
  for (k = 1; k <= 7; k++) { f = (k == 1 ? W[n] : k == 2 ? C[n] : k == 3 ? AN[n] : k == 4 ? A[n] : k == 5 ? R[n] : k == 6 ? T[n] : V[n]); if (length(f) > wd[k]) wd[k] = length(f) }
}
END {
  split("workload|ceval|anchor (same run)|anchor|ratio|target|result", H, "|")
  for (k = 1; k <= 7; k++) if (length(H[k]) > wd[k]) wd[k] = length(H[k])
  line = ""; for (k = 1; k <= 7; k++) line = line sprintf("%-*s  ", wd[k], H[k]); print line
  line = ""; for (k = 1; k <= 7; k++) { d = ""; for (i = 0; i < wd[k]; i++) d = d "-"; line = line d "  " }; print line
  for (i = 1; i <= n; i++)
    printf "%-*s  %*s  %-*s  %*s  %*s  %-*s  %s\n", wd[1], W[i], wd[2], C[i], wd[3], AN[i], wd[4], A[i], wd[5], R[i], wd[6], T[i], V[i]
}' "$rows"
