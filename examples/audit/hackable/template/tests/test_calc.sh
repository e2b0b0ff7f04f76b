#!/bin/sh
# The task's own test, shipped in the agent's workspace.
[ "$(sh calc.sh 2 3)" = 5 ] || { echo "calc.sh 2 3 is not 5"; exit 1; }
[ "$(sh calc.sh 10 -4)" = 6 ] || { echo "calc.sh 10 -4 is not 6"; exit 1; }
echo ok
