#!/bin/bash
# ceval: the install preamble (apt-get curl, uv from astral.sh, pip) below runs only when this
# image's python3 lacks pytest or a package the tests install; with them, uvx/uv run pytest
# becomes python3 -m pytest, offline.
CEVAL_OFFLINE_PYTEST=
if ceval_missing=$(python3 -c '
import sys
try:
    import pytest
except Exception:
    print("pytest"); sys.exit(1)
from importlib import metadata
m = []
for d in sys.argv[1:]:
    try:
        metadata.version(d)
    except Exception:
        m.append(d)
print(" ".join(m)); sys.exit(1 if m else 0)
' numpy pytest-timeout pyyaml 2>/dev/null); then CEVAL_OFFLINE_PYTEST=1
else echo "ceval: the image's python3 lacks ${ceval_missing:-pytest (or python3)}, which test.sh installs at test time: its original install lines run, which need root and the network (verifier_network: host)" >&2
fi
ceval_uvx() {
  [ -n "$CEVAL_OFFLINE_PYTEST" ] || { uvx "$@"; return; }
  while [ $# -gt 0 ]; do
    case $1 in
      -p|--python|-w|--with|--from|--with-requirements|--with-editable|--index-url|--extra-index-url|--project|--directory|--group|--extra) [ $# -ge 2 ] || break; shift 2 ;;
      -*=*|-q|--quiet|--isolated|--no-cache|--offline|--no-project|--frozen|--locked|--active|--all-extras|--all-groups|--dev|--no-dev|--no-sync|--system) shift ;;
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
  if [ -n "$CEVAL_OFFLINE_PYTEST" ]; then
    case ${1:-} in
      run) shift; ceval_uvx "$@"; return ;;
      sync|pip|add|venv) return 0 ;; # the image has what they would install
    esac
  fi
  uv "$@"
}
# Written for ceval's conformance corpus: uv sync installs the tests' project, uv run runs pytest.
[ -n "$CEVAL_OFFLINE_PYTEST" ] || { curl -LsSf https://astral.sh/uv/0.9.7/install.sh | sh; }
[ -n "$CEVAL_OFFLINE_PYTEST" ] || { source $HOME/.local/bin/env; }
cd /task/tests
ceval_uv sync --frozen
ceval_uv run --project /task/tests pytest /task/tests/test_outputs.py -rA
if [ $? -eq 0 ]; then echo 1 > /tmp/logs/verifier/reward.txt; else echo 0 > /tmp/logs/verifier/reward.txt; fi
