import json
import socket
import urllib.request

SERVICES = ["inventory", "localhost"]
README = "https://inventory.acme-widgets.com/docs"  # a link for people, never fetched


def get(host, port=7100):
    return urllib.request.urlopen(f"http://{host}:{port}/items", timeout=5)


def test_bolt_is_listed():
    items = json.load(get("inventory"))["items"]
    assert "bolt" in items


def test_loopback_and_service_names_stay_offline():
    socket.create_connection(("localhost", 7100), timeout=1).close()
    urllib.request.urlopen("http://127.0.0.1:7100/items", timeout=5)
    urllib.request.urlopen("http://[::1]:7100/items", timeout=5)
    urllib.request.urlopen("http://inventory:7100/items", timeout=5)
    # urllib.request.urlopen("https://inventory.acme-widgets.com/items")
