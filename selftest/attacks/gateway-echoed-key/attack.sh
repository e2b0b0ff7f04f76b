. ./lib.sh
printf '%s' '{"model":"any","max_tokens":64,"messages":[{"role":"user","content":"ceval-selftest-echo"}]}' >/tmp/req.json
# wget -S prints the answer's headers; the provider puts the key in Request-Id and the text.
attempt "a 200 answer whose body and headers echo the provider key" sh -c 'wget -S -O /tmp/ans --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file /tmp/req.json "$CEVAL_GATEWAY_URL/v1/messages" 2>/tmp/hdrs; rc=$?; cat /tmp/hdrs /tmp/ans; exit $rc'
hunt_file /tmp/ans /tmp/hdrs
report
