#!/usr/bin/env bash
# The README's test command (make test) N times in a row, each on a fresh clone, with everything
# the tests need started once beside them as .ci/run starts it (a private containerd, the test
# registry, the Kubernetes control plane), CI=true so a missing component fails. Issue 33's
# measure: "make test passes 5 times in a row on fresh clones under load and without".
#
#   scripts/clean-clone-runs.sh [--load] [-n N] [--rev REV] OUT
#
# --load runs `stress-ng --cpu 4 --io 2` (Debian's stress-ng) beside every run, stopped by PID.
# OUT gets one line per run in OUT/runs.tsv (run, rev, result, seconds, load average at the start
# and at the end) and each run's output in OUT/run-K.log. Stops at the first failure (exit 1),
# so "N in a row" means what it says. Run as root, like .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
load=0 n=5 rev=HEAD
while [ $# -gt 1 ]; do
  case "$1" in
  --load) load=1; shift ;;
  -n) n=$2; shift 2 ;;
  --rev) rev=$2; shift 2 ;;
  *) echo "usage: $0 [--load] [-n N] [--rev REV] OUT" >&2; exit 2 ;;
  esac
done
[ $# = 1 ] || { echo "usage: $0 [--load] [-n N] [--rev REV] OUT" >&2; exit 2; }
out=$(realpath -m "$1")
mkdir -p "$out"
rev=$(git rev-parse "$rev")

export CI=true
work=$(mktemp -d /tmp/ceval-runs-XXXXXX)
chmod 0711 "$work" # runc in each run's user namespace traverses it to the containerd state below
export CEVAL_CONTAINERD_DIR="$work/containerd" K8S_DIR="$work/k8s" REGISTRY_DIR="$work/registry"
export CEVAL_CONTAINERD_ADDRESS="$CEVAL_CONTAINERD_DIR/containerd.sock"
export CEVAL_KUBECONFIG="$K8S_DIR/admin.kubeconfig" CEVAL_K8S_CONTAINERD_ADDRESS="$K8S_DIR/containerd.sock"
mkdir -p "$CEVAL_CONTAINERD_DIR" "$K8S_DIR" "$REGISTRY_DIR"
stress_pid=
cleanup() {
  [ -z "$stress_pid" ] || { kill "$stress_pid" 2>/dev/null; wait "$stress_pid" 2>/dev/null || true; }
  scripts/registry.sh stop "$REGISTRY_DIR" || true
  scripts/k8s.sh down "$K8S_DIR" || true
  scripts/containerd.sh stop "$CEVAL_CONTAINERD_DIR" || true
  rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT

scripts/containerd.sh install
scripts/registry.sh install
[ "$load" = 0 ] || command -v stress-ng >/dev/null || scripts/apt-install.sh stress-ng
scripts/k8s.sh up "$K8S_DIR" >"$out/k8s-up.log" 2>&1 || { tail -30 "$out/k8s-up.log" >&2; exit 1; }
scripts/containerd.sh start "$CEVAL_CONTAINERD_DIR" >/dev/null
registry_env=$(scripts/registry.sh start "$REGISTRY_DIR")
set -a; eval "$registry_env"; set +a
scripts/k8s.sh registry "$K8S_DIR" "$CEVAL_TEST_REGISTRY" "$CEVAL_TEST_REGISTRY_CA"
if [ "$load" = 1 ]; then
  stress-ng --cpu 4 --io 2 >"$out/stress-ng.log" 2>&1 &
  stress_pid=$!
fi

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
[ -e "$out/runs.tsv" ] || printf 'run\trev\tresult\tseconds\tload_start\tload_end\tstress\n' >"$out/runs.tsv"
for k in $(seq 1 "$n"); do
  clone="$work/clone-$k"
  git clone -q --no-hardlinks "$src" "$clone"
  git -C "$clone" checkout -q "$rev"
  l0=$(loadavg) t0=$(date +%s) result=pass
  (cd "$clone" && make test CTRD_DIR="$CEVAL_CONTAINERD_DIR" K8S_DIR="$K8S_DIR") >"$out/run-$k.log" 2>&1 || result=fail
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$k" "${rev:0:7}" "$result" "$(($(date +%s) - t0))" "$l0" "$(loadavg)" "$load" >>"$out/runs.tsv"
  rm -rf "$clone"
  tail -1 "$out/runs.tsv"
  [ "$result" = pass ] || { grep -E '^(--- FAIL|FAIL)' "$out/run-$k.log" | head -20 >&2; exit 1; }
done
