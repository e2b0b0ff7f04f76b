#!/bin/bash
# A test.sh in the Terminal-Bench 2 pattern, written for ceval's tests: apt-get curl, uv from
# astral.sh, then uvx with pinned pytest and the CTRF plugin.

apt-get update
apt-get install -y curl

curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh
source $HOME/.local/bin/env

set +e
uvx \
  -p 3.13 \
  -w pytest==8.4.1 \
  --with pytest-json-ctrf==0.3.5 \
  pytest --ctrf @LOGS@/ctrf.json @TESTS@/test_outputs.py -rA
code=$?

if [ $code -eq 0 ]; then
  echo 1 > @LOGS@/reward.txt
else
  echo 0 > @LOGS@/reward.txt
fi
exit 0
