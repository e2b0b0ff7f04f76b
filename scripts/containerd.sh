#!/usr/bin/env bash
# Private containerd for development and CI: its own socket, root and state under
# one directory, so it never touches a system containerd.
#
#   scripts/containerd.sh install        apt-get install containerd runc busybox-static musl bash-static
#                                        mmdebstrap buildah python3-pytest python3-exceptiongroup python3-tomli (if missing; under CI=true chromium too)
#   scripts/containerd.sh start [DIR]    start it (default DIR /tmp/ceval-containerd); prints the socket
#   scripts/containerd.sh stop  [DIR]    stop it by PID and remove what runc leaves in cgroupfs
#
# Export CEVAL_CONTAINERD_ADDRESS=DIR/containerd.sock to point ceval and its tests at it.
#
# Rootless (containerd inside rootlesskit as an unprivileged USER; see docs/rootless.md):
#   scripts/containerd.sh rootless-start USER DIR   as root: installs rootlesskit and uidmap (apt), creates
#                                        USER if missing and gives it a subordinate ID range of
#                                        (1 + CEVAL_ROOTLESS_SLICES, default 16) x 65536 IDs, then
#                                        starts it as USER; as USER: starts it (root steps done before).
#                                        Socket DIR/containerd.sock, rootlesskit state DIR/rootlesskit.
#   scripts/containerd.sh rootless-stop  USER DIR   kill its tasks, stop rootlesskit by PID, then kill
#                                        by PID anything left in its user namespace (shims).
#   (The strict limit mode's cgroup subtree is ceval's: sudo ceval rootless setup --user USER.)
set -euo pipefail

cmd=${1:-}
dir=${2:-${CEVAL_CONTAINERD_DIR:-/tmp/ceval-containerd}}
ns=${CEVAL_NAMESPACE:-ceval}

case "$cmd" in
install)
  missing=()
  extra=() # installed only when missing: python3-pytest; under CI, chromium (report/'s test loads report.html headless)
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /bin/busybox ] && file -L /bin/busybox 2>/dev/null | grep -q 'statically linked' || missing+=(busybox-static)
  command -v file >/dev/null || missing+=(file)
  [ -e /lib/ld-musl-x86_64.so.1 ] || missing+=(musl)         # images build-agent: claude's loader
  [ -x /bin/bash-static ] || missing+=(bash-static)           # images build-agent: /bin/bash
  command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)  # images build --packages, sandbox.packages
  command -v buildah >/dev/null || missing+=(buildah)        # images build -f Dockerfile
  [ -x /usr/sbin/nft ] || { missing+=(nftables); extra+=(nftables); } # task services: the relay's redirects
  [ -d /usr/lib/python3/dist-packages/pytest-7.2.1.dist-info ] || { missing+=(python3-pytest); extra+=(python3-pytest=7.2.1-2); } # wasm: pytest criteria
  [ -d /usr/lib/python3/dist-packages/exceptiongroup ] && [ -d /usr/lib/python3/dist-packages/tomli ] || { missing+=(python3-exceptiongroup); extra+=(python3-exceptiongroup python3-tomli); } # the pytest a Harbor verifier lends an image's python3 3.7-3.10
  if [ "${CI:-}" = true ] && ! command -v chromium >/dev/null; then missing+=(chromium); extra+=(chromium); fi
  if [ ${#missing[@]} -gt 0 ]; then
    "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" containerd runc busybox-static file musl bash-static mmdebstrap buildah "${extra[@]}"
  fi
  ;;
start)
  mkdir -p "$dir"
  # Search-only for everyone: runc, inside each run's own user namespace (host IDs that are
  # not root's), must traverse DIR/state to mount the container's rootfs. A 0700 DIR (mktemp -d)
  # fails every run with "error preparing rootfs: ... permission denied".
  chmod 0711 "$dir"
  sock="$dir/containerd.sock"
  if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    echo "$sock"; exit 0
  fi
  cat >"$dir/config.toml" <<CONF
version = 2
root = "$dir/root"
state = "$dir/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
CONF
  containerd -c "$dir/config.toml" >"$dir/containerd.log" 2>&1 &
  echo $! >"$dir/pid"
  for _ in $(seq 1 100); do
    if [ -S "$sock" ] && ctr --address "$sock" version >/dev/null 2>&1; then
      echo "$sock"; exit 0
    fi
    sleep 0.1
  done
  echo "containerd did not come up; see $dir/containerd.log" >&2
  tail -20 "$dir/containerd.log" >&2 || true
  exit 1
  ;;
stop)
  if [ -f "$dir/pid" ]; then
    pid=$(cat "$dir/pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/pid"
  fi
  # runc leaves empty per-namespace cgroup directories behind (cgroup v1).
  for d in /sys/fs/cgroup/*/"$ns"* /sys/fs/cgroup/"$ns"*; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  ;;
rootless-start|rootless-stop|_rootless-start|_rootless-stop)
  . "$(dirname "$0")/rootless.sh"
  rootless_main "$@"
  ;;
*)
  sed -n '2,20p' "$0" >&2
  exit 2
  ;;
esac
