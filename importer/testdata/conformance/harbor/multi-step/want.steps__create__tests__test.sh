#!/bin/bash
mkdir -p /tmp/logs/verifier
. /task/steps/create/tests/helpers.sh
[ "$(cat /workspace/greeting.txt 2>/dev/null)" = "olleh" ] && pass
fail
