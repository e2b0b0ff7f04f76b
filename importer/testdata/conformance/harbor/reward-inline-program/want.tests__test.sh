#!/bin/bash
# Written for ceval's conformance corpus: the named rewards written by python3 -c itself.
exact=0
[ "$(cat /workspace/answer.txt)" = 42 ] && exact=1
python3 -c "
import json
json.dump({'exact': $exact}, open(1, 'w'))
" > /tmp/logs/verifier/reward.json
