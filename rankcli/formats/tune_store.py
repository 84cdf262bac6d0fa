"""The output directory of ``rankcli tune`` as a file format: its layout, and every file rankcli writes there.

- ``tune.json``: says the directory is a tune output (``format``) and which losses it holds;
- ``<loss>/study.json``: the study's identity (data, training options, seed, search space, sampler), a copy for
  people: the journal records it too (a study attribute), and that record is the one checked; a rerun with another
  identity is refused unless ``--overwrite``;
- ``<loss>/study.journal``: Optuna's journal (every trial, appended; shared by concurrent processes): one JSON object
  per line, each ending with a newline (:func:`check_journal`);
- ``<loss>/trials.csv``: one row per trial: number, state, validation value, trees, seconds, parameters;
- ``<loss>/best.json`` and ``best.json``: the best parameters of one loss and of every loss, as parameter files
  (:mod:`rankcli.train.params_file`) that ``train --params-file`` and ``experiment --params-file`` read;
- ``best-so-far.csv`` (and ``best-so-far.png`` with the plot extra): the best validation value after each finished
  trial, per loss;
- ``.tune.lock``, ``.workers/``, ``<loss>/.claim.lock``: the locks of concurrent processes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rankcli.errors import InputError, OutputError
from rankcli.formats.atomic import FileLock, Layout, atomic_path, remove_owned
from rankcli.formats.jsonable import jsonable

TUNE_FORMAT = "rankcli-tune/1"
MARKER_FILE = "tune.json"
STUDY_FILE = "study.json"
TRIALS_FILE = "trials.csv"
BEST_FILE = "best.json"
CURVE_FILE = "best-so-far.csv"
PLOT_FILE = "best-so-far.png"
PARAMS_FORMAT = "rankcli-params/1"
LOCK_FILE = ".tune.lock"
#: What rankcli writes into ``DIR/<loss>/`` (the journal and its locks are named in :mod:`rankcli.tune.journal` and
#: :mod:`rankcli.tune.study`; a test keeps them listed here): ``--overwrite`` removes these, and nothing else.
LOSS_FILES = (STUDY_FILE, "study.journal", "study.journal.lock", TRIALS_FILE, BEST_FILE, ".claim.lock")


def _overwritten(losses: list[str]):
    """The :class:`~rankcli.formats.atomic.Layout` of what ``--overwrite`` removes: the studies of ``losses`` and the
    files about every loss."""
    study = Layout(files=LOSS_FILES)
    return Layout(files=(BEST_FILE, CURVE_FILE, PLOT_FILE), dirs={loss: study for loss in losses})


def write_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (replacing an earlier version); returns ``path``."""
    try:
        with atomic_path(path, overwrite=True) as tmp:
            tmp.write_text(text)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write ({exc.strerror or exc})") from None
    return path


def write_json(path: Path, document: Any) -> Path:
    """Write ``document`` as indented JSON (NaN and infinity as null) to ``path`` atomically."""
    return write_text(path, json.dumps(jsonable(document), indent=2) + "\n")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def is_tune_directory(path: Path) -> bool:
    """Whether ``path`` holds a rankcli tune output (its ``tune.json``)."""
    doc = _read_json(path / MARKER_FILE)
    return isinstance(doc, dict) and doc.get("format") == TUNE_FORMAT


