#!/bin/sh
# Written for ceval's conformance corpus: the tests' packages from a requirements file.
curl -LsSf https://astral.sh/uv/install.sh | sh
. $HOME/.local/bin/env
python3 -m pip install --break-system-packages -r /tests/requirements.txt
uv run pytest /tests/test_outputs.py -q && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
