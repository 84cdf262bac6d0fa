"""Reading TREC run and qrels files into columns, vectorised (no Python loop over lines): the numpy parser of
``rankcli eval`` and ``compare --qrels`` (their join stage, :mod:`.join`), and the reader of the TREC runs and qrels
of ``fuse`` and ``click-model``.

- A run: ``qid Q0 docid rank score tag``; qrels: ``qid iteration docid relevance``. Fields are separated by any run of
  C whitespace (space, tab, vertical tab, form feed, carriage return), as trec_eval reads them; blank lines and lines
  whose first field starts with ``#`` are skipped; a leading UTF-8 byte-order mark is skipped; gzipped files are read
  transparently (detected by their magic bytes).
- The common layout (single spaces, nothing else) is read by Arrow's multi-threaded CSV reader; any other by a numpy
  tokeniser. Both give the same :class:`TrecColumns` and name the line at fault in every error:
  ``run.txt:17: expected 6 fields "qid Q0 docid rank score tag", got "301 Q0 d1"``.
- Query ids are kept as codes into the file's distinct ids (in order of first appearance); document ids as rows of
  little-endian 64-bit words of their bytes, NUL-padded (:class:`TrecColumns`): two ids are equal exactly when their
  words are, the words hash cheaply, and viewed as numpy ``S`` strings they compare as ``strcmp`` compares.
- A (query, document) pair on two lines is an error naming the second line (:func:`check_unique_pairs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankcli.errors import InputError, InputFormatError
from rankcli.formats.trec.text import read_text_bytes
from rankcli.formats.trec.trec_eval_parse import token_bounds

RUN_LAYOUT = "qid Q0 docid rank score tag"
QRELS_LAYOUT = "qid iteration docid relevance"


@dataclass
class TrecColumns:
    """A TREC file's data lines in file order.

    ``qcodes`` (int64, one per line) index ``qnames`` (numpy ``S``, the file's distinct query ids in order of first
    appearance); ``words`` (``(lines, w)`` uint64) holds each document id's bytes, NUL-padded; ``values`` is the
    score or relevance (float64), ``numbers`` the 1-based line numbers, ``tag`` the first line's tag (runs: trec_eval's
    runid). ``keys`` and ``key_order`` are the sorted pair keys of the duplicate check, which the join reuses.
    """

    qcodes: np.ndarray
    qnames: np.ndarray
    words: np.ndarray | None  # None when read by the C path (formats.trec.join_native), which needs them for no check
    values: np.ndarray
    numbers: np.ndarray | None  # None when read by the C path, which leaves every error to this module
    tag: str = ""
    keys: np.ndarray | None = None  # the pair keys, sorted
    key_order: np.ndarray | None = None  # the lines in the order of ``keys``
    hashes: np.ndarray | None = None  # doc_hash(words), kept from the duplicate check
    text: bytes = b""  # the decoded file, for quoting a line in an error

    @property
    def qids(self) -> np.ndarray:
        """The query id of each line (numpy ``S``)."""
        return self.qnames[self.qcodes]

    @property
    def docids(self) -> np.ndarray:
        """The document id of each line (numpy ``S``, a view of ``words``)."""
        return self.words.view(f"S{8 * self.words.shape[1]}").ravel()

    def line_text(self, number: int) -> str:
        """Line ``number`` (1-based) of the file, as text."""
        lines = self.text.split(b"\n", number)
        return lines[number - 1].decode("utf-8", "replace").rstrip("\r") if len(lines) >= number else ""


def _gather(arr: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The tokens ``arr[starts:starts+lengths]`` as a numpy ``S`` array (NUL-padded to the longest)."""
    w = max(int(lengths.max()) if lengths.shape[0] else 1, 1)
    padded = np.concatenate([arr, np.zeros(w, dtype=np.uint8)])
    windows = np.lib.stride_tricks.as_strided(padded, shape=(arr.shape[0] + 1, w), strides=(1, 1))
    m = windows[starts]
    m[np.arange(w)[None, :] >= lengths[:, None]] = 0
    return m.view(f"S{w}").ravel()


def words_of(strings: np.ndarray) -> np.ndarray:
    """A numpy ``S`` array as ``(n, w)`` uint64 words of its bytes, NUL-padded to a multiple of 8 bytes."""
    width = strings.dtype.itemsize
    m = np.ascontiguousarray(strings).view(np.uint8).reshape(-1, width)
    if width % 8 or width == 0:
        m = np.concatenate([m, np.zeros((m.shape[0], 8 - width % 8), dtype=np.uint8)], axis=1)
    return np.ascontiguousarray(m).view(np.uint64)


