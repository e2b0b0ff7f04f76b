#!/bin/sh
# Two named rewards, as Harbor's reward.json allows.
mkdir -p /logs/verifier
c=0; p=0
if [ "$(cat /app/count.txt 2>/dev/null)" = "$(seq 1 5)" ]; then c=1; fi
if [ -f /app/count.txt ] && [ "$(wc -c < /app/count.txt)" -lt 100 ]; then p=1; fi
printf '{"correctness": %s, "performance": %s}\n' "$c" "$p" > /logs/verifier/reward.json
