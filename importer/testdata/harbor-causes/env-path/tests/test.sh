#!/bin/sh
# fortune is found through the image's ENV PATH, here as for the agent.
mkdir -p /logs/verifier
if [ -s /app/fortune.txt ] && [ "$(fortune)" = "$(cat /app/fortune.txt)" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "fortune.txt does not hold fortune's output" >&2
  echo 0 > /logs/verifier/reward.txt
fi
