# Written for ceval's tests, in the Terminal-Bench pattern: the answer file at the WORKDIR.
from pathlib import Path


def test_answer_file_exists():
    assert Path("/app/answer.txt").exists()


def test_answer_is_42():
    assert Path("/app/answer.txt").read_text().strip() == "42"
