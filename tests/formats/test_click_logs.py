"""The click-log readers of the click models: Yandex Relevance Prediction records, session tables (TSV and Parquet),
rankcli's click logs. Malformed input is exit 3 with path:line."""

from __future__ import annotations

import gzip

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rankcli.errors import InputError
from rankcli.formats import yandex_clicks
from rankcli.formats.click_logs import read_session_log


def yandex_text(rng: np.random.Generator, sessions: int = 300):
    """A Yandex log with several result lists per session, repeated clicks, and clicks on an earlier list's URLs;
    returns the text and the expected (query, urls, clicked) per result list, as PyClick's parser reads it."""
    lines, expected = [], []
    for sid in range(sessions):
        t = 0
        for _ in range(int(rng.integers(1, 4))):
            query = int(rng.integers(0, 20))
            urls = [str(u) for u in rng.choice(1000, size=int(rng.integers(1, 11)), replace=False)]
            lines.append(f"{sid}\t{t}\tQ\t{query}\t213\t" + "\t".join(urls))
            clicked = set()
            for _ in range(int(rng.integers(0, 4))):
                t += int(rng.integers(1, 30))
                u = urls[int(rng.integers(0, len(urls)))]
                lines.append(f"{sid}\t{t}\tC\t{u}")
                if rng.random() < 0.3:  # the same result clicked again
                    lines.append(f"{sid}\t{t + 1}\tC\t{u}")
                clicked.add(u)
            expected.append((str(query), urls, clicked))
            t += 5
    return "\n".join(lines) + "\n", expected


def test_yandex_log_as_pyclick_reads_it(tmp_path, rng, monkeypatch):
    monkeypatch.setattr(yandex_clicks, "BLOCK_BYTES", 1 << 12)  # many blocks: lists and clicks across their edges
    text, expected = yandex_text(rng)
    path = tmp_path / "log.txt"
    path.write_text(text)
    log = read_session_log(path)
    assert log.format == "yandex" and log.n_sessions == len(expected)
    queries = log.queries.to_pylist()
    docs = log.documents.to_pylist()
    for s, (query, urls, clicked) in enumerate(expected):
        rows = range(log.offsets[s], log.offsets[s + 1])
        assert queries[log.query[s]] == query
        assert [docs[log.document[r]] for r in rows] == urls
        assert [bool(log.click[r]) for r in rows] == [u in clicked for u in urls]
    assert log.notes["repeated_clicks"] == text.count("\tC\t") - sum(len(c) for _, _, c in expected)
    gz = tmp_path / "log.txt.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    again = read_session_log(gz, "yandex")
    assert np.array_equal(again.click, log.click) and np.array_equal(again.offsets, log.offsets)


@pytest.mark.parametrize(("lines", "line", "what"), [
    (["1\t0\tQ\t5\t2\tu1\tu2", "1\t3\tC"], 2, "a click record has 4 tab-separated fields"),
    (["1\t0\tQ\t5\tu1", "1\t3\tC\tu1"], 1, "a query record has at least 6"),
    (["1\t0\tQ\t5\t2\tu1", "1\tlater\tC\tu1"], 2, "TimePassed must be a whole number"),
    (["1\t0\tX\t5\t2\tu1"], 1, "expected a query record"),
    (["1\t0\tC\tu1", "1\t2\tQ\t5\t2\tu1"], 1, "a click before any query record"),
    (["1\t0\tQ\t5\t2\tu1", "2\t3\tC\tu1"], 2, "a click of session 2 before any query record of that session"),
    (["1\t0\tQ\t5\t2\tu1\tu2", "1\t3\tC\tu9"], 2, "did not show"),
    (["1\t0\tQ\t5\t2\tu1\tu2", "", "1\t0\tQ\t6\t2\tu3\tu3"], 3, "lists a URL twice"),
])
def test_malformed_yandex_lines_name_their_line(tmp_path, lines, line, what):
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        read_session_log(path, "yandex")
    assert str(err.value).startswith(f"{path}:{line}: ") and what in str(err.value)


def test_unknown_clicks_can_be_ignored_as_pyclick_does(tmp_path):
    path = tmp_path / "log.txt"
    path.write_text("1\t0\tQ\t5\t2\tu1\tu2\n1\t3\tC\tu9\n1\t4\tC\tu2\n\n")
    log = read_session_log(path, "yandex", unknown_clicks="ignore")
    assert log.click.tolist() == [False, True]
    assert log.notes["ignored_clicks"] == 1 and log.notes["blank_lines"] == 1


def test_table_tsv_and_parquet(tmp_path):
    rows = [("s1", "q1", 1, "007", 1, 2.0), ("s1", "q1", 2, "7", 0, 0.0), ("s2", "q2", 1, "7", 0, 1.0)]
    tsv = tmp_path / "log.tsv"
    tsv.write_text("session\tquery\trank\tdocument\tclick\trelevance\n" +
                   "".join("\t".join(map(str, r)) + "\n" for r in rows))
    log = read_session_log(tsv)
    assert log.format == "table" and log.offsets.tolist() == [0, 2, 3]
    assert [log.documents.to_pylist()[d] for d in log.document] == ["007", "7", "7"]  # text, not numbers
    assert log.click.tolist() == [True, False, False] and log.relevance.tolist() == [2.0, 0.0, 1.0]
    table = pa.table({name: [r[i] for r in rows] for i, name in
                      enumerate(["session", "query", "rank", "document", "click", "relevance"])})
    parquet = tmp_path / "log.parquet"
    pq.write_table(table, parquet)
    again = read_session_log(parquet)
    assert again.format == "table" and np.array_equal(again.click, log.click)


