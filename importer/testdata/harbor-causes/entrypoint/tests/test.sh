#!/bin/sh
# seed.txt exists only if the image's ENTRYPOINT ran before the agent.
mkdir -p /logs/verifier
if [ "$(cat /app/reversed.txt 2>/dev/null)" = "1284-dees" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "reversed.txt is not 1284-dees" >&2
  echo 0 > /logs/verifier/reward.txt
fi
