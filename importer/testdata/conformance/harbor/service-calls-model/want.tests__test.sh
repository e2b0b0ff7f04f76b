#!/bin/sh
python3 /task/tests/judge.py > /tmp/logs/verifier/reward.txt
