#!/bin/bash
# One test for every step: each step's files are merged over these.
if [ -f /tests/word.txt ]; then
  [ "$(cat /app/two.txt)" = "$(cat /tests/word.txt)" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
else
  [ -f /app/one.txt ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
fi
