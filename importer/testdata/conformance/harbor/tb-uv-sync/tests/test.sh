#!/bin/bash
# Written for ceval's conformance corpus: uv sync installs the tests' project, uv run runs pytest.
curl -LsSf https://astral.sh/uv/0.9.7/install.sh | sh
source $HOME/.local/bin/env
cd /tests
uv sync --frozen
uv run --project /tests pytest /tests/test_outputs.py -rA
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
