"""SVMlight / LETOR rows from a block of text: block-vectorised field parsing into labels, qids and a dense matrix.

Parsing never loops over tokens in Python. A block of whole lines is tokenised with numpy on the whole block
(:mod:`rankcli.formats.svmlight_text`); the number substrings are compacted into one Arrow string buffer and parsed in
C by ``pyarrow.compute.cast``, and the features are scattered into a dense float32 (or, asked for, float64) block
matrix. Only when a cast fails does a cheap fallback (a bisection with the same cast) find the first offending token,
for a ``path:line: what, got 'token'`` message.

Syntax accepted per line: ``<label> [qid:<int>] <index>:<value> ... [# comment]``, separated by spaces or tabs, LF
or CRLF line ends; blank lines and comment-only lines are skipped. Labels and values take any float syntax arrow
accepts (``1e-3``, ``.25``, ``+1.5``, ``-7``, ``nan``, ``inf``); indices and qids are plain integers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rankcli.errors import InputFormatError
from rankcli.formats.arrow import column_to_numpy, strings_array
from rankcli.formats.svmlight_text import (
    INT64_MAX,
    INT64_MIN,
    UTF8_BOM,
    Source,
    Tokens,
    blank_comments,
    check_colons,
    check_line_ends,
    check_text_bytes,
    line_offset,
    tokenize,
)

#: A dense float32 column per feature: refuse absurd widths (a sparse text-classification file, a typo) early.
MAX_FEATURES = 20_000


# ----------------------------------------------------------------------------------------------------------------------
# Parsing one block


@dataclass
class Block:
    """The rows parsed from one block of whole lines.

    ``features`` is a dense ``(n_rows, width)`` float32 (or float64) matrix in Fortran order (each column contiguous),
    where ``width`` is the largest column seen in this block; ``lines`` are 1-based line numbers; ``starts`` the byte
    offset of each row's line in the block; ``comments`` the comment text after ``#`` (``None`` for rows without
    one).
    """

    labels: np.ndarray
    qids: np.ndarray | None
    features: np.ndarray
    lines: np.ndarray
    starts: np.ndarray
    comments: list | None
    has_qid: bool

    @property
    def n_rows(self) -> int:
        return int(self.labels.shape[0])

    @property
    def width(self) -> int:
        return int(self.features.shape[1])


def cast_strings(strings: pa.Array, to: pa.DataType) -> tuple[np.ndarray | None, int]:
    """Cast the strings to ``to`` (numbers, by Arrow's correctly rounded parser); on failure return ``(None, index of
    the first string that does not parse)``: one parser of numbers for text and for string columns."""
    try:
        return column_to_numpy(pc.cast(strings, to)), -1
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    lo, hi = 0, len(strings)  # invariant: strings[:lo] parse, strings[:hi] does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            pc.cast(strings.slice(lo, mid - lo), to)
            lo = mid
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            hi = mid
    return None, lo


def _parse_int(data: bytes, b: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Parse the integers ``b[s:e]`` (optional sign, then digits; leading zeros allowed) into int64.

    Returns ``(values, first_bad, first_out_of_range)`` (``-1`` when there is none): a bad token is not an integer,
    an out-of-range one is an integer beyond int64 (its value is then clipped to the int64 bound of its sign).
    Up to 19 digits are read digit by digit into uint64 (10**19 - 1 < 2**64, so no wrap); a longer token (leading
    zeros, or out of range) is rare and read in Python.
    """
    n = s.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64), -1, -1
    first = b[s]
    neg = first == 45
    s = s + (neg | (first == 43))
    length = e - s
    bad = length <= 0
    out = np.zeros(n, dtype=np.uint64)
    last = np.maximum(e - 1, 0)
    for j in range(min(int(length.max()), 19)):
        valid = length > j
        digit = b[np.minimum(s + j, last)] - np.uint8(48)  # uint8: a byte below '0' wraps above 9
        bad |= valid & (digit > 9)
        out = np.where(valid, out * np.uint64(10) + digit, out)
    big = np.uint64(INT64_MAX)
    over = np.where(neg, out > big + np.uint64(1), out > big)
    for i in np.flatnonzero((length > 19) & ~bad).tolist():
        digits = data[int(s[i]):int(e[i])]
        if not digits.isdigit():
            bad[i] = True
            continue
        digits = digits.lstrip(b"0")
        if len(digits) > 19:
            over[i] = True
        else:
            out[i] = int(digits or b"0")
            over[i] = out[i] > big + np.uint64(neg[i])
    first_bad = np.flatnonzero(bad)
    first_over = np.flatnonzero(over & ~bad)
    out = np.where(over, big + neg.astype(np.uint64), out)
    signed = out.view(np.int64)
    # -(2**63) is its own negation in int64: the wrap gives the right value there.
    values = np.where(neg, -signed, signed)
    return (values, int(first_bad[0]) if first_bad.size else -1, int(first_over[0]) if first_over.size else -1)


