#!/usr/bin/env bash
# make setup's one line about a system containerd (Debian's service: socket and state in
# /run/containerd), printed only when its socket exists. make test and make demo keep using the
# private daemon (PRIVATE_SOCK): the tests make and delete namespaces, images and containers,
# and ceval gc sweeps, which belong on a daemon of ceval's own, never the system's. A plain
# bin/ceval picks the system socket when it is there, so the line says what that means.
#
#   scripts/system-containerd.sh PRIVATE_SOCK
set -euo pipefail
priv=${1:?usage: scripts/system-containerd.sh PRIVATE_SOCK}
sock=/run/containerd/containerd.sock
[ -S "$sock" ] || exit 0
pick="export CEVAL_CONTAINERD_ADDRESS=$priv for bin/ceval to use the private one too"
if ! ctr --address "$sock" version >/dev/null 2>&1; then
  echo "setup: $sock exists but no containerd answers there, and a plain bin/ceval would pick it: $pick"
elif [ "$(( 0$(stat -c %a /run/containerd) & 1 ))" = 0 ]; then
  echo "setup: a system containerd runs at $sock (make test and make demo use the private one at $priv, whose state is ceval's own); its state /run/containerd is 0$(stat -c %a /run/containerd), so bin/ceval refuses it: chmod o+x /run/containerd, or $pick"
else
  echo "setup: a system containerd runs at $sock (make test and make demo use the private one at $priv, whose state is ceval's own); a plain bin/ceval uses the system one ($pick)"
fi
