"""The first stage of reading a TREC run with its qrels (``rankcli eval --qrels/--run``, ``compare --qrels``): both
files' bytes, read once and checked as text, for the join stage (:mod:`rankcli.formats.trec.join`).

- Gzipped files (by their magic bytes), pipes and devices are read block by block, each block checked before the next
  is read (a NUL byte, a line over 1 MiB, a gzip stream expanding 200 times: :mod:`rankcli.formats.trec.file_bytes`);
  a regular file's first block is checked before the file is read whole.
- A leading UTF-8 byte-order mark is dropped; the text must be UTF-8.
- The bytes come in a numpy uint8 array when the C join will read them (:func:`read_text_array`: huge pages, fewer
  page faults), else as ``bytes``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankcli.errors import InputError, InputFormatError
from rankcli.formats.inputs import unreadable_input
from rankcli.formats.trec import file_bytes
from rankcli.formats.trec.blank import LineMap, blank_heavy, compact_buffer, remap
from rankcli.formats.trec.file_bytes import check_first_block, read_input


@dataclass
class TrecTexts:
    """The two files' checked bytes (``bytes`` or numpy uint8 arrays) and their names for messages."""

    run: object
    qrels: object
    run_path: Path | str
    qrels_path: Path | str
    lines: dict = field(default_factory=dict)  # a file's name -> the LineMap of its kept lines (blank lines dropped)

    def as_bytes(self) -> TrecTexts:
        """The same texts as ``bytes`` (the numpy reader's input)."""
        return TrecTexts(bytes(self.run), bytes(self.qrels), self.run_path, self.qrels_path, self.lines)

    def true_lines(self, exc: BaseException) -> None:
        """Point an error naming a line of a kept text at the file's own line (:func:`.blank.remap`)."""
        remap(exc, self.lines)


