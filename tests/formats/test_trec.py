"""TREC run and qrels readers: a leading UTF-8 byte-order mark is skipped (it would otherwise become part of the first
query id, and that query would silently not match the qrels)."""

from __future__ import annotations

import pytest

from rankcli.errors import InputFormatError
from rankcli.formats.trec import read_qrels, read_trec_run


def test_bom_is_skipped_in_runs_and_qrels(tmp_path):
    (tmp_path / "run.txt").write_bytes(b"\xef\xbb\xbfq1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 2.0 a\n")
    (tmp_path / "qrels.txt").write_bytes(b"\xef\xbb\xbfq1 0 d1 2\nq1 0 d2 0\n")
    run = read_trec_run(tmp_path / "run.txt")
    qrels = read_qrels(tmp_path / "qrels.txt")
    assert list(run.qids) == ["q1", "q1"] and list(run.docids) == ["d1", "d2"]
    assert list(qrels.qids) == ["q1", "q1"] and list(qrels.labels) == [2.0, 0.0]


def test_error_names_file_and_line(tmp_path):
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 abc a\n")
    with pytest.raises(InputFormatError, match=r"run.txt:2: score must be a number, got 'abc'$"):
        read_trec_run(tmp_path / "run.txt")
