#!/bin/bash
mkdir -p /tmp/logs/verifier
if grep -qx 42 /workspace/sum.txt; then
  echo 1 > /tmp/logs/verifier/reward.txt
else
  echo 0 > /tmp/logs/verifier/reward.txt
fi
