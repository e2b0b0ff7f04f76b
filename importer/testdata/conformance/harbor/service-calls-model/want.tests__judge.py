import os
import urllib.request

req = urllib.request.Request(
    "https://api.anthropic.com/v1/messages",
    headers={"x-api-key": os.environ.get("ANTHROPIC_API_KEY", "")},
)
name = open("/workspace/name.txt").read().strip()
print(1 if name and urllib.request.urlopen(req).status == 200 else 0)
