#!/bin/sh
ok=0; [ "$(cat /workspace/hello.txt 2>/dev/null)" = hello ] && ok=1
printf '{"correctness": %s, "style": 1}\n' "$ok" > /tmp/logs/verifier/reward.json
