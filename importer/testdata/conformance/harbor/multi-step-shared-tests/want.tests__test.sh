#!/bin/bash
# One test for every step: each step's files are merged over these.
if [ -f /task/tests/word.txt ]; then
  [ "$(cat /workspace/two.txt)" = "$(cat /task/tests/word.txt)" ] && echo 1 > /tmp/logs/verifier/reward.txt || echo 0 > /tmp/logs/verifier/reward.txt
else
  [ -f /workspace/one.txt ] && echo 1 > /tmp/logs/verifier/reward.txt || echo 0 > /tmp/logs/verifier/reward.txt
fi
