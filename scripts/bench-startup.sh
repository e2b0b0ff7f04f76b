#!/usr/bin/env bash
# Process start-up of ceval beside its anchors (an empty Go program, ctr --help): `ceval
# --help`, `ceval version`, a cold `ceval grade` of one static criterion and the WASM worker
# from exec to its hello, interleaved in one loop (scripts/startup), N rounds (default 40),
# medians; then the binary's size and `ceval --help`'s max RSS beside ctr's. BIN picks the ceval
# binary (default bin/ceval, built first as make build does unless BUILD=0).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
N=${N:-40}
BIN=$(realpath "${BIN:-bin/ceval}")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
[ "${BUILD:-1}" = 0 ] || go build -trimpath -ldflags="-s -w" -o "$BIN" ./cmd/ceval # as make build
mkdir "$dir/empty"
printf 'module empty\n\ngo 1.26\n' >"$dir/empty/go.mod"
printf 'package main\n\nfunc main() {}\n' >"$dir/empty/main.go"
(cd "$dir/empty" && GOWORK=off go build -o "$dir/empty-bin" .)
go build -o "$dir/startup" ./scripts/startup
"$dir/startup" -n "$N" -ceval "$BIN" -empty "$dir/empty-bin" ${WORKER:+-worker "$WORKER"} | tee "$dir/out"
row() { awk -v w="$1" -F'  +' '$1 == w {sub(/ms$/, "", $2); print $2}' "$dir/out"; }
bench_row "ceval --help (start-up)" "$(row 'ceval --help')" "ctr --help" "$(row 'ctr --help')" ms -
# What every command pays for what the binary links (issue 38's budget: 60 MB, 30 MiB):
# its size on disk and the most `ceval --help` held resident (GNU time's max RSS, the
# median of 5), beside ctr's.
ctr=$(command -v ctr)
mb() { awk -v b="$(stat -c %s "$1")" 'BEGIN {printf "%.1f", b / 1e6}'; }
bench_row "ceval binary size" "$(mb "$BIN")" "ctr binary" "$(mb "$ctr")" MB "<60"
if [ -x /usr/bin/time ]; then
  rss() {
    local r=()
    for _ in 1 2 3 4 5; do
      /usr/bin/time -f %M -o "$dir/rss" "$1" --help >/dev/null 2>&1
      r+=("$(tail -1 "$dir/rss")")
    done
    awk -v k="$(median "${r[@]}")" 'BEGIN {printf "%.1f", k / 1024}'
  }
  bench_row "ceval --help max RSS" "$(rss "$BIN")" "ctr --help" "$(rss "$ctr")" MiB "<30"
fi
