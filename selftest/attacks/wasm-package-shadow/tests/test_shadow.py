# The task's test: fails unless the workspace's six.py answers for the task's six.
import sys

sys.path.insert(0, "/workspace")
import six  # noqa: E402
import solution  # noqa: E402


def test_name():
    assert solution.name() == six.text_type.__name__, "fails unless a workspace six.py answered"