def _parse_index(b: np.ndarray, data: bytes, s: np.ndarray, e: np.ndarray, length: np.ndarray
                 ) -> tuple[np.ndarray, int]:
    """Feature indices ``b[s:e]`` (``length = e - s``); the common 1..4-digit case reads 4 bytes at once.

    Returns ``(indices, first_bad)``; an index beyond int64 comes back as int64's maximum (too large for any table).
    """
    n = s.shape[0]
    if n == 0 or int(length.max()) > 4 or int(e.min()) < 4:
        values, bad, _ = _parse_int(data, b, s, e)
        return values, bad
    # An unaligned uint32 view with a 1-byte stride: words[p] holds bytes p..p+3, so words[e - 4] ends at the colon.
    words = np.ndarray((b.shape[0] - 3,), dtype="<u4", buffer=b, offset=0, strides=(1,))
    w = words[e - 4]
    # SWAR on four bytes: clear the bytes before the index, fill them with '0', check every byte is a digit.
    shift = ((4 - length) * 8).astype(np.uint32)
    low = (np.uint32(1) << shift) - np.uint32(1)
    w = (w & ~low) | (np.uint32(0x30303030) & low)
    bad = ((w & np.uint32(0xF0F0F0F0)) != np.uint32(0x30303030)) | (
        ((w + np.uint32(0x06060606)) & np.uint32(0xF0F0F0F0)) != np.uint32(0x30303030))
    if bad.any():
        values, first_bad, _ = _parse_int(data, b, s, e)  # a sign, a letter: the general parser decides
        return values, first_bad
    d = w - np.uint32(0x30303030)
    value = ((d & np.uint32(0xFF)) * np.uint32(1000) + ((d >> np.uint32(8)) & np.uint32(0xFF)) * np.uint32(100)
             + ((d >> np.uint32(16)) & np.uint32(0xFF)) * np.uint32(10) + (d >> np.uint32(24)))
    return value.astype(np.int64), -1


def _dense(rows: np.ndarray, cols: np.ndarray, values: np.ndarray, n_rows: int, width: int) -> np.ndarray:
    """The ``(n_rows, width)`` matrix, Fortran order (contiguous columns), of the sparse triples (of ``values``'
    dtype: float32, or float64 for ``convert --float64``)."""
    if width == 0:
        return np.zeros((n_rows, 0), dtype=values.dtype, order="F")
    if (values.shape[0] == n_rows * width and (np.bincount(rows, minlength=n_rows) == width).all()
            and (cols.reshape(n_rows, width) == np.arange(width)).all()):
        # Dense rows with every index in order (WEB30K, Yahoo): no scatter needed.
        dense = values.reshape(n_rows, width)
    else:
        dense = np.zeros((n_rows, width), dtype=values.dtype)
        dense.reshape(-1)[rows * width + cols] = values
    return np.asfortranarray(dense)


def parse_block(data: bytes, first_line: int = 1, *, name: str = "<input>", zero_based: bool | None = False,
                num_features: int | None = None, keep_comments: bool = True, float64: bool = False) -> Block:
    """Parse ``data``, whole lines ending with a newline, whose first line is line ``first_line`` of ``name``.

    The features are float32 (the data model's type), or float64 with ``float64`` (the numbers LightGBM parses).
    A UTF-8 byte-order mark at the very start of the input (``first_line == 1``; editors on Windows write one) is
    skipped. The error raised is the one on the earliest line (file order), whichever check finds it."""
    if first_line == 1 and data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM):]
    return _parse_earliest(data, first_line, name, (zero_based, num_features, keep_comments, float64))


