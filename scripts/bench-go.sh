#!/usr/bin/env bash
# The Go benchmarks: snapshot copy-out, the mock client's exec, and the model gateway's
# per-call p50/p99 in forward and replay mode beside a direct call to a local fake provider.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
GO=${GO:-go}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$GO" test -run '^$' -bench . -benchtime 5x ./snapshot/
"$GO" test -run '^$' -bench 'RoundTrip|ClientExec' -benchtime 500x ./mockd/
"$GO" test -run '^$' -bench 'Gateway' -benchtime 2000x -count=1 ./gateway/ | tee "$out"
# "BenchmarkGateway/NAME-P  N  ns/op ... V p50-ns ... V p99-ns" -> the metric in ms
metric() { awk -v name="BenchmarkGateway/$1" -v unit="$2" '$1 ~ "^" name "(-[0-9]+)?$" { for (i = 2; i < NF; i++) if ($(i + 1) == unit) { printf "%.3f", $i / 1e6; exit } }' "$out"; }
for mode in forward replay; do
  for p in p50 p99; do
    bench_row "model gateway call, $mode mode, $p" "$(metric "$mode" "$p-ns")" "direct call to the fake provider, $p" "$(metric direct "$p-ns")" ms -
  done
done
