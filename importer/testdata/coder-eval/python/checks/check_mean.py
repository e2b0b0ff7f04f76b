import sys

sys.path.insert(0, ".")
from stats import mean  # noqa: E402

if mean([1, 2, 3, 6]) != 3:
    sys.exit("mean([1, 2, 3, 6]) is not 3")
print("mean ok")