def _parse_earliest(data: bytes, first_line: int, name: str, options: tuple) -> Block:
    """:func:`_parse`, reporting an error only once the lines before it are known to be clean.

    Some checks stop the parse (the steps after them need what they check: one colon per pair, one qid mode, text
    bytes); an error of another kind may sit on an earlier line. The lines before the error are parsed again (on the
    error path only), which raises that earlier error if there is one. Each round stops at an earlier line, with
    one stopping check fewer, so there are a few rounds at most."""
    try:
        return _parse(Source(data, first_line, name), *options)
    except InputFormatError as exc:
        if exc.path == name and exc.line is not None and exc.line > first_line:
            _parse_earliest(data[:line_offset(data, exc.line - first_line)], first_line, name, options)
        raise


def _parse(src: Source, zero_based: bool | None, num_features: int | None, keep_comments: bool, float64: bool) -> Block:
    check_line_ends(src)
    b, comment_lines, comment_texts = blank_comments(src, keep_comments)
    small, sep_pos, sep_bytes = check_text_bytes(src, b)
    tok = tokenize(b, sep_pos, sep_bytes)
    if tok is None:
        empty = np.zeros(0, dtype=np.int64)
        return Block(np.zeros(0), None, np.zeros((0, 0), np.float64 if float64 else np.float32, order="F"), empty,
                     empty, None, False)
    del sep_pos, sep_bytes
    colon_pos = check_colons(src, b, tok)
    qid_tok, has_qid = _find_qids(src, b, tok)
    pair = np.flatnonzero(~tok.first)
    if qid_tok.size:
        is_feat = ~tok.first
        is_feat[qid_tok] = False
        feat_tok = np.flatnonzero(is_feat)
        fcp = colon_pos[is_feat[pair]]
    else:
        feat_tok, fcp = pair, colon_pos
    del pair, colon_pos
    fs = tok.starts[feat_tok]
    flen = fcp - fs

    # Integers (indices, qids) are parsed in numpy: they are short, and a strict syntax is wanted.
    index, bad_i = _parse_index(b, src.data, fs, fcp, flen)
    if bad_i >= 0:
        k = int(feat_tok[bad_i])
        qid_late = src.data[int(tok.starts[k]):int(tok.starts[k]) + 4] == b"qid:"
        tok.error(src, "qid: must come right after the label" if qid_late else "non-integer feature index", k)
    qids = _qids(src, b, tok, qid_tok) if has_qid else None
    labels = _labels(src, b, tok)
    values = _feature_values(src, b, small, tok, (qid_tok, feat_tok, fcp, flen), float64)
    del small, fs
    src.errors.raise_first()  # the earliest of the index, qid, label, value (and comment) errors

    cols = index if zero_based else index - 1
    rows = tok.row[feat_tok]
    width = _check_columns(src, tok, feat_tok, rows, cols, zero_based, num_features)
    if num_features is not None:
        width = num_features
    n_rows = int(tok.row_line.shape[0])
    features = _dense(rows, cols, values, n_rows, width)
    del rows, cols, values, index
    comments = _row_comments(comment_lines, comment_texts, tok.row_line)
    return Block(labels, qids, features, tok.row_line + src.first_line, tok.row_start, comments, has_qid)


def _find_qids(src: Source, b: np.ndarray, tok: Tokens) -> tuple[np.ndarray, bool]:
    """The ``qid:`` tokens (the second token of a line, named ``qid``) and whether the block's lines have them;
    stops at the first line whose mode differs from the block's first line."""
    label_tok = np.flatnonzero(tok.first)
    second = label_tok + 1
    second = second[second < tok.first.shape[0]]
    second = second[~tok.first[second]]
    cand = second[(tok.ends[second] - tok.starts[second] > 4)]
    s = tok.starts[cand]
    qid_tok = cand[(b[s] == 113) & (b[s + 1] == 105) & (b[s + 2] == 100) & (b[s + 3] == 58)]
    row_has_qid = np.zeros(tok.row_line.shape[0], dtype=bool)
    row_has_qid[tok.row[qid_tok]] = True
    has_qid = bool(row_has_qid[0])
    mixed = np.flatnonzero(row_has_qid != has_qid)
    if mixed.size:
        r = int(mixed[0])
        what = "line has qid: but earlier lines do not" if not has_qid else "line has no qid: but earlier lines do"
        start = int(tok.row_start[r])
        src.fail(what, int(tok.row_line[r]) + src.first_line, src.text(start, src.data.find(b"\n", start)).strip())
    return qid_tok, has_qid


