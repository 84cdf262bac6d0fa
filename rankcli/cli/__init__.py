"""The command-line interface: one module per subcommand, joined here, and the one error boundary.

Only typer is imported at start-up; every subcommand imports numpy, pyarrow or LightGBM inside its function body, so
``rankcli --help`` and ``rankcli --version`` stay fast.
"""

from __future__ import annotations

import importlib
import re
import signal
import sys
import threading
import traceback
from typing import Annotated

import typer

from rankcli import __version__
from rankcli.cli.options import UsageCommand
from rankcli.errors import ExitStatus, PipeClosed, RankcliError, Terminated
from rankcli.formats.atomic import expect_final_output, final_output_written
from rankcli.runtime.compat import DependencyChanged, click_exception_type
from rankcli.runtime.startup import prefer_passive_openmp_waits

HELP = ("Learning-to-rank from the shell: convert LETOR data, train LightGBM rankers with XE-NDCG, LambdaMART, "
        "ListNet and more, evaluate, simulate clicks and compare runs with significance tests.\n\n"
        "Exit statuses: 0 success, 1 internal error (a bug), 2 usage error, 3 invalid input data, "
        "4 output or filesystem problem, 5 a requested gate failed (compare --fail-if-worse, click-model compare "
        "--fail-if-worse, export-model --check), 129 hangup (SIGHUP), "
        "130 interrupted (Ctrl-C, SIGINT), 141 standard output closed (the reader went away, as with | head), "
        "143 terminated (SIGTERM, as sent by timeout, Slurm and Kubernetes).")

#: The subcommands and their modules, in the order of ``rankcli --help`` (each module's NAME is its command's name).
COMMANDS = {"convert": "convert", "info": "info", "export": "export", "split": "split", "train": "train",
            "predict": "predict", "export-model": "export_model",
            "eval": "eval", "simulate-clicks": "simulate_clicks", "propensity": "propensity", "compare": "compare",
            "experiment": "experiment", "explain": "explain", "tune": "tune", "click-model": "click_model",
            "fuse": "fuse", "trec_eval": "trec_eval", "trec-eval": "trec_eval"}

_state = {"debug": False}


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"rankcli {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_version_callback, is_eager=True, help="Print the version and exit."),
    ] = None,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the full traceback for any error (also accepted after a subcommand).")
    ] = False,
) -> None:
    _state["debug"] = _state["debug"] or debug


def make_app(only: str | None = None) -> typer.Typer:
    """The typer app with every subcommand, or with the subcommand ``only`` alone: typer builds the options of every
    command it holds at each start, and one command instead of ten saves ~35 ms of every command line."""
    new = typer.Typer(name="rankcli", help=HELP, no_args_is_help=True, add_completion=False,
                      pretty_exceptions_enable=False, context_settings={"help_option_names": ["-h", "--help"]})
    new.callback()(_root)
    for name, module_name in COMMANDS.items():
        if only is None or name == only:
            module = importlib.import_module(f"rankcli.cli.{module_name}")
            if hasattr(module, "APP"):  # a command with subcommands of its own
                new.add_typer(module.APP, name=name, help=_reflow(module.__doc__), short_help=module.SHORT_HELP)
                continue
            new.command(name=name, help=_reflow(module.__doc__), short_help=module.SHORT_HELP, cls=UsageCommand,
                        context_settings=getattr(module, "CONTEXT_SETTINGS", None), hidden=name != module.NAME,
                        add_help_option=getattr(module, "ADD_HELP_OPTION", True))(module.command)
    return new


def _reflow(doc: str) -> str:
    """Join the hard-wrapped lines of each paragraph, so that the help is wrapped once, to the terminal's width.

    A line that starts a list item (``-`` or ``*``) or is indented (an example, a table) keeps its own line.
    """
    paragraphs = []
    for paragraph in re.split(r"\n\s*\n", doc.strip()):
        lines: list[str] = []
        for line in paragraph.splitlines():
            if not lines or line.startswith((" ", "\t", "- ", "* ")):
                lines.append(line.rstrip())
            else:
                lines[-1] += " " + line.strip()
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


app = make_app()


