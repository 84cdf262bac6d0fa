"""TREC run and qrels files.

- A run: one line per retrieved document, ``qid Q0 docid rank score tag``, fields separated by any run of C
  whitespace (spaces, tabs), as trec_eval reads them; gzipped files (``.gz``, detected by their magic bytes) are read
  transparently. The ``Q0`` and ``rank``
  fields are read but not used: the order comes from ``score`` (descending); equal scores are ordered by the
  evaluation's convention (trec_eval's rule, docid descending in byte order, under the ``trec`` convention).
- Qrels: ``qid iteration docid relevance``, whitespace-separated; the iteration field is ignored.
- Documents that rankcli writes (``export --format trec-qrels``, ``predict --format trec``) are named by
  :func:`document_names`: the docid, else ``<qid>-<row>``.

Query ids are kept as strings (TREC ids need not be numbers). Blank lines and lines starting with ``#`` are skipped.
Reading is vectorised: the common layout (single spaces) by Arrow's CSV reader, any other by a numpy tokeniser; both
give the same columns and name the line at fault in every error.
Errors name the file and line: ``run.txt:17: expected 6 fields "qid Q0 docid rank score tag", got "301 Q0 d1"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankcli.errors import InputError, InputFormatError, SchemaError


@dataclass
class TrecRunLines:
    """A run file's lines in file order: ``qids``, ``docids`` (object arrays of str) and ``scores`` (float64)."""

    qids: np.ndarray
    docids: np.ndarray
    scores: np.ndarray
    tags: set
    tag: str = ""  # the first line's tag: trec_eval's runid


@dataclass
class Qrels:
    """Judgments in file order: ``qids``, ``docids`` (object arrays of str) and ``labels`` (float64)."""

    qids: np.ndarray
    docids: np.ndarray
    labels: np.ndarray


# ---------------------------------------------------------------------------------------------------------------------
# Vectorised reading: the file's bytes tokenised with numpy (no Python loop over lines)

#: trec_eval reads fields with C's isspace: space, tab, newline, vertical tab, form feed, carriage return.
_SPACE = np.zeros(256, dtype=bool)
_SPACE[[9, 10, 11, 12, 13, 32]] = True


@dataclass
class TrecColumns:
    """A TREC file's data lines in file order: ``qids`` and ``docids`` as numpy byte strings (``S``, compared as
    ``strcmp`` compares), their lengths, the ``values`` column (score or relevance, float64), the line ``numbers``
    and, for runs, the first line's tag."""

    qids: np.ndarray
    qid_lengths: np.ndarray
    docids: np.ndarray
    docid_lengths: np.ndarray
    values: np.ndarray
    numbers: np.ndarray
    tag: str = ""
    keys: np.ndarray | None = None  # pair_keys, kept from the duplicate check
    key_order: np.ndarray | None = None  # argsort of keys (stable)


