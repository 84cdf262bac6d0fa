"""SVMlight / LETOR text: a streaming, block-vectorised reader and a vectorised writer.

Reading never loops over tokens in Python. The input is read in large byte blocks cut at a newline; each block is
tokenised with numpy on the whole block (separator positions, token boundaries from their gaps, colons per token),
the number substrings are compacted into one Arrow string buffer and parsed in C by ``pyarrow.compute.cast``, and the
features are scattered into a dense float32 block matrix. Only when a cast fails does a cheap fallback (a bisection
with the same cast) find the first offending token, for a ``path:line: what, got 'token'`` message.

Syntax accepted per line: ``<label> [qid:<int>] <index>:<value> ... [# comment]``, separated by spaces or tabs, LF
or CRLF line ends; blank lines and comment-only lines are skipped. Labels and values take any float syntax arrow
accepts (``1e-3``, ``.25``, ``+1.5``, ``-7``, ``nan``, ``inf``); indices and qids are plain integers.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rankcli.errors import InputError, InputFormatError

#: Bytes read per block (a block is cut at its last newline; a query that does not fit is carried over).
BLOCK_BYTES = 2 * 1024 * 1024
#: A dense float32 column per feature: refuse absurd widths (a sparse text-classification file, a typo) early.
MAX_FEATURES = 20_000
STDIN = "-"
#: Skipped at the start of a file (Windows editors save UTF-8 text with it).
UTF8_BOM = b"\xef\xbb\xbf"

_COMPRESSED = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


# ----------------------------------------------------------------------------------------------------------------------
# Opening inputs


def display_name(path: str | Path) -> str:
    return "<stdin>" if str(path) == STDIN else str(path)


def open_binary(path: str | Path) -> BinaryIO:
    """Open a text input as bytes: ``-`` is standard input, ``.gz``/``.bz2``/``.xz`` are decompressed by extension."""
    if str(path) == STDIN:
        return sys.stdin.buffer
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path}: is a directory")
    opener = _COMPRESSED.get(path.suffix.lower())
    try:
        return opener(path, "rb") if opener else open(path, "rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({exc.strerror or exc})") from None


def read_chunk(stream: BinaryIO, size: int, name: str) -> bytes:
    """``stream.read(size)``, turning a truncated or corrupt compressed stream into an :class:`InputError`."""
    try:
        return stream.read(size)
    except EOFError:
        raise InputError(f"{name}: truncated compressed file (it ends before the end-of-stream marker)") from None
    except (OSError, lzma.LZMAError, ValueError) as exc:
        raise InputError(f"{name}: corrupt compressed file ({exc})") from None


def strip_compression(name: str) -> str:
    for suffix in _COMPRESSED:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def sidecar_for(path: str | Path) -> Path | None:
    """The LightGBM-style ``<input>.query`` file next to ``path`` (also tried without a compression suffix)."""
    if str(path) == STDIN:
        return None
    path = Path(path)
    for candidate in (Path(f"{path}.query"), Path(f"{strip_compression(str(path))}.query")):
        if candidate.is_file():
            return candidate
    return None


def read_query_file(path: str | Path) -> np.ndarray:
    """Group sizes, one positive integer per line (LightGBM's ``.query`` layout); blank lines are skipped."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    sizes = []
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            text = raw.strip()
            if number == 1 and text.startswith(UTF8_BOM):
                text = text[len(UTF8_BOM):].strip()
            if not text:
                continue
            try:
                value = int(text)
            except ValueError:
                raise InputFormatError("expected a group size (a positive integer)", str(path), number,
                                       text.decode("utf-8", "replace")) from None
            if value <= 0:
                raise InputFormatError("group sizes must be positive", str(path), number, text.decode())
            sizes.append(value)
    return np.asarray(sizes, dtype=np.int64)


# ----------------------------------------------------------------------------------------------------------------------
# Parsing one block


@dataclass
class Block:
    """The rows parsed from one block of whole lines.

    ``features`` is a dense ``(n_rows, width)`` float32 matrix in Fortran order (each column contiguous), where
    ``width`` is the largest column seen in this block; ``lines`` are 1-based line numbers; ``starts`` the byte offset
    of each row's line in the block; ``comments`` the comment text after ``#`` (``None`` for rows without one).
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


def _cast(strings: pa.Array, to: pa.DataType) -> tuple[np.ndarray | None, int]:
    """Cast to ``to``; on failure return ``(None, index of the first string that does not parse)``."""
    try:
        return to_numpy(pc.cast(strings, to)), -1
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


def _parse_int(b: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, int]:
    """Parse the integers ``b[s:e]`` (optional sign, 1..18 digits) digit by digit; also the first bad one (or -1)."""
    n = s.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64), -1
    first = b[s]
    neg = first == 45
    s = s + (neg | (first == 43))
    length = e - s
    bad = (length <= 0) | (length > 18)
    out = np.zeros(n, dtype=np.int64)
    last = e - 1
    for j in range(min(int(length.max()), 18)):
        valid = length > j
        digit = b[np.minimum(s + j, last)].astype(np.int64) - 48
        bad |= valid & ((digit < 0) | (digit > 9))
        out = np.where(valid, out * 10 + digit, out)
    where = np.flatnonzero(bad)
    if where.size:
        return out, int(where[0])
    return np.where(neg, -out, out), -1


def _parse_index(b: np.ndarray, data: bytes, s: np.ndarray, e: np.ndarray, length: np.ndarray
                 ) -> tuple[np.ndarray, int]:
    """Feature indices ``b[s:e]`` (``length = e - s``); the common 1..4-digit case reads 4 bytes at once."""
    n = s.shape[0]
    if n == 0 or int(length.max()) > 4 or int(e.min()) < 4:
        return _parse_int(b, s, e)
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
        return _parse_int(b, s, e)  # a sign, a letter: the general parser decides and finds the first bad one
    d = w - np.uint32(0x30303030)
    value = ((d & np.uint32(0xFF)) * np.uint32(1000) + ((d >> np.uint32(8)) & np.uint32(0xFF)) * np.uint32(100)
             + ((d >> np.uint32(16)) & np.uint32(0xFF)) * np.uint32(10) + (d >> np.uint32(24)))
    return value.astype(np.int64), -1


def _dense(rows: np.ndarray, cols: np.ndarray, values: np.ndarray, n_rows: int, width: int) -> np.ndarray:
    """The ``(n_rows, width)`` float32 matrix, Fortran order (contiguous columns), of the sparse triples."""
    if width == 0:
        return np.zeros((n_rows, 0), dtype=np.float32, order="F")
    if (values.shape[0] == n_rows * width and (np.bincount(rows, minlength=n_rows) == width).all()
            and (cols.reshape(n_rows, width) == np.arange(width)).all()):
        # Dense rows with every index in order (WEB30K, Yahoo): no scatter needed.
        dense = values.astype(np.float32).reshape(n_rows, width)
    else:
        dense = np.zeros((n_rows, width), dtype=np.float32)
        dense.reshape(-1)[rows * width + cols] = values
    return np.asfortranarray(dense)


# pyarrow imports pandas (about a second) on pa.array() and Array.to_numpy(); the reader avoids both.


def to_numpy(arr: pa.Array) -> np.ndarray:
    """A numpy view of a primitive Arrow array without nulls (no pandas import, unlike ``Array.to_numpy``)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    dtype = np.dtype(arr.type.to_pandas_dtype())
    return np.frombuffer(arr.buffers()[1], dtype=dtype)[arr.offset:arr.offset + len(arr)]


def from_numpy(values: np.ndarray, type: pa.DataType) -> pa.Array:
    """A primitive Arrow array over ``values`` (zero-copy when contiguous; no pandas import, unlike ``pa.array``)."""
    values = np.ascontiguousarray(values, dtype=type.to_pandas_dtype())
    return pa.Array.from_buffers(type, values.shape[0], [None, pa.py_buffer(values)])


def strings_array(items: list) -> pa.Array:
    """An Arrow string array from a list of ``bytes`` (UTF-8) or ``None``."""
    n = len(items)
    valid = np.fromiter((x is not None for x in items), dtype=bool, count=n)
    lengths = np.fromiter((len(x) if x is not None else 0 for x in items), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = b"".join(x for x in items if x is not None)
    bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    arr = pa.Array.from_buffers(pa.binary(), n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)])
    try:
        return arr.cast(pa.string())
    except pa.ArrowInvalid:
        fixed = [None if x is None else x.decode("utf-8", "replace").encode() for x in items]
        return strings_array(fixed)


