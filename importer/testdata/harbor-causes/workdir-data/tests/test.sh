#!/bin/sh
# The data was COPYed into the image's WORKDIR; the agent must have seen it.
mkdir -p /logs/verifier
if [ "$(cat /app/sum.txt 2>/dev/null)" = "100" ] && [ -s /app/numbers.txt ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "sum.txt is not 100" >&2
  echo 0 > /logs/verifier/reward.txt
fi
