. ./lib.sh
printf '%s' '{"model":"any","max_tokens":64,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"Bash","input_schema":{}}]}' >/tmp/req.json
attempt "ask the replay gateway, whose fixture was swapped for a host file" sh -c 'wget -q -O - --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file /tmp/req.json "$CEVAL_GATEWAY_URL/v1/messages" | tee -a /tmp/seen'
attempt "read the plugin, whose source was swapped for a host directory" sh -c 'cat /opt/ceval/plugins/kit/skills/*/SKILL.md /opt/ceval/plugins/kit/commands/* 2>&1 | tee -a /tmp/seen'
grep -h "$P" /tmp/seen >>"$FOUND" 2>/dev/null
report