class _Errors:
    """Collects candidate errors (each at a line) and raises the earliest one, so messages follow file order."""

    def __init__(self) -> None:
        self.best: tuple[int, InputFormatError] | None = None

    def add(self, line: int, error: InputFormatError) -> None:
        if self.best is None or line < self.best[0]:
            self.best = (line, error)

    def raise_first(self) -> None:
        if self.best is not None:
            raise self.best[1]


def parse_block(data: bytes, first_line: int = 1, *, name: str = "<input>", zero_based: bool = False,
                num_features: int | None = None, keep_comments: bool = True) -> Block:
    """Parse ``data``, whole lines ending with a newline, whose first line is line ``first_line`` of ``name``.

    A UTF-8 byte-order mark at the very start of the input (``first_line == 1``; editors on Windows write one) is
    skipped."""
    if first_line == 1 and data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM):]
    b = np.frombuffer(data, dtype=np.uint8)
    n = b.shape[0]
    comment_lines = comment_texts = None

    def line_at(pos: int) -> int:
        return first_line + data.count(b"\n", 0, pos)

    def token_text(s: int, e: int) -> str:
        return data[s:e].decode("utf-8", "replace")

    if data.find(b"#") >= 0:
        # A comment runs from the first '#' of a line to its end: keep its text, then blank it out with spaces.
        hashes = np.flatnonzero(b == 35)
        newlines = np.flatnonzero(b == 10)
        hash_line = np.searchsorted(newlines, hashes)
        first = np.ones(hashes.shape[0], dtype=bool)
        first[1:] = hash_line[1:] != hash_line[:-1]
        hs, comment_lines = hashes[first], hash_line[first]
        he = newlines[comment_lines]
        if keep_comments:
            comment_texts = [data[s + 1:e].strip() for s, e in zip(hs.tolist(), he.tolist())]
        delta = np.zeros(n + 1, dtype=np.int8)
        delta[hs] = 1
        delta[he] = -1
        b = b.copy()
        b[np.cumsum(delta[:-1], dtype=np.int8).view(bool)] = 32

    # Anything outside printable ASCII, tab, CR and LF (comments excepted) is not SVMlight text.
    small = b <= 32
    sep_pos = np.flatnonzero(small)
    sep_bytes = b[sep_pos]
    control = (sep_bytes != 32) & (sep_bytes != 10) & (sep_bytes != 9) & (sep_bytes != 13)
    bad_pos = sep_pos[control][:1].tolist()
    if n and int(b.max()) >= 127:
        bad_pos.append(int(np.argmax(b >= 127)))
    if bad_pos:
        pos = min(bad_pos)
        if first_line == 1 and pos == 0 and data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            raise InputFormatError("not SVMlight text (UTF-16 text: save it as UTF-8 or ASCII)", name, 1,
                                   data[:8].decode("latin-1"))
        raise InputFormatError("not SVMlight text (binary data)", name, line_at(pos),
                               data[pos:pos + 8].decode("latin-1"))

    # Tokens are the runs between separators; a token's line is the number of newlines before it.
    sp = np.empty(sep_pos.shape[0] + 1, dtype=np.int64)
    sp[0] = -1
    sp[1:] = sep_pos
    gaps = np.flatnonzero(np.diff(sp) > 1)
    starts = sp[gaps] + 1
    ends = sp[gaps + 1]
    is_nl = sep_bytes == 10
    cum_nl = np.empty(sp.shape[0], dtype=np.int64)
    cum_nl[0] = 0
    np.cumsum(is_nl, out=cum_nl[1:])
    tok_line = cum_nl[gaps]
    n_tokens = starts.shape[0]
    newline_pos = sep_pos[is_nl]
    del sp, sep_pos, sep_bytes, control, is_nl, cum_nl, gaps  # memory: keep only what later steps need

    empty = np.zeros(0, dtype=np.int64)
    if n_tokens == 0:
        return Block(np.zeros(0), None, np.zeros((0, 0), np.float32, order="F"), empty, empty, None, False)

    first = np.empty(n_tokens, dtype=bool)
    first[0] = True
    first[1:] = tok_line[1:] != tok_line[:-1]
    row_of_tok = np.cumsum(first) - 1
    row_line = tok_line[first]
    n_rows = int(row_line.shape[0])
    lines = row_line + first_line
    row_start = np.zeros(n_rows, dtype=np.int64)
    nz = row_line > 0
    row_start[nz] = newline_pos[row_line[nz] - 1] + 1

    errors = _Errors()

    colon_pos = np.flatnonzero(b == 58)
    pair = np.flatnonzero(~first)
    ps, pe = starts[pair], ends[pair]

    def tok_error(what: str, k: int) -> None:
        line = int(tok_line[k]) + first_line
        errors.add(line, InputFormatError(what, name, line, token_text(starts[k], ends[k])))

    # Fast check: exactly one colon per non-first token, none in labels, neither index nor value empty
    # <=> the i-th colon lies strictly inside the i-th non-first token (and there are as many colons as such tokens).
    ok = colon_pos.shape[0] == pair.shape[0]
    if ok and pair.size:
        ok = bool(((colon_pos > ps) & (colon_pos < pe - 1)).all())
    if not ok:
        tok_of_colon = np.searchsorted(starts, colon_pos, side="right") - 1
        n_colons = np.bincount(tok_of_colon, minlength=n_tokens)
        bad = np.flatnonzero(first & (n_colons != 0))
        if bad.size:
            tok_error("expected a label at the start of the line", int(bad[0]))
        bad = np.flatnonzero(~first & (n_colons != 1))
        if bad.size:
            tok_error("expected <index>:<value>", int(bad[0]))
        edge = np.flatnonzero((colon_pos == starts[tok_of_colon]) | (colon_pos == ends[tok_of_colon] - 1))
        if edge.size:
            tok_error("expected <index>:<value>", int(tok_of_colon[edge[0]]))
        errors.raise_first()
        raise InputFormatError("malformed line", name, first_line)  # not reached: one of the checks above fired

    cp = colon_pos
    name_len = cp - ps
    label_tok = np.flatnonzero(first)
    ls, le = starts[label_tok], ends[label_tok]
    # qid: is the second token of a line whose name is "qid" (anywhere else it fails as a feature index).
    second = label_tok + 1
    second = second[second < n_tokens]
    second = second[~first[second]]
    cand = second[(ends[second] - starts[second] > 4)]
    s = starts[cand]
    qid_tok = cand[(b[s] == 113) & (b[s + 1] == 105) & (b[s + 2] == 100) & (b[s + 3] == 58)]
    row_has_qid = np.zeros(n_rows, dtype=bool)
    row_has_qid[row_of_tok[qid_tok]] = True
    has_qid = bool(row_has_qid[0])
    mixed = np.flatnonzero(row_has_qid != has_qid)
    if mixed.size:
        r = int(mixed[0])
        what = "line has qid: but earlier lines do not" if not has_qid else "line has no qid: but earlier lines do"
        end = data.find(b"\n", int(row_start[r]))
        errors.add(int(lines[r]), InputFormatError(what, name, int(lines[r]), token_text(row_start[r], end).strip()))
        errors.raise_first()

    if qid_tok.size:
        is_feat = np.ones(n_tokens, dtype=bool)
        is_feat[first] = False
        is_feat[qid_tok] = False
        feat_tok = np.flatnonzero(is_feat)
        sel = is_feat[pair]
        fcp, fs, fe, flen = cp[sel], ps[sel], pe[sel], name_len[sel]
    else:
        feat_tok, fcp, fs, fe, flen = pair, cp, ps, pe, name_len
    del pair, ps, pe, name_len, cp, colon_pos

    # Integers (indices, qids) are parsed in numpy: they are short, and a strict syntax is wanted.
    index, bad_i = _parse_index(b, data, fs, fcp, flen)
    if bad_i >= 0:
        k = int(feat_tok[bad_i])
        if data[starts[k]:starts[k] + 4] == b"qid:":
            tok_error("qid: must come right after the label", k)
        else:
            tok_error("non-integer feature index", k)
    qids = None
    if has_qid:
        qids, bad_q = _parse_int(b, starts[qid_tok] + 4, ends[qid_tok])
        if bad_q >= 0:
            tok_error("non-integer qid", int(qid_tok[bad_q]))
    llen = le - ls
    loff = np.zeros(llen.shape[0] + 1, dtype=np.int32)
    np.cumsum(llen, out=loff[1:])
    label_bytes = b[np.repeat(ls - loff[:-1], llen) + np.arange(int(loff[-1]))]  # ASCII: checked above
    label_strings = pa.Array.from_buffers(pa.string(), llen.shape[0], [None, pa.py_buffer(loff),
                                                                       pa.py_buffer(label_bytes)])
    labels, bad_l = _cast(label_strings, pa.float64())
    if labels is None:
        tok_error("non-numeric label", int(label_tok[bad_l]))

    # Compact the feature values into one buffer (everything else removed: separators, labels, qid tokens, indices
    # and colons), so that value i is compact[off[i]:off[i+1]]; arrow parses them all in one cast.
    keep = np.logical_not(small, out=small)  # reuse the buffer
    del small
    keep[fcp] = False
    for j in range(1, int(flen.max()) + 1 if flen.size else 1):
        keep[(fcp if j == 1 else fcp[flen >= j]) - j] = False
    llen = le - ls
    for j in range(int(llen.max())):
        keep[(ls if j == 0 else ls[llen > j]) + j] = False
    if qid_tok.size:
        qs, qe = starts[qid_tok], ends[qid_tok]
        qlen = qe - qs
        for j in range(int(qlen.max())):
            keep[(qs if j == 0 else qs[qlen > j]) + j] = False
    # Arrow's filter compacts faster than numpy's boolean indexing.
    mask = pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(np.packbits(keep, bitorder="little"))])
    del keep
    compact = pc.filter(pa.Array.from_buffers(pa.uint8(), n, [None, pa.py_buffer(b)]), mask).buffers()[1]
    del mask
    n_values = int(feat_tok.shape[0])
    offsets = np.zeros(n_values + 1, dtype=np.int32)
    np.cumsum(fe - fcp - 1, out=offsets[1:])
    pieces = pa.StringArray.from_buffers(n_values, pa.py_buffer(offsets), compact)
    values, bad_v = _cast(pieces, pa.float64())
    del pieces, compact, offsets, fs
    if values is None:
        tok_error("non-numeric feature value", int(feat_tok[bad_v]))
    errors.raise_first()  # the earliest of the index, qid, label and value errors

    cols = index if zero_based else index - 1
    rows = row_of_tok[feat_tok]
    width = 0
    if cols.size:
        low = np.flatnonzero(cols < 0)
        if low.size:
            tok_error("feature index must be >= 0" if zero_based else
                      "feature index must be >= 1 (pass --zero-based for 0-based files)", int(feat_tok[low[0]]))
        limit = num_features if num_features is not None else MAX_FEATURES
        high = np.flatnonzero(cols >= limit)
        if high.size:
            what = (f"feature index beyond --num-features {num_features}" if num_features is not None else
                    f"feature index too large for a dense table (at most {MAX_FEATURES} features)")
            tok_error(what, int(feat_tok[high[0]]))
        # Duplicate index on one line: indices almost always increase along a line; check exactly only if not.
        increasing = bool(((rows[1:] != rows[:-1]) | (cols[1:] > cols[:-1])).all())
        if not increasing:
            order = np.lexsort((cols, rows))
            dup = np.flatnonzero((rows[order][1:] == rows[order][:-1]) & (cols[order][1:] == cols[order][:-1]))
            if dup.size:
                tok_error("duplicate feature index on one line", int(feat_tok[order[dup + 1].min()]))
        errors.raise_first()
        width = int(cols.max()) + 1
    if num_features is not None:
        width = num_features
    del index, fe, fcp, flen
    features = _dense(rows, cols, values, n_rows, width)
    del rows, cols, values

    comments = None
    if comment_texts is not None:
        # Attach each comment to the row on its line (comment-only lines have no row and are dropped).
        where = np.searchsorted(comment_lines, row_line)
        where_c = np.minimum(where, comment_lines.shape[0] - 1)
        hit = comment_lines[where_c] == row_line
        if hit.any():
            comments = [comment_texts[w] if h else None for w, h in zip(where_c.tolist(), hit.tolist())]
    return Block(labels, qids, features, lines, row_start, comments, has_qid)


