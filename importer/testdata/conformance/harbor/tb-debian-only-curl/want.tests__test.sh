#!/bin/bash
# ceval: the install preamble (apt-get curl, uv from astral.sh, pip) below runs only when this
# image's python3 lacks pytest or a package the tests install; with them, uvx/uv run pytest
# becomes python3 -m pytest, offline. An image whose python3 (3.7 to 3.13) has no pytest runs
# ceval's own, which ceval's verifier mounts read-only where $CEVAL_PYTEST says.
CEVAL_OFFLINE_PYTEST=
ceval_rc=0
ceval_missing=$(python3 -c '
import sys, os
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0] # the working directory (the workspace, say): no pytest of the agent counts
own = 0
try:
    import pytest
except Exception:
    p = os.environ.get("CEVAL_PYTEST", "")
    if p and not (3, 7) <= sys.version_info[:2] <= (3, 13):
        print("pytest (the pytest lent at %s runs in python3 3.7 to 3.13, not %d.%d)" % (p, sys.version_info[0], sys.version_info[1])); sys.exit(1)
    if not p:
        print("pytest"); sys.exit(1)
    sys.path.append(p)
    try:
        import pytest
    except Exception as e:
        print("pytest (the pytest lent at %s does not import in this python3 %d.%d: %r)" % (p, sys.version_info[0], sys.version_info[1], e)); sys.exit(1)
    own = 2
from importlib import metadata
m = []
for d in sys.argv[1:]:
    try:
        metadata.version(d)
    except Exception:
        m.append(d)
print(" ".join(m)); sys.exit(1 if m else own)
' 2>/dev/null) || ceval_rc=$?
case $ceval_rc in
  0) CEVAL_OFFLINE_PYTEST=1 ;;
  2) CEVAL_OFFLINE_PYTEST=$CEVAL_PYTEST
     echo "ceval: the image's python3 has no pytest: the tests run with ceval's own (Debian's pytest 7.2.1, read-only at $CEVAL_PYTEST)" >&2 ;;
  127) echo "ceval: the image has no python3, which test.sh's pytest needs: its original install lines run, which need root and the network (verifier_network: host); offline, give the image python3 (RUN apt-get install -y python3)" >&2 ;;
  *) if [ "$ceval_missing" = pytest ] && [ -z "${CEVAL_PYTEST:-}" ]; then ceval_missing="pytest (and ceval lends none: its host lacks python3-pytest)"; fi
     echo "ceval: the image's python3 lacks ${ceval_missing:-pytest}, which test.sh installs at test time: its original install lines run, which need root and the network (verifier_network: host)" >&2 ;;
esac
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
  if [ "$CEVAL_OFFLINE_PYTEST" = 1 ]; then python3 -m pytest "$@"; return; fi
  python3 -c '
import sys, os
cwd = sys.path.pop(0) if sys.path and sys.path[0] in ("", os.getcwd()) else None
sys.path.append(sys.argv.pop(1))
import pytest, _pytest, pluggy, _pytest.config, _pytest.main, _pytest.python, _pytest.runner, _pytest.reports, _pytest.junitxml
if cwd is not None:
    sys.path.insert(0, cwd) # as python3 -m pytest has it, once pytest came from the lent directory
sys.argv[0] = "pytest"
sys.exit(pytest.console_main())' "$CEVAL_OFFLINE_PYTEST" "$@"
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
# Written for ceval's conformance corpus: the Terminal-Bench variant that installs the
# installer's tools only on Debian, a pinned uv, --ctrf, the status kept in a variable.
if [ -f /etc/debian_version ]; then
    [ -n "$CEVAL_OFFLINE_PYTEST" ] || { apt-get update && apt-get install -y curl; }
fi

[ -n "$CEVAL_OFFLINE_PYTEST" ] || { curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh; }
[ -n "$CEVAL_OFFLINE_PYTEST" ] || { source $HOME/.local/bin/env; }

ceval_uvx \
  -p 3.12 \
  -w pytest==8.4.1 \
  -w pytest-json-ctrf==0.3.5 \
  pytest --ctrf /tmp/logs/verifier/ctrf.json /task/tests/test_outputs.py -rA

RESULT=$?

if [ $RESULT -eq 0 ]; then
  echo 1 > /tmp/logs/verifier/reward.txt
else
  echo 0 > /tmp/logs/verifier/reward.txt
fi

exit 0
