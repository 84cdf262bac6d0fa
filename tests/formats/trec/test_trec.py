"""TREC run and qrels readers: a leading UTF-8 byte-order mark is skipped (it would otherwise become part of the first
query id, and that query would silently not match the qrels)."""

from __future__ import annotations

import pytest

from rankcli.errors import InputFormatError
from rankcli.formats.trec.parse import read_qrels, read_trec_run


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


# ---------------------------------------------------------------------------------------------------------------------
# Document names: one function for every TREC file rankcli writes or compares against a dataset


def test_document_names_docid_else_qid_dash_row():
    import numpy as np
    import pyarrow as pa

    from rankcli.formats.trec.write import document_names

    qids = np.array([7, 7, 9, 9])
    assert document_names(qids).to_pylist() == ["7-0", "7-1", "9-2", "9-3"]
    assert document_names(qids, rows=[10, 11, 12, 13]).to_pylist() == ["7-10", "7-11", "9-12", "9-13"]
    # A docid column wins; a null in it falls back to <qid>-<row>. numpy and Arrow inputs give the same names.
    docids = np.array(["GX-1", None, "é文", "d2"], dtype=object)
    want = ["GX-1", "7-1", "é文", "d2"]
    assert document_names(qids, docids).to_pylist() == want
    assert document_names(pa.array(qids), pa.array(docids.tolist(), pa.string())).to_pylist() == want
    assert document_names(pa.chunked_array([pa.array(qids)]), None).to_pylist() == ["7-0", "7-1", "9-2", "9-3"]


def test_document_names_refuse_a_docid_repeated_within_a_query():
    # Written with exit 0 before, then refused by every TREC reader (export of `x` twice in qid 2, even with
    # conflicting labels). The same docid in two different queries is fine.
    import numpy as np

    from rankcli.errors import SchemaError
    from rankcli.formats.trec.write import document_names

    qids = np.array([1, 1, 2, 2, 2, 3])
    assert document_names(qids, np.array(["x", "y", "x", "z", "w", "x"], dtype=object)).to_pylist()[0] == "x"
    with pytest.raises(SchemaError, match=r"run.parquet: rows 12 and 14 \(qid 2\): docid 'b' names two documents"):
        document_names(qids, np.array(["x", "y", "b", "z", "b", "x"], dtype=object), rows=np.arange(10, 16),
                       source="run.parquet")
    # A docid that repeats a fallback name <qid>-<row> is a repeat too.
    with pytest.raises(SchemaError, match="docid '1-0' names two documents"):
        document_names(np.array([1, 1]), np.array([None, "1-0"], dtype=object))
    assert document_names(qids, check=False) is not None


def test_document_names_refuse_what_a_trec_line_cannot_hold():
    import numpy as np

    from rankcli.errors import SchemaError
    from rankcli.formats.trec.write import document_names

    # Every character str.split() splits on (what the readers split lines on), and NUL.
    spaces = [chr(c) for c in range(0x110000) if len(f"a{chr(c)}b".split()) == 2]
    assert len(spaces) == 29
    for bad in [f"a{c}b" for c in spaces] + ["a\x00b", ""]:
        with pytest.raises(SchemaError) as err:
            document_names(np.array([1, 2]), np.array(["ok", bad], dtype=object), rows=[40, 41], source="d.parquet")
        assert str(err.value).startswith(f"d.parquet: row 41 (qid 2): docid {bad!r} cannot name a document in a "
                                         "TREC file: it ")
    # Odd but writable bytes pass; check=False (reading) names anything.
    ok = ["a\x7fb", "\U0001F600", "#x", "Q0", "-"]
    assert document_names(np.zeros(5, int), np.array(ok, dtype=object)).to_pylist() == ok
    assert document_names([1], np.array(["a b"], dtype=object), check=False).to_pylist() == ["a b"]


def test_qrels_lines_name_documents_like_document_names(tmp_path):
    import numpy as np

    from rankcli.dataset import Dataset
    from rankcli.formats.parquet import write_dataset
    from rankcli.formats.trec.write import document_names, qrels_lines, write_qrels

    qids, labels = np.array([3, 3, 4]), np.array([2.0, 0.0, 0.5])
    lines = qrels_lines(qids, None, labels, rows=np.array([5, 6, 7])).to_pylist()
    assert lines == ["3 0 3-5 2\n", "3 0 3-6 0\n", "4 0 4-7 0.5\n"]
    assert [line.split()[2] for line in lines] == document_names(qids, rows=[5, 6, 7]).to_pylist()
    target = tmp_path / "q.txt"
    dataset = tmp_path / "d.parquet"
    write_dataset(dataset, Dataset(qids=qids, labels=labels))
    assert write_qrels(target, dataset) == 3
    assert read_qrels(target).docids.tolist() == ["3-0", "3-1", "4-2"]


