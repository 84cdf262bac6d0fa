"""Temporaries of atomic outputs: who owns one, creating and removing them, file modes and durability.

A temporary's name says who owns it (``.<name>+<host>+<pid>+<random>.tmp``): after a SIGKILL, a later run writing the
same target removes it, but only when its owner is provably gone (same host and process namespace, process not
alive), never one of a concurrent run. Files and directories are created ``0666``/``0777`` so that the umask applies,
and fsynced before they are renamed into place.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import socket
from pathlib import Path

from rankcli.errors import OutputError

#: OS errors while writing that are about the output's filesystem (disk full, quota, read-only): exit 4, not a bug.
FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)


def output_error(path: Path | str, exc: OSError, what: str = "cannot write") -> OutputError:
    """The :class:`OutputError` (exit 4) for ``exc`` at ``path``: ``<path>: <what> (<reason>)``."""
    return OutputError(f"{path}: {what} ({exc.strerror or exc})")


def owner_token() -> str:
    """This process's host, as a file-name-safe token: the host name plus its PID namespace when known, so that two
    containers sharing a host name never take each other's processes for their own."""
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname()) or "localhost"
    try:
        host += f"-ns{os.stat('/proc/self/ns/pid').st_ino}"
    except OSError:
        pass
    return host


def temporary_name(name: str, what: str = "tmp") -> str:
    """``.<name>+<host>+<pid>+<random>.<what>``: a hidden name beside ``name`` that says who owns it."""
    return f".{name}+{owner_token()}+{os.getpid()}+{secrets.token_hex(4)}.{what}"


TEMPORARY = re.compile(r"^\.(?P<name>.+)\+(?P<host>[A-Za-z0-9.-]+)\+(?P<pid>[0-9]+)\+[0-9a-f]{8}\."
                        r"(?:tmp|old)(?:\..*)?$")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    except OSError:
        return True  # cannot tell: keep it
    return True


def owner_gone(entry_name: str) -> bool:
    """Whether the temporary ``entry_name`` belongs to a process that provably no longer exists."""
    m = TEMPORARY.match(entry_name)
    if m is None or m.group("host") != owner_token():
        return False
    pid = int(m.group("pid"))
    return pid != os.getpid() and not _pid_alive(pid)


def remove_stale_temporaries(directory: Path | str, name: str) -> list[Path]:
    """Remove the temporaries of target ``name`` in ``directory`` whose owner is provably gone (killed with SIGKILL,
    power loss); returns what was removed. Temporaries of live processes, of other hosts and of unknown owners
    (older rankcli versions) are left alone."""
    removed = []
    prefix = f".{name}+"
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(prefix) or not owner_gone(entry.name):
            continue
        path = Path(entry.path)
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path)
        except OSError:
            pass
    return removed


# ----------------------------------------------------------------------------------------------------------------------
# Modes and durability


def current_umask() -> int:
    """The process's umask, read without changing it where Linux allows (``/proc/self/status``)."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def fsync(path: Path | str, directory: bool = False) -> None:
    """Flush a file (or with ``directory`` a directory's entries) to disk; filesystems that cannot are skipped."""
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP, errno.EROFS):
            raise
    finally:
        os.close(fd)


def fsync_tree(root: Path) -> None:
    """:func:`fsync` every file and directory under ``root``."""
    for dirpath, _, files in os.walk(root):
        for f in files:
            fsync(os.path.join(dirpath, f))
        fsync(dirpath, directory=True)


def create_file(directory: Path, name: str, suffix: str = "") -> Path:
    """Create an empty temporary file for target ``name`` in ``directory`` (mode ``0666``, so the umask applies)."""
    for _ in range(100):
        tmp = directory / (temporary_name(name) + suffix)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(directory))


def create_directory(directory: Path, name: str) -> Path:
    """Create a temporary directory for target ``name`` in ``directory`` (mode ``0777``, so the umask applies)."""
    for _ in range(100):
        tmp = directory / temporary_name(name)
        try:
            os.mkdir(tmp, 0o777)
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(directory))


def remove(path: Path) -> None:
    """Remove a temporary file or directory tree, ignoring errors (it is cleanup on a failure path)."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    except OSError:
        pass