def comment_columns(comments: list, docid: bool, keep: bool) -> tuple[pa.Array | None, pa.Array | None]:
    """Arrow ``docid`` (from ``docid = X``) and ``comment`` columns from per-row comment bytes (or ``None``)."""
    text = strings_array(comments)
    docids = None
    if docid:
        docids = pc.struct_field(pc.extract_regex(text, r"docid\s*=\s*(?P<d>\S+)"), [0])
    return docids, (text if keep else None)


# ----------------------------------------------------------------------------------------------------------------------
# Writing


def scalar(value: str | float | int | None, type: pa.DataType | None = None) -> pa.Scalar:
    """``pa.scalar(value, type)`` without importing pandas (``pa.scalar``, and so a Python literal passed to a
    ``pyarrow.compute`` function, imports it: about a second). Strings give a string scalar; ``None`` a null of
    ``type`` (default string); numbers a scalar of ``type`` (default float64)."""
    if value is None:
        return pa.nulls(1, type if type is not None else pa.string())[0]
    if isinstance(value, str):
        return strings_array([value.encode()])[0]
    type = type if type is not None else pa.float64()
    return from_numpy(np.array([value]), type)[0]


def _feature_tokens(column: pa.Array, number: int) -> pa.Array:
    """``"<number>:<value>"`` where the value is non-zero, null where it is zero (SVMlight omits zeros)."""
    values = column.cast(pa.float32()) if column.type != pa.float32() else column
    text = pc.binary_join_element_wise(scalar(f"{number}:"), values.cast(pa.string()), scalar(""))
    return pc.if_else(pc.not_equal(values, scalar(0, pa.float32())), text, scalar(None))


