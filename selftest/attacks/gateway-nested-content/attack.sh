. ./lib.sh
# What the allowlist refuses at the top, nested deeper. The provider's answer says which
# premium options reached it: premium-reached: ...
try() {
	printf '%s' "$1" >/tmp/req.json
	wget -q -O /tmp/ans --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file /tmp/req.json "$CEVAL_GATEWAY_URL/v1/messages"
	rc=$?
	cat /tmp/ans 2>/dev/null
	grep -q premium-reached /tmp/ans 2>/dev/null && proof "$(grep -o 'premium-reached[^"]*' /tmp/ans)"
	rm -f /tmp/ans
	return $rc
}
M='"model":"any","max_tokens":64'
user() { printf '{%s,"messages":[{"role":"user","content":[%s]}]}' "$M" "$1"; }
URLIMG='{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}'
HOUR='{"type":"text","text":"x","cache_control":{"type":"ephemeral","ttl":"1h"}}'
FILE='{"type":"document","source":{"type":"file","file_id":"file_011CNha8iCJcU1wXNR6q4V8w"}}'
attempt "a url image in a document's content source" try "$(user '{"type":"document","source":{"type":"content","content":['"$URLIMG"']}}')"
attempt "an hour-long cache on a block inside a tool result" try "$(user '{"type":"tool_result","tool_use_id":"t","content":['"$HOUR"']}')"
attempt "an hour-long cache inside a document's content source" try "$(user '{"type":"document","source":{"type":"content","content":['"$HOUR"']}}')"
attempt "a Files-API document inside a tool result's document" try "$(user '{"type":"tool_result","tool_use_id":"t","content":[{"type":"document","source":{"type":"content","content":['"$FILE"']}}]}')"
attempt "a url image in a search result inside a tool result" try "$(user '{"type":"tool_result","tool_use_id":"t","content":[{"type":"search_result","source":"s","title":"t","content":['"$URLIMG"']}]}')"
attempt "a plain call is still answered" try "$(user '{"type":"text","text":"hi"}')"
