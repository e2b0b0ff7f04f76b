import os
from http.server import BaseHTTPRequestHandler, HTTPServer

from openai import OpenAI

client = OpenAI(api_key=os.environ["OPENAI_API_KEY"])


class Ask(BaseHTTPRequestHandler):
    def do_GET(self):
        reply = client.responses.create(model="gpt-5-mini", input="Name a project.")
        self.send_response(200)
        self.end_headers()
        self.wfile.write(reply.output_text.encode())


HTTPServer(("0.0.0.0", int(os.environ["ADVISOR_PORT"])), Ask).serve_forever()
