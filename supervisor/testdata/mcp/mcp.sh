#!/bin/sh
# A small MCP server for ceval's tests in busybox sh (no SDK, no python):
#   sh mcp.sh              MCP over stdin/stdout, one JSON-RPC message a line
#   (as www/cgi-bin/rpc)   one MCP streamable-HTTP POST as a busybox httpd CGI
# Tools: add {a, b} answers a+b; secret {} answers $SECRET. Each call is logged to stderr
# as "CALLED NAME ARGS" (the service's log).

field() { # field NAME JSON: the raw value of the last "NAME": in JSON (a number or a string)
	printf '%s' "$2" | sed -n "s/.*\"$1\" *: *\(\"[^\"]*\"\|[-0-9][0-9]*\).*/\1/p"
}

answer() { # answer JSON: prints the JSON-RPC answer, nothing for a notification
	echo "GOT $(field method "$1")" >&2
	id=$(field id "$1")
	[ -n "$id" ] || return 0
	case "$1" in
	*'"method"'*'"initialize"'*)
		pv=$(field protocolVersion "$1")
		result='{"protocolVersion":'"${pv:-\"2025-06-18\"}"',"capabilities":{"tools":{}},"serverInfo":{"name":"ceval-test","version":"1.0"}}' ;;
	*'"method"'*'"tools/list"'*)
		result='{"tools":[{"name":"add","description":"Add two integers.","inputSchema":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}},{"name":"secret","description":"Return the server'"'"'s secret.","inputSchema":{"type":"object","properties":{}}}]}' ;;
	*'"method"'*'"tools/call"'*'"add"'*)
		a=$(field a "$1") b=$(field b "$1")
		echo "CALLED add {\"a\": $a, \"b\": $b}" >&2
		result='{"content":[{"type":"text","text":"'$((a + b))'"}],"isError":false}' ;;
	*'"method"'*'"tools/call"'*'"secret"'*)
		echo "CALLED secret {}" >&2
		result='{"content":[{"type":"text","text":"'"$SECRET"'"}],"isError":false}' ;;
	*'"method"'*'"ping"'*)
		result='{}' ;;
	*)
		printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no such method"}}\n' "$id"
		return 0 ;;
	esac
	printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$id" "$result"
}

if [ -n "$REQUEST_METHOD" ]; then # a CGI of busybox httpd
	if [ "$REQUEST_METHOD" != POST ]; then
		printf 'HTTP/1.0 405 Method Not Allowed\r\nAllow: POST\r\nContent-Length: 0\r\n\r\n'
		exit 0
	fi
	out=$(answer "$(head -c "${CONTENT_LENGTH:-0}")")
	if [ -z "$out" ]; then
		printf 'HTTP/1.0 202 Accepted\r\nContent-Length: 0\r\n\r\n'
	else
		printf 'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' "$(printf '%s' "$out" | wc -c)" "$out"
	fi
	exit 0
fi
echo "serving MCP over stdio" >&2
while IFS= read -r line; do
	[ -n "$line" ] && answer "$line"
done
echo "stdio session ended" >&2