@contextmanager
def directory_lock(out_dir: Path) -> Iterator[None]:
    """Hold ``out_dir/.tune.lock`` (creating ``out_dir``): processes starting on one directory at once prepare it
    and check its studies one at a time. Removed again when the directory turns out not to be a tune output."""
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputError(f"{out_dir}: exists and is not a directory")
    parent = out_dir.parent if str(out_dir.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"{out_dir}: directory {parent} does not exist")
    try:
        out_dir.mkdir(exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{out_dir}: cannot create it ({exc.strerror or exc})") from None
    lock_path = out_dir / LOCK_FILE
    existed = lock_path.exists()
    try:
        with FileLock(lock_path):
            yield
    except OutputError:
        if not existed and not is_tune_directory(out_dir):
            lock_path.unlink(missing_ok=True)  # leave a directory that is not ours as it was
        raise


def prepare_directory(out_dir: Path, losses: list[str], overwrite: bool) -> None:
    """Reopen the tune output in ``out_dir`` (created by :func:`directory_lock`, whose lock the caller holds); with
    ``overwrite`` the studies of ``losses`` (and the files about every loss) are removed, to start over: rankcli's
    files only, and nothing when a study's directory holds anything else (exit 4). A non-empty directory that is not a
    tune output is refused."""
    if any(not p.name.startswith(".") for p in out_dir.iterdir()) and not is_tune_directory(out_dir):
        raise OutputError(f"{out_dir}: is not empty and holds no rankcli tune output ({MARKER_FILE} missing); "
                          "rankcli replaces only its own outputs, whatever the flags: choose a new or empty directory")
    try:
        known = (_read_json(out_dir / MARKER_FILE) or {}).get("losses") or []
        if overwrite:
            remove_owned(out_dir, _overwritten(losses))
        # the marker first: a directory holding loss directories is always recognised as a tune output
        write_json(out_dir / MARKER_FILE, {"format": TUNE_FORMAT, "losses": list(dict.fromkeys([*known, *losses]))})
        for loss in losses:
            (out_dir / loss).mkdir(exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{out_dir}: cannot write ({exc.strerror or exc})") from None


def _difference(old: Any, new: Any, prefix: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new)):
            out += _difference(old.get(k), new.get(k), f"{prefix}{k}.")
        return out
    if old != new:
        return [f"{prefix.rstrip('.')}: {json.dumps(old)[:60]} before, {json.dumps(new)[:60]} now"]
    return []


def normal_identity(identity: dict) -> dict:
    """``identity`` as JSON gives it back (sorted keys, tuples as lists): the form recorded and compared."""
    return json.loads(json.dumps(jsonable(identity), sort_keys=True))


def study_file_identity(loss_dir: Path) -> dict | None:
    """The identity ``loss_dir/study.json`` holds, or ``None`` (missing, unreadable or damaged)."""
    stored = _read_json(loss_dir / STUDY_FILE)
    return stored["identity"] if isinstance(stored, dict) and isinstance(stored.get("identity"), dict) else None


def check_study_identity(loss_dir: Path, identity: dict, untried: bool = False, *, started: bool = True,
                         recorded: dict | None = None) -> bool:
    """Check ``identity`` against the study's and write ``loss_dir/study.json``; True when a study was there already
    (resumed).

    Parameters
    ----------
    identity : what decides the trials (data, options, space, sampler).
    untried : no trial of the study ever started (e.g. its first run stopped on bad data): another identity starts
        the study anew instead of being refused.
    started : whether the journal holds the study; without it there is nothing to resume (a ``study.json`` left
        alone is replaced).
    recorded : the identity the journal records; ``None`` where it records none (a journal of an earlier version):
        ``study.json``'s is checked then, and a study whose identity is recorded nowhere is refused (another
        :class:`OutputError`), since no check could tell whether these options are its.
    """
    path = loss_dir / STUDY_FILE
    new = normal_identity(identity)
    stored = recorded if recorded is not None else study_file_identity(loss_dir)
    if not started:
        write_json(path, {"format": TUNE_FORMAT, "identity": new})
        return False
    if stored == new:
        if study_file_identity(loss_dir) != new:
            write_json(path, {"format": TUNE_FORMAT, "identity": new})
        return True
    if untried:
        remove_owned(loss_dir, Layout(files=LOSS_FILES))
        write_json(path, {"format": TUNE_FORMAT, "identity": new})
        return False
    if stored is None:
        raise OutputError(f"{loss_dir}: holds a study whose configuration is recorded nowhere (its journal has no "
                          f"record and {STUDY_FILE} is missing or damaged), so rankcli cannot tell whether these data, "
                          "options and --space are its; pass --overwrite to start it over")
    diffs = _difference(stored, new)
    raise OutputError(f"{loss_dir}: holds a study with another configuration ({'; '.join(diffs[:3])}"
                      f"{'; ...' if len(diffs) > 3 else ''}); rerun with the same data, options and --space to "
                      "resume it, or pass --overwrite to start over")


def check_journal(path: Path) -> None:
    """:class:`InputError` (exit 3) naming ``path`` and the line unless every line of the journal is a JSON object
    with an integer ``op_code`` and ends with a newline. The caller holds the journal's lock, so a line without its
    newline is not one being written: the file was cut short (a full disk, a copy stopped) or damaged otherwise."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the study's journal ({exc.strerror or exc})") from None
    lines = data.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if number == len(lines):
            if line:
                raise InputError(f"{path}:{number}: the journal ends inside a line (cut short: a full disk, a copy "
                                 "stopped); restore the file, delete that last line to resume without its entry, or "
                                 f"pass --overwrite to start the study over, got {_token(line)}")
            break
        try:
            entry = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            entry = None
        if not (isinstance(entry, dict) and isinstance(entry.get("op_code"), int)):
            raise InputError(f"{path}:{number}: not an entry of an Optuna journal (a JSON object with an op_code); "
                             f"restore the file, or pass --overwrite to start the study over, got {_token(line)}")


def _token(line: bytes) -> str:
    text = line[:60].decode("utf-8", "replace")
    return repr(text + ("..." if len(line) > 60 else ""))


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    text = str(value)
    return f'"{text}"' if any(c in text for c in ',"\n') else text


def write_trials(loss_dir: Path, rows: list[dict], names: list[str]) -> Path:
    """``loss_dir/trials.csv``: ``trial, state, value, trees, trees_trained, seconds, retry_of`` and one column per
    parameter of ``names``, one row per trial of ``rows``. A failed trial's value that was not finite (``invalid``:
    ``nan``, ``inf``, ``-inf``) is written as such."""
    head = ["trial", "state", "value", "trees", "trees_trained", "seconds", "retry_of", *names]
    lines = [",".join(head)]
    for r in rows:
        cells = {k: r.get(k) if k in head[:7] else r["params"].get(k) for k in head}
        if cells["value"] is None and r.get("invalid") in ("nan", "inf", "-inf"):
            cells["value"] = r["invalid"]
        lines.append(",".join(_cell(cells[k]) for k in head))
    return write_text(loss_dir / TRIALS_FILE, "\n".join(lines) + "\n")


def params_document(entries: dict[str, dict]) -> dict:
    """A parameter file's content: ``{"format", "losses": {loss: entry}}`` (each entry holds ``params``)."""
    return {"format": PARAMS_FORMAT, "losses": entries}


def write_curves(out_dir: Path, curves: dict[str, list[float]]) -> Path:
    """``best-so-far.csv``: ``loss, trials, best`` (the best validation value after each finished trial)."""
    lines = ["loss,trials,best"]
    for loss, values in curves.items():
        lines += [f"{loss},{i + 1},{v!r}" for i, v in enumerate(values)]
    return write_text(out_dir / CURVE_FILE, "\n".join(lines) + "\n")