def in_parallel(first, second):
    """``(first(), second())``, the second run on another thread (numpy, Arrow and file reads release the GIL); an
    error of ``first`` is reported before one of ``second``, as when they run one after the other."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        later = pool.submit(second)
        try:
            result = first()
        except BaseException:
            later.cancel()
            raise
        return result, later.result()


def read(run_path: Path | str, qrels_path: Path | str, *, as_array: bool) -> TrecTexts:
    """The read stage: both files read (on two threads) and checked, the run's error reported first; ``as_array``:
    numpy arrays for the C join (else ``bytes``). Whitespace-only lines are dropped as the files are read (every
    reader skips them; :mod:`.blank`): a file of mostly blank lines takes the memory of its other lines."""
    run_lines, qrels_lines = LineMap(), LineMap()
    read_one = read_text_array if as_array else read_text_bytes
    run, qrels = in_parallel(lambda: read_one(run_path, lines=run_lines),
                             lambda: read_one(qrels_path, lines=qrels_lines))
    maps = {}  # as the messages name the files (str or Path); one file given twice: the same map
    for path, lines in ((run_path, run_lines), (qrels_path, qrels_lines)):
        maps.update({str(path): lines, str(Path(path)): lines})
    return TrecTexts(run, qrels, run_path, qrels_path, maps)


def read_text_bytes(path: Path | str, lines: LineMap | None = None) -> bytes:
    """A TREC file's bytes as both readers take them: gunzipped when gzipped (by its magic bytes), without a UTF-8
    byte-order mark, checked to be UTF-8 (an :class:`InputError` otherwise); with ``lines``, without its
    whitespace-only lines (``lines`` maps the kept lines to the file's)."""
    return _read_text(Path(path), False, lines)


def read_text_array(path: Path | str, lines: LineMap | None = None) -> np.ndarray:
    """The bytes :func:`read_text_bytes` gives, in a numpy uint8 array, for the C path: a large numpy array gets
    transparent huge pages, and reading 100 MB into one takes ~1,000 page faults instead of ~25,000 (a third of the
    time)."""
    return _read_text(Path(path), True, lines)


def _raw_bytes(path: Path) -> np.ndarray:
    """A regular file read into one numpy buffer of its size."""
    size = path.stat().st_size
    buf = np.empty(size, dtype=np.uint8)
    view, got = memoryview(buf), 0
    with open(path, "rb", buffering=0) as f:
        while got < size:
            n = f.readinto(view[got:])
            if not n:
                break  # the file shrank while read: what is there
            got += n
        rest = f.read()  # it grew while read: the rest too
    return np.concatenate([buf[:got], np.frombuffer(rest, dtype=np.uint8)]) if rest else buf[:got]


def _first_block_is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"  # gzip's magic bytes: runs and qrels as TREC distributes them


def _refuse_nul(data, path: Path) -> None:
    """A NUL byte anywhere is not text: an error naming its line (trec_eval's reading stops at the first NUL, or
    reads past its buffers when the NUL is inside a line; rankcli's metrics of such a file would mean nothing)."""
    where = bytes(data).find(b"\0") if isinstance(data, bytes) else (
        int(np.argmax(data == 0)) if data.shape[0] and (data == 0).any() else -1)
    if where >= 0:
        line = bytes(data[:where]).count(b"\n") + 1
        raise InputFormatError("a NUL byte (not a text file)", str(path), line)


def _is_ascii(data) -> bool:
    if isinstance(data, bytes):
        return data.isascii()  # far cheaper than decoding
    whole = data.shape[0] // 8 * 8
    high = np.bitwise_or.reduce(data[:whole].view(np.uint64)) if whole else 0
    return not (int(high) & 0x8080808080808080 or (data[whole:] >= 0x80).any())


def _read_text(path: Path, as_array: bool, lines: LineMap | None = None):
    """One file's checked text; with ``lines``, its whitespace-only lines dropped (``lines`` maps the kept lines to
    the file's: every message names the file's line)."""
    if not path.exists():
        raise unreadable_input(path)
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a file")
    try:
        data = _read_checked(path, as_array, lines)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if bytes(data[:3]) == b"\xef\xbb\xbf":
        data = data[3:]  # a UTF-8 byte-order mark would become part of the first query id
    if not _is_ascii(data):  # ASCII (the usual TREC file) is UTF-8
        try:
            _refuse_non_utf8(bytes(data), path)
        except InputFormatError as exc:
            remap(exc, {str(path): lines} if lines is not None else {})
            raise
    return data


def _read_checked(path: Path, as_array: bool, lines: LineMap | None):
    """The bytes (a numpy array for ``as_array``), checked for NUL bytes and over-long lines, compacted when
    ``lines`` is given."""
    if not as_array or not path.is_file() or _first_block_is_gzip(path):
        # a pipe, a device (/dev/zero) or a gzipped file: read block by block, each checked (a NUL byte, a line
        # over 1 MiB, a gzip stream expanding 200 times) before the next is read; a regular file in one buffer
        data = read_input(str(path), lines=lines)
        return np.frombuffer(data, dtype=np.uint8) if as_array else data
    head = check_first_block(path)  # a sparse 1 TiB file of zeros is refused before it is read
    try:
        data = None if lines is not None and blank_heavy(head, 0, head.rfind(b"\n") + 1) else _raw_bytes(path)
    except MemoryError:  # too large for one buffer (ulimit -v): by blocks, compacted as they arrive
        if lines is None:
            raise
        data = None
    if data is None:
        return np.frombuffer(read_input(str(path), lines=lines), dtype=np.uint8)
    _refuse_nul(data, path)
    if lines is not None:
        data = compact_buffer(data, lines, file_bytes.BLOCK, file_bytes.MAX_LINE)
    return data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)


def _refuse_non_utf8(data: bytes, path: Path) -> None:
    """Text that is not UTF-8: an error naming the line, the byte and its place in the line, and the line (read as
    Latin-1, the likely encoding, so that it shows as the user's editor shows it)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        end = data.find(b"\n", exc.start)
        line = data[start:end if end >= 0 else len(data)]
        raise InputFormatError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at byte {exc.start - start + 1} of the "
                               "line; Latin-1 or another 8-bit encoding?): save the file as UTF-8", str(path),
                               data.count(b"\n", 0, exc.start) + 1, line[:200].decode("latin-1")) from None
