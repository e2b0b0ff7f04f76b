#!/usr/bin/env bash
# Rootless `ceval run` of a trivial task beside rootless `ctr run --rm --seccomp` of the same
# image and command, both as the daemon's unprivileged user (runuser, nsenter for ctr, as
# ceval does itself), interleaved; prints the medians and their ratio. Needs root to start the
# rootless daemon (scripts/containerd.sh rootless-start) of ROOTLESS_USER (default
# ceval-ci-rootless, created if missing) in a temporary DIR, with the strict mode's cgroup
# subtree (ctr's container goes under it too: rootless runc refuses a limit without one); it
# stops the daemon and removes the subtree it made. Target: ceval within 1.5x of ctr.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
N=${N:-9}
BIN=${BIN:-bin/ceval}
USER_=${ROOTLESS_USER:-ceval-ci-rootless}
[ "$(id -u)" = 0 ] || { echo "bench-rootless: run as root (it starts the rootless daemon of $USER_)" >&2; exit 1; }
dir=$(mktemp -d /tmp/ceval-bench-rootless-XXXXXX)
work=$(mktemp -d /tmp/ceval-bench-rootless-work-XXXXXX)
had_subtree=no
[ -d "/sys/fs/cgroup/pids/ceval-rootless-$USER_" ] && had_subtree=yes
cleanup() {
  scripts/containerd.sh rootless-stop "$USER_" "$dir" >/dev/null 2>&1 || true
  [ "$had_subtree" = yes ] || "$BIN" rootless teardown --user "$USER_" >/dev/null 2>&1 || true
  rm -rf "$dir" "$work"
}
trap cleanup EXIT
sock=$(scripts/containerd.sh rootless-start "$USER_" "$dir")
"$BIN" rootless setup --user "$USER_" >/dev/null
cp "$BIN" bench/trivial.yaml "$work/"
chown -R "$USER_" "$work"
chmod 0755 "$work"
home=$(getent passwd "$USER_" | cut -d: -f6)
as_user() { (cd "$work" && runuser -u "$USER_" -- env -i PATH="$PATH" HOME="$home" USER="$USER_" CEVAL_CONTAINERD_ADDRESS="$sock" "$@"); }
ctr_user() { as_user nsenter -U -m --preserve-credentials -t "$(cat "$dir/rootlesskit/child_pid")" ctr -a "$sock" -n ceval "$@"; }
now() { date +%s%N; }
as_user ./ceval images build-default >/dev/null
as_user ./ceval run --runs-dir runs trivial.yaml >/dev/null 2>&1 # warm: preflight cache, init, wasm cache
ceval_ms=(); ctr_ms=()
for i in $(seq 1 "$N"); do
  t0=$(now); as_user ./ceval run --runs-dir runs trivial.yaml >/dev/null 2>&1; t1=$(now)
  ctr_user run --rm --seccomp --cgroup "/ceval-rootless-$USER_/ceval-bench-$$-$i" ceval.local/default:latest "ceval-bench-$$-$i" /bin/true >/dev/null; t2=$(now)
  ceval_ms+=($(( (t1 - t0) / 1000000 ))); ctr_ms+=($(( (t2 - t1) / 1000000 )))
done
mc=$(median "${ceval_ms[@]}"); mr=$(median "${ctr_ms[@]}")
echo "rootless ceval run (trivial task, end to end): median ${mc} ms over $N runs: ${ceval_ms[*]}"
echo "rootless ctr run --rm --seccomp (same image):  median ${mr} ms over $N runs: ${ctr_ms[*]}"
awk -v a="$mc" -v b="$mr" 'BEGIN { printf "ratio ceval/ctr: %.2fx (target <= 1.5x)\n", a / b }'
bench_row "rootless ceval run, trivial task (median)" "$mc" "rootless ctr run --rm --seccomp" "$mr" ms 1.5x
