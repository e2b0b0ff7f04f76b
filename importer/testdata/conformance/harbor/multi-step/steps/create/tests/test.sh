#!/bin/bash
mkdir -p /logs/verifier
. /tests/helpers.sh
[ "$(cat /app/greeting.txt 2>/dev/null)" = "olleh" ] && pass
fail
