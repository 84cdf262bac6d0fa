"""Both input files read on a thread, from the start of the command: the read (system calls and page faults, without
the GIL) overlaps the import of numpy and of the measures, which needs the GIL. No numpy here.

The files are read in trec_eval's order, qrels then run; the first error is raised where the bytes are asked for, so
that a usage error found meanwhile (an unknown measure) is still the one reported.
"""

from __future__ import annotations

import threading

from rankcli.formats.trec.blank import LineMap
from rankcli.formats.trec.file_bytes import read_input


def read_files(o, maps: dict | None = None) -> tuple[bytes, bytes]:
    """The read stage: both files' bytes (qrels, then run; the options ``o`` name them), checked block by block as
    they are read, each up to a NUL byte that starts a line (where trec_eval stops reading), their whitespace-only
    lines dropped (every reader skips them; memory bounded by the other lines); ``maps`` receives each file's name
    (as messages name it) -> the :class:`LineMap` of its kept lines to its own."""
    qrels_path, run_path = o.files
    qrels_lines, run_lines = LineMap(), LineMap()
    qrels = read_input(qrels_path, "stop", qrels_lines)
    run = read_input(run_path, "stop", run_lines)
    if maps is not None:  # one file given twice: the same map (standard input: the first reading's)
        for path, lines in ((run_path, run_lines), (qrels_path, qrels_lines)):
            maps.update({path: lines, "<stdin>": lines} if path == "-" else {path: lines})
    return qrels, run


class Reading:
    """The read stage (:func:`read_files`) of the options ``o``, on a daemon thread."""

    def __init__(self, o):
        self._options = o
        self._data: tuple[bytes, bytes] | None = None
        self.lines: dict = {}  # each file's LineMap, once read (read_files)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._read, name="rankcli-read", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            self._data = read_files(self._options, self.lines)
        except BaseException as exc:  # noqa: BLE001 - raised again in the thread that asks for the bytes
            self._error = exc

    def result(self) -> tuple[bytes, bytes]:
        """The qrels' and the run's bytes, or the first error met reading them."""
        self._thread.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        data, self._data = self._data, None
        return data
