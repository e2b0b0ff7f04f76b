def test_hello():
    assert open("/workspace/hello.txt").read().strip() == "hello"
