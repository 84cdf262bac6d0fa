"""Exceptions named by the condition, each carrying the exit status the CLI reports.

The library raises these; one boundary in :mod:`rankcli.cli` turns them into ``Error: <message>`` on stderr and the
status below. Anything else that escapes is a bug (status 1, traceback shown).
"""

from __future__ import annotations

import signal
from enum import IntEnum


class ExitStatus(IntEnum):
    """The documented exit statuses (README, "Exit statuses"): scripts test these numbers."""

    SUCCESS = 0
    INTERNAL_ERROR = 1
    USAGE = 2
    INVALID_INPUT = 3
    OUTPUT = 4
    WORSE_THAN_BASELINE = 5  # a requested gate failed: compare --fail-if-worse, export-model --check
    GATE_FAILED = 5
    HANGUP = 129  # SIGHUP: the terminal went away (128 + 1)
    INTERRUPTED = 130  # SIGINT: Ctrl-C (128 + 2)
    BROKEN_PIPE = 141  # SIGPIPE: the reader of standard output went away, e.g. `| head` (128 + 13)
    TERMINATED = 143  # SIGTERM: what timeout, Slurm and Kubernetes send before SIGKILL (128 + 15)


class RankcliError(Exception):
    """Base class: an expected failure with a message meant for the user."""

    exit_status: ExitStatus = ExitStatus.INVALID_INPUT


class UsageError(RankcliError):
    """Options that cannot work together, or a value outside its domain."""

    exit_status = ExitStatus.USAGE


class InputError(RankcliError):
    """Input data that is malformed or inconsistent."""

    exit_status = ExitStatus.INVALID_INPUT


class InputFormatError(InputError):
    """A text input that does not parse. Formats as ``path:line: what, got "token"``."""

    def __init__(self, what: str, path: str | None = None, line: int | None = None, token: str | None = None):
        self.what = what
        self.path = path
        self.line = line
        self.token = token
        super().__init__(self._format())

    def _format(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        got = f", got {self.token!r}" if self.token is not None else ""
        return f"{where}{self.what}{got}"


class SchemaError(InputError):
    """A dataset or run whose columns are missing, of the wrong type, or inconsistent."""


class OutputError(RankcliError):
    """The output cannot be written: target exists without --overwrite, unwritable directory, disk full."""

    exit_status = ExitStatus.OUTPUT


class StdoutError(OutputError):
    """A write to standard output failed for a reason other than a closed pipe: ``/dev/full``, ``ulimit -f``, a full
    disk under a redirection. Exit 4, ``cannot write standard output: <the system's reason>``."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"cannot write standard output: {reason}")


class WorseThanBaseline(RankcliError):
    """``compare --fail-if-worse``: some run is significantly worse than the baseline."""

    exit_status = ExitStatus.WORSE_THAN_BASELINE


class CheckFailed(RankcliError):
    """``export-model --check``: the exported model sends a row another way than LightGBM (exit 5, the gate's)."""

    exit_status = ExitStatus.GATE_FAILED


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: raised in the main thread like :class:`KeyboardInterrupt` for SIGINT, so that every
    ``finally`` and every atomic output's clean-up runs. A :class:`BaseException`, so that no ``except Exception``
    swallows it. The CLI exits with 128 + the signal's number."""

    def __init__(self, signum: int):
        self.signum = signum
        self.exit_status = ExitStatus.HANGUP if signum == signal.SIGHUP else ExitStatus.TERMINATED
        super().__init__(signal.Signals(signum).name)


class PipeClosed(BaseException):
    """The reader of standard output (or of stderr, the log) went away: a closed pipe, as ``rankcli ... | head -1``
    makes. The command ends quietly with exit 141, what a shell reports for a tool killed by SIGPIPE. A
    :class:`BaseException`, like :class:`Terminated`, so that no ``except Exception`` swallows it on its way to the
    CLI's boundary."""

    exit_status = ExitStatus.BROKEN_PIPE
