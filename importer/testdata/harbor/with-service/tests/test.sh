#!/bin/bash
mkdir -p /logs/verifier
if grep -q 'the answer is 42' /app/quote.txt; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
