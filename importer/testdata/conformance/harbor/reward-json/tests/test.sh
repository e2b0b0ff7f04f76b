#!/bin/sh
ok=0; [ "$(cat /app/hello.txt 2>/dev/null)" = hello ] && ok=1
printf '{"correctness": %s, "style": 1}\n' "$ok" > /logs/verifier/reward.json
