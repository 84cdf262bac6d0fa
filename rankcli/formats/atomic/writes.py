"""Writing an output atomically: to a temporary beside the target, renamed into place only on success.

The rename (and the record that the command's final output is in place) happens with SIGINT, SIGTERM and SIGHUP held,
so an interrupt lands either before the rename (nothing written) or after the record (the command has succeeded).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rankcli.errors import OutputError, StdoutError
from rankcli.formats.atomic import temporaries
from rankcli.formats.atomic.targets import STDOUT, check_target, infer_kind, write_marker


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
# Writing


@contextmanager
def atomic_path(path: Path | str, overwrite: bool = False, suffix: str = "", *,
                file_kind: str | None = None) -> Iterator[Path]:
    """Yield a temporary path in the target's directory; on success it replaces ``path``, on failure it is removed.

    ``path`` may be :data:`STDOUT`: the temporary then lives in the system's temporary directory and is copied to
    standard output on success. ``file_kind``: what the output is (:mod:`~rankcli.formats.atomic.kinds`); an existing
    file of another kind is refused (:func:`check_target`). See the module's docstring for modes, symlinks and
    durability.
    """
    if str(path) == STDOUT:
        with _stdout_path(suffix) as tmp:
            yield tmp
        return
    display = Path(path)
    path = check_target(path, overwrite, kind="file", file_kind=file_kind)
    temporaries.remove_stale_temporaries(path.parent, path.name)
    try:
        tmp = temporaries.create_file(path.parent, path.name, suffix)
    except OSError as exc:
        raise temporaries.output_error(display, exc, f"cannot create a file in {path.parent}") from None
    try:
        yield tmp
        if path.is_dir() and not path.is_symlink():
            raise OutputError(f"{display}: is a directory")
        os.chmod(tmp, 0o666 & ~temporaries.current_umask())  # a writer may have replaced the file we created
        temporaries.fsync(tmp)
        with _signals_held():
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise temporaries.output_error(display, exc, "cannot replace it") from None
            _committed(display, path)
        temporaries.fsync(path.parent, directory=True)
    except BaseException as exc:
        temporaries.remove(tmp)
        if isinstance(exc, OSError) and exc.errno in temporaries.FULL_ERRNOS:
            raise temporaries.output_error(display, exc) from None  # disk full and the like: exit 4, not a bug
        raise


@contextmanager
def _stdout_path(suffix: str) -> Iterator[Path]:
    try:
        tmp = temporaries.create_file(Path(tempfile.gettempdir()), "rankcli-stdout", suffix)
    except OSError as exc:
        raise temporaries.output_error(tempfile.gettempdir(), exc, "cannot create a temporary file") from None
    try:
        try:
            yield tmp
        except OSError as exc:
            if exc.errno in temporaries.FULL_ERRNOS:  # the copy kept until the output is complete: exit 4, not a bug
                raise StdoutError(f"{exc.strerror or exc} (writing its temporary copy in {tmp.parent})") from None
            raise
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
        temporaries.remove(tmp)


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
    temporaries.remove_stale_temporaries(path.parent, path.name)
    try:
        tmp = temporaries.create_directory(path.parent, path.name)
    except OSError as exc:
        raise temporaries.output_error(display, exc, f"cannot create a directory in {path.parent}") from None
    old = None
    try:
        yield tmp
        new_kind = kind or infer_kind(tmp)
        if new_kind != "model":  # a model directory's rankcli.json is its marker
            write_marker(tmp, new_kind)
        temporaries.fsync_tree(tmp)
        exists = path.exists()
        if exists:
            # Checked again: files may have been added while we worked.
            check_target(path, overwrite, kind=new_kind or "directory")
        with _signals_held():
            if exists:
                old = path.parent / temporaries.temporary_name(path.name, "old")
                os.replace(path, old)
            try:
                os.replace(tmp, path)
            except BaseException:
                if old is not None:
                    os.replace(old, path)  # put the previous output back
                    old = None
                raise
            _committed(display, path)
        temporaries.fsync(path.parent, directory=True)
        if old is not None:
            temporaries.remove(old)
    except BaseException as exc:
        temporaries.remove(tmp)
        if isinstance(exc, OSError) and exc.errno in temporaries.FULL_ERRNOS:
            raise temporaries.output_error(display, exc) from None  # disk full and the like: exit 4, not a bug
        raise
