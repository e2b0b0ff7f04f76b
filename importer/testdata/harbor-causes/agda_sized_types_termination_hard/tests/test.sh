#!/bin/sh
# The task id has underscores: its container ID must still be valid.
mkdir -p /logs/verifier
if grep -qx setanimret /app/verdict.txt 2>/dev/null; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
