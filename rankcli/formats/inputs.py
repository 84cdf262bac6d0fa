"""Words for an input path that cannot be read: a symlink loop or a dangling link is not "no such file"."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from rankcli.errors import InputError


def unreadable_input(path: str | Path) -> InputError:
    """The error for an input ``path`` that does not lead to a file (``Path.exists()`` said no), named by its cause."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return InputError(f"{path}: symbolic link loop (too many levels of symbolic links)")
        if exc.errno == errno.ENOENT and os.path.islink(path):
            return InputError(f"{path}: broken symbolic link (its target {os.readlink(path)} does not exist)")
        if exc.errno == errno.EACCES:
            return InputError(f"{path}: permission denied (cannot look up the file)")
        if exc.errno == errno.ENOTDIR:
            return InputError(f"{path}: no such file (a part of the path is not a directory)")
        if exc.errno != errno.ENOENT:
            return InputError(f"{path}: cannot read ({exc.strerror or exc})")
    return InputError(f"{path}: no such file")
