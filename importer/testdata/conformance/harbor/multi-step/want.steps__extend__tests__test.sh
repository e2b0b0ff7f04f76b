#!/bin/bash
mkdir -p /tmp/logs/verifier
. /task/steps/extend/tests/helpers.sh
[ "$EXPECTED_NAME" = ceval ] || fail
[ "$(cat /workspace/greeting.txt 2>/dev/null)" = "$(cat /task/steps/extend/tests/expected.txt)" ] && pass
fail