def _print_error(message: str) -> None:
    try:
        sys.stderr.write(f"Error: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr gone (SIGHUP of a closed terminal, a closed pipe)
        pass


def _print_usage_error(exc) -> None:
    """A usage error as one line, where typer prints four (usage, hint, blank, error): the message, then where to
    look, ``Error: No such option: --bogus. Try 'rankcli info --help'.`` No message at all: the help was shown."""
    message = " ".join(exc.format_message().split())
    if not message:
        return
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        message += f"{'' if message.endswith(('.', '?', '!')) else '.'} Try '{ctx.command_path} --help'."
    _print_error(message)


def _raise_terminated(signum: int, frame) -> None:
    raise Terminated(signum)


def _install_signal_handlers() -> dict:
    """SIGTERM and SIGHUP raise :class:`rankcli.errors.Terminated` in the main thread, as SIGINT raises
    KeyboardInterrupt: temporaries are removed and the exit status is 143 / 129. Returns the previous handlers."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            current = signal.getsignal(sig)
            if current is signal.SIG_IGN:  # nohup: the user asked for this signal to be ignored
                continue
            previous[sig] = signal.signal(sig, _raise_terminated)
        except (ValueError, OSError):
            pass
    return previous


def _restore_signal_handlers(previous: dict) -> None:
    for sig, handler in previous.items():
        try:
            signal.signal(sig, handler)
        except (ValueError, OSError):
            pass


def _interrupted(status: int, name: str) -> int:
    """An interrupt: a failure, unless the command's output was already in place (then it has succeeded)."""
    if final_output_written():
        return ExitStatus.SUCCESS
    _print_error(name)
    return status


def main(argv: list[str] | None = None, *, ending: bool = False) -> int:
    """Run the CLI and return the exit status; every failure is mapped here and only here.

    ``ending``: the process ends with this status (the ``rankcli`` command, :func:`rankcli.__main__.run`): once the
    status is decided, SIGINT, SIGTERM and SIGHUP are ignored instead of given back to the previous handlers, so that
    a signal while the interpreter shuts down cannot turn the decided status into a death by that signal. A caller
    that goes on (a test, a library user) gets its handlers back."""
    prefer_passive_openmp_waits()
    previous = _install_signal_handlers()
    expect_final_output(None)
    status = None
    try:
        status = _main(argv)
    except KeyboardInterrupt:  # a second Ctrl-C while the first one's exit was being handled
        status = ExitStatus.INTERRUPTED
    finally:
        if ending:
            _ignore_signals()
        from rankcli.cli._common import remove_converted_inputs

        remove_converted_inputs()  # SVMlight inputs converted for this command
        expect_final_output(None)
        if not ending:
            _restore_signal_handlers(previous)
    return status


def _ignore_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (ValueError, OSError):  # not the main thread: nothing to ignore there
            pass


def _run(command, args: list[str]) -> int:
    try:
        # the words as given (click drops "--"): rankcli trec_eval reads its command line with trec_eval's getopt
        result = command.main(args=args, prog_name="rankcli", standalone_mode=False, obj={"argv": list(args)})
    except Terminated as exc:
        if _state["debug"]:
            traceback.print_exc()
        return _interrupted(exc.exit_status, f"terminated ({exc})")
    if result == ExitStatus.INTERRUPTED:
        # typer turns Ctrl-C inside a command into Exit(130) before it reaches the handlers below.
        return _interrupted(ExitStatus.INTERRUPTED, "interrupted")
    return int(result) if isinstance(result, int) else ExitStatus.SUCCESS


def _main(argv: list[str] | None) -> int:
    from rankcli.cli._common import guarded_streams

    try:
        usage_error = click_exception_type()
    except DependencyChanged as exc:
        _print_error(str(exc))
        return exc.exit_status

    args = list(sys.argv[1:] if argv is None else argv)
    # --debug is accepted anywhere before "--", so that it can be added to the end of any failing command line.
    cut = args.index("--") if "--" in args else len(args)
    debug = "--debug" in args[:cut]
    if debug:
        args = [a for i, a in enumerate(args) if not (a == "--debug" and i < cut)]
    _state["debug"] = debug
    # the subcommand alone when the command line names one (a typo, --help or --version get every command)
    command = typer.main.get_command(make_app(args[0]) if args and args[0] in COMMANDS else app)
    try:
        # every write to stdout (results, --help, -o -) fails as PipeClosed or StdoutError, handled below; stderr too
        with guarded_streams():
            return _run(command, args)
    except PipeClosed:
        # The reader went away (`rankcli ... | head`): not our failure, nothing more to say; 141 as for SIGPIPE.
        return ExitStatus.BROKEN_PIPE
    except Terminated as exc:  # a second signal while the first was being handled
        return _interrupted(exc.exit_status, f"terminated ({exc})")
    except usage_error as exc:
        _print_usage_error(exc)
        return exc.exit_code
    except typer.Abort:
        return _interrupted(ExitStatus.INTERRUPTED, "interrupted")
    except KeyboardInterrupt:
        if _state["debug"]:
            traceback.print_exc()
        return _interrupted(ExitStatus.INTERRUPTED, "interrupted")
    except RankcliError as exc:
        if _state["debug"]:
            traceback.print_exc()
        _print_error(str(exc))
        return exc.exit_status
    except BrokenPipeError:  # a closed pipe met outside standard output's guard: the same quiet end
        return ExitStatus.BROKEN_PIPE
    except MemoryError:
        traceback.print_exc()
        _print_error("out of memory")
        return ExitStatus.INTERNAL_ERROR
    except Exception:  # noqa: BLE001 - the boundary: anything else is a bug, shown with its traceback
        traceback.print_exc()
        _print_error("internal error (a bug in rankcli); the traceback above says where. Please report it.")
        return ExitStatus.INTERNAL_ERROR
