#!/bin/bash
# Terminal-Bench style: fetch a runner, then run the tests
apt-get update && apt-get install -y curl jq
curl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh
uvx -p 3.13 -w pytest==8.4.1 pytest /tests/test_outputs.py
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
