#!/bin/bash
[ -f /app/one.txt ] && echo 1 > /logs/verifier/reward.txt
