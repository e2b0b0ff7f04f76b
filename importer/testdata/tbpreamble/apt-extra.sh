#!/bin/bash
# Written for ceval's tests: the tests need jq, which test.sh installs with apt-get.
apt-get update && apt-get install -y curl jq
curl -LsSf https://astral.sh/uv/0.9.7/install.sh | sh
source $HOME/.local/bin/env
uvx -w pytest pytest @TESTS@/test_outputs.py && echo 1 > @LOGS@/reward.txt || echo 0 > @LOGS@/reward.txt
