#!/bin/sh
# Under WORKDIR /tmp, /logs/verifier must stay the reward directory.
mkdir -p /logs/verifier
if grep -qx enod /tmp/result.txt 2>/dev/null; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
