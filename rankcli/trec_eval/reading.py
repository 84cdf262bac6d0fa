"""Both input files read on a thread, from the start of the command: the read (system calls and page faults, without
the GIL) overlaps the import of numpy and of the measures, which needs the GIL. No numpy here.

The files are read in trec_eval's order, qrels then run; the first error is raised where the bytes are asked for, so
that a usage error found meanwhile (an unknown measure) is still the one reported.
"""

from __future__ import annotations

import threading

from rankcli.formats.trec_eval_bytes import read_input


class Reading:
    """The bytes of ``qrels`` and ``run`` (paths; ``-``: standard input), read on a daemon thread."""

    def __init__(self, qrels: str, run: str):
        self._paths = (qrels, run)
        self._data: tuple[bytes, bytes] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._read, name="rankcli-read", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            qrels = read_input(self._paths[0])
            self._data = (qrels, read_input(self._paths[1]))
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
