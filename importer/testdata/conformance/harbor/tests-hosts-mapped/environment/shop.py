from http.server import HTTPServer, SimpleHTTPRequestHandler

HTTPServer(("127.0.0.1", 80), SimpleHTTPRequestHandler).serve_forever()