def _read_bytes(path: Path) -> bytes:
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a file")
    try:
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":  # gzip's magic bytes: runs and qrels as TREC distributes them
            import gzip
            import zlib

            try:
                data = gzip.decompress(data)
            except (OSError, EOFError, zlib.error) as exc:
                raise InputError(f"{path}: not a readable gzip file ({exc})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # a UTF-8 byte-order mark would become part of the first query id
    try:
        if not data.isascii():  # ASCII (the usual TREC file) is UTF-8; isascii is far cheaper than decoding
            data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return data


def _line_text(arr: np.ndarray, newlines: np.ndarray, number: int) -> str:
    start = int(newlines[number - 2]) + 1 if number > 1 else 0
    end = int(newlines[number - 1]) if number - 1 < newlines.shape[0] else arr.shape[0]
    return bytes(arr[start:end]).decode("utf-8", "replace").rstrip("\r")


def _gather(arr: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The tokens ``arr[starts:starts+lengths]`` as a numpy ``S`` array (NUL-padded to the longest)."""
    w = max(int(lengths.max()) if lengths.shape[0] else 1, 1)
    padded = np.concatenate([arr, np.zeros(w, dtype=np.uint8)])
    windows = np.lib.stride_tricks.as_strided(padded, shape=(arr.shape[0] + 1, w), strides=(1, 1))
    m = windows[starts]
    m[np.arange(w)[None, :] >= lengths[:, None]] = 0
    return m.view(f"S{w}").ravel()


def _numbers(arr, starts, lengths, what, path, numbers, newlines) -> np.ndarray:
    """Parse number tokens in C (Arrow's cast), NaN refused; an error names the first bad line."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = starts.shape[0]
    w = max(int(lengths.max()) if n else 1, 1)
    m = _gather(arr, starts, lengths).view(np.uint8).reshape(n, w)
    body = m[np.arange(w)[None, :] < lengths[:, None]]  # the tokens' bytes, back to back
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    strings = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(body))
    try:
        values = pc.cast(strings, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        for i, text in enumerate(strings.to_pylist()):  # the error path only: find the first bad token
            try:
                float(text)
            except ValueError:
                raise InputFormatError(f"{what} must be a number", str(path), int(numbers[i]), text) from None
        raise InputFormatError(f"{what} must be a number", str(path), int(numbers[0]), "?") from None
    bad = np.isnan(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputFormatError(f"{what} is NaN", str(path), int(numbers[i]), strings[i].as_py())
    return values


def _hash(strings: np.ndarray, lengths: np.ndarray | None = None, seed: np.ndarray | None = None) -> np.ndarray:
    """A uint64 hash of each byte string, 8 bytes at a time (multiply-xorshift over the words). All-zero words (the
    padding of a shorter string; text has no NUL) are skipped, so the padding width plays no part and the same
    string hashes alike in arrays of different widths."""
    w = strings.dtype.itemsize
    m = strings.view(np.uint8).reshape(-1, w)
    if w % 8:
        m = np.concatenate([m, np.zeros((m.shape[0], 8 - w % 8), dtype=np.uint8)], axis=1)
    words = np.ascontiguousarray(m).view(np.uint64)
    h = np.full(strings.shape[0], 1469598103934665603, dtype=np.uint64) if seed is None else seed.copy()
    prime = np.uint64(1099511628211)
    shift = np.uint64(29)
    for j in range(words.shape[1]):
        x = words[:, j]
        mixed = (h ^ x) * prime
        mixed ^= mixed >> shift
        h = np.where(x != 0, mixed, h)
    return h


def pair_keys(cols: TrecColumns) -> np.ndarray:
    """A uint64 hash of each line's (qid, docid) pair; equal pairs have equal keys (the converse is checked by
    whoever joins on them)."""
    hq = _hash(cols.qids, cols.qid_lengths)
    return _hash(cols.docids, cols.docid_lengths, (hq ^ np.uint64(0x9E3779B97F4A7C15)) * np.uint64(1099511628211))


def _check_unique_pairs(cols: TrecColumns, path: Path, duplicate: str, line_text=None) -> np.ndarray:
    """The pair keys; a (qid, docid) pair on two lines is an :class:`InputFormatError` naming the second line."""
    keys = pair_keys(cols)
    order = np.argsort(keys, kind="stable")
    cols.key_order = order
    k = keys[order]
    same = np.flatnonzero(k[1:] == k[:-1])
    if same.shape[0]:
        a, b = order[same], order[same + 1]
        real = (cols.qids[a] == cols.qids[b]) & (cols.docids[a] == cols.docids[b])
        if real.any():
            pairs = sorted(zip(np.maximum(a, b)[real].tolist(), np.minimum(a, b)[real].tolist()))
            second, first = pairs[0]
            q, d = cols.qids[second].decode(), cols.docids[second].decode()
            number = int(cols.numbers[second])
            raise InputFormatError(f"document {d} {duplicate} for query {q} (first at line "
                                   f"{int(cols.numbers[first])})", str(path), number,
                                   line_text(number) if line_text else f"{q} ... {d}")
    return keys


def _arrow_strings_to_bytes(col) -> tuple[np.ndarray, np.ndarray]:
    """An Arrow string column as a numpy ``S`` array and the lengths, from its buffers (no Python objects)."""
    col = col.combine_chunks() if hasattr(col, "combine_chunks") else col
    n = len(col)
    bufs = col.buffers()
    width = 8 if str(col.type) == "large_string" else 4
    offsets = np.frombuffer(bufs[1], dtype=np.int64 if width == 8 else np.int32, count=n + 1, offset=col.offset * width)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1].astype(np.int64)
    lengths = np.diff(offsets).astype(np.int64)
    return _gather(data, starts, lengths), lengths


def _read_simple(data: bytes, count: int, docid_field: int, value_field: int, tag_field: int | None):
    """The common layout read by Arrow's multi-threaded CSV reader: single spaces between fields, one line per
    record, no tab, carriage return, blank, comment or indented line. None when the file is not that simple, or
    Arrow finds a line it cannot read: the general tokeniser then reads it (and names the line at fault)."""
    # Double, leading or trailing spaces give empty fields, which Arrow refuses (the general path then reads the
    # file); blank lines (Arrow skips them: the row count tells) would shift line numbers, and a comment line could
    # pass as data (its first field starts with '#': checked below).
    if not data or data[:1] in b" #\n":
        return None
    n_lines = data.count(b"\n") + (not data.endswith(b"\n"))
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = [f"f{i}" for i in range(count)]
    want = [names[0], names[docid_field], names[value_field]] + ([names[tag_field]] if tag_field is not None else [])
    types = {n: pa.string() for n in want}
    types[names[value_field]] = pa.float64()
    try:
        table = pacsv.read_csv(pa.py_buffer(data),
                               read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 24),
                               parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False,
                                                                escape_char=False, newlines_in_values=False),
                               convert_options=pacsv.ConvertOptions(column_types=types, include_columns=want,
                                                                    strings_can_be_null=False,
                                                                    quoted_strings_can_be_null=False,
                                                                    null_values=[]))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != n_lines:
        return None  # blank lines
    values = table.column(names[value_field]).to_numpy()
    if table.column(names[value_field]).null_count or np.isnan(values).any():
        return None  # the general path names the line
    qids, qid_len = _arrow_strings_to_bytes(table.column(names[0]))
    docids, doc_len = _arrow_strings_to_bytes(table.column(names[docid_field]))
    if (qid_len == 0).any() or (doc_len == 0).any() or (qids.view(np.uint8)[::qids.dtype.itemsize] == ord("#")).any():
        return None  # an empty field, or a comment line that happens to have the fields of a record
    for strings in (qids, docids):  # a tab, CR, vertical tab or form feed inside a field: not this simple layout
        b = strings.view(np.uint8)
        if ((b > 0) & (b <= 32)).any():
            return None
    cols = TrecColumns(qids, qid_len, docids, doc_len, np.ascontiguousarray(values, dtype=np.float64),
                       np.arange(1, values.shape[0] + 1, dtype=np.int64))
    if tag_field is not None and values.shape[0]:
        cols.tag = table.column(names[tag_field])[0].as_py().strip()
    return cols


def read_columns(path: Path | str, layout: str, docid_field: int, value_field: int, duplicate: str,
                 tag_field: int | None = None) -> TrecColumns:
    """Read a whitespace-separated TREC file (fields split by any run of C whitespace, blank and ``#`` lines
    skipped, gzip read transparently); a line with another field count, a value that is not a number or NaN, or a
    (qid, docid) pair on two lines is an :class:`InputFormatError` naming the line."""
    path = Path(path)
    data = _read_bytes(path)
    count = len(layout.split())
    fast = _read_simple(data, count, docid_field, value_field, tag_field)
    if fast is not None:
        fast.keys = _check_unique_pairs(fast, path, duplicate, lambda number: _line_text(
            np.frombuffer(data, dtype=np.uint8), np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10), number))
        return fast
    arr = np.frombuffer(data, dtype=np.uint8)
    empty = np.zeros(0, dtype=np.int64)
    if arr.shape[0] == 0:
        return TrecColumns(np.zeros(0, "S1"), empty, np.zeros(0, "S1"), empty, np.zeros(0), empty)
    space = _SPACE[arr]
    edge = np.empty(arr.shape[0] + 1, dtype=bool)  # token boundaries: space -> non-space and non-space -> space
    edge[0], edge[-1] = ~space[0], ~space[-1]
    np.not_equal(space[1:], space[:-1], out=edge[1:-1])
    bounds = np.flatnonzero(edge)
    del space, edge
    starts, ends = bounds[0::2], bounds[1::2]
    newlines = np.flatnonzero(arr == 10)
    # Token index where each line begins (lines split at the newlines): cheaper than a line number per token.
    line_start = np.concatenate(([0], np.searchsorted(starts, newlines)))
    per_line = np.diff(np.append(line_start, starts.shape[0]))  # tokens of each line, blank lines 0
    data_lines = np.flatnonzero(per_line)
    heads = line_start[data_lines]
    comment = arr[starts[heads]] == ord("#")
    if comment.any():
        drop = np.zeros(starts.shape[0] + 1, dtype=np.int64)
        np.add.at(drop, heads[comment], 1)
        np.add.at(drop, heads[comment] + per_line[data_lines[comment]], -1)
        keep = np.cumsum(drop[:-1]) == 0
        starts, ends = starts[keep], ends[keep]
        data_lines = data_lines[~comment]
        heads = np.concatenate(([0], np.cumsum(per_line[data_lines])[:-1])).astype(np.int64)
    bad = per_line[data_lines] != count
    if bad.any():
        number = int(data_lines[int(np.argmax(bad))]) + 1
        raise InputFormatError(f'expected {count} fields "{layout}"', str(path), number,
                               _line_text(arr, newlines, number))
    starts, ends = starts.reshape(-1, count), ends.reshape(-1, count)
    numbers = data_lines + 1
    lengths = ends - starts
    qid_len, doc_len = lengths[:, 0], lengths[:, docid_field]
    values = _numbers(arr, starts[:, value_field], lengths[:, value_field],
                      "score" if tag_field is not None else "relevance", path, numbers, newlines)
    cols = TrecColumns(_gather(arr, starts[:, 0], qid_len), qid_len, _gather(arr, starts[:, docid_field], doc_len),
                       doc_len, values, numbers)
    if tag_field is not None and numbers.shape[0]:
        cols.tag = bytes(arr[starts[0, tag_field]:ends[0, tag_field]]).decode()
    cols.keys = _check_unique_pairs(cols, path, duplicate, lambda number: _line_text(arr, newlines, number))
    return cols


