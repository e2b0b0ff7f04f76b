#!/usr/bin/env bash
# Package images: build time cold (mmdebstrap, --force), from the on-disk image cache (the
# image deleted from containerd first) and kept (containerd has it), the image's size, and
# `ceval run` of a trivial task in it beside `ctr run --rm --seccomp` of the same image,
# interleaved; prints the medians and their ratio. Target: ceval within 1.5x of ctr.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
N=${N:-15}
BIN=${BIN:-bin/ceval}
SOCK=${CEVAL_CONTAINERD_ADDRESS:?set CEVAL_CONTAINERD_ADDRESS}
NS=${CEVAL_NAMESPACE:-ceval}
TASK=bench/trivial-packages.yaml
IMG=$("$BIN" validate "$TASK" | sed -n 's/.*, image \([^ ]*\) (.*/\1/p')
PKGS=python3,nodejs,git
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT

now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f s", (b - a) / 1e9 }'; }
t0=$(now); out=$("$BIN" images build "$IMG" --packages "$PKGS" --force 2>/dev/null); t1=$(now)
echo "package image $IMG ($PKGS): cold build (mmdebstrap, --force) $(secs "$t0" "$t1")"
echo "$out" | sed -n 's/^  size *\(.*\)/size: \1/p'
ctr -a "$SOCK" -n "$NS" images rm "$IMG" >/dev/null
t0=$(now); "$BIN" images build "$IMG" --packages "$PKGS" >/dev/null 2>&1; t1=$(now)
echo "from the image cache (deleted from containerd first): $(secs "$t0" "$t1")"
t0=$(now); "$BIN" images build "$IMG" --packages "$PKGS" >/dev/null 2>&1; t1=$(now)
echo "kept (containerd has the same inputs): $(secs "$t0" "$t1")"

"$BIN" run --runs-dir "$runs" "$TASK" >/dev/null 2>&1   # warm the preflight cache and init
ceval_ms=(); ctr_ms=()
for i in $(seq 1 "$N"); do
  t0=$(now); "$BIN" run --runs-dir "$runs" "$TASK" >/dev/null 2>&1; t1=$(now)
  ctr -a "$SOCK" -n "$NS" run --rm --seccomp "$IMG" "ceval-bench-pkg-$$-$i" /bin/true >/dev/null; t2=$(now)
  ceval_ms+=($(( (t1 - t0) / 1000000 ))); ctr_ms+=($(( (t2 - t1) / 1000000 )))
done
mc=$(median "${ceval_ms[@]}"); mr=$(median "${ctr_ms[@]}")
echo "ceval run (trivial task, package image): median ${mc} ms over $N runs"
echo "ctr run --rm --seccomp (same image):     median ${mr} ms over $N runs"
awk -v a="$mc" -v b="$mr" 'BEGIN { printf "ratio ceval/ctr: %.2fx (target <= 1.5x)\n", a / b }'
bench_row "ceval run, package image (python3 nodejs git)" "$mc" "ctr run --rm --seccomp, same image" "$mr" ms 1.5x
