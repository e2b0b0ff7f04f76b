#!/usr/bin/env bash
# One CI evaluation, the steps examples/ci/ call and .ci/run tests: containerd, caches,
# images, an experiment run, artifacts, a Markdown summary and the gate.
#
#   scripts/ci-eval.sh EXPERIMENT [-- CEVAL RUN FLAGS...]
#
# Environment (all optional):
#   CEVAL                     ceval binary (default: bin/ceval, built from this checkout)
#   CEVAL_CI_OUT              output directory (default: ceval-ci): runs/, summary.json, junit.xml,
#                             report.html, summary.md, compare.md
#   CEVAL_BASELINE            a previous run's directory or summary.json: the gate is then
#                             `ceval compare` (exit 1 on a regression the evidence supports)
#   CEVAL_FAIL_UNDER          also exit 1 when a variant's pass rate is under this (0 to 1)
#   CEVAL_ALLOW_PLAN_CHANGE   true: compare what both runs share when the plans differ
#   CEVAL_CONTAINERD_ADDRESS  use this containerd (the runner's); without it, a private one is
#                             installed and started by scripts/containerd.sh (needs root)
#   CEVAL_CACHE_DIR           persistent cache: XDG_CACHE_HOME for compiled WASM modules, and
#                             images/*.tar imported before the run (OCI or docker-save archives)
#   GITHUB_STEP_SUMMARY       set by GitHub Actions: the Markdown goes to the job summary too
#
# Exit: the gate's code (0 pass, 1 regression or under the rate), 2 invalid input or a
# refused plan change, 3 infrastructure (containerd, images, ERROR/NOT_GRADED runs).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
exp=${1:?usage: scripts/ci-eval.sh EXPERIMENT [-- CEVAL RUN FLAGS...]}
shift
[ "${1:-}" = -- ] && shift
out=${CEVAL_CI_OUT:-ceval-ci}
ceval=${CEVAL:-}
if [ -z "$ceval" ]; then
  if [ ! -d "$here/cmd/ceval" ]; then
    echo "ci-eval: set CEVAL to the ceval binary (go install ceval.dev/ceval/cmd/ceval@VERSION)" >&2
    exit 2
  fi
  (cd "$here" && go build -o bin/ceval ./cmd/ceval) # this checkout's ceval, never a stale one
  ceval="$here/bin/ceval"
fi

if [ -n "${CEVAL_CACHE_DIR:-}" ]; then
  mkdir -p "$CEVAL_CACHE_DIR" && chmod 700 "$CEVAL_CACHE_DIR"
  export XDG_CACHE_HOME="$CEVAL_CACHE_DIR"
fi

ctrd_dir=""
cleanup() {
  if [ -n "$ctrd_dir" ]; then
    "$here/scripts/containerd.sh" stop "$ctrd_dir" || true
    rm -rf "$ctrd_dir" 2>/dev/null || true
  fi
}
trap cleanup EXIT
if [ -n "${CEVAL_CONTAINERD_ADDRESS:-}" ] && [ -S "$CEVAL_CONTAINERD_ADDRESS" ]; then
  echo "ci-eval: containerd at $CEVAL_CONTAINERD_ADDRESS"
elif [ "$(id -u)" = 0 ]; then
  ctrd_dir="$(mktemp -d /tmp/ceval-ci-eval-XXXXXX)"
  "$here/scripts/containerd.sh" install
  export CEVAL_CONTAINERD_ADDRESS
  CEVAL_CONTAINERD_ADDRESS="$("$here/scripts/containerd.sh" start "$ctrd_dir")"
  echo "ci-eval: private containerd at $CEVAL_CONTAINERD_ADDRESS"
else
  echo "ci-eval: no containerd socket at CEVAL_CONTAINERD_ADDRESS and not root to start one: set CEVAL_CONTAINERD_ADDRESS to the runner's containerd, or run as root" >&2
  exit 3
fi

if [ -n "${CEVAL_CACHE_DIR:-}" ] && [ -d "$CEVAL_CACHE_DIR/images" ]; then
  for archive in "$CEVAL_CACHE_DIR"/images/*.tar; do
    [ -f "$archive" ] && "$ceval" images import "$archive"
  done
fi

rm -rf "$out/runs"
mkdir -p "$out/runs"
run_rc=0
"$ceval" run "$exp" --runs-dir "$out/runs" ${CEVAL_FAIL_UNDER:+--fail-under "$CEVAL_FAIL_UNDER"} "$@" || run_rc=$?
case $run_rc in
0 | 1) ;; # the agents' failures are data; the gate below decides
*)
  echo "ci-eval: ceval run exited $run_rc" >&2
  exit "$run_rc"
  ;;
esac
runs=("$out"/runs/*/)
if [ ${#runs[@]} -ne 1 ] || [ ! -f "${runs[0]}summary.json" ]; then
  echo "ci-eval: want one experiment run in $out/runs, found: ${runs[*]}" >&2
  exit 3
fi
run_dir="${runs[0]%/}"
cp "$run_dir/summary.json" "$run_dir/junit.xml" "$run_dir/report.html" "$out/"
"$ceval" report "$run_dir" --format markdown >"$out/summary.md"
md=("$out/summary.md")

gate=$run_rc
if [ -z "${CEVAL_FAIL_UNDER:-}" ]; then
  gate=0 # without --fail-under, run's 1 only says some run failed
fi
if [ -n "${CEVAL_BASELINE:-}" ]; then
  gate=0
  flags=()
  [ -n "${CEVAL_FAIL_UNDER:-}" ] && flags+=(--fail-under "$CEVAL_FAIL_UNDER")
  [ "${CEVAL_ALLOW_PLAN_CHANGE:-}" = true ] && flags+=(--allow-plan-change)
  "$ceval" compare --format markdown "${flags[@]}" "$CEVAL_BASELINE" "$run_dir" >"$out/compare.md" || gate=$?
  if [ "$gate" -ge 2 ]; then
    exit "$gate" # the reason is on stderr
  fi
  "$ceval" compare --fail-on none "${flags[@]}" "$CEVAL_BASELINE" "$run_dir" || true # the table, in the log
  md=("$out/compare.md" "$out/summary.md")
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  cat "${md[@]}" >>"$GITHUB_STEP_SUMMARY"
fi
echo "ci-eval: gate exit $gate; artifacts in $out: summary.json junit.xml report.html ${md[*]##*/}"
exit "$gate"
