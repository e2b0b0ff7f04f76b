#!/bin/sh
mkdir -p /logs/verifier
if [ "$(cat /app/status.txt)" = done ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
