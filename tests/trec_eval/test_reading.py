"""How ``rankcli trec_eval`` reads its files' bytes (rankcli/formats/trec/file_bytes.py, rankcli/trec_eval/reading.py):
a regular file in one buffer, checked after its first block all the same, and both files on a thread whose errors
come out in trec_eval's order."""

from __future__ import annotations

import pytest

from rankcli.cli import main
from rankcli.errors import InputFormatError
from rankcli.formats.trec import file_bytes as trec_eval_bytes
from rankcli.trec_eval import getopt
from rankcli.trec_eval.reading import Reading


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(trec_eval_bytes, "BLOCK", 64)
    monkeypatch.setattr(trec_eval_bytes, "MAX_LINE", 40)


def test_a_whole_file_is_its_bytes(tmp_path, small_blocks):
    data = b"".join(b"%d Q0 d%d 1 0.5 r\n" % (q, d) for q in range(30) for d in range(5))
    (tmp_path / "run").write_bytes(data)
    assert trec_eval_bytes.read_input(str(tmp_path / "run")) == data


@pytest.mark.parametrize("bad, what", [(b"1 Q0 d\0 1 0.5 r\n", "a NUL byte"),
                                       (b"1 Q0 " + b"d" * 50 + b" 1 2 r\n", "a line longer than 40 bytes")])
def test_past_the_first_block_a_refusal_names_its_line(tmp_path, small_blocks, bad, what):
    """The first block (64 bytes here) is checked before the rest is read; the rest after, the line named exactly."""
    lines = [b"1 Q0 d%d 1 0.5 r\n" % d for d in range(20)]
    lines[13] = bad
    (tmp_path / "run").write_bytes(b"".join(lines))
    with pytest.raises(InputFormatError, match=f"run:14: {what}"):
        trec_eval_bytes.read_input(str(tmp_path / "run"))


def test_the_reading_thread_gives_the_bytes_or_the_first_error(tmp_path):
    (tmp_path / "q").write_bytes(b"1 0 a 1\n")
    (tmp_path / "r").write_bytes(b"1 Q0 a 1 2 r\n")
    assert Reading(getopt.parse([str(tmp_path / "q"), str(tmp_path / "r")])).result() == \
        (b"1 0 a 1\n", b"1 Q0 a 1 2 r\n")
    with pytest.raises(Exception, match="q2: no such file"):  # the qrels' error, though the run is missing too
        Reading(getopt.parse([str(tmp_path / "q2"), str(tmp_path / "r2")])).result()


def test_a_usage_error_comes_before_an_unreadable_file(tmp_path, capsys):
    assert main(["trec_eval", "-m", "nonsense", str(tmp_path / "q"), str(tmp_path / "r")]) == 2
    assert "illegal measure 'nonsense'" in capsys.readouterr().err
    assert main(["trec_eval", str(tmp_path / "q"), str(tmp_path / "r")]) == 3
    assert "q: no such file" in capsys.readouterr().err
