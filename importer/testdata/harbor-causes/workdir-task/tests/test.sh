#!/bin/sh
# Under WORKDIR /task, /tests must still be where the tests are.
mkdir -p /logs/verifier
. /tests/check.sh
