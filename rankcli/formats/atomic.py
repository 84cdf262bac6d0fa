"""Atomic outputs: write to a temporary beside the target, rename into place only on success.

The rules every command follows (docs/reliability.md is the user's version):

- A failure, an exception, Ctrl-C, SIGTERM or SIGHUP never leaves a half-written file at the target path; the
  temporary is removed. A temporary's name says who owns it (``.<name>+<host>+<pid>+<random>.tmp``): after a SIGKILL,
  a later run writing the same target removes it, but only when its owner is provably gone (same host and process
  namespace, process not alive), never one of a concurrent run.
- The temporary is fsynced before the rename and the directory after it, so a crash or power loss never leaves a
  truncated file under the final name.
- Files are created ``0666 & ~umask`` and directories ``0777 & ~umask``, as any other Unix tool's.
- ``--overwrite`` replaces a regular file, or a directory that is empty or holds exactly a previous rankcli output of
  the same kind (recognised by rankcli's own files: ``rankcli.json`` of a model, the ``.rankcli-output.json`` marker of
  a converted directory); any other directory is refused whatever the flags. An output that is, or contains, one of
  the command's inputs is a usage error before any work (:func:`check_not_input`).
- A symlinked output is written through to its target (the link stays a link); a target that is a device, a FIFO or
  another special file is refused. ``-`` is standard output (:data:`STDOUT`): the output is built in a temporary file
  and copied to standard output once complete.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rankcli.errors import OutputError, UsageError

#: The output path meaning standard output.
STDOUT = "-"
#: The marker rankcli writes into every directory output it builds with :func:`atomic_directory`.
MARKER = ".rankcli-output.json"
#: Directory output kinds and how a previous output of that kind is recognised.
DIRECTORY_KINDS = ("model", "converted", "experiment")
_MODEL_FILES = {"model.txt", "rankcli.json"}

#: OS errors while writing that are about the output's filesystem (disk full, quota, read-only): exit 4, not a bug.
_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)


def _output_error(path: Path | str, exc: OSError, what: str = "cannot write") -> OutputError:
    return OutputError(f"{path}: {what} ({exc.strerror or exc})")


# ----------------------------------------------------------------------------------------------------------------------
# Who owns a temporary


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


_TEMPORARY = re.compile(r"^\.(?P<name>.+)\+(?P<host>[A-Za-z0-9.-]+)\+(?P<pid>[0-9]+)\+[0-9a-f]{8}\."
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
    m = _TEMPORARY.match(entry_name)
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


def _fsync(path: Path | str, directory: bool = False) -> None:
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


def _fsync_tree(root: Path) -> None:
    for dirpath, _, files in os.walk(root):
        for f in files:
            _fsync(os.path.join(dirpath, f))
        _fsync(dirpath, directory=True)


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP while an output is renamed into place and recorded, so that an interrupt lands
    either before the rename (nothing written) or after the record (the command has succeeded)."""
    held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


# ----------------------------------------------------------------------------------------------------------------------
# What counts as "in place" (a Ctrl-C after the final rename is a success)

_state: dict = {"final": None, "committed": set()}


def expect_final_output(path: Path | str | None) -> None:
    """Declare the output whose rename completes the command (``None`` clears it; the CLI calls this)."""
    _state["final"] = None if path is None else _key(path)
    _state["committed"] = set()


def final_output_written() -> bool:
    """Whether the declared final output is in place: an interrupt after that point does not undo the success."""
    return _state["final"] is not None and _state["final"] in _state["committed"]


def _key(path: Path | str) -> str:
    return STDOUT if str(path) == STDOUT else os.path.abspath(path)


def _committed(*paths: Path | str) -> None:
    _state["committed"].update(_key(p) for p in paths)


# ----------------------------------------------------------------------------------------------------------------------
# Checking a target before any work


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(path))


def check_not_input(output: Path | str | None, inputs: Iterable[Path | str | None] = ()) -> None:
    """Refuse (exit 2) an output that is one of the command's ``inputs`` or a directory holding one, symlinks
    resolved. A model directory input is given as its files (:func:`model_files`)."""
    if output is None or str(output) == STDOUT:
        return
    out = _real(output)
    for item in inputs:
        if item is None or str(item) == STDOUT:
            continue
        real = _real(item)
        if real == out:
            raise UsageError(f"{output}: is also an input ({item}); write the output to another path")
        if out in real.parents:
            raise UsageError(f"{output}: holds the input {item}; write the output to another path")


