"""A signal in the process's first and last moments: while the CLI loads (an interrupt, not a traceback from inside
an import) and once the command's status is decided (a late Ctrl-C or SIGTERM does not turn it into a death by the
signal)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.conftest import REPO

ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=60)


@pytest.mark.parametrize("sig,status,said", [(signal.SIGINT, 130, "interrupted"),
                                             (signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                             (signal.SIGHUP, 129, "terminated (SIGHUP)")])
def test_a_signal_while_the_cli_loads_is_its_status_without_a_traceback(sig, status, said):
    # what run() installs before it imports the CLI, and a signal arriving in the middle of that import
    code = ("import os, signal, sys; import rankcli.__main__ as m\n"
            "for s in m._EARLY: signal.signal(s, m._early)\n"
            f"os.kill(os.getpid(), {int(sig)}); import rankcli.cli; print('not reached')")
    out = _python(code)
    assert (out.returncode, out.stdout, out.stderr) == (status, "", f"Error: {said}\n")


def test_a_signal_inside_a_callback_while_the_cli_loads_still_ends_the_process():
    # importlib releases a module lock through a weakref callback; a handler that raised there would only print
    # "Exception ignored in ..." with a traceback, and the import would go on
    code = ("import os, signal, weakref; import rankcli.__main__ as m\n"
            "for s in m._EARLY: signal.signal(s, m._early)\n"
            "class Lock: pass\n"
            "def cb(_):\n"
            "    os.kill(os.getpid(), signal.SIGINT)\n"
            "    for _ in range(1000): pass\n"
            "lock = Lock(); ref = weakref.ref(lock, cb); del lock\n"
            "print('not reached')")
    out = _python(code)
    assert (out.returncode, out.stdout, out.stderr) == (130, "", "Error: interrupted\n")


@pytest.mark.parametrize("delay", [0.0005, 0.005, 0.02, 0.05, 0.1])
def test_ctrl_c_at_any_moment_of_start_up_is_never_a_traceback_or_a_signal_death(tmp_path, delay):
    """From the entry point's first line (before it, the interpreter itself is starting: no program can answer a
    signal there), a SIGINT at any moment, here a timer's started once run() has set SIGINT's handler, is exit 130
    or the command's own result."""
    # The timer is cancelled at exit: the interpreter's shutdown puts SIGALRM back to its default action (death by
    # the alarm), and a timer outliving a fast command would otherwise fire there, a death the test itself caused.
    code = ("import atexit, os, signal, sys; import rankcli.__main__ as m\n"
            "signal.signal(signal.SIGALRM, lambda *_: os.kill(os.getpid(), signal.SIGINT))\n"
            "atexit.register(signal.setitimer, signal.ITIMER_REAL, 0)\n"
            "real = signal.getsignal\n"
            "def then_timer(sig):\n"
            "    if sig == signal.SIGHUP:  # run() asks for SIGHUP's handler after it has set SIGINT's\n"
            f"        signal.setitimer(signal.ITIMER_REAL, {delay})\n"
            "    return real(sig)\n"
            "signal.getsignal = then_timer\n"
            f"sys.argv = ['rankcli', 'info', {str(tmp_path / 'missing.parquet')!r}]; m.run()")
    out = _python(code)
    assert "Traceback" not in out.stderr
    assert (out.returncode, out.stderr) in ((130, "Error: interrupted\n"), (3, out.stderr)), out.stderr


def test_signals_after_the_status_is_decided_leave_it_as_it_is():
    code = ("import os, signal; from rankcli.cli import main\n"
            "status = main(['--version'], ending=True)\n"
            "os.kill(os.getpid(), signal.SIGINT); os.kill(os.getpid(), signal.SIGTERM)\n"
            "os.kill(os.getpid(), signal.SIGHUP); print('status', status)")
    out = _python(code)
    assert (out.returncode, out.stdout.split()[-2:], out.stderr) == (0, ["status", "0"], "")


def test_a_caller_that_goes_on_gets_its_handlers_back():
    from rankcli.cli import main

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    assert main(["--version"]) == 0
    assert {s: signal.getsignal(s) for s in before} == before


def test_the_rankcli_command_is_the_entry_that_owns_the_last_moments():
    text = (REPO / "pyproject.toml").read_text()
    assert 'rankcli = "rankcli.__main__:run"' in text
