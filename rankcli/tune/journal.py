"""A loss's Optuna journal (``DIR/<loss>/study.journal``): its storage and lock, the checks that refuse a damaged
one, and the study's identity recorded in it.

**The lock.** Optuna's journal backend calls ``acquire`` and ``release`` around every append; :class:`JournalLock`
is an exclusive ``flock`` there. Holding it, a journal whose last line lacks its newline was cut short (no one else
is writing), and appending after it would fuse the next entry with the fragment into one line no reader can parse:
the append is refused instead (exit 3 naming the file).

**Damage.** Before a run uses a journal, every line is checked (:func:`rankcli.formats.tune_store.check_journal`)
and the study is loaded once, under the lock: a line that is not an Optuna entry, a file cut inside a line, or
entries Optuna cannot replay are exit 3 naming the file, never a traceback.

**The identity** (data, training options, space, sampler: what decides the trials) is a user attribute of the
study, written into the journal when the study is created. ``study.json`` is a copy for people; a study is resumed
only when the journal's record (or, for a journal of an earlier version without one, ``study.json``'s) equals this
run's identity, so removing ``study.json`` cannot let a run with other options continue the study.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rankcli.errors import InputError
from rankcli.formats.tune_store import check_journal, check_study_identity, normal_identity

JOURNAL_FILE = "study.journal"
IDENTITY_KEY = "rankcli_identity"


class JournalLock:
    """The journal's lock as an exclusive ``flock`` on ``<journal>.lock``: Optuna's default (a symbolic link, waited
    for with sleeps growing to a second, broken after 30 s of silence) made two workers wait on each other for most
    of their time, and a killed process left it behind; the kernel drops a dead holder's ``flock`` at once. Optuna's
    backend calls ``acquire`` and ``release`` around every append; ``acquire`` refuses a journal cut inside a line
    (see the module)."""

    def __init__(self, journal: Path):
        from rankcli.formats.atomic import FileLock

        self.journal = Path(journal)
        self._lock = FileLock(str(journal) + ".lock")

    def acquire(self) -> bool:
        """Wait for the lock; :class:`InputError` (the lock let go) when the journal ends inside a line."""
        self._lock.acquire()
        try:
            _check_tail(self.journal)
        except BaseException:
            self._lock.release()
            raise
        return True

    def release(self) -> None:
        """Give the lock up."""
        self._lock.release()

    def __enter__(self) -> JournalLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _check_tail(journal: Path) -> None:
    """Nothing when the journal's last line is whole (a newline ends it) and a JSON object, else the
    :class:`InputError` of :func:`~rankcli.formats.tune_store.check_journal`, which names the line."""
    try:
        with open(journal, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            tail = os.pread(f.fileno(), min(size, 1 << 16), max(0, size - (1 << 16)))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"{journal}: cannot read the study's journal ({exc.strerror or exc})") from None
    if not tail:
        return
    last = tail[:-1].rsplit(b"\n", 1)[-1] if tail.endswith(b"\n") else None
    if last is not None and (len(tail) == size or b"\n" in tail[:-1]):
        try:
            if isinstance(json.loads(last), dict):
                return
        except (ValueError, UnicodeDecodeError):
            pass
    elif last is not None:
        return  # a last line longer than the window read: Optuna's own reading checks it

    check_journal(journal)  # names the line


def quiet_optuna() -> None:
    """Optuna logs every trial at INFO level on stderr; rankcli says what it wants to say itself."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)


@contextmanager
def damage_named(journal: Path) -> Iterator[None]:
    """Let an error of Optuna's reading the journal (a line damaged while the run works on it) name the file and the
    line: :func:`~rankcli.formats.tune_store.check_journal` raises that :class:`InputError`; an error it does not
    explain goes on as it was."""
    try:
        yield
    except ValueError:
        from rankcli.formats.tune_store import check_journal

        check_journal(journal)
        raise


def journal_storage(journal: Path):
    """Optuna's journal storage on the file ``journal``, locked by :class:`JournalLock`."""
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    return JournalStorage(JournalFileBackend(str(journal), lock_obj=JournalLock(journal)))


def load_study(journal: Path, loss: str) -> Any:
    """The study of ``loss`` in ``journal`` (checked whole, under its lock), or ``None`` when the file is missing or
    holds no study yet (its creation was interrupted). :class:`InputError` (exit 3 naming the file) for a damaged
    journal or one holding another loss's study."""
    if not os.path.lexists(journal):
        return None
    if not journal.is_file():
        raise InputError(f"{journal}: the study's journal is not a regular file (a directory, a device, a broken "
                         "link); restore it, or pass --overwrite to start the study over")
    import optuna

    with JournalLock(journal):  # no append while the file is read and replayed
        check_journal(journal)
        try:
            storage = journal_storage(journal)
            names = optuna.get_all_study_names(storage)
            study = optuna.load_study(study_name=loss, storage=storage) if loss in names else None
            if study is not None:
                study.get_trials(deepcopy=False)
        except Exception as exc:  # entries that parse but that Optuna cannot replay: the file, not rankcli, is wrong
            raise InputError(f"{journal}: an Optuna journal that Optuna cannot replay ({type(exc).__name__}: "
                             f"{str(exc)[:200]}); restore the file, or pass --overwrite to start the study over") \
                from None
    if study is None and names:
        raise InputError(f"{journal}: holds the study of {', '.join(sorted(names))}, not of {loss}; a loss's study "
                         f"lives in DIR/{loss}/ (a directory copied or renamed?)")
    return study


def recorded_identity(study: Any) -> dict | None:
    """The identity the study's journal records, or ``None`` (a journal of an earlier version)."""
    value = study.user_attrs.get(IDENTITY_KEY)
    return value if isinstance(value, dict) else None


def record_identity(journal: Path, loss: str, identity: dict) -> None:
    """Create the study of ``loss`` in ``journal`` if it is not there and record ``identity`` in it (once)."""
    import optuna

    quiet_optuna()
    storage = journal_storage(journal)
    if loss in optuna.get_all_study_names(storage):  # create_study would append an entry every run
        study = optuna.load_study(study_name=loss, storage=storage)
    else:
        study = optuna.create_study(study_name=loss, storage=storage, direction="maximize")
    if recorded_identity(study) != identity:
        study.set_user_attr(IDENTITY_KEY, identity)


def check_identity(loss_dir: Path, loss: str, identity: dict) -> bool:
    """Check this run's ``identity`` against the study in ``loss_dir`` and record it; True when the study resumes.

    A damaged journal is an :class:`InputError`; another identity an :class:`~rankcli.errors.OutputError` unless
    no trial of the study ever started (see :func:`rankcli.formats.tune_store.check_study_identity`)."""
    from optuna.trial import TrialState

    journal = loss_dir / JOURNAL_FILE
    study = load_study(journal, loss)
    untried = study is None or all(t.state == TrialState.WAITING for t in study.get_trials(deepcopy=False))
    recorded = None if study is None else recorded_identity(study)
    resumed = check_study_identity(loss_dir, identity, untried, started=study is not None, recorded=recorded)
    record_identity(journal, loss, normal_identity(identity))
    return resumed