def model_files(model_dir: Path | str | None) -> list[Path]:
    """The files a command reads from a model directory, as inputs for :func:`check_not_input`."""
    if model_dir is None:
        return []
    return [Path(model_dir) / name for name in sorted(_MODEL_FILES)]


def output_path(text: str, *, directory: bool = False, option: str = "--output", example: str = "output") -> Path | str:
    """The path a command's output option names: ``-`` (standard output) as is; for a single-file output a trailing
    slash names a directory, which is a usage error saying which file name to give."""
    if text == STDOUT:
        if directory:
            raise UsageError(f"{option} -: standard output cannot hold a directory output; give a directory")
        return STDOUT
    if text == "":
        raise UsageError(f"{option}: expected a path, got ''")
    if not directory and text.endswith("/"):
        raise UsageError(f"{option} {text}: names a directory, but the output is one file; give a file name, "
                         f"e.g. {text}{example}")
    return Path(text)


def check_stdout(binary: bool, what: str = "Parquet") -> None:
    """``-o -`` with a binary output: refused when standard output is a terminal (exit 2)."""
    try:
        tty = sys.stdout.isatty()
    except (AttributeError, ValueError):
        tty = False
    if binary and tty:
        raise UsageError(f"-o -: will not write {what} to a terminal; redirect standard output to a file or a pipe, "
                         "or give a file name")


