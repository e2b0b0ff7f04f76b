import requests
ok = requests.get("https://api.example.com/verify").ok
open("/tmp/logs/verifier/reward.txt", "w").write("1" if ok else "0")