@pytest.mark.parametrize(("body", "where", "what"), [
    ("s1\tq\t1\td1\t0\ns1\tq\t3\td2\t0\n", ":3:", "rank gap, expected rank 2, got 3"),
    ("s1\tq\t1\td1\t0\ns2\tq\t1\td2\t1\ns1\tq\t2\td3\t0\n", ":4:", "reappears"),
    ("s1\tq\t1\td1\t2\n", ":2:", "expected a click (0 or 1), got 2"),
    ("s1\tq\tone\td1\t0\n", ":2:", "column rank: expected a number, got 'one'"),
    ("s1\tq\t1\td1\n", ":2:", "expected 5 tab-separated fields, got 4"),
    ("s1\tq\t1\td1\t0\ns1\tr\t2\td2\t0\n", ":3:", "changes query within the session"),
])
def test_bad_tables_name_their_line(tmp_path, body, where, what):
    path = tmp_path / "bad.tsv"
    path.write_text("session\tquery\trank\tdocument\tclick\n" + body)
    with pytest.raises(InputError) as err:
        read_session_log(path, "table")
    assert f"{path}{where}" in str(err.value) and what in str(err.value), str(err.value)


@pytest.mark.parametrize("kind", ["text", "integer"])
@pytest.mark.parametrize("sessions", ["increasing", "shuffled"])
def test_a_log_read_in_pieces_is_coded_as_one_read_at_once(tmp_path, rng, monkeypatch, kind, sessions):
    import rankcli.formats.click_logs as click_logs
    from rankcli.formats.session_log import codes

    n, length = 400, 5
    ids = np.arange(n) * 3 if sessions == "increasing" else rng.permutation(n) * 3
    docs = rng.integers(0, 40, n * length) * 11  # repeats within and across pieces, new values in later pieces
    docs[-length:] = 10_000 + np.arange(length)
    table = pa.table({"session": np.repeat(ids, length), "query": np.repeat(ids % 7, length),
                      "rank": np.tile(np.arange(1, length + 1), n),
                      "document": [f"doc-{d}" for d in docs] if kind == "text" else docs,
                      "click": (rng.random(n * length) < 0.3).astype(np.int8)})
    path = tmp_path / "log.parquet"
    pq.write_table(table, path, row_group_size=333)
    whole = read_session_log(path)
    monkeypatch.setattr(click_logs, "BATCH_ROWS", 37)  # pieces that split sessions, some with every value new
    pieces = read_session_log(path)
    expected, vocabulary = codes(table.column("document"))
    for log in (whole, pieces):
        assert log.document.dtype == np.int32 and np.array_equal(log.document, expected)
        assert log.documents.equals(vocabulary) and np.array_equal(log.offsets, np.arange(n + 1) * length)
        assert np.array_equal(log.click, table.column("click").to_numpy().astype(bool))
    if sessions == "shuffled":  # a session that comes back after another is still refused
        again = pa.concat_tables([table, table.slice(0, length)])
        pq.write_table(again, path, row_group_size=333)
        with pytest.raises(InputError, match="reappears"):
            read_session_log(path)


# The cases are named by their files: pytest-xdist's workers must collect the same ids, and gzip's header holds the
# time it was written (mtime=0 makes the bytes the same in every process too).
@pytest.mark.parametrize(("name", "data"), [
    ("empty.txt", b""),
    ("empty.txt.gz", gzip.compress(b"", mtime=0)),
    ("binary.bin", b"\x00\x01garbage\xff\xfe\n"),
    ("latin1.txt", b"1\t0\tQ\t5\t2\tu\xe9\n"),
    ("truncated.txt.gz", gzip.compress(b"1\t0\tQ\t5\t2\tu1\tu2\n" * 2000, mtime=0)[:-40]),
], ids=["empty.txt", "empty.txt.gz", "binary.bin", "latin1.txt", "truncated.txt.gz"])
def test_an_empty_or_unreadable_text_log_is_invalid_input(tmp_path, name, data):
    """A file that is no text log at all (empty, binary, not UTF-8, a broken gzip stream) is exit 3 naming it,
    whichever format reads it: auto takes any text file without the table's header for a Yandex log."""
    path = tmp_path / name
    path.write_bytes(data)
    for fmt in ("auto", "yandex"):
        with pytest.raises(InputError) as err:
            read_session_log(path, fmt)
        assert str(err.value).startswith(f"{path}"), str(err.value)


@pytest.mark.parametrize("fmt", ["auto", "table"])
def test_a_gzipped_table_is_read_as_the_table(tmp_path, fmt):
    """The table's rows are read through Arrow's CSV reader, which gunzips a .gz file; its header line and the
    format's detection read the same decompressed text."""
    text = "session\tquery\trank\tdocument\tclick\ns1\tq1\t1\td1\t1\ns1\tq1\t2\td2\t0\ns2\tq1\t1\td2\t0\n"
    plain, packed = tmp_path / "log.tsv", tmp_path / "log.tsv.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    want, got = read_session_log(plain, fmt), read_session_log(packed, fmt)
    assert got.format == "table" and got.offsets.tolist() == want.offsets.tolist() == [0, 2, 3]
    assert np.array_equal(got.click, want.click) and got.documents.to_pylist() == want.documents.to_pylist()