def svmlight_lines(table: pa.Table, feature_cols: list[str], *, width: int | None = None,
                   force_width: bool = False) -> pa.Array:
    """The SVMlight lines (with a trailing newline each) of a dataset table, built in C column by column.

    Zero features are omitted. With ``force_width`` the last feature is written on the first line even when it is zero,
    so that reading the file back gives the same number of columns.
    """
    from rankcli.formats.parquet import FEATURE_COLUMN

    n = table.num_rows
    parts = [table.column("label").combine_chunks().cast(pa.float64()).cast(pa.string())]
    if "qid" in table.column_names:
        parts.append(pc.binary_join_element_wise(scalar("qid:"), table.column("qid").combine_chunks().cast(pa.string()),
                                                  scalar("")))
    numbers = [int(FEATURE_COLUMN.match(c).group(1)) for c in feature_cols]
    for name, number in zip(feature_cols, numbers):
        parts.append(_feature_tokens(table.column(name).combine_chunks(), number))
    if force_width and n and numbers:
        last = numbers[-1]
        forced = strings_array([f"{last}:0".encode()] + [None] * (n - 1))
        parts[-1] = pc.coalesce(parts[-1], forced)
    if "comment" in table.column_names:
        comment = table.column("comment").combine_chunks()
        parts.append(pc.binary_join_element_wise(scalar("# "), comment, scalar("")))
    elif "docid" in table.column_names:
        parts.append(pc.binary_join_element_wise(scalar("# docid = "), table.column("docid").combine_chunks(),
                                                  scalar("")))
    joined = pc.binary_join_element_wise(*parts, scalar(" "), null_handling="skip")
    return pc.binary_join_element_wise(joined, scalar("\n"), scalar(""))