def _qids(src: Source, b: np.ndarray, tok: Tokens, qid_tok: np.ndarray) -> np.ndarray:
    """The integer after ``qid:`` of every row; any 64-bit signed integer (leading zeros allowed)."""
    qids, bad, over = _parse_int(src.data, b, tok.starts[qid_tok] + 4, tok.ends[qid_tok])
    if bad >= 0:
        tok.error(src, "non-integer qid", int(qid_tok[bad]))
    if over >= 0:
        tok.error(src, f"qid out of range (a 64-bit integer, {INT64_MIN} to {INT64_MAX})", int(qid_tok[over]))
    return qids


def _labels(src: Source, b: np.ndarray, tok: Tokens) -> np.ndarray:
    """The first token of every row as float64; a finite number too large for float64 (``1e400``) is an error, a
    literal ``inf`` is not."""
    label_tok = np.flatnonzero(tok.first)
    ls, le = tok.starts[label_tok], tok.ends[label_tok]
    llen = le - ls
    loff = np.zeros(llen.shape[0] + 1, dtype=np.int32)
    np.cumsum(llen, out=loff[1:])
    label_bytes = b[np.repeat(ls - loff[:-1], llen) + np.arange(int(loff[-1]))]  # ASCII: checked above
    label_strings = pa.Array.from_buffers(pa.string(), llen.shape[0], [None, pa.py_buffer(loff),
                                                                       pa.py_buffer(label_bytes)])
    labels, bad = cast_strings(label_strings, pa.float64())
    if labels is None:
        tok.error(src, "non-numeric label", int(label_tok[bad]))
        return np.zeros(label_tok.shape[0])
    for i in np.flatnonzero(np.isinf(labels)).tolist():
        if not _is_inf_literal(src.data[int(ls[i]):int(le[i])]):
            tok.error(src, "label overflows float64 (largest finite 1.7976931348623157e+308)", int(label_tok[i]))
            break
    return labels


def _is_inf_literal(token: bytes) -> bool:
    return token.lstrip(b"+-").lower() in (b"inf", b"infinity")


def _feature_values(src: Source, b: np.ndarray, small: np.ndarray, tok: Tokens, where: tuple,
                    float64: bool) -> np.ndarray:
    """The value after the colon of every feature token (``where``: the qid tokens, the feature tokens, their colons
    and index lengths), as float32 (or float64 with ``float64``); a finite number beyond the type's range (``1e39``
    in float32, ``1e400`` in float64) is an error, a literal ``inf`` is not.

    The value substrings are compacted into one buffer (separators, labels, qid tokens, indices and colons removed),
    so that value i is ``compact[off[i]:off[i+1]]``, and arrow parses them all in one cast."""
    qid_tok, feat_tok, fcp, flen = where
    n = b.shape[0]
    keep = np.logical_not(small, out=small)  # reuse the buffer
    keep[fcp] = False
    for j in range(1, int(flen.max()) + 1 if flen.size else 1):
        keep[(fcp if j == 1 else fcp[flen >= j]) - j] = False
    for which in (np.flatnonzero(tok.first), qid_tok):  # labels, then qid tokens
        if which.size:
            s = tok.starts[which]
            length = tok.ends[which] - s
            for j in range(int(length.max())):
                keep[(s if j == 0 else s[length > j]) + j] = False
    # Arrow's filter compacts faster than numpy's boolean indexing.
    mask = pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(np.packbits(keep, bitorder="little"))])
    del keep
    compact = pc.filter(pa.Array.from_buffers(pa.uint8(), n, [None, pa.py_buffer(b)]), mask).buffers()[1]
    del mask
    fe = tok.ends[feat_tok]
    offsets = np.zeros(feat_tok.shape[0] + 1, dtype=np.int32)
    np.cumsum(fe - fcp - 1, out=offsets[1:])
    strings = pa.StringArray.from_buffers(feat_tok.shape[0], pa.py_buffer(offsets), compact)
    values, bad = cast_strings(strings, pa.float64())
    if values is None:
        tok.error(src, "non-numeric feature value", int(feat_tok[bad]))
        return np.zeros(feat_tok.shape[0], dtype=np.float64 if float64 else np.float32)
    with np.errstate(over="ignore"):  # an overflow is found below and reported as the input's error
        stored = values if float64 else values.astype(np.float32)
    inf_stored = np.isinf(stored)
    if inf_stored.any():
        inf64 = np.isinf(values)
        over = np.flatnonzero(inf_stored & ~inf64)  # finite in the text, beyond float32
        first = int(over[0]) if over.size else len(values)
        for i in np.flatnonzero(inf64[:first]).tolist():  # 1e400 parses as inf: only a literal inf is one
            if not _is_inf_literal(src.data[int(fcp[i]) + 1:int(fe[i])]):
                first = i
                break
        if first < len(values):
            what = ("feature value overflows float64 (largest finite 1.7976931348623157e+308)" if float64 else
                    "feature value overflows float32 (largest finite 3.4028235e+38)")
            tok.error(src, what, int(feat_tok[first]))
    return stored


