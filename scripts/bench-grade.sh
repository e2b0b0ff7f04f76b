#!/usr/bin/env bash
# Cold `ceval grade`: a fresh process grading one run_command criterion (its WASM worker
# started, the toolbox loaded from the on-disk compilation cache, one instance run) beside
# the same grade with one static criterion, interleaved so both see the same machine load;
# N (default 15) of each. Prints the medians and the difference. Target: under 120 ms extra.
# The script (test -f a.txt) runs in the small toolbox (cmd/ceval-toolbox-lite); a second row
# grades one that needs the full one (jq). Beside them the same grade of a `wasm`
# criterion running a 50-byte module (its _start returns): the worker process, the protocol
# and one instance without a toolbox, the floor any run_command module stands on (the rest of
# a run_command row is loading its toolbox: wazero decodes, validates and hashes it before its
# cache lookup, in proportion to its code).
# Then the warm run_command beside native sh -c (target: p50 within 3x).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
N=${N:-15}
BIN=${BIN:-bin/ceval}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/ws"
echo hello >"$dir/ws/a.txt"
printf 'task_id: grade-static\ninitial_prompt: x\nsuccess_criteria:\n  - {type: file_exists, path: a.txt}\n' >"$dir/static.yaml"
printf 'task_id: grade-command\ninitial_prompt: x\nsuccess_criteria:\n  - {type: run_command, command: "test -f a.txt"}\n' >"$dir/command.yaml"
printf 'task_id: grade-full\ninitial_prompt: x\nsuccess_criteria:\n  - {type: run_command, command: "jq -e -n true"}\n' >"$dir/full.yaml"
# The smallest WASI command: a memory and a _start that returns.
printf '\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x05\x03\x01\x00\x01\x07\x13\x02\x06memory\x02\x00\x06_start\x00\x00\x0a\x04\x01\x02\x00\x0b' >"$dir/tiny.wasm"
printf 'task_id: grade-tiny\ninitial_prompt: x\nsuccess_criteria:\n  - {type: wasm, module: tiny.wasm, sha256: %s}\n' \
  "$(sha256sum "$dir/tiny.wasm" | cut -d' ' -f1)" >"$dir/tiny.yaml"
now() { date +%s%N; }
"$BIN" grade "$dir/command.yaml" --workspace "$dir/ws" >/dev/null # fill the compilation cache once
"$BIN" grade "$dir/full.yaml" --workspace "$dir/ws" >/dev/null
"$BIN" grade "$dir/tiny.yaml" --workspace "$dir/ws" >/dev/null
static_ms=(); command_ms=(); tiny_ms=(); full_ms=()
for _ in $(seq 1 "$N"); do
  t0=$(now); "$BIN" grade "$dir/static.yaml" --workspace "$dir/ws" >/dev/null
  t1=$(now); "$BIN" grade "$dir/command.yaml" --workspace "$dir/ws" >/dev/null
  t2=$(now); "$BIN" grade "$dir/tiny.yaml" --workspace "$dir/ws" >/dev/null
  t3=$(now); "$BIN" grade "$dir/full.yaml" --workspace "$dir/ws" >/dev/null
  t4=$(now)
  full_ms+=($(( (t4 - t3) / 1000000 )))
  static_ms+=($(( (t1 - t0) / 1000000 ))); command_ms+=($(( (t2 - t1) / 1000000 ))); tiny_ms+=($(( (t3 - t2) / 1000000 )))
done
ms=$(median "${static_ms[@]}"); mc=$(median "${command_ms[@]}"); mt=$(median "${tiny_ms[@]}"); mf=$(median "${full_ms[@]}")
echo "ceval grade, one static criterion:      median ${ms} ms over $N fresh processes"
echo "ceval grade, one run_command criterion: median ${mc} ms over $N fresh processes"
echo "ceval grade, one 50-byte wasm module:   median ${mt} ms over $N fresh processes"
echo "ceval grade, one run_command the full toolbox runs (jq): median ${mf} ms over $N fresh processes"
echo "run_command extra: $((mc - ms)) ms (target < 120 ms); the sandbox's floor without the toolbox: $((mt - ms)) ms"
bench_row "ceval grade, 1 run_command criterion (cold)" "$mc" "same grade, 1 static criterion" "$ms" ms +120
bench_row "ceval grade, 1 run_command criterion, full toolbox (cold)" "$mf" "same grade, 1 static criterion" "$ms" ms -
bench_row "ceval grade, 1 wasm criterion, 50-byte module (cold)" "$mt" "same grade, 1 static criterion" "$ms" ms -

# Warm: the same executor's next run_command (worker and compiled toolbox reused) beside the
# same script under the host's sh -c, interleaved in one Go benchmark (wasm.BenchmarkRunCommand),
# medians of WARM_N (default 41) of each.
GO=${GO:-go}
out=$(mktemp)
"$GO" test -run '^$' -bench '^BenchmarkRunCommand$' -benchtime "${WARM_N:-41}x" -count=1 ./wasm/ | tee "$out"
metric() { awk -v unit="$1" '$1 ~ /^BenchmarkRunCommand(-[0-9]+)?$/ { for (i = 2; i < NF; i++) if ($(i + 1) == unit) { print $i; exit } }' "$out"; }
bench_row "run_command in WASM, warm, p50" "$(metric warm-p50-ms)" "the same script under sh -c, p50" "$(metric native-p50-ms)" ms 3x
rm -f "$out"
