#!/usr/bin/env bash
# A pytest criterion of 20 tests in the WASM sandbox, warm (worker, CPython and pytest's
# compiled packages reused), beside Debian's pytest run natively over the same file and
# solution, interleaved in one Go benchmark (wasm.BenchmarkPytest), medians of N (default 15)
# of each. Target: within 3x of native (issue 39). Needs the pinned CPython (fetched once
# into ~/.cache/ceval/dl) and python3-pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
GO=${GO:-go}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$GO" test -run '^$' -bench '^BenchmarkPytest$' -benchtime "${N:-15}x" -count=1 -timeout 30m ./wasm/ | tee "$out"
metric() { awk -v unit="$1" '$1 ~ /^BenchmarkPytest(-[0-9]+)?$/ { for (i = 2; i < NF; i++) if ($(i + 1) == unit) { print $i; exit } }' "$out"; }
bench_row "pytest criterion, 20 tests, in WASM, warm, p50" "$(metric warm-p50-ms)" "native pytest, same tests, p50" "$(metric native-p50-ms)" ms 3x
