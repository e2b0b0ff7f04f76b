#!/bin/sh
# the widget clock must answer before the tests run
nc -z -w 3 clock.acme-widgets.com 123 || exit 1
python3 -m pytest /tests/test_status.py
if [ $? -eq 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
