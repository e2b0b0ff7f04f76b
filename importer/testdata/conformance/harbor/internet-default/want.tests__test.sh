#!/bin/sh
if [ "$(cat /workspace/hello.txt 2>/dev/null)" = hello ]; then echo 1 > /tmp/logs/verifier/reward.txt; else echo 0 > /tmp/logs/verifier/reward.txt; fi
