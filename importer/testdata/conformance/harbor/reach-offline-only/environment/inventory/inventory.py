import json
import openai_compat_schema_free  # not a model SDK: a name that starts like one
from http.server import BaseHTTPRequestHandler, HTTPServer

# The public twin is https://inventory.acme-widgets.com/items (see NOTES.md).
HOMEPAGE = "https://inventory.acme-widgets.com/"  # shown in replies, never fetched
items = []


class Items(BaseHTTPRequestHandler):
    def do_POST(self):
        items.append(self.rfile.read(int(self.headers["Content-Length"])).decode())
        self.send_response(204)
        self.end_headers()

    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(json.dumps({"items": items, "home": HOMEPAGE}).encode())


HTTPServer(("0.0.0.0", 7100), Items).serve_forever()
