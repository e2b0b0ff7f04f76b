. ./lib.sh
printf '%s' '{"model":"any","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"ceval-selftest-slow"}]}' >/tmp/slow.json
wget -q -O /dev/null --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file /tmp/slow.json "$CEVAL_GATEWAY_URL/v1/messages" 2>/dev/null &
printf '%s' '{"model":"any","max_tokens":64,"messages":[{"role":"user","content":"selftest-after-slow"}]}' >/tmp/after.json
# The provider answers this call only once it holds the slow one: then that call is under way.
attempt "start a call the provider answers slowly, and wait until the provider has it" wget -q -O - --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file /tmp/after.json "$CEVAL_GATEWAY_URL/v1/messages"
info "now waiting to be killed at the timeout with the call under way"
exec sleep 600
