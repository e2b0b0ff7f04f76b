import socket
import subprocess
from urllib.request import urlopen

import requests

# Fixtures as in https://docs.pytest.org/en/stable/how-to/fixtures.html
DOCS = "https://pypi.org/project/requests/"  # named, never fetched


def status_of(host):
    out = subprocess.run(
        ["wget", "-q", "-O-",
         f"https://{host}/status"],
        capture_output=True, text=True,
    )
    return out.stdout.strip()


def test_status_file():
    assert open("/app/status.txt").read().strip() == "up"


def test_upstream_agrees():
    live = requests.get("https://status.acme-widgets.com/health", timeout=5)
    assert live.json()["state"] == "up"


def test_mirror():
    assert status_of("mirror.acme-widgets.net") == "up"


def test_local_server_is_not_the_internet():
    urlopen("http://localhost:8080/")  # loopback: fine offline
    socket.create_connection(("127.0.0.1", 9000), timeout=1).close()
