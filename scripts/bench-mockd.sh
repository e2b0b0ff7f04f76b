#!/usr/bin/env bash
# Protected mocks from inside the container: a `ceval run` of a temporary task whose agent, a
# busybox sh loop, times N rounds of, back to back:
#   clock   nothing (`:`): what reading the clock costs
#   true    /bin/true: the exec baseline (fork + execve of static busybox)
#   hello   a static Go hello world built with the client's toolchain and flags (mk/embedded.mk):
#           the floor of any Go program's process start and exit
#   nosock  the mocked tool with CEVAL_MOCK_SOCKET pointing nowhere: the static Go client's
#           process start and exit, no round trip (it fails at connect, ENOENT)
#   mock    the mocked tool (`gh pr list`): the full call
# each between two reads of ash's $EPOCHREALTIME (microseconds, no fork; busybox date has no
# %N). Interleaving the series lets every one of them see the same machine load. Prints
# p50/p99 per call and calls/second (N / the summed call times, so without the loop's own
# overhead), absolute, minus /bin/true (what a call costs beyond any exec) and as a ratio to
# /bin/true, then the client against the Go floor. Targets: mocked tool p99 < 2 ms, and within
# 2x of /bin/true's p99 in the same loop (the process-start floor).
# N=500 calls per series; KEEP=1 keeps the task and its run directory.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
N=${N:-500}
BIN=${BIN:-bin/ceval}
GO=${GO:-go}
: "${CEVAL_CONTAINERD_ADDRESS:?set CEVAL_CONTAINERD_ADDRESS}"
dir=$(mktemp -d)
if [ -n "${KEEP:-}" ]; then echo "bench-mockd: keeping $dir" >&2; else trap 'rm -rf "$dir"' EXIT; fi
mkdir -p "$dir/mocks" "$dir/runs" "$dir/tpl" "$dir/hello"

# The Go floor, copied into the workspace by template_dir (which keeps the mode).
printf 'module hello\n\ngo 1.26\n' >"$dir/hello/go.mod"
printf 'package main\n\nimport "os"\n\nfunc main() { os.Stdout.WriteString("hello\\n") }\n' >"$dir/hello/main.go"
(cd "$dir/hello" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 GOAMD64=v1 GOFLAGS=-mod=readonly \
  GOEXPERIMENT= GOFIPS140=off GOWORK=off GOTOOLCHAIN=go1.26.8 \
  "$GO" build -trimpath -buildvcs=false -ldflags='-s -w -buildid=' -o "$dir/tpl/gohello" .)

# The loader takes fixtures relative to the task file only: both live in $dir.
cat >"$dir/mocks/gh.yaml" <<'EOF'
version: 1
responses:
  - argv: [pr, list]
    stdout: "#7 fix the flaky test\n"
EOF

# The agent writes one line per round to /workspace/times.txt: six $EPOCHREALTIME readings
# (seconds.microseconds) bounding the five series. The mock must answer right every time.
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
      [ "\$(./gohello)" = hello ]
      i=0
      while [ \$i -lt $N ]; do
        t0=\$EPOCHREALTIME; :
        t1=\$EPOCHREALTIME; /bin/true
        t2=\$EPOCHREALTIME; ./gohello >/dev/null
        t3=\$EPOCHREALTIME; CEVAL_MOCK_SOCKET=/run/ceval/absent.sock gh pr list >/dev/null 2>&1 || [ \$? = 69 ]
        t4=\$EPOCHREALTIME; gh pr list >/dev/null
        t5=\$EPOCHREALTIME
        echo "\$t0 \$t1 \$t2 \$t3 \$t4 \$t5" >> times.txt
        i=\$((i + 1))
      done
      [ "\$(gh pr list)" = "#7 fix the flaky test" ]
      echo ok > done.txt
sandbox:
  limits: {timeout: 5m, memory_mb: 256, pids: 64, disk_mb: 16}
  workspace: {template_dir: tpl}
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
read -r h50 h99 hps < <(series 3)
read -r n50 n99 nps < <(series 4)
read -r m50 m99 mps < <(series 5)
awk -v n="$N" -v c50="$c50" -v c99="$c99" -v t50="$t50" -v t99="$t99" -v tps="$tps" \
  -v h50="$h50" -v h99="$h99" -v hps="$hps" -v n50="$n50" -v n99="$n99" -v nps="$nps" \
  -v m50="$m50" -v m99="$m99" -v mps="$mps" '
function row(name, p50, p99, cps) {
  printf "  %-38s %7.3f %7.3f %8d | %+9.3f %+9.3f | %7.2fx %7.2fx\n", name, p50 / 1e3, p99 / 1e3, cps,
    (p50 - t50) / 1e3, (p99 - t99) / 1e3, p50 / t50, p99 / t99
}
BEGIN {
  printf "protected mock round trip from inside the container, %d rounds (busybox sh loop):\n", n
  printf "  %-38s %7s %7s %8s | %9s %9s | %8s %8s\n", "", "p50 ms", "p99 ms", "calls/s",
    "p50-true", "p99-true", "p50/true", "p99/true"
  printf "  %-38s %7.3f %7.3f %8s |\n", "clock only (two reads)", c50 / 1e3, c99 / 1e3, "-"
  row("/bin/true (exec baseline)", t50, t99, tps)
  row("static Go hello world (Go floor)", h50, h99, hps)
  row("mock client, no server (process only)", n50, n99, nps)
  row("gh pr list (mocked tool)", m50, m99, mps)
  printf "  mock client process over the Go floor (nosock - hello): p50 %+.3f ms, p99 %+.3f ms\n", (n50 - h50) / 1e3, (n99 - h99) / 1e3
  printf "  round trip beyond the client process (mock - nosock):   p50 %+.3f ms, p99 %+.3f ms\n", (m50 - n50) / 1e3, (m99 - n99) / 1e3
  printf "  target mocked tool p99 < 2 ms: absolute %.3f ms %s; minus /bin/true p99 %.3f ms %s\n",
    m99 / 1e3, (m99 < 2000 ? "met" : "MISSED"), (m99 - t99) / 1e3, (m99 - t99 < 2000 ? "met" : "MISSED")
}'
bench_row "protected mock call in the container, p50" "$(awk -v v="$m50" 'BEGIN { printf "%.3f", v / 1e3 }')" "/bin/true in the same loop, p50" "$(awk -v v="$t50" 'BEGIN { printf "%.3f", v / 1e3 }')" ms -
bench_row "protected mock call in the container, p99" "$(awk -v v="$m99" 'BEGIN { printf "%.3f", v / 1e3 }')" "/bin/true in the same loop, p99" "$(awk -v v="$t99" 'BEGIN { printf "%.3f", v / 1e3 }')" ms 2x
