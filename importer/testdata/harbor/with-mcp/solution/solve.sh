#!/bin/sh
# The oracle speaks MCP itself: a tools/call of add over streamable HTTP.
wget -qO- --header 'Content-Type: application/json' --header 'Accept: application/json, text/event-stream' \
  --post-data '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":40}}}' \
  http://calc:8000/cgi-bin/rpc | sed -n 's/.*"text":"\([0-9]*\)".*/\1/p' > /app/sum.txt
