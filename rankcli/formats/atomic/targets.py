"""Checking an output target before any work, and recognising rankcli's own outputs.

``--overwrite`` replaces a file that is empty or an output of the same kind (:mod:`~rankcli.formats.atomic.kinds`), or
a directory that is empty or holds exactly a previous rankcli output of the same kind (recognised by rankcli's own
files: ``rankcli.json`` of a model, the :data:`MARKER` of a converted directory, ``config.json`` of an experiment);
any other file or directory is refused whatever the flags. An output that is, or
contains, one of the command's inputs is a usage error (:func:`check_not_input`). A symlinked output is written
through to its target; a device, FIFO or other special file is refused.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

from rankcli.errors import OutputError, UsageError
from rankcli.formats.atomic import kinds, temporaries

#: The output path meaning standard output.
STDOUT = "-"
#: The marker rankcli writes into every directory output it builds with :func:`atomic_directory`.
MARKER = ".rankcli-output.json"
#: Directory output kinds and how a previous output of that kind is recognised.
DIRECTORY_KINDS = ("model", "converted", "experiment", "split", "export", "click-model")
MODEL_FILES = {"model.txt", "rankcli.json"}


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


def check_distinct(outputs: dict[str, Path | str | None]) -> None:
    """Refuse (exit 2) two of a command's outputs (option -> path) that are one file, symlinks resolved: the second
    would replace the first, or be refused as another kind after all the work."""
    seen: dict[Path, str] = {}
    for option, path in outputs.items():
        if path is None or str(path) == STDOUT:
            continue
        real = _real(path)
        if real in seen:
            raise UsageError(f"{seen[real]} and {option} name the same file")
        seen[real] = option


def model_files(model_dir: Path | str | None) -> list[Path]:
    """The files a command reads from a model directory, as inputs for :func:`check_not_input`."""
    if model_dir is None:
        return []
    return [Path(model_dir) / name for name in sorted(MODEL_FILES)]


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
        raise temporaries.output_error(path, exc, "cannot check") from None
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
        raise temporaries.output_error(path, exc, "cannot list") from None


def directory_kind(path: Path | str) -> str | None:
    """What ``path`` holds: ``"empty"``, exactly a previous rankcli output of a kind in :data:`DIRECTORY_KINDS`, or
    ``None`` (anything else: a user's directory, an output with files added to it)."""
    path = Path(path)
    names = [n for n in _entries(path) if not temporaries.TEMPORARY.match(n)]  # our own leftovers do not count
    if not names:
        return "empty"
    marker = _read_marker(path)
    if marker is not None:
        listed = set(marker.get("files") or [])
        if set(names) - {MARKER} <= listed and marker.get("kind") in DIRECTORY_KINDS:
            return marker["kind"]
        return None
    if set(names) == MODEL_FILES and _is_model_info(path / "rankcli.json"):
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
    what = {"model": "model directory", "converted": "converted directory", "experiment": "experiment",
            "split": "split directory", "export": "model export (export-model)",
            "click-model": "click-model directory"}
    if found is not None and (kind in (None, "directory") or found == kind):
        if not overwrite:
            raise OutputError(f"{display}: already exists; pass --overwrite to replace it")
        return
    if found is not None:
        raise OutputError(f"{display}: holds a rankcli {what[found]}, not a {what.get(kind, kind)}; --overwrite "
                          "replaces only an output of the same kind: choose a new or empty directory")
    sample = ", ".join(n for n in _entries(path) if n != MARKER and not temporaries.TEMPORARY.match(n))
    if len(sample) > 80:
        sample = sample[:77] + "..."
    raise OutputError(f"{display}: is a directory holding files rankcli did not write ({sample}); rankcli replaces "
                      "only an empty directory or its own previous output, whatever the flags: choose a new or empty "
                      "directory")


def check_target(path: Path | str, overwrite: bool, kind: str | None = None, file_kind: str | None = None) -> Path:
    """Check an output before any work starts; returns the path to write (symlinks followed).

    ``kind`` is ``"file"`` for a one-file output, a :data:`DIRECTORY_KINDS` value for a directory output,
    ``"directory"`` for a directory output of any of those kinds, or ``None`` (a directory output when ``path`` is an
    existing directory, else a file). ``file_kind``: what a one-file output is (a :mod:`~rankcli.formats.atomic.kinds`
    kind); an existing file of another kind is refused whatever the flags (None: not checked, for files inside an
    output rankcli owns). Refused with exit 4: an existing target without ``overwrite``; a directory where a file
    goes; a file or directory that is not a rankcli output of the same kind (whatever the flags); a special file; a
    missing or unwritable parent directory.
    """
    display = Path(path)
    target = resolve_target(path)
    is_dir = target.is_dir()
    if kind == "file" or (kind is None and not is_dir):  # one file
        if is_dir:
            raise OutputError(f"{display}: is a directory; give a file name, e.g. {display}/output")
        if target.exists() and file_kind is not None:
            _check_file_kind(target, file_kind, display)
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


def _named(kind: str) -> str:
    what = f"rankcli {kind}" if kind in kinds.MARKED else kind
    return f"{'an' if what[0] in 'aeiouAEIOS' else 'a'} {what}"


def _check_file_kind(target: Path, file_kind: str, display: Path) -> None:
    """An existing one-file target is replaced only when it is empty or an output of the same kind."""
    found = kinds.file_kind(target)
    if found in ("empty", file_kind):
        return
    if found is not None:
        raise OutputError(f"{display}: holds {_named(found)}, not {_named(file_kind)}; --overwrite replaces only an "
                          "output of the same kind: choose a new path")
    raise OutputError(f"{display}: exists and is not {_named(file_kind)}; rankcli replaces only an output of the same "
                      "kind, whatever the flags: choose a new path or remove the file")


def _probe(directory: Path, display: Path) -> None:
    """Create and remove a file in ``directory``: a read-only mount or a directory that takes no files (as root,
    where permission bits say nothing) fails here, before the work, not after it."""
    try:
        tmp = temporaries.create_file(directory, "rankcli-probe")
    except OSError as exc:
        raise temporaries.output_error(display, exc, f"cannot create files in {directory}") from None
    temporaries.remove(tmp)


def infer_kind(directory: Path) -> str | None:
    """The kind of a directory output from what was written into it: a model, Parquet files, or unknown."""
    names = set(os.listdir(directory)) - {MARKER}
    if names == MODEL_FILES:
        return "model"
    if names and all(n.endswith(".parquet") for n in names):
        return "converted"
    return None


def write_marker(directory: Path, kind: str | None) -> None:
    """Write :data:`MARKER` into ``directory``: its kind and the files rankcli wrote there."""
    from rankcli import __version__

    files = sorted(set(os.listdir(directory)) - {MARKER})
    text = json.dumps({"kind": kind, "files": files, "written_by": f"rankcli {__version__}"}, indent=2) + "\n"
    fd = os.open(directory / MARKER, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
