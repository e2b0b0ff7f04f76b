import os


def test_walk_then_fail():
    n = sum(len(files) for _, _, files in os.walk("/workspace"))
    assert n < 0
