#!/bin/bash
# ceval: the install preamble (apt-get curl, uv from astral.sh) below runs only when this
# image's python3 lacks pytest; with it, uvx/uv run pytest becomes python3 -m pytest, offline.
CEVAL_OFFLINE_PYTEST=
if python3 -c 'import pytest' >/dev/null 2>&1; then CEVAL_OFFLINE_PYTEST=1; fi
ceval_uvx() {
  [ -n "$CEVAL_OFFLINE_PYTEST" ] || { uvx "$@"; return; }
  while [ $# -gt 0 ]; do
    case $1 in
      -p|--python|-w|--with|--from|--with-requirements|--with-editable|--index-url|--extra-index-url) [ $# -ge 2 ] || break; shift 2 ;;
      -*=*|-q|--quiet|--isolated|--no-cache|--offline|--no-project|--frozen|--locked|--active) shift ;;
      *) break ;;
    esac
  done
  case ${1:-} in
    pytest|py.test) shift ;;
    python|python3|python3.*)
      if [ "${2:-}" = -m ] && [ "${3:-}" = pytest ]; then shift 3; else echo "ceval: uvx runs $*, not pytest: run with verifier_network: host so uv can fetch it" >&2; return 127; fi ;;
    *) echo "ceval: uvx runs ${1:-nothing}, not pytest: run with verifier_network: host so uv can fetch it" >&2; return 127 ;;
  esac
  ceval_n=$#
  while [ "$ceval_n" -gt 0 ]; do
    ceval_a=$1; shift; ceval_n=$((ceval_n-1))
    case $ceval_a in
      --ctrf) [ "$ceval_n" -gt 0 ] && { shift; ceval_n=$((ceval_n-1)); } ;;
      --ctrf=*) ;;
      *) set -- "$@" "$ceval_a" ;;
    esac
  done
  python3 -m pytest "$@"
}
ceval_uv() {
  if [ -n "$CEVAL_OFFLINE_PYTEST" ] && [ "${1:-}" = run ]; then shift; ceval_uvx "$@"; return; fi
  uv "$@"
}
# Terminal-Bench style: fetch a runner, then run the tests
apt-get update && apt-get install -y curl jq
[ -n "$CEVAL_OFFLINE_PYTEST" ] || { curl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh; }
ceval_uvx -p 3.13 -w pytest==8.4.1 pytest /task/tests/test_outputs.py
if [ $? -eq 0 ]; then echo 1 > /tmp/logs/verifier/reward.txt; else echo 0 > /tmp/logs/verifier/reward.txt; fi