def _arrow_words(col, ascii_text: bool) -> np.ndarray:
    """An Arrow binary column's values as :func:`words_of` gives them, chunk by chunk (a column may hold more bytes
    than one Arrow array can), built in C for ASCII text (padded by Arrow to a common width, then viewed)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    width = max(int(pc.max(pc.binary_length(col)).as_py() or 1), 1)
    width = -(-width // 8) * 8
    parts = [np.zeros(0, dtype=np.uint8)]
    for chunk in col.chunks:
        n = len(chunk)
        if ascii_text:
            padded = pc.ascii_rpad(chunk.view(pa.string()), width=width, padding="\x00")
            bufs = padded.buffers()  # every value is exactly `width` bytes
            start = int(np.frombuffer(bufs[1], dtype=np.int32, count=1, offset=padded.offset * 4)[0])
            parts.append(np.frombuffer(bufs[2], dtype=np.uint8, count=n * width, offset=start))
            continue
        bufs = chunk.buffers()
        offsets = np.frombuffer(bufs[1], dtype=np.int32, count=n + 1, offset=chunk.offset * 4).astype(np.int64)
        data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
        words = words_of(_gather(data, offsets[:-1], np.diff(offsets)))
        wide = np.zeros((n, width // 8), dtype=np.uint64)
        wide[:, :words.shape[1]] = words
        parts.append(wide.view(np.uint8).ravel())
    data = parts[1] if len(parts) == 2 else np.concatenate(parts)  # one chunk: a view, no copy
    return data.view(np.uint64).reshape(-1, width // 8)


#: The hash seed of this process: ids crafted to collide under a known seed (10,000 of them made every pair a
#: candidate, a MemoryError) do not collide under an unknown one.
HASH_SEED = int.from_bytes(__import__("os").urandom(8), "little")


def doc_hash(words: np.ndarray, seed: np.ndarray | int | None = None) -> np.ndarray:
    """A uint64 hash of each row of :func:`words_of` words (multiply-xorshift over the words, from ``seed``: by
    default this process's random :data:`HASH_SEED`). All-zero words (the padding of a shorter id) are skipped, so
    the padding width plays no part."""
    if seed is None:
        seed = HASH_SEED
    n = words.shape[0]
    h = np.full(n, 1469598103934665603, dtype=np.uint64)
    h ^= np.asarray(seed, dtype=np.uint64)
    mixed, shifted = np.empty(n, dtype=np.uint64), np.empty(n, dtype=np.uint64)  # in place: no fresh pages per word
    prime, shift = np.uint64(1099511628211), np.uint64(29)
    for j in range(words.shape[1]):
        x = words[:, j]
        np.bitwise_xor(h, x, out=mixed)
        mixed *= prime
        np.right_shift(mixed, shift, out=shifted)
        mixed ^= shifted
        if j == 0:  # an id has at least one byte: word 0 is never padding
            h, mixed = mixed, h
        else:
            np.copyto(h, mixed, where=x != 0)
    return h


def same_words(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise equality of two word matrices of possibly different widths (the wider one's extra words must be 0)."""
    w = min(a.shape[1], b.shape[1])
    same = np.all(a[:, :w] == b[:, :w], axis=1)
    for extra in (a[:, w:], b[:, w:]):
        if extra.shape[1]:
            same &= ~np.any(extra, axis=1)
    return same


def pair_keys(qcodes: np.ndarray, hashes: np.ndarray, n_codes: int) -> np.ndarray:
    """Sortable uint64 keys of (query, document) pairs: the query code in the high bits, the document hash below.
    Equal pairs have equal keys; the converse is checked by whoever compares them."""
    qbits = max(int(n_codes).bit_length(), 1)
    return (qcodes.astype(np.uint64) << np.uint64(64 - qbits)) | (hashes >> np.uint64(qbits))


def check_unique_pairs(cols: TrecColumns, path: Path, duplicate: str) -> None:
    """Sort the pair keys (kept in ``cols.keys``/``cols.key_order``); a (qid, docid) pair on two lines is an
    :class:`InputFormatError` naming the second line and the first."""
    cols.hashes = doc_hash(cols.words)
    keys = pair_keys(cols.qcodes, cols.hashes, cols.qnames.shape[0])
    order = np.argsort(keys, kind="stable")  # queries come in blocks of ascending codes: nearly sorted, cheap
    k = keys[order]
    cols.keys, cols.key_order = k, order
    same = np.flatnonzero(k[1:] == k[:-1])
    if not same.shape[0]:
        return
    a, b = order[same], order[same + 1]
    if np.any(same[1:] == same[:-1] + 1):  # three lines or more with one key (a hash collision): every pair
        runs = np.split(same, np.flatnonzero(np.diff(same) != 1) + 1)
        pairs = [(order[i], order[j]) for r in runs for i in range(r[0], r[-1] + 2) for j in range(i + 1, r[-1] + 2)]
        a, b = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    real = (cols.qcodes[a] == cols.qcodes[b]) & same_words(cols.words[a], cols.words[b])
    if real.any():
        second, first = min(zip(np.maximum(a, b)[real].tolist(), np.minimum(a, b)[real].tolist()))
        q, d = cols.qnames[cols.qcodes[second]].decode(), cols.docids[second].decode()
        number = int(cols.numbers[second])
        raise InputFormatError(f"document {d} {duplicate} for query {q} (first at line {int(cols.numbers[first])})",
                               str(path), number, cols.line_text(number))


def _codes(qids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes of ``qids`` (numpy ``S``) into their distinct values in order of first appearance. TREC files list a
    query's lines together, so only the first line of each block is looked at."""
    if qids.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype="S1")
    heads = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]])
    uniq, first, inv = np.unique(qids[heads], return_index=True, return_inverse=True)
    rank = np.empty(uniq.shape[0], dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(uniq.shape[0])
    codes = np.repeat(rank[inv], np.diff(np.r_[heads, qids.shape[0]]))
    return codes, uniq[np.argsort(first, kind="stable")]


def _read_simple(data: bytes, count: int, docid_field: int, value_field: int) -> TrecColumns | None:
    """The common layout read by Arrow's CSV reader (on one thread, see below): single spaces between fields, one line
    per record, no tab, carriage return, blank, comment or indented line. None when the file is not that simple, or
    Arrow finds a line it cannot read: the general tokeniser then reads it (and names the line at fault)."""
    # A double, leading or trailing space gives an empty field (refused below) or a line with too many fields; a blank
    # line is a one-field record (ignore_empty_lines=False); a comment line's first field starts with '#'.
    if not data or data[:1] in b" #\n" or any(c in data for c in (b"\t", b"\r", b"\x0b", b"\x0c")):
        return None
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    from rankcli.formats.arrow import column_to_numpy

    names = [f"f{i}" for i in range(count)]
    types = {n: pa.binary() for n in names}  # bytes: the UTF-8 check was done on the whole file
    types[names[value_field]] = pa.float64()
    try:
        table = pacsv.read_csv(pa.py_buffer(data),
                               # one thread: a threaded read that fails leaves parse tasks running in Arrow's
                               # pool, and a process exiting then (exit 3) aborts in its teardown ("terminate
                               # called without an active exception", SIGABRT) in about one run in ten
                               read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 24,
                                                              use_threads=False),
                               parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False,
                                                                escape_char=False, newlines_in_values=False,
                                                                ignore_empty_lines=False),
                               convert_options=pacsv.ConvertOptions(column_types=types, strings_can_be_null=False,
                                                                    quoted_strings_can_be_null=False,
                                                                    null_values=[]))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if any(pc.min(pc.binary_length(table.column(n))).as_py() == 0 for n in names if n != names[value_field]):
        return None  # an empty field: two spaces in a row, or a leading space
    values = column_to_numpy(table.column(names[value_field]))  # ChunkedArray.to_numpy costs ~0.2 s here
    if np.isnan(values).any() or (count == 4 and np.isinf(values).any()):
        return None  # NaN, or an infinite relevance: the general path names the line
    enc = pc.dictionary_encode(table.column(names[0]))
    qnames = np.array(enc.chunk(0).dictionary.to_pylist() if enc.num_chunks else [], dtype=bytes)
    if qnames.shape[0] and (qnames.astype("S1") == b"#").any():
        return None  # a comment line that happens to have the fields of a record
    qcodes = column_to_numpy(pa.chunked_array([c.indices for c in enc.chunks], pa.int32())).astype(np.int64)
    cols = TrecColumns(qcodes, qnames, _arrow_words(table.column(names[docid_field]), data.isascii()),
                       np.ascontiguousarray(values, dtype=np.float64), np.arange(1, values.shape[0] + 1),
                       text=data)
    if count == 6 and values.shape[0]:
        cols.tag = table.column(names[5])[0].as_py().decode()
    return cols


