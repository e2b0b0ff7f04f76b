"""A small MCP server for ceval's tests: Debian's python3 only, no SDK.

  python3 server.py --http PORT [PATH]   MCP streamable HTTP (JSON answers, no SSE stream)
  python3 server.py --stdio              MCP over stdin/stdout, one JSON-RPC message a line

Tools: add {a, b} answers a+b; secret {} answers the server's secret (SECRET in its
environment). Every call is logged to stderr as "CALLED NAME ARGS" (the service's log).
"""
import http.server
import json
import os
import sys

TOOLS = [
    {"name": "add", "description": "Add two integers.",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}},
    {"name": "secret", "description": "Return the server's secret.",
     "inputSchema": {"type": "object", "properties": {}}},
]


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def call(name, args):
    log("CALLED", name, json.dumps(args, sort_keys=True))
    if name == "add":
        return str(int(args["a"]) + int(args["b"]))
    if name == "secret":
        return os.environ.get("SECRET", "no secret")
    raise KeyError(name)


def handle(msg):
    """The answer to one JSON-RPC message, or None for a notification."""
    mid, method, params = msg.get("id"), msg.get("method"), msg.get("params") or {}
    if mid is None:
        return None
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {"listChanged": False}},
                  "serverInfo": {"name": "ceval-test", "version": "1.0"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        try:
            result = {"content": [{"type": "text", "text": call(params.get("name"), params.get("arguments") or {})}], "isError": False}
        except Exception as e:  # the tool's own failure, reported as MCP says
            result = {"content": [{"type": "text", "text": "error: %r" % (e,)}], "isError": True}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no method " + str(method)}}
    return {"jsonrpc": "2.0", "id": mid, "result": result}


def answer(body):
    msgs = body if isinstance(body, list) else [body]
    out = [a for a in (handle(m) for m in msgs) if a is not None]
    if not out:
        return None
    return out if isinstance(body, list) else out[0]


class HTTP(http.server.BaseHTTPRequestHandler):
    path_ = "/mcp"

    def do_POST(self):
        if self.path.split("?")[0] != self.path_:
            self.send_error(404)
            return
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"null")
        out = answer(body)
        if out is None:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Mcp-Session-Id", "ceval-test-session")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # no server-initiated stream
        self.send_response(405)
        self.send_header("Allow", "POST")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_DELETE = do_GET

    def log_message(self, fmt, *args):
        log("HTTP", fmt % args)


def main():
    if sys.argv[1:2] == ["--http"]:
        HTTP.path_ = sys.argv[3] if len(sys.argv) > 3 else "/mcp"
        log("serving MCP over HTTP on port", sys.argv[2], "at", HTTP.path_)
        http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), HTTP).serve_forever()
    elif sys.argv[1:2] == ["--stdio"]:
        log("serving MCP over stdio")
        for line in sys.stdin:
            if line.strip():
                out = answer(json.loads(line))
                if out is not None:
                    sys.stdout.write(json.dumps(out) + "\n")
                    sys.stdout.flush()
        log("stdio session ended")
    else:
        sys.exit("usage: server.py --http PORT [PATH] | --stdio")


if __name__ == "__main__":
    main()
