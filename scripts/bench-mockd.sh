#!/usr/bin/env bash
# Protected mocks from inside the container: a `ceval run` of a temporary task whose agent, a
# busybox sh loop, times N rounds of, back to back:
#   clock   nothing (`:`): what reading the clock costs
#   true    /bin/true: the exec baseline (fork + execve of static busybox)
#   nosock  the mocked tool with CEVAL_MOCK_SOCKET pointing nowhere: the static Go client's
#           process start and exit, no round trip (it fails at connect, ENOENT)
#   mock    the mocked tool (`gh pr list`): the full call
# each between two reads of ash's $EPOCHREALTIME (microseconds, no fork; busybox date has no
# %N). Interleaving the series lets every one of them see the same machine load. Prints
# p50/p99 per call and calls/second (N / the summed call times, so without the loop's own
# overhead) side by side with the mock/true ratio. Target: mocked tool p99 < 2 ms.
# N=500 calls per series; KEEP=1 keeps the task and its run directory.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-500}
BIN=${BIN:-bin/ceval}
: "${CEVAL_CONTAINERD_ADDRESS:?set CEVAL_CONTAINERD_ADDRESS}"
dir=$(mktemp -d)
if [ -n "${KEEP:-}" ]; then echo "bench-mockd: keeping $dir" >&2; else trap 'rm -rf "$dir"' EXIT; fi
mkdir -p "$dir/mocks" "$dir/runs"

# The loader takes fixtures relative to the task file only: both live in $dir.
cat >"$dir/mocks/gh.yaml" <<'EOF'
version: 1
responses:
  - argv: [pr, list]
    stdout: "#7 fix the flaky test\n"
EOF

# The agent writes one line per round to /workspace/times.txt: five $EPOCHREALTIME readings
# (seconds.microseconds) bounding the four series. The mock must answer right every time.
cat >"$dir/task.yaml" <<EOF
task_id: bench-mockd
initial_prompt: nothing to do
agent:
  type: command
  command:
    - /bin/sh
    - -c
    - |
      set -e
      cd /workspace
      ls -l /proc/self/fd/0 > stdin.txt 2>&1 || true
      [ "\$(gh pr list)" = "#7 fix the flaky test" ]  # warm the page cache, check the answer
      /bin/true
      i=0
      while [ \$i -lt $N ]; do
        t0=\$EPOCHREALTIME; :
        t1=\$EPOCHREALTIME; /bin/true
        t2=\$EPOCHREALTIME; CEVAL_MOCK_SOCKET=/run/ceval/absent.sock gh pr list >/dev/null 2>&1 || [ \$? = 69 ]
        t3=\$EPOCHREALTIME; gh pr list >/dev/null
        t4=\$EPOCHREALTIME
        echo "\$t0 \$t1 \$t2 \$t3 \$t4" >> times.txt
        i=\$((i + 1))
      done
      [ "\$(gh pr list)" = "#7 fix the flaky test" ]
      echo ok > done.txt
sandbox:
  limits: {timeout: 5m, memory_mb: 256, pids: 64, disk_mb: 16}
protected_mocks:
  - {tool: gh, fixture: mocks/gh.yaml, max_requests: $((N + 10))}
success_criteria:
  - {type: file_exists, path: done.txt}
EOF

"$BIN" images build-default >/dev/null
if ! "$BIN" run --json --runs-dir "$dir/runs" "$dir/task.yaml" >"$dir/result.json"; then
  echo "bench-mockd: the run failed:" >&2
  cat "$dir/result.json" >&2
  find "$dir/runs" -name 'agent.stderr.log' -exec tail -n 20 {} + >&2 || true
  exit 1
fi
rundir=$(find "$dir/runs" -name mock_calls.jsonl -printf '%h\n' | head -n 1)
ws=$rundir/workspace
calls=$(grep -c '"exit_code":0' "$rundir/mock_calls.jsonl" || true)
[ "$calls" -eq $((N + 2)) ] || { echo "bench-mockd: $calls answered mock calls logged, want $((N + 2))" >&2; exit 1; }
[ "$(wc -l <"$ws/times.txt")" -eq "$N" ] || { echo "bench-mockd: times.txt is not $N lines" >&2; exit 1; }

# series K -> "p50_us p99_us calls_per_s" for the K-th interval of each line (nearest-rank
# percentiles). Differences are taken per field so mawk's doubles stay exact.
series() {
  awk -v k="$1" '{ split($k, a, "."); split($(k + 1), b, ".")
    printf "%d\n", (b[1] - a[1]) * 1000000 + (b[2] - a[2]) }' "$ws/times.txt" |
    sort -n | awk '{ a[NR] = $1; sum += $1 }
    END {
      if (NR == 0 || sum <= 0) exit 1
      printf "%d %d %.0f\n", a[int(NR * 0.50 + 0.999999)], a[int(NR * 0.99 + 0.999999)], NR / (sum / 1e6)
    }'
}
read -r c50 c99 _ < <(series 1)
read -r t50 t99 tps < <(series 2)
read -r n50 n99 nps < <(series 3)
read -r m50 m99 mps < <(series 4)
awk -v n="$N" -v c50="$c50" -v c99="$c99" -v t50="$t50" -v t99="$t99" -v tps="$tps" \
  -v n50="$n50" -v n99="$n99" -v nps="$nps" -v m50="$m50" -v m99="$m99" -v mps="$mps" 'BEGIN {
  printf "protected mock round trip from inside the container, %d rounds (busybox sh loop):\n", n
  printf "  %-40s %8s %8s %9s\n", "", "p50 ms", "p99 ms", "calls/s"
  printf "  %-40s %8.3f %8.3f %9s\n", "clock only (two reads)", c50 / 1e3, c99 / 1e3, "-"
  printf "  %-40s %8.3f %8.3f %9d\n", "/bin/true (exec baseline)", t50 / 1e3, t99 / 1e3, tps
  printf "  %-40s %8.3f %8.3f %9d\n", "mock client, no server (process only)", n50 / 1e3, n99 / 1e3, nps
  printf "  %-40s %8.3f %8.3f %9d\n", "gh pr list (mocked tool)", m50 / 1e3, m99 / 1e3, mps
  printf "  ratio mock/true: p50 %.2fx, p99 %.2fx, calls/s %.2fx\n", m50 / t50, m99 / t99, mps / tps
  printf "  round trip beyond the client process (p50 mock - nosock): %.3f ms\n", (m50 - n50) / 1e3
  printf "  target: mocked tool p99 < 2 ms: %s\n", (m99 < 2000 ? "met" : "MISSED")
}'
