#!/bin/sh
python3 -m pytest /task/tests/test_front.py
if [ $? -eq 0 ]; then echo 1; else echo 0; fi > /tmp/logs/verifier/reward.txt
