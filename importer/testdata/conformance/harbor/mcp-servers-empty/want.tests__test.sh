#!/bin/sh
mkdir -p /tmp/logs/verifier
if [ "$(cat /workspace/status.txt)" = done ]; then echo 1; else echo 0; fi > /tmp/logs/verifier/reward.txt