#: The error for a feature index below 1, by whether the reading command lacks convert's --zero-based.
_ONE_BASED = {False: "feature index must be >= 1 (pass --zero-based for 0-based files)",
              True: "feature index must be >= 1 (a 0-based file: convert it with rankcli convert --zero-based and "
                    "pass the Parquet file)"}


def _check_columns(src: Source, tok: Tokens, feat_tok: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                   zero_based: bool | None, num_features: int | None) -> int:
    """Column numbers in range and not repeated on a line; returns the block's width (largest column + 1)."""
    if not cols.size:
        return 0
    low = np.flatnonzero(cols < 0)
    if low.size:
        tok.error(src, "feature index must be >= 0" if zero_based else _ONE_BASED[zero_based is None],
                  int(feat_tok[low[0]]))
    limit = num_features if num_features is not None else MAX_FEATURES
    high = np.flatnonzero(cols >= limit)
    if high.size:
        what = (f"feature index beyond --num-features {num_features}" if num_features is not None else
                f"feature index too large for a dense table (at most {MAX_FEATURES} features)")
        tok.error(src, what, int(feat_tok[high[0]]))
    # Duplicate index on one line: indices almost always increase along a line; check exactly only if not.
    increasing = bool(((rows[1:] != rows[:-1]) | (cols[1:] > cols[:-1])).all())
    if not increasing:
        order = np.lexsort((cols, rows))
        dup = np.flatnonzero((rows[order][1:] == rows[order][:-1]) & (cols[order][1:] == cols[order][:-1]))
        if dup.size:
            tok.error(src, "duplicate feature index on one line", int(feat_tok[order[dup + 1].min()]))
    src.errors.raise_first()
    return int(cols.max()) + 1


def _row_comments(comment_lines: np.ndarray | None, comment_texts: list | None, row_line: np.ndarray) -> list | None:
    """Each row's comment text (``None`` for a row without one); comment-only lines have no row and are dropped."""
    if comment_texts is None:
        return None
    where = np.searchsorted(comment_lines, row_line)
    where_c = np.minimum(where, comment_lines.shape[0] - 1)
    hit = comment_lines[where_c] == row_line
    if not hit.any():
        return None
    return [comment_texts[w] if h else None for w, h in zip(where_c.tolist(), hit.tolist())]


def comment_columns(comments: list, docid: bool, keep: bool) -> tuple[pa.Array | None, pa.Array | None]:
    """Arrow ``docid`` (from ``docid = X``) and ``comment`` columns from per-row comment bytes (or ``None``)."""
    text = strings_array(comments)
    docids = None
    if docid:
        docids = pc.struct_field(pc.extract_regex(text, r"docid\s*=\s*(?P<d>\S+)"), [0])
    return docids, (text if keep else None)
