. ./lib.sh
req() { printf '{"model":"any","max_tokens":64,"messages":[{"role":"user","content":"%s"}]}' "$1" >"/tmp/$1.json"; }
post() { wget -q -O - --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file "/tmp/$1.json" "$CEVAL_GATEWAY_URL/v1/messages"; }
req hello; req selftest-429; req selftest-400; printf '{"model":"any","messages":[' >/tmp/broken.json
attempt "one answered call" post hello
flood() { for i in 1 2 3 4 5 6 7 8; do post selftest-429 >/dev/null 2>&1 & done; wait; post selftest-429; }
attempt "a flood the provider answers 429 (after the gateway's retries)" flood
attempt "a request the provider rejects (400)" post selftest-400
attempt "a body that is not JSON (the gateway's 400)" post broken
attempt "a field the gateway does not forward" sh -c 'printf "%s" "{\"model\":\"any\",\"max_tokens\":9,\"messages\":[],\"speed\":\"fast\"}" >/tmp/f.json; wget -q -O - --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file /tmp/f.json "$CEVAL_GATEWAY_URL/v1/messages"'
half() { { printf 'POST /v1/messages HTTP/1.1\r\nHost: gw\r\nx-api-key: %s\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{"model":' "$CEVAL_GATEWAY_KEY"; } | timeout 3 nc 127.0.0.1 80; }
attempt "a connection closed half way through its request" half
exit 1
