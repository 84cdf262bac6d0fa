"""Atomic outputs: write to a temporary file beside the target, rename into place only on success.

A failure, an exception or Ctrl-C therefore never leaves a half-written file at the target path.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from rankcli.errors import OutputError


def check_target(path: Path | str, overwrite: bool) -> Path:
    """Refuse an existing target without ``overwrite`` and a directory we cannot write to, before any work starts."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise OutputError(f"{path}: already exists; pass --overwrite to replace it")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise OutputError(f"{path}: directory {parent} does not exist")
    if not parent.is_dir():
        raise OutputError(f"{path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: directory {parent} is not writable")
    return path


#: OS errors while writing that are about the output's filesystem (disk full, quota, read-only): exit 4, not a bug.
_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)


def _output_error(path: Path, exc: OSError, what: str = "cannot write") -> OutputError:
    return OutputError(f"{path}: {what} ({exc.strerror or exc})")


@contextmanager
def atomic_path(path: Path | str, overwrite: bool = False, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path in the target's directory; on success it replaces ``path``, on failure it is removed."""
    path = check_target(path, overwrite)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f"{suffix}.tmp", dir=path.parent)
    except OSError as exc:
        raise _output_error(path, exc, f"cannot create a file in {path.parent}") from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        if path.is_dir() and not path.is_symlink():
            raise OutputError(f"{path}: is a directory")
        try:
            os.replace(tmp, path)
        except OSError as exc:
            raise _output_error(path, exc, "cannot replace it") from None
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
            raise _output_error(path, exc) from None  # disk full and the like: exit 4, not a bug
        raise


@contextmanager
def atomic_directory(path: Path | str, overwrite: bool = False) -> Iterator[Path]:
    """Like :func:`atomic_path` for an output that is a directory (a model, a converted fold)."""
    path = check_target(path, overwrite)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    except OSError as exc:
        raise _output_error(path, exc, f"cannot create a directory in {path.parent}") from None
    try:
        yield tmp
        if path.exists():
            old = path.with_name(f".{path.name}.old-{os.getpid()}")
            os.replace(path, old)
            os.replace(tmp, path)
            if old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
            else:
                old.unlink(missing_ok=True)
        else:
            os.replace(tmp, path)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
            raise _output_error(path, exc) from None  # disk full and the like: exit 4, not a bug
        raise
