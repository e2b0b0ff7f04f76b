#!/bin/bash
mkdir -p /logs/verifier
. /tests/helpers.sh
[ "$EXPECTED_NAME" = ceval ] || fail
[ "$(cat /app/greeting.txt 2>/dev/null)" = "$(cat /tests/expected.txt)" ] && pass
fail
