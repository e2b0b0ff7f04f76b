#!/bin/sh
python3 /tests/judge.py > /logs/verifier/reward.txt
