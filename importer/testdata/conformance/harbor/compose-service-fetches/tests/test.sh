#!/bin/sh
mkdir -p /logs/verifier
if [ -s /app/notes.txt ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
