#!/bin/bash
[ -f /workspace/one.txt ] && echo 1 > /tmp/logs/verifier/reward.txt
