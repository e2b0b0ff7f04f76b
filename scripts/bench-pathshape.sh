#!/usr/bin/env bash
# The path-shape workload (issue 14, part 4): FILES empty files with 255-byte names at the
# bottom of DEPTH-1 nested directories with 255-byte names, so each file's path is ~16 KiB
# and the tree's paths sum to ~1.6 GB while its bytes are zero. Built with renames at the
# top of the tree, so no path the builder uses ever nears PATH_MAX. Then `ceval grade`
# snapshots and grades it (static criteria and toolbox run_command criteria) under
# /usr/bin/time: wall time and peak RSS (the largest of ceval and its sandbox worker).
# Target: under 20 s and under 300 MB, and the negative checks over what a cap left out do
# not pass (FAILURE, exit 1). FILES=100000 DEPTH=64 by default; KEEP=1 keeps the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
BIN=${BIN:-bin/ceval}
FILES=${FILES:-100000}
DEPTH=${DEPTH:-64}
dir=$(mktemp -d)
if [ -n "${KEEP:-}" ]; then echo "bench-pathshape: keeping $dir" >&2; else trap 'rm -rf "$dir"' EXIT; fi

# 255-byte names: a letter, then the number zero-padded to 254 digits.
build_start=$(date +%s.%N)
mkdir "$dir/cur"
(cd "$dir/cur" && seq 1 "$FILES" | xargs printf 'f%0254d\n' | xargs touch && echo TODO >zz-todo.txt)
for i in $(seq 2 "$DEPTH"); do
	mkdir "$dir/next"
	mv "$dir/cur" "$dir/next/$(printf 'd%0254d' "$i")"
	mv "$dir/next" "$dir/cur"
done
mv "$dir/cur" "$dir/ws"
# Both sort after the tree: wherever a cap cuts the walk, they are past it.
echo secret >"$dir/ws/zz-credentials.txt"
build=$(echo "$(date +%s.%N) - $build_start" | bc)

cat >"$dir/task.yaml" <<'EOF'
task_id: bench-pathshape
initial_prompt: none
agent: {type: command, command: [/bin/true]}
success_criteria:
  - {type: run_command, command: "! grep -rq TODO .", description: no TODO anywhere}
  - {type: run_command, command: "test ! -e zz-credentials.txt", description: no credentials file}
  - {type: file_exists, path: zz-credentials.txt, description: the credentials file is there}
EOF

set +e
/usr/bin/time -f '%e %M' -o "$dir/time" "$BIN" grade "$dir/task.yaml" --workspace "$dir/ws" --json >"$dir/result.json" 2>"$dir/stderr"
rc=$?
set -e
read -r wall rss_kib < <(tail -n 1 "$dir/time")
status=$(sed -n 's/^  "status": "\(.*\)",$/\1/p' "$dir/result.json" | head -1)
printf 'path shape: %d empty files, 255-byte names, %d deep (built in %.1f s)\n' "$FILES" "$DEPTH" "$build"
printf '  ceval grade: %s s wall, peak RSS %d MB, status %s (exit %d)\n' "$wall" $((rss_kib / 1024)) "${status:-?}" "$rc"
sed -n 's/^ *"details": "\(.*\)",\{0,1\}$/\1/p' "$dir/result.json" | cut -c1-160 | sed 's/^/  /'
bench_row "path shape: ceval grade, wall" "$wall" - - s "<20"
bench_row "path shape: ceval grade, peak RSS" "$((rss_kib / 1024))" - - MB "<300"
fail=0
if [ "$rc" -ne 1 ] || [ "$status" != FAILURE ]; then
	echo "bench-pathshape: want FAILURE (exit 1): the negative checks must not pass over what a cap left out" >&2
	cat "$dir/stderr" >&2
	fail=1
fi
if [ "$(echo "$wall > 20" | bc)" = 1 ] || [ $((rss_kib / 1024)) -ge 300 ]; then
	echo "bench-pathshape: over the target (20 s, 300 MB)" >&2
	fail=1
fi
exit $fail
