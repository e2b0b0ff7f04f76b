#!/bin/sh
mkdir -p /tmp/logs/verifier
if [ -s /workspace/notes.txt ]; then echo 1; else echo 0; fi > /tmp/logs/verifier/reward.txt
