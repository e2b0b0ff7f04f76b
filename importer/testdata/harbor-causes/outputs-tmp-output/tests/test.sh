#!/bin/sh
# The answers live outside the WORKDIR.
mkdir -p /logs/verifier
if grep -qx ydaer /output/status.txt 2>/dev/null && grep -qx 42 "/tmp/answer.txt" 2>/dev/null; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "missing /output/status.txt or /tmp/answer.txt" >&2
  echo 0 > /logs/verifier/reward.txt
fi