# ---------------------------------------------------------------------------------------------------------------------
# Vectorised readers: Arrow's CSV reader for the plain layout, the numpy tokeniser for everything else, same result


def _columns(cols):
    return (cols.qids.tolist(), cols.docids.tolist(), cols.values.tolist(), cols.numbers.tolist(), cols.tag)


def test_plain_and_irregular_whitespace_read_alike(tmp_path):
    from rankcli.formats.trec.parse import read_qrels_columns, read_run_columns

    plain = "q1 Q0 d1 1 3.5 tag\nq1 Q0 d10 2 -2e3 tag\nq2 Q0 é 1 0 tag\n"
    messy = "q1\tQ0  d1 1 3.5 tag\r\nq1 \t Q0 d10\t2  -2e3\ttag\n  q2 Q0 é 1 0 tag  \n"
    (tmp_path / "a.txt").write_text(plain, encoding="utf-8")
    (tmp_path / "b.txt").write_text(messy, encoding="utf-8")
    a, b = read_run_columns(tmp_path / "a.txt"), read_run_columns(tmp_path / "b.txt")
    assert _columns(a) == _columns(b) == ([b"q1", b"q1", b"q2"], [b"d1", b"d10", "é".encode()], [3.5, -2000.0, 0.0],
                                          [1, 2, 3], "tag")
    # blank and comment lines are skipped; line numbers stay those of the file
    (tmp_path / "c.txt").write_text("# judged 2026\n1 0 d1 2\n\n1 0 d2 0\n#1 0 d3 1\n")
    q = read_qrels_columns(tmp_path / "c.txt")
    assert (q.docids.tolist(), q.values.tolist(), q.numbers.tolist()) == ([b"d1", b"d2"], [2.0, 0.0], [2, 4])


@pytest.mark.parametrize("text", ["1 Q0 a 1 2 t\n1 Q0 b 1 3 t\n1 Q0 a 1 3 t\n",
                                  "1 Q0 a 1 2 t\n1\tQ0 b 1 3 t\n1 Q0 a 1 3 t\n"])
def test_duplicate_pair_names_both_lines_on_either_path(tmp_path, text):
    from rankcli.formats.trec.parse import read_run_columns

    (tmp_path / "r.txt").write_text(text)
    with pytest.raises(InputFormatError, match=r"r.txt:3: document a appears twice for query 1 \(first at line 1\), "
                                               r"got '1 Q0 a 1 3 t'"):
        read_run_columns(tmp_path / "r.txt")


@pytest.mark.parametrize("text, message", [
    ("1 Q0 a 1 2 t\n1 Q0 b 1 2\n", r":2: expected 6 fields"),
    ("1 Q0 a 1 2 t\n1 Q0 b 1 x2 t\n", r":2: score must be a number, got 'x2'"),
    ("1 Q0 a 1 nan t\n", r":1: score is NaN"),
    # single spaces but for a double one where a field is missing: Arrow reads six fields, one of them empty
    ("1 Q0 a 1 2 t\n1  b 1 3 t\n", r":2: expected 6 fields"),
    ("1 Q0 a 1 2 t\n1 Q0 b  3 t\n", r":2: expected 6 fields"),
])
def test_bad_lines_are_named(tmp_path, text, message):
    from rankcli.formats.trec.parse import read_run_columns

    (tmp_path / "r.txt").write_text(text)
    with pytest.raises(InputFormatError, match=message):
        read_run_columns(tmp_path / "r.txt")


def test_fast_path_falls_back_on_blank_and_comment_lines(tmp_path):
    # single spaces everywhere (the Arrow path's layout), but a blank line and a comment line with four fields
    from rankcli.formats.trec.parse import read_qrels_columns

    (tmp_path / "q.txt").write_text("1 0 d1 2\n\n#1 0 d3 1\n1 0 d2 0\n")
    q = read_qrels_columns(tmp_path / "q.txt")
    assert (q.docids.tolist(), q.values.tolist(), q.numbers.tolist()) == ([b"d1", b"d2"], [2.0, 0.0], [1, 4])


def test_pair_hash_ignores_the_padding_width():
    import numpy as np

    from rankcli.formats.trec.parse import doc_hash, words_of

    short = np.array([b"doc-1", b"abcdefghijk"], dtype="S11")
    wide = np.array([b"doc-1", b"abcdefghijk", b"x" * 30], dtype="S30")
    assert doc_hash(words_of(short)).tolist() == doc_hash(words_of(wide))[:2].tolist()
    assert len(set(doc_hash(words_of(np.array([b"a", b"b", b"ab", b"ba", b"a" * 9], dtype="S9"))).tolist())) == 5


