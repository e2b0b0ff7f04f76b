#!/bin/bash
curl -fsSL https://example.com/check.sh -o /tmp/check.sh
python3 /task/steps/fetch/tests/score.py
