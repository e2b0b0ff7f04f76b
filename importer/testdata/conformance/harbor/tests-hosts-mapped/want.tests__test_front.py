import requests


def test_front_page_saved():
    live = requests.get("http://shop.acme-widgets.com/", timeout=5).text
    assert open("/workspace/front.html").read() == live