def test_hash_collisions_neither_hide_a_duplicate_nor_break_the_join(tmp_path, monkeypatch):
    """Every document hashing alike (the worst case of the 64-bit hash): the duplicate check still compares the
    documents themselves, and the join still pairs each run line with its own judgment."""
    import numpy as np

    from rankcli.formats.trec import parse as trec_read
    from tests.trec_loading import load_trec_run

    monkeypatch.setattr(trec_read, "doc_hash", lambda words, seed=0: np.zeros(words.shape[0], dtype=np.uint64))
    (tmp_path / "r.txt").write_text("1 Q0 a 1 3 t\n1 Q0 b 2 2 t\n1 Q0 c 3 1 t\n2 Q0 a 1 1 t\n2 Q0 d 2 0 t\n")
    (tmp_path / "q.txt").write_text("1 0 c 1\n1 0 a 3\n2 0 d 2\n2 0 x 4\n1 0 e 1\n")
    run = load_trec_run(tmp_path / "r.txt", tmp_path / "q.txt")
    assert run.labels.tolist() == [3.0, 0.0, 1.0, 0.0, 2.0]
    assert run.judged.tolist() == [True, False, True, False, True]
    assert run.unranked_labels.tolist() == [1.0, 4.0]
    (tmp_path / "r2.txt").write_text("1 Q0 a 1 3 t\n1 Q0 b 2 2 t\n1 Q0 a 3 1 t\n")
    with pytest.raises(InputFormatError, match=r"r2.txt:3: document a appears twice for query 1 \(first at line 1\)"):
        trec_read.read_run_columns(tmp_path / "r2.txt")


@pytest.mark.parametrize("which", ["run", "qrels"])
def test_a_symlink_loop_or_a_broken_link_is_named_as_such(tmp_path, which):
    from rankcli.errors import InputError
    from tests.trec_loading import load_trec_run

    (tmp_path / "r.txt").write_text("1 Q0 a 1 2 t\n")
    (tmp_path / "q.txt").write_text("1 0 a 1\n")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for link, words in (("loop", "symbolic link loop"), ("dangling", "broken symbolic link")):
        paths = {"run": tmp_path / "r.txt", "qrels": tmp_path / "q.txt", which: tmp_path / link}
        for ranked in (False, True):  # the numpy path and the C path read alike
            with pytest.raises(InputError, match=f"{link}: {words}"):
                load_trec_run(paths["run"], paths["qrels"], ranked=ranked)


@pytest.mark.parametrize("content", [b"", b"1 0 a 1\n", b"\xef\xbb\xbf1 0 a 1\n", "1 0 é 1\n".encode(),
                                     b"1 0 a 1\n" * 1000 + "é".encode(), "1 0 文档 2\n".encode() * 3, b"\xef\xbb\xbf"])
@pytest.mark.parametrize("gzipped", [False, True])
def test_the_c_paths_array_holds_the_numpy_paths_bytes(tmp_path, content, gzipped):
    """read_text_array (the C path's reader: numpy memory, huge pages) gives what read_text_bytes gives: gunzipped,
    the byte-order mark dropped, checked to be UTF-8 (a high byte in the last, partial word too)."""
    import gzip

    import numpy as np

    from rankcli.formats.trec.text import read_text_array, read_text_bytes

    path = tmp_path / "f.txt"
    path.write_bytes(gzip.compress(content) if gzipped else content)
    array = read_text_array(path)
    assert array.dtype == np.uint8 and bytes(array) == read_text_bytes(path) == content.removeprefix(b"\xef\xbb\xbf")


@pytest.mark.parametrize("content", [b"1 0 \xe9 1\n", b"1 0 a 1\n" * 5 + b"\xff", b"\xc3"])
def test_the_c_paths_array_refuses_what_is_not_utf8_alike(tmp_path, content):
    from rankcli.errors import InputError
    from rankcli.formats.trec.text import read_text_array, read_text_bytes

    path = tmp_path / "f.txt"
    path.write_bytes(content)
    messages = []
    for read in (read_text_bytes, read_text_array):
        with pytest.raises(InputError, match="not UTF-8 text") as caught:
            read(path)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


def test_the_c_paths_array_reads_a_pipe(tmp_path):
    import os
    import threading

    from rankcli.formats.trec.text import read_text_array

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(b"1 0 a 1\n1 0 b 0\n"))
    writer.start()
    assert bytes(read_text_array(fifo)) == b"1 0 a 1\n1 0 b 0\n"
    writer.join()