def write_lines(stream: BinaryIO, lines: pa.Array) -> None:
    """Write a string array's characters as they are (each element already ends with a newline)."""
    lines = lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines
    if len(lines) == 0:
        return
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)[lines.offset:lines.offset + len(lines) + 1]
    data = lines.buffers()[2]
    stream.write(memoryview(data)[int(offsets[0]):int(offsets[-1])])


def iter_row_groups(path: str | Path, columns: list[str] | None = None) -> Iterator[pa.Table]:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(str(path))
    for i in range(pf.num_row_groups):
        yield pf.read_row_group(i, columns=columns)


def write_svmlight(path: str | Path, dataset_path: str | Path, *, overwrite: bool = False) -> int:
    """Export a Parquet dataset (data model) to SVMlight text, streaming row group by row group; returns the rows.

    ``qid:`` is written when the dataset has a qid column, ``# <comment>`` (or ``# docid = X``) when it has one.
    """
    from rankcli.formats.atomic import atomic_path
    from rankcli.formats.parquet import column_names, feature_columns, require_columns

    names = column_names(dataset_path)
    require_columns(dataset_path, names, ["label"])
    fcols = feature_columns(names)
    rows = 0
    with atomic_path(path, overwrite) as tmp, open(tmp, "wb") as out:
        for table in iter_row_groups(dataset_path):
            write_lines(out, svmlight_lines(table, fcols, force_width=rows == 0))
            rows += table.num_rows
    return rows
