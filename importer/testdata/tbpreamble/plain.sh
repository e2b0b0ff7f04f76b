#!/bin/bash
# Written for ceval's tests: no installer, no uv: left alone.
python3 -m pytest @TESTS@/test_outputs.py && echo 1 > @LOGS@/reward.txt || echo 0 > @LOGS@/reward.txt
