#!/bin/sh
# Written for ceval's tests: pytest installed with uv pip, then uv run.
set -e
curl -LsSf https://astral.sh/uv/install.sh | sh
. $HOME/.cargo/env
uv pip install --system "pytest==8.4.1" pytest-timeout

set +e
uv run --with pytest pytest @TESTS@/test_outputs.py -q
status=$?
mkdir -p @LOGS@
[ $status -eq 0 ] && echo 1 > @LOGS@/reward.txt || echo 0 > @LOGS@/reward.txt
exit 0
