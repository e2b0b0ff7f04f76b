#!/usr/bin/env bash
# `ceval run --backend kubernetes` on the test cluster: a trivial task's run beside a bare
# Pod of the same image created, watched and deleted through the API by the same process,
# interleaved (supervisor's TestKubeBench); then runs per minute of a 20-run experiment at
# -j 4. Uses the cluster CEVAL_KUBECONFIG names when it is set (make exports the one of
# make k8s-up, scripts/k8s.sh's default DIR); otherwise starts one with
# scripts/k8s.sh up in a temporary DIR (the build is cached) and stops it at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
BIN=${BIN:-bin/ceval}
GO=${GO:-go}
started=""
work=$(mktemp -d)
cleanup() {
  [ -z "$started" ] || scripts/k8s.sh down "$started" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
if [ -z "${CEVAL_KUBECONFIG:-}" ] || [ ! -f "$CEVAL_KUBECONFIG" ]; then
  started=$(mktemp -d /tmp/ceval-bench-k8s-XXXXXX)
  export CEVAL_KUBECONFIG
  CEVAL_KUBECONFIG=$(scripts/k8s.sh up "$started")
  export CEVAL_K8S_CONTAINERD_ADDRESS=$started/containerd.sock
fi
: "${CEVAL_K8S_CONTAINERD_ADDRESS:=$(dirname "$CEVAL_KUBECONFIG")/containerd.sock}"
export CEVAL_K8S_CONTAINERD_ADDRESS
CI=true CEVAL_BENCH_KUBE=1 "$GO" test -count=1 -run '^TestKubeBench$' -v ./supervisor | tee "$work/go.out"
grep '^BENCH	' "$work/go.out"

# Runs per minute: 20 trivial runs at -j 4 in namespace default, the images already in the
# node (TestKubeBench put them there).
ns=default
printf 'backend: kubernetes\nkubernetes:\n  kubeconfig: %s\n  namespace: %s\n  image_pull_policy: Never\n' "$CEVAL_KUBECONFIG" "$ns" >"$work/config.yaml"
cp bench/trivial.yaml "$work/"
printf 'experiment_id: bench-kube\ntasks: [trivial.yaml]\nrepeats: 20\n' >"$work/experiment.yaml"
t0=$(date +%s%N)
"$BIN" run --config "$work/config.yaml" --runs-dir "$work/runs" -j 4 "$work/experiment.yaml" >/dev/null 2>"$work/exp.err" || { cat "$work/exp.err"; exit 1; }
t1=$(date +%s%N)
rpm=$(awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.1f", 20 * 60e9 / ns }')
echo "20 runs at -j 4 on the cluster: $(( (t1 - t0) / 1000000 )) ms, $rpm runs per minute"
bench_row "ceval run --backend kubernetes, 20 runs at -j 4" "$rpm" - - "runs/min" -
