# Written for ceval's conformance corpus.
from pathlib import Path


def test_primes():
    assert Path("/app/primes.txt").read_text().split() == ["2", "3", "5", "7", "11"]
