"""A lock shared by concurrent runs (experiment units, the result store)."""

from __future__ import annotations

import os
from pathlib import Path

from rankcli.formats.atomic.temporaries import output_error


class FileLock:
    """An exclusive ``flock`` on ``path`` (created if needed). The kernel releases it when the holder closes it or
    dies, however it dies, so a killed run never leaves a lock stuck. On NFS, Linux maps ``flock`` to a POSIX
    byte-range lock, which the server arbitrates between machines.

    A lock file may be removed (:meth:`remove_if_free`, by a run that is done with it): the lock is held only once the
    file locked is still the one at ``path``. A process that opened the file before it was removed, and was waiting
    for it, then finds it gone and locks the file now at ``path`` (creating it), so two processes never each hold a
    lock on a different file of one name. ``make_parent``: create the lock's directory when it is missing (another run
    may have removed it, empty, as a finished experiment does).
    """

    def __init__(self, path: Path | str, make_parent: bool = False):
        self.path = Path(path)
        self.make_parent = make_parent
        self._fd: int | None = None

    def _open(self) -> int:
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        try:
            return os.open(self.path, flags, 0o666)
        except FileNotFoundError:
            if not self.make_parent:
                raise
        except OSError as exc:
            raise output_error(self.path, exc, "cannot create the lock file") from None
        try:
            self.path.parent.mkdir(exist_ok=True)
            return os.open(self.path, flags, 0o666)
        except OSError as exc:
            raise output_error(self.path, exc, "cannot create the lock file") from None

    def _still_at_path(self, fd: int) -> bool:
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            return False
        return os.path.samestat(os.fstat(fd), now)

    def acquire(self, blocking: bool = True) -> bool:
        """Take the lock; without ``blocking``, return False at once when another process holds it."""
        import fcntl  # POSIX only: a process that takes no lock (only experiment and tune do) need not have it

        if self._fd is not None:
            return True
        while True:
            try:
                fd = self._open()
            except FileNotFoundError as exc:
                raise output_error(self.path, exc, "cannot create the lock file") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                os.close(fd)
                return False
            except BaseException:
                os.close(fd)
                raise
            if self._still_at_path(fd):
                self._fd = fd
                return True
            os.close(fd)  # removed while we waited for it: lock the file at the path now

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the descriptor drops the flock

    def remove_if_free(self) -> bool:
        """Remove the lock file unless a process holds it (taken without waiting, removed, let go); True when it was
        removed. A process waiting for it then locks a new file (see the class)."""
        if not self.path.exists() or not self.acquire(blocking=False):
            return False
        try:
            self.path.unlink(missing_ok=True)
        finally:
            self.release()
        return True

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
