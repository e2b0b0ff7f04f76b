#!/bin/sh
python3 -m pytest /tests/test_front.py
if [ $? -eq 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
