"""``python -m rankcli`` and the ``rankcli`` command: the entry point, which owns the process's first and last moments.

A signal can arrive before the CLI has loaded (typer, rich: the first ~40 ms) and after the command has ended (while
the interpreter shuts down). In the first window nothing has started, so an interrupt is a plain "interrupted" with
its status instead of a traceback from the middle of an import; in the last one the command's status is decided and
its output in place, so a late Ctrl-C or SIGTERM must not turn a success into a death by the signal.
"""

import os
import signal
import sys

_EARLY = {signal.SIGINT: ("interrupted", 130), signal.SIGTERM: ("terminated (SIGTERM)", 143),
          signal.SIGHUP: ("terminated (SIGHUP)", 129)}


def _early(signum: int, frame) -> None:
    # Ends the process here instead of raising: a handler can run inside a callback (importlib's module-lock weakref
    # callback, say), where a SystemExit is reported as an ignored exception with its traceback and the import goes
    # on. Nothing has been written yet (the CLI installs its own handlers before it does anything), so nothing is lost.
    message, status = _EARLY[signum]
    try:
        sys.stderr.write(f"Error: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(status)


def run() -> None:
    """Run the CLI as the ``rankcli`` command and exit with its status."""
    for sig in _EARLY:
        if signal.getsignal(sig) is not signal.SIG_IGN:  # nohup: an ignored signal stays ignored
            signal.signal(sig, _early)
    from rankcli.cli import main

    # Loaded: Ctrl-C is a KeyboardInterrupt again, which the CLI handles (SIGTERM and SIGHUP get its own handlers).
    if signal.getsignal(signal.SIGINT) is _early:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main(ending=True))


# Guarded so that multiprocessing's "spawn" workers (which re-import the main module as __mp_main__) do not run the CLI.
if __name__ == "__main__":
    run()
