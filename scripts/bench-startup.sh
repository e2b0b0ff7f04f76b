#!/usr/bin/env bash
# Process start-up of ceval beside its anchors (an empty Go program, ctr --help): `ceval
# --help`, `ceval version`, a cold `ceval grade` of one static criterion and the WASM worker
# from exec to its hello, interleaved in one loop (scripts/startup), N rounds (default 40),
# medians. BIN picks the ceval binary (default bin/ceval, built first unless BUILD=0).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
N=${N:-40}
BIN=$(realpath "${BIN:-bin/ceval}")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
[ "${BUILD:-1}" = 0 ] || go build -o "$BIN" ./cmd/ceval
mkdir "$dir/empty"
printf 'module empty\n\ngo 1.26\n' >"$dir/empty/go.mod"
printf 'package main\n\nfunc main() {}\n' >"$dir/empty/main.go"
(cd "$dir/empty" && GOWORK=off go build -o "$dir/empty-bin" .)
go build -o "$dir/startup" ./scripts/startup
"$dir/startup" -n "$N" -ceval "$BIN" -empty "$dir/empty-bin" ${WORKER:+-worker "$WORKER"} | tee "$dir/out"
row() { awk -v w="$1" -F'  +' '$1 == w {sub(/ms$/, "", $2); print $2}' "$dir/out"; }
bench_row "ceval --help (start-up)" "$(row 'ceval --help')" "ctr --help" "$(row 'ctr --help')" ms -