def _first_unparsable(strings) -> int:
    """The index of the first string Arrow's number parser refuses (one is known to be refused), by bisection: the
    tokens are judged by the same parser that read the rest, so what is a number cannot differ between the two
    (Python's ``float`` takes ``1_0`` and Arabic-Indic digits, which Arrow refuses)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lo, hi = 0, len(strings)  # the first refused token is in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            pc.cast(strings.slice(lo, mid - lo), pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            hi = mid
        else:
            lo = mid
    return lo


def _numbers(arr, starts, lengths, what, path, numbers) -> tuple[np.ndarray, InputFormatError | None]:
    """Parse number tokens in C (Arrow's cast): the values, and the error of the first token that is not a number, or
    NaN, or (a relevance) infinite; with an error, only the values before its line."""
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
        i = _first_unparsable(strings)
        values = pc.cast(strings.slice(0, i), pa.float64()).to_numpy(zero_copy_only=False)
        problem = InputFormatError(f"{what} must be a number", str(path), int(numbers[i]), strings[i].as_py())
    else:
        problem = None
    bad = np.isnan(values) | (np.isinf(values) if what == "relevance" else False)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        kind = "NaN" if np.isnan(values[i]) else "infinite"
        problem = InputFormatError(f"{what} is {kind}", str(path), int(numbers[i]), strings[i].as_py())
        values = values[:i]
    return values, problem


def _tokens(arr: np.ndarray, layout: str, path: Path):
    """Token starts and ends (``(lines, fields)``) of the data lines and their line numbers, and the error of the
    first line with another field count (None when there is none; the lines are then those before it)."""
    count = len(layout.split())
    starts, ends = token_bounds(arr)
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
    bad = per_line[data_lines] != count
    problem = None
    if bad.any():  # the lines before it are read on: an error of theirs comes first in the file
        first = int(np.argmax(bad))
        number = int(data_lines[first]) + 1
        text = bytes(arr).split(b"\n", number)[number - 1].decode("utf-8", "replace").rstrip("\r")
        problem = InputFormatError(f'expected {count} fields "{layout}"', str(path), number, text)
        data_lines, starts, ends = data_lines[:first], starts[:first * count], ends[:first * count]
    return starts.reshape(-1, count), ends.reshape(-1, count), data_lines + 1, problem


def _read_general(data: bytes, path: Path, layout: str, docid_field: int, value_field: int,
                  duplicate: str) -> TrecColumns:
    """Any whitespace layout, tokenised with numpy. Of the errors a file may have (a line with another field count, a
    value that is not a number, a pair on two lines), the one on the earliest line is raised: the checks run on the
    lines before the first error found so far."""
    arr = np.frombuffer(data, dtype=np.uint8)
    empty = np.zeros(0, dtype=np.int64)
    if arr.shape[0] == 0:
        return TrecColumns(empty, np.zeros(0, "S1"), np.zeros((0, 1), np.uint64), np.zeros(0), empty)
    starts, ends, numbers, problem = _tokens(arr, layout, path)
    lengths = ends - starts
    what = "score" if layout == RUN_LAYOUT else "relevance"
    values, bad_value = _numbers(arr, starts[:, value_field], lengths[:, value_field], what, path, numbers)
    if bad_value is not None:  # on an earlier line than a field count's error, which ended the lines read
        problem, n = bad_value, values.shape[0]
        starts, lengths, numbers = starts[:n], lengths[:n], numbers[:n]
    qcodes, qnames = _codes(_gather(arr, starts[:, 0], lengths[:, 0]))
    words = words_of(_gather(arr, starts[:, docid_field], lengths[:, docid_field]))
    cols = TrecColumns(qcodes, qnames, words, values, numbers, text=data)
    if problem is not None:
        check_unique_pairs(cols, path, duplicate)  # a pair repeated before the error's line comes first
        raise problem
    if layout == RUN_LAYOUT and numbers.shape[0]:
        cols.tag = bytes(arr[starts[0, 5]:ends[0, 5]]).decode()
    return cols


def read_columns(path: Path | str, layout: str, docid_field: int, value_field: int, duplicate: str,
                 data: bytes | None = None) -> TrecColumns:
    """Read a whitespace-separated TREC file (see the module docstring), or its ``data`` already read by
    :func:`read_text_bytes`; a line with another field count, a value that is not a number (as Arrow reads numbers)
    or NaN, an infinite relevance, or a (qid, docid) pair on two lines is an :class:`InputFormatError` naming the
    earliest line with an error."""
    path = Path(path)
    if data is None:
        data = read_text_bytes(path)
    cols = _read_simple(data, len(layout.split()), docid_field, value_field)
    if cols is None:
        cols = _read_general(data, path, layout, docid_field, value_field, duplicate)
    check_unique_pairs(cols, path, duplicate)
    return cols


def read_run_columns(path: Path | str, data: bytes | None = None) -> TrecColumns:
    """A TREC run (``qid Q0 docid rank score tag``), vectorised; an empty run is an :class:`InputError`."""
    cols = read_columns(path, RUN_LAYOUT, 2, 4, "appears twice", data)
    if cols.values.shape[0] == 0:
        raise InputError(f"{path}: the run is empty")
    return cols


def read_qrels_columns(path: Path | str, data: bytes | None = None) -> TrecColumns:
    """TREC qrels (``qid iteration docid relevance``), vectorised; an empty file is an :class:`InputError`."""
    cols = read_columns(path, QRELS_LAYOUT, 2, 3, "is judged twice", data)
    if cols.values.shape[0] == 0:
        raise InputError(f"{path}: the qrels file is empty")
    return cols


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