def _special(mode: int) -> bool:
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def resolve_target(path: Path | str) -> Path:
    """The path to write for ``path``: a symlink is followed to its final target (the link itself is never
    replaced); a device, FIFO, socket or other special file is refused (exit 4)."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutputError(f"{path}: is a symlink loop; remove it or give another path") from None
        if exc.errno == errno.ENOTDIR:
            raise OutputError(f"{path}: a parent is not a directory") from None
        raise _output_error(path, exc, "cannot check") from None
    if st is not None and _special(st.st_mode):
        raise OutputError(f"{path}: is a special file (device, FIFO or socket), not a regular file; rankcli writes "
                          "regular files only (use -o - for standard output)")
    if not os.path.islink(path):
        return path
    try:
        target = Path(os.path.realpath(path, strict=st is not None))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutputError(f"{path}: is a symlink loop; remove it or give another path") from None
        raise OutputError(f"{path}: cannot follow the symlink ({exc.strerror or exc})") from None
    if st is not None and not os.path.samestat(st, os.stat(target)):
        raise OutputError(f"{path}: cannot write through this link to a regular file")
    return target


def _entries(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        raise _output_error(path, exc, "cannot list") from None


def directory_kind(path: Path | str) -> str | None:
    """What ``path`` holds: ``"empty"``, exactly a previous rankcli output of a kind in :data:`DIRECTORY_KINDS`, or
    ``None`` (anything else: a user's directory, an output with files added to it)."""
    path = Path(path)
    names = [n for n in _entries(path) if not _TEMPORARY.match(n)]  # our own leftovers do not count
    if not names:
        return "empty"
    marker = _read_marker(path)
    if marker is not None:
        listed = set(marker.get("files") or [])
        if set(names) - {MARKER} <= listed and marker.get("kind") in DIRECTORY_KINDS:
            return marker["kind"]
        return None
    if set(names) == _MODEL_FILES and _is_model_info(path / "rankcli.json"):
        return "model"
    if _is_experiment(path, names):
        return "experiment"
    if all(n.endswith(".parquet") and (path / n).is_file() and not (path / n).is_symlink() for n in names) and \
            all(_converted_by_rankcli(path / n) for n in names):
        return "converted"  # written before the marker existed: every file says "converted_by": "rankcli convert"
    return None


def _read_marker(path: Path) -> dict | None:
    try:
        data = json.loads((path / MARKER).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _is_model_info(path: Path) -> bool:
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(info, dict) and str(info.get("format", "")).startswith("rankcli-model/")


def is_experiment_config(path: Path | str) -> bool:
    """Whether ``path`` is the ``config.json`` of a rankcli experiment (not any file of that name)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and isinstance(data.get("config"), dict) and "data_fingerprint" in data


def _is_experiment(path: Path, names: list[str]) -> bool:
    return "config.json" in names and is_experiment_config(path / "config.json")


def _converted_by_rankcli(path: Path) -> bool:
    try:
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(str(path)).schema_arrow.metadata or {}
    except Exception:  # noqa: BLE001 - not a readable Parquet file: not ours
        return False
    return meta.get(b"rankcli.converted_by") == b"rankcli convert"


def _check_directory_target(path: Path, overwrite: bool, kind: str | None, display: Path) -> None:
    found = directory_kind(path)
    if found == "empty":
        return
    what = {"model": "model directory", "converted": "converted directory", "experiment": "experiment"}
    if found is not None and (kind in (None, "directory") or found == kind):
        if not overwrite:
            raise OutputError(f"{display}: already exists; pass --overwrite to replace it")
        return
    if found is not None:
        raise OutputError(f"{display}: holds a rankcli {what[found]}, not a {what.get(kind, kind)}; --overwrite "
                          "replaces only an output of the same kind: choose a new or empty directory")
    sample = ", ".join(n for n in _entries(path) if n != MARKER and not _TEMPORARY.match(n))
    if len(sample) > 80:
        sample = sample[:77] + "..."
    raise OutputError(f"{display}: is a directory holding files rankcli did not write ({sample}); rankcli replaces "
                      "only an empty directory or its own previous output, whatever the flags: choose a new or empty "
                      "directory")


def check_target(path: Path | str, overwrite: bool, kind: str | None = None) -> Path:
    """Check an output before any work starts; returns the path to write (symlinks followed).

    ``kind`` is ``"file"`` for a one-file output, a :data:`DIRECTORY_KINDS` value for a directory output,
    ``"directory"`` for a directory output of any of those kinds, or ``None`` (a directory output when ``path`` is an
    existing directory, else a file). Refused with exit 4: an existing target
    without ``overwrite``; a directory where a file goes; a directory rankcli did not write (whatever the flags); a
    special file; a missing or unwritable parent directory.
    """
    display = Path(path)
    target = resolve_target(path)
    is_dir = target.is_dir()
    if kind == "file" or (kind is None and not is_dir):  # one file
        if is_dir:
            raise OutputError(f"{display}: is a directory; give a file name, e.g. {display}/output")
        if target.exists() and not overwrite:
            raise OutputError(f"{display}: already exists; pass --overwrite to replace it")
    elif target.exists() or target.is_symlink():
        if not is_dir:
            raise OutputError(f"{display}: exists and is not a directory")
        _check_directory_target(target, overwrite, kind, display)
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.exists():
        raise OutputError(f"{display}: directory {parent} does not exist")
    if not parent.is_dir():
        raise OutputError(f"{display}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{display}: directory {parent} is not writable")
    _probe(parent, display)
    return target


def _probe(directory: Path, display: Path) -> None:
    """Create and remove a file in ``directory``: a read-only mount or a directory that takes no files (as root,
    where permission bits say nothing) fails here, before the work, not after it."""
    try:
        tmp = _create_file(directory, "rankcli-probe")
    except OSError as exc:
        raise _output_error(display, exc, f"cannot create files in {directory}") from None
    _remove(tmp)


# ----------------------------------------------------------------------------------------------------------------------
# Writing


def _create_file(directory: Path, name: str, suffix: str = "") -> Path:
    for _ in range(100):
        tmp = directory / (temporary_name(name) + suffix)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(directory))


def _create_directory(directory: Path, name: str) -> Path:
    for _ in range(100):
        tmp = directory / temporary_name(name)
        try:
            os.mkdir(tmp, 0o777)
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(directory))


@contextmanager
def atomic_path(path: Path | str, overwrite: bool = False, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path in the target's directory; on success it replaces ``path``, on failure it is removed.

    ``path`` may be :data:`STDOUT`: the temporary then lives in the system's temporary directory and is copied to
    standard output on success. See the module's docstring for modes, symlinks and durability.
    """
    if str(path) == STDOUT:
        with _stdout_path(suffix) as tmp:
            yield tmp
        return
    display = Path(path)
    path = check_target(path, overwrite, kind="file")
    remove_stale_temporaries(path.parent, path.name)
    try:
        tmp = _create_file(path.parent, path.name, suffix)
    except OSError as exc:
        raise _output_error(display, exc, f"cannot create a file in {path.parent}") from None
    try:
        yield tmp
        if path.is_dir() and not path.is_symlink():
            raise OutputError(f"{display}: is a directory")
        os.chmod(tmp, 0o666 & ~current_umask())  # a writer may have replaced the file we created
        _fsync(tmp)
        with _signals_held():
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise _output_error(display, exc, "cannot replace it") from None
            _committed(display, path)
        _fsync(path.parent, directory=True)
    except BaseException as exc:
        _remove(tmp)
        if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
            raise _output_error(display, exc) from None  # disk full and the like: exit 4, not a bug
        raise


@contextmanager
def _stdout_path(suffix: str) -> Iterator[Path]:
    try:
        tmp = _create_file(Path(tempfile.gettempdir()), "rankcli-stdout", suffix)
    except OSError as exc:
        raise _output_error(tempfile.gettempdir(), exc, "cannot create a temporary file") from None
    try:
        yield tmp
        out = sys.stdout
        out.flush()
        target = getattr(out, "buffer", None)
        with open(tmp, "rb") as fh:
            if target is not None:
                shutil.copyfileobj(fh, target, 1 << 20)
                target.flush()
            else:  # a text-only stream (tests): decode what a text output wrote
                out.write(fh.read().decode("utf-8", "surrogateescape"))
        out.flush()
        _committed(STDOUT)
    finally:
        _remove(tmp)


def _remove(path: Path) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    except OSError:
        pass


def _infer_kind(directory: Path) -> str | None:
    names = set(os.listdir(directory)) - {MARKER}
    if names == _MODEL_FILES:
        return "model"
    if names and all(n.endswith(".parquet") for n in names):
        return "converted"
    return None


def _write_marker(directory: Path, kind: str | None) -> None:
    from rankcli import __version__

    files = sorted(set(os.listdir(directory)) - {MARKER})
    text = json.dumps({"kind": kind, "files": files, "written_by": f"rankcli {__version__}"}, indent=2) + "\n"
    fd = os.open(directory / MARKER, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)


@contextmanager
def atomic_directory(path: Path | str, overwrite: bool = False, kind: str | None = None) -> Iterator[Path]:
    """Like :func:`atomic_path` for an output that is a directory (a model, a converted directory).

    An existing ``path`` is replaced only when it is empty or (with ``overwrite``) holds exactly a previous rankcli
    output of the same ``kind`` (``None``: inferred from what was written); this is checked before the work and again
    before the rename. A marker (:data:`MARKER`) listing the files is written into the new directory, except into a
    model directory, which its ``rankcli.json`` marks.
    """
    display = Path(path)
    path = check_target(path, overwrite, kind=kind or "directory")
    remove_stale_temporaries(path.parent, path.name)
    try:
        tmp = _create_directory(path.parent, path.name)
    except OSError as exc:
        raise _output_error(display, exc, f"cannot create a directory in {path.parent}") from None
    old = None
    try:
        yield tmp
        new_kind = kind or _infer_kind(tmp)
        if new_kind != "model":  # a model directory's rankcli.json is its marker
            _write_marker(tmp, new_kind)
        _fsync_tree(tmp)
        exists = path.exists()
        if exists:
            # Checked again: files may have been added while we worked.
            check_target(path, overwrite, kind=new_kind or "directory")
        with _signals_held():
            if exists:
                old = path.parent / temporary_name(path.name, "old")
                os.replace(path, old)
            try:
                os.replace(tmp, path)
            except BaseException:
                if old is not None:
                    os.replace(old, path)  # put the previous output back
                    old = None
                raise
            _committed(display, path)
        _fsync(path.parent, directory=True)
        if old is not None:
            _remove(old)
    except BaseException as exc:
        _remove(tmp)
        if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
            raise _output_error(display, exc) from None  # disk full and the like: exit 4, not a bug
        raise


# ----------------------------------------------------------------------------------------------------------------------
# Locks shared by concurrent runs (experiment units, the result store)


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
            raise _output_error(self.path, exc, "cannot create the lock file") from None
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

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
