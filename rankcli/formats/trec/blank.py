"""Whitespace-only lines of a TREC file dropped as its blocks are read (``rankcli eval``, ``compare --qrels`` and
``rankcli trec_eval``), so that a file (or standard input) of mostly blank lines takes the memory of its other lines,
not of its size (600 MB of newlines under ``ulimit -v`` was a MemoryError, and the numpy readers' per-line arrays over
100 MB of them 4 GB).

- Every reader skips such lines (runs, qrels, preferences; ``rankcli`` skips a blank qrels line where trec_eval
  refuses it), so dropping them changes no result. Each run of them is kept as one empty line: a blank line still
  ends a run of qrels comment lines (a line after a comment is data, a blank line is neither).
- Finding them is a sample of each block's lines (:data:`SAMPLES` of them, a few string searches): a block is
  rewritten (a regular-expression pass) only when the sample holds a whitespace-only line, so that a file without
  blank lines is read at the speed it was, and a file of mostly blank lines (the case that exhausts memory) is
  compacted wherever they are. Lines scattered so that no sample meets one are kept as read (memory as before).
- :class:`LineMap` gives each line of the kept text its line number in the file, so that every message still names
  the file's own line.

No numpy here: ``rankcli trec_eval`` reads its files on a thread while the process imports numpy.
"""

from __future__ import annotations

import bisect
import re

#: Lines sampled per block when looking for whitespace-only lines.
SAMPLES = 64
_WINDOW = 256
#: Where a run of whitespace-only (C ``isspace``) complete lines starts: at the start of the text or after a newline.
_RUN = re.compile(rb"(?:^|(?<=\n))(?=[ \t\v\f\r]*\n)")
#: The next byte that is not whitespace: the run ends at the newline before it.
_INK = re.compile(rb"[^ \t\v\f\r\n]")

class LineMap:
    """Kept line -> the file's line: where the kept text resumes after each dropped run (offsets, then, once
    :meth:`resolve` has counted them, kept line numbers) and the lines dropped up to there."""

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.dropped: list[int] = []
        self.lines: list[int] | None = None

    @property
    def total(self) -> int:
        """The lines dropped so far."""
        return self.dropped[-1] if self.dropped else 0

    def add(self, offset: int, dropped: int) -> None:
        """``dropped`` more lines dropped just before ``offset`` of the kept text."""
        self.offsets.append(offset)
        self.dropped.append(self.total + dropped)

    def resolve(self, data) -> None:
        """The kept line number (1-based) of each offset, counted in the kept text ``data`` (bytes): once, after
        the read, while the text is at hand (messages come later, when it may be gone)."""
        lines, at, count = [], 0, 0
        for offset in self.offsets:
            count += data.count(b"\n", at, offset)
            lines.append(count + 1)
            at = offset
        self.lines = lines

    def true_line(self, line: int) -> int:
        """The file's line number of the kept text's line ``line`` (1-based)."""
        if not self.dropped:
            return line
        if self.lines is None:
            raise RuntimeError("LineMap.resolve was not called")
        i = bisect.bisect_right(self.lines, line) - 1
        return line + (self.dropped[i] if i >= 0 else 0)


def remap(exc, maps: dict) -> None:
    """Point an error naming a line of a compacted text (``maps``: its name -> :class:`LineMap`) at the file's line."""
    path = getattr(exc, "path", None)
    lines = maps.get(path if path is None or isinstance(path, str) else str(path))
    if lines is None or getattr(exc, "line", None) is None or getattr(exc, "true_line", False):
        return
    exc.true_line = True  # once: an error passes several stages
    if lines.dropped:
        exc.line = lines.true_line(int(exc.line))
        exc.args = (exc._format(),)


def blank_heavy(buf, start: int, stop: int) -> bool:
    """Whether a sample of the lines of ``buf[start:stop]`` (bytes or a numpy uint8 array) holds a whitespace-only
    line (a stretch of whitespace wider than the window counts as one: rewriting the block then finds none, no
    harm)."""
    if stop <= start:
        return False
    for p in range(start, stop, max((stop - start) // SAMPLES, 1)):
        lo = max(p - _WINDOW, start)
        w = bytes(buf[lo:min(p + _WINDOW, stop)])
        c = p - lo
        end = w.find(b"\n", c)
        if not w[w.rfind(b"\n", 0, c) + 1:end if end >= 0 else len(w)].strip():
            return True
    return False


def compact_region(region: bytes, kept: int, lines: LineMap) -> bytes:
    """``region`` (whole lines, the first at offset ``kept`` of the kept text) with each run of whitespace-only lines
    made one empty line, the dropped lines recorded in ``lines``."""
    out, prev, at = [], 0, 0
    while (m := _RUN.search(region, at)) is not None:
        s = m.start()
        ink = _INK.search(region, s)
        e = region.rfind(b"\n", s, ink.start() if ink is not None else len(region)) + 1
        out.append(region[prev:s])
        out.append(b"\n")
        kept += s - prev + 1
        n = region.count(b"\n", s, e)
        if n > 1:
            lines.add(kept, n - 1)
        prev = at = e
    if not out:
        return region
    out.append(region[prev:])
    return b"".join(out)


def compact_block(block: bytes, at_line_start: bool, kept: int, lines: LineMap) -> bytes:
    """A block as it arrives (``at_line_start``: it starts a line; ``kept``: the kept text's length before it), its
    whole lines compacted when a sample finds a blank one; the partial lines at its edges are left as they are."""
    stop = block.rfind(b"\n") + 1
    start = 0 if at_line_start else block.find(b"\n") + 1
    if stop <= start or not blank_heavy(block, start, stop):
        return block
    middle = compact_region(block[start:stop], kept + start, lines)
    return block[:start] + middle + block[stop:]


def _region_end(buf, start: int, size: int, block: int, max_line: int) -> int:
    """One past the last newline of ``buf[start:start + block]`` (the end of the buffer when it is the last region or
    has none); a line is at most ``max_line`` bytes, so the last newline is in its last ``max_line + 1``."""
    if start + block >= size:
        return size
    for width in (4096, max_line + 1):
        lo = max(start, start + block - width)
        at = bytes(buf[lo:start + block]).rfind(b"\n")
        if at >= 0:
            return lo + at + 1
    return start + block


def compact_buffer(buf, lines: LineMap, block: int, max_line: int):
    """A text read in one buffer (bytes or a numpy uint8 array), compacted region by region (regions of about
    ``block`` bytes ending at a line's end); ``buf`` itself when no sample finds a blank line, else new bytes."""
    size = len(buf)
    regions, start = [], 0
    while start < size:
        stop = _region_end(buf, start, size, block, max_line)
        regions.append((start, stop, blank_heavy(buf, start, stop)))
        start = stop
    if not any(flag for _, _, flag in regions):
        return buf
    view, pieces, kept = memoryview(buf).cast("B"), [], 0
    for start, stop, flag in regions:
        if flag:
            last = stop if bytes(view[stop - 1:stop]) == b"\n" else bytes(view[start:stop]).rfind(b"\n") + start + 1
            piece = compact_region(bytes(view[start:last]), kept, lines) + bytes(view[last:stop])
        else:
            piece = view[start:stop]
        pieces.append(piece)
        kept += len(piece)
    out = b"".join(pieces)
    lines.resolve(out)
    return out
