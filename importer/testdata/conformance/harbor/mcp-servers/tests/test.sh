#!/bin/bash
mkdir -p /logs/verifier
if grep -qx 42 /app/sum.txt; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