def read_run_columns(path: Path | str) -> TrecColumns:
    """A TREC run (``qid Q0 docid rank score tag``), vectorised; an empty run is an :class:`InputError`."""
    cols = read_columns(path, "qid Q0 docid rank score tag", 2, 4, "appears twice", tag_field=5)
    if cols.values.shape[0] == 0:
        raise InputError(f"{path}: the run is empty")
    return cols


def read_qrels_columns(path: Path | str) -> TrecColumns:
    """TREC qrels (``qid iteration docid relevance``), vectorised; an empty file is an :class:`InputError`."""
    cols = read_columns(path, "qid iteration docid relevance", 2, 3, "is judged twice")
    if cols.values.shape[0] == 0:
        raise InputError(f"{path}: the qrels file is empty")
    return cols


def _text(strings: np.ndarray) -> np.ndarray:
    return np.array([v.decode() for v in strings.tolist()], dtype=object)


def read_trec_run(path: Path | str) -> TrecRunLines:
    """Read a TREC run (``qid Q0 docid rank score tag``) with ids as ``str``; see :func:`read_run_columns`."""
    cols = read_run_columns(path)
    return TrecRunLines(_text(cols.qids), _text(cols.docids), cols.values, {cols.tag}, cols.tag)


def read_qrels(path: Path | str) -> Qrels:
    """Read TREC qrels (``qid iteration docid relevance``) with ids as ``str``; see :func:`read_qrels_columns`."""
    cols = read_qrels_columns(path)
    return Qrels(_text(cols.qids), _text(cols.docids), cols.values)


