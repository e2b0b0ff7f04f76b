import numpy
import yaml


def test_numbers():
    got = numpy.loadtxt("/app/numbers.txt")
    assert sorted(got.tolist()) == [1.0, 2.0, 3.0]
    assert yaml.safe_load("n: 3")["n"] == len(got)
