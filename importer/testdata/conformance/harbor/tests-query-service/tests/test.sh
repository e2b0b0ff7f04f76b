#!/bin/bash
# The answer lives in the notes service, not in the agent's files: ask the service.
mkdir -p /logs/verifier
stored=$(wget -qO- http://notes:5000/value.txt)
echo "the notes service holds: $stored"
if [ "$stored" = 42 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
