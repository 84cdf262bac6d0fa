"""A lock shared by concurrent runs (experiment units, the result store)."""

from __future__ import annotations

import os
from pathlib import Path

from rankcli.formats.atomic.temporaries import output_error


class FileLock:
    """An exclusive ``flock`` on ``path`` (created if needed). The kernel releases it when the holder closes it or
    dies, however it dies, so a killed run never leaves a lock stuck. On NFS, Linux maps ``flock`` to a POSIX
    byte-range lock, which the server arbitrates between machines."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._fd: int | None = None

    def acquire(self, blocking: bool = True) -> bool:
        """Take the lock; without ``blocking``, return False at once when another process holds it."""
        import fcntl

        if self._fd is not None:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
        except OSError as exc:
            raise output_error(self.path, exc, "cannot create the lock file") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the descriptor drops the flock

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
