"""The SVMlight reader and writer: parity with scikit-learn, edge syntax, block boundaries, errors, round trips."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankcli.convert import ConvertOptions, convert
from rankcli.errors import InputError, InputFormatError
from rankcli.formats.parquet import feature_columns
from rankcli.formats.svmlight import parse_block
from rankcli.formats.svmlight_text import read_query_file
from rankcli.formats.svmlight_writer import svmlight_lines, write_svmlight

sklearn_datasets = pytest.importorskip("sklearn.datasets")


def features_of(table: pa.Table) -> np.ndarray:
    cols = feature_columns(table.column_names)
    return np.column_stack([table.column(c).to_numpy() for c in cols]) if cols else np.zeros((table.num_rows, 0))


def convert_text(tmp_path, text: str | bytes, name="in.txt", **options) -> pa.Table:
    src = tmp_path / name
    src.write_bytes(text.encode() if isinstance(text, str) else text)
    out = tmp_path / (name + ".parquet")
    convert([str(src)], out, ConvertOptions(**options), overwrite=True)
    return pq.read_table(out)


def random_svmlight(rng: np.random.Generator, rows: int, width: int, real_labels=False, density=0.6):
    """A random SVMlight text with contiguous queries, varied float syntax, and the dense matrix it encodes."""
    sizes = []
    while sum(sizes) < rows:
        sizes.append(int(rng.integers(1, 30)))
    sizes[-1] -= sum(sizes) - rows
    qids = np.repeat(rng.choice(100000, len(sizes), replace=False), sizes)
    X = np.where(rng.random((rows, width)) < density, rng.normal(size=(rows, width)) * 10.0 ** rng.integers(-4, 4), 0)
    X = X.astype(np.float32).astype(np.float64)
    y = np.round(rng.random(rows), 2) if real_labels else rng.integers(0, 5, rows).astype(np.float64)
    styles = ["{:.9g}", "{:e}", "{!r}"]
    lines = []
    for i in range(rows):
        toks = [f"{y[i]:g}", f"qid:{qids[i]}"]
        for j in np.flatnonzero(X[i]):
            v = float(np.float32(X[i, j]))
            toks.append(f"{j + 1}:" + styles[(i + j) % 3].format(v))
        lines.append(" ".join(toks))
    return "\n".join(lines) + "\n", X.astype(np.float32), y, qids


@pytest.mark.parametrize("seed,real", [(0, False), (1, True), (2, False)])
def test_parity_with_sklearn(tmp_path, seed, real):
    rng = np.random.default_rng(seed)
    text, X, y, q = random_svmlight(rng, 400, 25, real_labels=real)
    table = convert_text(tmp_path, text, block_bytes=4096)
    Xs, ys, qs = sklearn_datasets.load_svmlight_file(io.BytesIO(text.encode()), query_id=True,
                                                      n_features=features_of(table).shape[1])
    np.testing.assert_array_equal(features_of(table), Xs.toarray().astype(np.float32))
    np.testing.assert_array_equal(table.column("label").to_numpy(), ys)
    np.testing.assert_array_equal(table.column("qid").to_numpy(), qs)


def test_block_size_does_not_change_the_result(tmp_path):
    rng = np.random.default_rng(5)
    text, *_ = random_svmlight(rng, 300, 12)
    whole = convert_text(tmp_path, text)
    for block in (1, 7, 100, 1000):
        assert convert_text(tmp_path, text, block_bytes=block).equals(whole)


def test_row_groups_end_on_query_boundaries(tmp_path, monkeypatch):
    import rankcli.convert as conv
    import rankcli.formats.parquet as parquet

    monkeypatch.setattr(conv, "FLUSH_ROWS", 50)
    monkeypatch.setattr(parquet, "ROW_GROUP_ROWS", 50)
    text, *_ = random_svmlight(np.random.default_rng(3), 500, 5)
    (tmp_path / "a.txt").write_text(text)
    convert([str(tmp_path / "a.txt")], tmp_path / "a.parquet", ConvertOptions(block_bytes=500))
    pf = pq.ParquetFile(tmp_path / "a.parquet")
    assert pf.num_row_groups > 3
    parquet.check_query_aligned(tmp_path / "a.parquet")


def test_edge_syntax(tmp_path):
    text = (b"# a header comment\r\n"
            b"\r\n"
            b"2\tqid:7\t1:1e-3  3:.25 \t 4:+1.5\r\n"
            b"   \t\r\n"
            b"0.07 qid:7 2:-7 5:nan # docid = D2 extra = 1\r\n"
            b"1 qid:9 1:1. 2:inf 3:-INF 4:NaN 5:1E+2\n"
            b"   # only a comment\n"
            b"3 qid:9")  # no final newline
    t = convert_text(tmp_path, text)
    F = features_of(t)
    assert t.num_rows == 4 and F.shape == (4, 5)
    np.testing.assert_array_equal(t.column("label").to_numpy(), [2, 0.07, 1, 3])
    np.testing.assert_array_equal(t.column("qid").to_numpy(), [7, 7, 9, 9])
    assert not F[3].any()
    np.testing.assert_array_equal(F[0], np.float32([1e-3, 0, 0.25, 1.5, 0]))
    assert F[1, 1] == -7 and np.isnan(F[1, 4])
    assert F[2, 0] == 1 and F[2, 1] == np.inf and F[2, 2] == -np.inf and np.isnan(F[2, 3]) and F[2, 4] == 100
    assert t.column("docid").to_pylist() == [None, "D2", None, None]
    assert "comment" not in t.column_names


def test_keep_comments_and_zero_based(tmp_path):
    t = convert_text(tmp_path, "1 qid:1 0:5 2:6 # docid = A x=1\n0 qid:1 1:2\n", keep_comments=True, zero_based=True)
    assert t.column("comment").to_pylist() == ["docid = A x=1", None]
    assert t.column("docid").to_pylist() == ["A", None]
    np.testing.assert_array_equal(features_of(t), np.float32([[5, 0, 6], [0, 2, 0]]))


def test_num_features_fixes_the_width(tmp_path):
    t = convert_text(tmp_path, "1 qid:1 2:5\n", num_features=6)
    assert feature_columns(t.column_names) == [f"f{i}" for i in range(1, 7)]
    with pytest.raises(InputFormatError, match=r"in.txt:1: feature index beyond --num-features 1, got '2:5'"):
        convert_text(tmp_path, "1 qid:1 2:5\n", num_features=1)


def test_width_grows_after_the_first_block(tmp_path):
    lines = [f"1 qid:{q} 1:{q}" for q in range(200)] + ["0 qid:999 50:3 # docid = late"]
    t = convert_text(tmp_path, "\n".join(lines) + "\n", block_bytes=256)
    F = features_of(t)
    assert F.shape == (201, 50)
    assert F[-1, 49] == 3 and F[5, 0] == 5 and t.column("docid").to_pylist()[-1] == "late"
    assert t.column("docid").null_count == 200


def test_sort_queries(tmp_path):
    t = convert_text(tmp_path, "1 qid:2 1:1\n0 qid:1 1:2\n2 qid:2 1:3\n", sort_queries=True)
    assert t.column("qid").to_pylist() == [1, 2, 2]
    assert t.column("f1").to_pylist() == [2, 1, 3]


def test_sidecar_and_query_file(tmp_path):
    (tmp_path / "d.txt").write_text("1 1:1\n0 1:2\n2 1:3\n")
    (tmp_path / "d.txt.query").write_text("2\n1\n")
    convert([str(tmp_path / "d.txt")], tmp_path / "d.parquet")
    assert pq.read_table(tmp_path / "d.parquet").column("qid").to_pylist() == [0, 0, 1]
    (tmp_path / "other.query").write_text("1\n2\n")
    convert([str(tmp_path / "d.txt")], tmp_path / "e.parquet", ConvertOptions(query_file=tmp_path / "other.query"))
    assert pq.read_table(tmp_path / "e.parquet").column("qid").to_pylist() == [0, 1, 1]


def test_utf8_bom_at_the_start_is_skipped(tmp_path):
    """Files saved by Windows editors start with a UTF-8 byte-order mark: skipped, same table as without it."""
    text = "2 qid:7 1:0.5 3:1 # docid = a\n0 qid:7 2:0.25 # docid = b\n1 qid:8 1:1\n"
    plain = convert_text(tmp_path, text, name="plain.txt")
    for block_bytes in (2, 1 << 20):  # the mark split over reads, or whole
        with_bom = convert_text(tmp_path, b"\xef\xbb\xbf" + text.encode(), name="bom.txt", block_bytes=block_bytes)
        assert with_bom.equals(plain)
    import gzip

    (tmp_path / "bom.txt.gz").write_bytes(gzip.compress(b"\xef\xbb\xbf" + text.encode()))
    out = tmp_path / "gz.parquet"
    convert([str(tmp_path / "bom.txt.gz")], out)
    assert pq.read_table(out).equals(plain)
    # only at the very start: elsewhere it is still binary data
    with pytest.raises(InputFormatError, match=r"/in.txt:2: not SVMlight text \(binary data\), got"):
        convert_text(tmp_path, b"1 qid:1 1:2\n\xef\xbb\xbf0 qid:1 1:1\n")
    # UTF-16 (Windows "Unicode") says so
    with pytest.raises(InputFormatError, match=r"/in.txt:1: not SVMlight text \(UTF-16 text: save it as UTF-8 or "
                                               r"ASCII\), got"):
        convert_text(tmp_path, "1 qid:1 1:2\n".encode("utf-16"))
    # a .query sidecar may start with one too
    (tmp_path / "q").write_bytes(b"\xef\xbb\xbf3\n2\n")
    assert read_query_file(tmp_path / "q").tolist() == [3, 2]


def test_read_query_file_errors(tmp_path):
    (tmp_path / "q").write_text("3\nx\n")
    with pytest.raises(InputFormatError, match=r"q:2: expected a group size \(a positive integer\), got 'x'"):
        read_query_file(tmp_path / "q")
    (tmp_path / "q").write_text("0\n")
    with pytest.raises(InputFormatError, match=r"q:1: group sizes must be positive, got '0'"):
        read_query_file(tmp_path / "q")
    # a size beyond any file: an error naming the line, not Python's OverflowError traceback
    (tmp_path / "q").write_text("3\n99999999999999999999999\n")
    with pytest.raises(InputFormatError, match=r"q:2: group sizes add up to more rows than a file can hold "
                                               r"\(9223372036854775807\), got '99999999999999999999999'"):
        read_query_file(tmp_path / "q")
    (tmp_path / "q").write_text("9223372036854775807\n1\n")
    with pytest.raises(InputFormatError, match=r"q:2: group sizes add up to more rows"):
        read_query_file(tmp_path / "q")
    (tmp_path / "q").write_text("0003\n+2\n")
    assert read_query_file(tmp_path / "q").tolist() == [3, 2]


@pytest.mark.parametrize("text,message", [
    ("abc qid:1 1:0.5\n", "in.txt:1: non-numeric label, got 'abc'"),
    ("1 qid:1 1:2\n1 qid:1 5\n", "in.txt:2: expected <index>:<value>, got '5'"),
    ("1 qid:1 3:1 3:2\n", "in.txt:1: duplicate feature index on one line, got '3:2'"),
    ("1 qid:1 4:1 3:2 4:5\n", "in.txt:1: duplicate feature index on one line, got '4:5'"),
    ("1 qid:1 3:abc\n", "in.txt:1: non-numeric feature value, got '3:abc'"),
    ("1 qid:x 3:1\n", "in.txt:1: non-integer qid, got 'qid:x'"),
    ("1 qid:1.5 3:1\n", "in.txt:1: non-integer qid, got 'qid:1.5'"),
    ("1 qid:1 x:1\n", "in.txt:1: non-integer feature index, got 'x:1'"),
    ("1 qid:1 1.0:1\n", "in.txt:1: non-integer feature index, got '1.0:1'"),
    ("1 qid:1 0:1\n", "in.txt:1: feature index must be >= 1 (pass --zero-based for 0-based files), got '0:1'"),
    ("1 qid:1 -2:1\n", "in.txt:1: feature index must be >= 1 (pass --zero-based for 0-based files), got '-2:1'"),
    ("1 qid:1 1:1\n0 qid:2 1:1\n\n2 qid:1 1:1\n", "in.txt:4: qid 1 reappears (first seen at line 1)"),
    ("1 qid:1 3:\n", "in.txt:1: expected <index>:<value>, got '3:'"),
    ("1 qid:1 1:2:3\n", "in.txt:1: expected <index>:<value>, got '1:2:3'"),
    ("qid:1 1:2\n", "in.txt:1: expected a label at the start of the line, got 'qid:1'"),
    ("1 1:2 qid:1\n", "in.txt:1: qid: must come right after the label, got 'qid:1'"),
    ("1 qid:1 1:2\n0 1:2\n", "in.txt:2: line has no qid: but earlier lines do, got '0 1:2'"),
    ("1 qid:1 1:2\n\x00\x01\x02\n", "in.txt:2: not SVMlight text (binary data), got '\\x00\\x01\\x02\\n'"),
    ("1 qid:1 1:2 99999999:1\n", "in.txt:1: feature index too large for a dense table (at most 20000 features), "
     "got '99999999:1'"),
    ("", "in.txt: no data rows (empty input)"),
    ("\n# just a comment\n", "in.txt: no data rows (empty input)"),
    # a finite number too large for its column's type is an error, not a silent inf
    ("1 qid:1 1:1e39\n", "in.txt:1: feature value overflows float32 (largest finite 3.4028235e+38), got '1:1e39'"),
    ("1 qid:1 2:-3.5e38\n",
     "in.txt:1: feature value overflows float32 (largest finite 3.4028235e+38), got '2:-3.5e38'"),
    ("1 qid:1 1:inf 2:1e400\n", "in.txt:1: feature value overflows float32 (largest finite 3.4028235e+38), "
     "got '2:1e400'"),
    ("1e400 qid:1 1:1\n", "in.txt:1: label overflows float64 (largest finite 1.7976931348623157e+308), got '1e400'"),
    # a qid beyond int64 is refused, never wrapped
    ("1 qid:9223372036854775808 1:1\n", "in.txt:1: qid out of range (a 64-bit integer, -9223372036854775808 to "
     "9223372036854775807), got 'qid:9223372036854775808'"),
    ("1 qid:-99999999999999999999999 1:1\n", "in.txt:1: qid out of range (a 64-bit integer, -9223372036854775808 to "
     "9223372036854775807), got 'qid:-99999999999999999999999'"),
    ("1 qid:1 99999999999999999999999:1\n", "in.txt:1: feature index too large for a dense table (at most 20000 "
     "features), got '99999999999999999999999:1'"),
    # messages that mislead: CR-only line ends, Latin-1 comments
    ("1 qid:1 1:1\r0 qid:1 1:1\r", "in.txt:1: CR-only line ends (classic Mac OS; a carriage return not followed by a "
     "newline): save the file with LF or CRLF line ends, e.g. tr '\\r' '\\n' < in.txt > out.txt, got '1 qid:1 1:1\\r'"),
    ("1 qid:1 1:1 # docid = a\r0 qid:1 1:1\r", "in.txt:1: CR-only line ends (classic Mac OS; a carriage return not "
     "followed by a newline): save the file with LF or CRLF line ends, e.g. tr '\\r' '\\n' < in.txt > out.txt, got "
     "'1 qid:1 1:1 # docid = a\\r'"),
    (b"1 qid:1 1:1 # docid = a\n0 qid:1 1:1 # docid = caf\xe9\n", "in.txt:2: comment is not UTF-8 text (byte 0xe9; "
     "Latin-1 or another 8-bit encoding?): save the file as UTF-8, got 'docid = caf\xe9'"),
    ("1 1:2\n", "in.txt:1: no qid: on the lines and no in.txt.query sidecar; add qid:<id> after each label, put the "
     "group sizes in a .query file next to the input, or pass --query-file"),
])
def test_error_messages(tmp_path, text, message):
    with pytest.raises(InputError) as info:
        convert_text(tmp_path, text)
    assert str(info.value).replace(str(tmp_path) + "/", "") == message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_errors_are_reported_in_file_order(tmp_path):
    with pytest.raises(InputFormatError, match=r"in.txt:2: non-numeric feature value"):
        convert_text(tmp_path, "1 qid:1 1:1\n1 qid:1 1:x\n1 qid:1 q:1\n")
    # an error in a later block is numbered in the whole file
    text = "".join(f"1 qid:1 1:{i}\n" for i in range(500)) + "1 qid:1 1:oops\n"
    with pytest.raises(InputFormatError, match=r"in.txt:501: non-numeric feature value, got '1:oops'"):
        convert_text(tmp_path, text, block_bytes=1000)


def test_literal_inf_nan_and_extremes_are_kept_without_a_warning(tmp_path):
    """A literal inf/nan is data (documented); float32's largest finite value and underflow to 0 are not errors; and
    no numpy warning is emitted on the way (on stderr it is noise the user cannot act on)."""
    text = "inf qid:1 1:inf 2:-Infinity 3:nan 4:3.4028235e38 5:-3.4028235e38 6:1e-50\n-inf qid:1 1:1\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = convert_text(tmp_path, text)
        with pytest.raises(InputFormatError, match="overflows float32"):
            convert_text(tmp_path, "1 qid:1 1:1 2:1e39\n" * 3)  # the dense fast path: no warning either
    assert table.column("label").to_pylist() == [np.inf, -np.inf]
    f = features_of(table)
    assert f[0, 0] == np.inf and f[0, 1] == -np.inf and np.isnan(f[0, 2])
    assert f[0, 3] == np.finfo(np.float32).max and f[0, 4] == -np.finfo(np.float32).max and f[0, 5] == 0


def test_qids_cover_the_int64_range(tmp_path):
    """19-digit qids and leading zeros are integers; the ends of int64 are exact (through a float they would not
    be)."""
    text = ("1 qid:9223372036854775807 1:1\n1 qid:0000000000000000003 1:1\n1 qid:-9223372036854775808 1:1\n"
            "1 qid:+00000000000000000000000000007 1:1\n1 qid:999999999999999999 1:1\n")
    table = convert_text(tmp_path, text)
    assert table.column("qid").to_pylist() == [2 ** 63 - 1, 3, -2 ** 63, 7, 999999999999999999]
    assert features_of(convert_text(tmp_path, "1 qid:1 00000000000000000000000002:5\n")).tolist() == [[0, 5]]


@pytest.mark.parametrize("text,message", [
    # a label error on line 1 was reported as line 2's colon problem (the colon check stopped the parse first)
    ("abc qid:1 1:0.5\n1 qid:1 5\n", "in.txt:1: non-numeric label, got 'abc'"),
    ("abc qid:1 1:0.5\n1 1:3\n", "in.txt:1: non-numeric label, got 'abc'"),
    ("1 qid:1 1:1 1:2\n1 qid:1 1:x\n", "in.txt:1: duplicate feature index on one line, got '1:2'"),
    ("1 qid:1 0:2\n1 qid:x 1:1\n", "in.txt:1: feature index must be >= 1 (pass --zero-based for 0-based files), "
     "got '0:2'"),
    ("1 qid:1 1:1e39\n\x01\n", "in.txt:1: feature value overflows float32 (largest finite 3.4028235e+38), "
     "got '1:1e39'"),
])
def test_the_first_error_in_file_order_is_reported(tmp_path, text, message):
    with pytest.raises(InputFormatError) as info:
        convert_text(tmp_path, text)
    assert str(info.value).replace(str(tmp_path) + "/", "") == message


def test_errors_across_blocks_are_reported_in_file_order(tmp_path):
    """A block whose first line breaks the file's qid mode and whose later line does not parse: the mode error (the
    earlier line) is reported, whatever the block boundaries; and a reader failure (truncated file) comes after
    the errors of the blocks read before it, although they are parsed in threads."""
    text = "1 qid:1 1:1\n" * 30 + "1 1:1\n" + "1 qid:1 1:x\n" * 3
    for block in range(1, 60, 3):
        with pytest.raises(InputFormatError) as info:
            convert_text(tmp_path, text, block_bytes=block)
        message = str(info.value).replace(str(tmp_path) + "/", "")
        assert message.startswith("in.txt:31: line has no qid: but earlier lines do"), (block, message)
    import gzip

    rng = np.random.default_rng(3)
    noise = "".join(f"1 qid:1 1:{v:.17g}\n" for v in rng.random(60)).encode()  # incompressible: the cut is late
    blob = gzip.compress(b"1 qid:1 1:x\n" + noise)
    with pytest.raises(InputFormatError, match=r"in.txt.gz:1: non-numeric feature value, got '1:x'"):
        convert_text(tmp_path, blob[:-30], name="in.txt.gz", block_bytes=500)


def test_long_lines_are_refused_with_their_number(tmp_path, monkeypatch):
    """A line past MAX_LINE_BYTES is refused (exit 3) with its number, so memory stays bounded, whether it arrives whole
    in one block or grows over many reads without a newline; binary data is named from the first block."""
    import rankcli.formats.svmlight_text as svm

    monkeypatch.setattr(svm, "MAX_LINE_BYTES", 64)
    long = "1 qid:1 " + " ".join(f"{i}:0.5" for i in range(1, 20)) + "\n"
    assert len(long) > 64
    for block in (16, 1000):
        with pytest.raises(InputFormatError) as info:
            convert_text(tmp_path, "1 qid:1 1:1\n" * 3 + long + "1 qid:1 1:1\n", block_bytes=block)
        assert str(info.value).replace(str(tmp_path) + "/", "") == (
            "in.txt:4: line longer than 64 bytes, the limit (no SVMlight line is this long: is this text with "
            "line ends?), got '1 qid:1 1:0.5 2:0.5 3:0....'")
    with pytest.raises(InputFormatError, match=r"in.txt:1: not SVMlight text \(binary data\), got '\\x00"):
        convert_text(tmp_path, b"\x00" * 100, block_bytes=16)
    with pytest.raises(InputFormatError, match=r"in.txt:2: CR-only line ends"):
        convert_text(tmp_path, b"1 qid:1 1:1\n1 qid:1 1:1\r2 qid:1 1:1\r" * 5, block_bytes=16)


def test_sidecar_mismatch(tmp_path):
    (tmp_path / "d.txt").write_text("1 1:1\n0 1:2\n2 1:3\n")
    (tmp_path / "d.txt.query").write_text("2\n2\n")
    with pytest.raises(InputError, match=r"d.txt.query: group sizes add up to 4 rows but .*d.txt has 3"):
        convert([str(tmp_path / "d.txt")], tmp_path / "d.parquet")
    (tmp_path / "d.txt.query").write_text("1\n1\n")
    with pytest.raises(InputFormatError, match=r"d.txt:3: more rows than the group sizes in .*d.txt.query add up"):
        convert([str(tmp_path / "d.txt")], tmp_path / "d.parquet")
    assert not (tmp_path / "d.parquet").exists()


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_compressed_inputs_and_truncation(tmp_path, suffix):
    import bz2
    import gzip
    import lzma

    compress = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}[suffix]
    text, X, y, q = random_svmlight(np.random.default_rng(9), 200, 8)
    blob = compress(text.encode())
    (tmp_path / f"a.txt{suffix}").write_bytes(blob)
    convert([str(tmp_path / f"a.txt{suffix}")], tmp_path / "a.parquet")
    np.testing.assert_array_equal(pq.read_table(tmp_path / "a.parquet").column("label").to_numpy(), y)
    (tmp_path / f"b.txt{suffix}").write_bytes(blob[: len(blob) // 2])
    with pytest.raises(InputError, match=r"b.txt\S*: (truncated|corrupt) compressed file"):
        convert([str(tmp_path / f"b.txt{suffix}")], tmp_path / "b.parquet")
    assert not (tmp_path / "b.parquet").exists()


def test_directory_input_shares_the_width(tmp_path):
    d = tmp_path / "Fold1"
    d.mkdir()
    (d / "train.txt").write_text("1 qid:1 1:1 7:2\n0 qid:1 2:1\n")
    (d / "vali.txt").write_text("1 qid:2 3:1\n")
    (d / "test.txt").write_text("1 qid:3 1:1\n")
    (d / "notes.md").write_text("not data\n")
    result = convert([str(d)], tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").glob("*.parquet")) == ["test.parquet", "train.parquet",
                                                                           "vali.parquet"]
    for name in ("train", "vali", "test"):
        t = pq.read_table(tmp_path / "out" / f"{name}.parquet")
        assert len(feature_columns(t.column_names)) == 7
        assert pq.read_metadata(tmp_path / "out" / f"{name}.parquet").metadata[b"rankcli.num_features"] == b"7"
    assert result.as_dict()["features"] == 7 and len(result.as_dict()["files"]) == 3


def test_several_files_into_one(tmp_path):
    (tmp_path / "a.txt").write_text("1 qid:1 1:1\n")
    (tmp_path / "b.txt").write_text("0 qid:2 2:1\n")
    convert([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")], tmp_path / "ab.parquet")
    assert pq.read_table(tmp_path / "ab.parquet").column("qid").to_pylist() == [1, 2]
    (tmp_path / "c.txt").write_text("0 qid:1 2:1\n")
    with pytest.raises(InputFormatError, match=r"c.txt:1: qid 1 reappears \(first seen at .*a.txt:1\)"):
        convert([str(tmp_path / "a.txt"), str(tmp_path / "c.txt")], tmp_path / "ac.parquet")


def test_export_round_trip(tmp_path):
    rng = np.random.default_rng(4)
    text, *_ = random_svmlight(rng, 300, 30, real_labels=True, density=0.3)
    lines = text.splitlines()
    text = "\n".join(f"{line} # docid = d{i}" for i, line in enumerate(lines)) + "\n"
    first = convert_text(tmp_path, text, name="a.txt")
    write_svmlight(tmp_path / "back.txt", tmp_path / "a.txt.parquet")
    second = convert_text(tmp_path, (tmp_path / "back.txt").read_bytes(), name="b.txt")
    assert second.equals(first)


def test_export_keeps_width_when_last_features_are_zero(tmp_path):
    first = convert_text(tmp_path, "1 qid:1 1:1\n", name="a.txt", num_features=5)
    write_svmlight(tmp_path / "back.txt", tmp_path / "a.txt.parquet")
    assert (tmp_path / "back.txt").read_text() == "1 qid:1 1:1 5:0\n"
    assert convert_text(tmp_path, (tmp_path / "back.txt").read_bytes(), name="b.txt").equals(first)


floats32 = st.floats(width=32, allow_nan=False)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_writer_then_reader_is_identity(data):
    rows = data.draw(st.integers(1, 12))
    width = data.draw(st.integers(1, 6))
    values = np.array(data.draw(st.lists(st.one_of(st.just(0.0), floats32), min_size=rows * width,
                                         max_size=rows * width)), dtype=np.float32).reshape(rows, width)
    values[0, -1] = values[0, -1] or 1.0  # the reader's width comes from the largest index present
    sizes = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=rows))
    qids = np.repeat(np.arange(len(sizes)), sizes)[:rows]
    qids = np.concatenate([qids, np.full(rows - qids.shape[0], len(sizes))]).astype(np.int64)
    labels = np.array(data.draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=rows, max_size=rows)))
    table = pa.table({"qid": qids, "label": labels,
                      **{f"f{j + 1}": pa.array(values[:, j]) for j in range(width)}})
    text = b"".join(s.encode() for s in svmlight_lines(table, [f"f{j + 1}" for j in range(width)]).to_pylist())
    # random but equivalent whitespace: tabs, runs of spaces, CRLF
    sep = data.draw(st.sampled_from([b" ", b"\t", b"  \t "]))
    eol = data.draw(st.sampled_from([b"\n", b"\r\n"]))
    text = text.replace(b" ", sep).replace(b"\n", eol)
    block = parse_block(text)
    np.testing.assert_array_equal(block.labels, labels)
    np.testing.assert_array_equal(block.qids, qids)
    np.testing.assert_array_equal(block.features, values)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), block=st.integers(1, 300), comments=st.booleans())
def test_any_block_size_gives_the_same_file(tmp_path_factory, seed, block, comments):
    tmp = tmp_path_factory.mktemp("blocks")
    rng = np.random.default_rng(seed)
    text, X, y, q = random_svmlight(rng, int(rng.integers(1, 60)), 6, density=0.5)
    lines = text.splitlines()
    if comments:  # blank lines, comment-only lines and docids sprinkled in
        lines = [f"{line} # docid = d{i}" if i % 3 else f"# note {i}\n\n{line}" for i, line in enumerate(lines)]
    (tmp / "a.txt").write_text("\n".join(lines) + "\n")
    convert([str(tmp / "a.txt")], tmp / "whole.parquet")
    convert([str(tmp / "a.txt")], tmp / "blocks.parquet", ConvertOptions(block_bytes=block))
    whole = pq.read_table(tmp / "whole.parquet")
    assert pq.read_table(tmp / "blocks.parquet").equals(whole)
    np.testing.assert_array_equal(whole.column("label").to_numpy(), y)
