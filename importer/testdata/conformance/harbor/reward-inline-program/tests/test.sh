#!/bin/bash
# Written for ceval's conformance corpus: the named rewards written by python3 -c itself.
exact=0
[ "$(cat /app/answer.txt)" = 42 ] && exact=1
python3 -c "
import json
json.dump({'exact': $exact}, open('/logs/verifier/reward.json', 'w'))
"
