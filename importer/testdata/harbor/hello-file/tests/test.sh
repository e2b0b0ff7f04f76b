#!/bin/bash
# Harbor copies tests/ to /tests and reads the reward from /logs/verifier.
mkdir -p /logs/verifier
if cmp -s /tests/expected.txt /app/hello.txt; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "hello.txt differs from /tests/expected.txt" >&2
  echo 0 > /logs/verifier/reward.txt
fi
