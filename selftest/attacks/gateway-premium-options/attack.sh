. ./lib.sh
# The provider's answer says which premium options reached it: premium-reached: ...
try() {
	printf '%s' "$1" >/tmp/req.json
	shift
	wget -q -O /tmp/ans --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" "$@" --post-file /tmp/req.json "$CEVAL_GATEWAY_URL/v1/messages?beta=true"
	rc=$?
	cat /tmp/ans 2>/dev/null
	grep -q premium-reached /tmp/ans 2>/dev/null && proof "$(grep -o 'premium-reached[^"]*' /tmp/ans)"
	rm -f /tmp/ans
	return $rc
}
M='"model":"any","max_tokens":64'
U='"messages":[{"role":"user","content":"hi"}]'
attempt "priority service tier" try "{$M,$U,\"service_tier\":\"auto\"}"
attempt "fast mode" try "{$M,$U,\"speed\":\"fast\"}"
attempt "inference geography" try "{$M,$U,\"inference_geo\":\"us\"}"
attempt "files-api beta header" try "{$M,$U}" --header "anthropic-beta: claude-code-20250219,files-api-2025-04-14"
attempt "1M-context beta header" try "{$M,$U}" --header "anthropic-beta: context-1m-2025-08-07"
attempt "a Files-API file_id document" try "{$M,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"document\",\"source\":{\"type\":\"file\",\"file_id\":\"file_011CNha8iCJcU1wXNR6q4V8w\"}}]}]}"
attempt "a remote MCP server (past the stripping, with the tools opted out)" try "{$M,$U,\"mcp_servers\":[{\"type\":\"url\",\"url\":\"https://example.com\",\"name\":\"x\"}]}"
attempt "a plain call is still answered" try "{$M,$U}"