#: What cannot be part of a document name in a TREC file: the empty name, whitespace (Python's ``str.split`` set, a
#: superset of the C whitespace the readers split on) and NUL (trec_eval's C strings end there). RE2 syntax, for ``pyarrow.compute``.
_UNWRITABLE = (r"^$|[\x00\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}"
               r"\x{205f}\x{3000}]")


def _arrow_strings(values):
    """An Arrow string array from an Arrow array or a numpy/list of ``str`` (``None`` = null), without pandas."""
    import pyarrow as pa

    from rankcli.formats.arrow import array_from_numpy, strings_array

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values if pa.types.is_string(values.type) else values.cast(pa.string())
    values = np.asarray(values)
    if values.dtype.kind in "iuf":
        return array_from_numpy(values).cast(pa.string())
    return strings_array([None if v is None else str(v).encode() for v in values.tolist()])


def document_names(qids, docids=None, rows=None, *, source: str = "", check: bool = True):
    """The name of each document in every TREC file rankcli writes or reads against a dataset: an Arrow string array.

    A document is named by its ``docid`` when it has one; otherwise (no docid column, or a null in it) by
    ``<qid>-<row>``, with ``row`` its 0-based row number in the dataset (``rows``; default ``0..n-1``). ``export
    --format trec-qrels``, ``predict --format trec`` and the evaluation of a Parquet run under the ``trec`` tie rule
    all name documents with this function, so a run and the qrels exported from the same dataset always match.

    ``qids``, ``docids`` and ``rows`` may be numpy arrays, lists or Arrow arrays. With ``check``, a name that a TREC
    line cannot hold (empty, with whitespace or a NUL byte) is a :class:`SchemaError` naming the row (and ``source``).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from rankcli.formats.arrow import array_from_numpy, scalar

    qid_text = _arrow_strings(qids)
    n = len(qid_text)
    rows = np.arange(n, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    if rows.shape[0] != n:
        raise ValueError(f"document_names: {rows.shape[0]} row numbers for {n} query ids")
    names = pc.binary_join_element_wise(qid_text, array_from_numpy(rows).cast(pa.string()), scalar("-"))
    if docids is not None:
        given = _arrow_strings(docids)
        if len(given) != n:
            raise ValueError(f"document_names: {len(given)} docids for {n} query ids")
        names = pc.coalesce(given, names)  # a row without a docid is named <qid>-<row>
    if check and n:
        bad = pc.match_substring_regex(names, _UNWRITABLE)
        if pc.any(bad).as_py():
            i = bad.to_pylist().index(True)
            name = names[i].as_py()
            why = ("it is empty" if name == "" else "it contains a NUL byte, where trec_eval's strings end"
                   if "\x00" in name else "it contains whitespace, which separates the fields of a TREC line")
            where = f"{source}: " if source else ""
            raise SchemaError(f"{where}row {int(rows[i])} (qid {qid_text[i].as_py()}): docid {name!r} cannot name a "
                              f"document in a TREC file: {why}")
        _refuse_repeated_names(qid_text, names, rows, source)
    return names


def _refuse_repeated_names(qid_text, names, rows, source: str) -> None:
    """A document named twice in one query would be written, and then refused by every TREC reader (rankcli's and
    trec_eval's): refuse it when writing, naming both rows."""
    import pyarrow.compute as pc

    from rankcli.formats.arrow import column_to_numpy  # to_numpy would import pandas

    q = column_to_numpy(pc.dictionary_encode(qid_text).indices).astype(np.int64)
    d = column_to_numpy(pc.dictionary_encode(names).indices).astype(np.int64)
    key = q * (int(d.max()) + 1) + d  # < n^2: exact in int64 for any dataset that fits in memory
    order = np.argsort(key, kind="stable")
    repeated = np.flatnonzero(key[order][1:] == key[order][:-1])
    if repeated.shape[0] == 0:
        return
    second = order[repeated + 1]  # stable sort: the later row of each equal pair
    k = int(np.argmin(second))  # the repeat that comes first in file order
    first, again = int(order[repeated[k]]), int(second[k])
    where = f"{source}: " if source else ""
    raise SchemaError(f"{where}rows {int(rows[first])} and {int(rows[again])} (qid {qid_text[first].as_py()}): docid "
                      f"{names[first].as_py()!r} names two documents of one query; a TREC file names each document of "
                      "a query once")


def qrels_lines(qids, docids, labels, rows=None, *, source: str = ""):
    """TREC qrels lines ``qid 0 docid label\\n`` as an Arrow string array, built in C.

    Documents are named by :func:`document_names` (the docid, or ``<qid>-<row>`` where there is none). Labels print
    as integers when they are (``2``), else as given (``0.07``).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from rankcli.formats.arrow import array_from_numpy, scalar

    # array_from_numpy / scalar: no pandas import (pa.array, pa.scalar and Python literals in pc calls import it)
    qid_text = _arrow_strings(qids)
    doc_text = document_names(qid_text, docids, rows, source=source)
    if isinstance(labels, (pa.Array, pa.ChunkedArray)):
        label_text = labels.cast(pa.float64()).cast(pa.string())
    else:
        label_text = array_from_numpy(np.asarray(labels, dtype=np.float64)).cast(pa.string())
    return pc.binary_join_element_wise(qid_text, scalar("0"), doc_text,
                                       pc.binary_join_element_wise(label_text, scalar("\n"), scalar("")), scalar(" "))


def write_qrels(path: Path | str, qids, docids, labels, *, rows=None, overwrite: bool = False) -> int:
    """Write TREC qrels (``qid 0 docid label``) atomically; returns the number of lines. See :func:`qrels_lines`."""
    from rankcli.formats.atomic import atomic_path
    from rankcli.formats.svmlight_writer import write_lines

    lines = qrels_lines(qids, docids, labels, rows, source=str(path))
    with atomic_path(path, overwrite) as tmp, open(tmp, "wb") as out:
        write_lines(out, lines)
    return len(lines)


def _qid_key(qid) -> bytes:
    return str(qid).encode()


def trec_eval_text(specs, per_query: dict, means: dict, qids, *, runid: str | None = None,
                   queries: bool = False) -> str:
    """Results in trec_eval's layout: ``%-22s\t%s\t%6.4f`` lines (measure, query id or ``all``, value; counts as
    integers ``%ld``; ``runid`` with the run's tag), measures in trec_eval's order (``measures.c``), with
    ``queries`` (``-q``) each query's lines first, queries in byte order of their ids (trec_eval sorts its qrels),
    then the summary ``all`` lines. Measures that trec_eval does not print per query (num_q, gm_map, gm_bpref,
    runid) appear only in the summary, as in trec_eval. Metrics without a trec_eval name print under rankcli's.
    """
    from rankcli.core.measures import trec_order

    ordered = trec_order(specs)

    def texts(spec, values) -> list[str]:
        if spec.record.integer:
            return [f"{int(v)}\n" if v == v else "nan\n" for v in values]
        return [f"{v:6.4f}\n" for v in values]

    def line(spec, where, value) -> str:
        return f"{spec.output_name():<22}\t{where}\t{texts(spec, [value])[0]}"

    out = []
    if queries:
        # one formatting pass per measure, then the lines query by query (2M lines for all_trec on 30k queries)
        cols = [(f"{spec.output_name():<22}\t", texts(spec, per_query[str(spec)].tolist())) for spec in ordered
                if spec.record.per_query_line and str(spec) in per_query]
        qid_tab = [f"{q}\t" for q in qids]
        for i in sorted(range(len(qids)), key=lambda i: _qid_key(qids[i])):
            q = qid_tab[i]
            out.extend([p + q + t[i] for p, t in cols])
    for spec in ordered:
        if spec.record.family == "info":
            out.append(f"{'runid':<22}\tall\t{runid if runid is not None else 'rankcli'}\n")
        elif str(spec) in means:
            out.append(line(spec, "all", means[str(spec)]))
    return "".join(out)
