import subprocess
import sys

from rankcli import __version__
from rankcli.cli import app
from rankcli.errors import ExitStatus
from tests.conftest import REPO

COMMANDS = ["convert", "info", "export", "split", "train", "predict", "export-model", "eval", "simulate-clicks",
            "propensity", "compare", "experiment", "explain", "tune", "click-model", "fuse", "trec_eval", "trec-eval"]
#: Another name of a command, registered but not listed by --help.
ALIASES = ["trec-eval"]


def _listed_commands(help_text: str) -> list[str]:
    """The command names of the help's "Commands" panel: the first word of each row of that box."""
    lines = help_text.splitlines()
    start = next(i for i, line in enumerate(lines) if "Commands" in line and line.lstrip().startswith(("╭", "+")))
    names = []
    for line in lines[start + 1:]:
        if line.lstrip().startswith(("╰", "+")):
            break
        words = line.strip("│| ").split()
        if words and not line.strip("│| ").startswith(" "):
            names.append(words[0])
    return names


def test_help_lists_every_subcommand_by_its_exact_name(cli):
    result = cli("--help", env={"COLUMNS": "200"})
    assert result.returncode == 0
    assert sorted(_listed_commands(result.stdout.decode())) == sorted(set(COMMANDS) - set(ALIASES))


def test_the_app_registers_exactly_the_documented_commands():
    import typer

    assert sorted(typer.main.get_command(app).commands) == sorted(COMMANDS)


def _described(param) -> tuple:
    return (param.name, param.opts, param.secondary_opts, repr(param.default), param.required, param.multiple,
            type(param.type).__name__, getattr(param.type, "name", None), getattr(param, "help", None),
            getattr(param, "is_flag", None))


def test_a_command_alone_is_the_command_of_the_whole_app():
    """A command line that names a subcommand builds that subcommand alone (start-up): same name, options, defaults,
    help, and the same root options (--debug, --version) around it."""
    import typer

    from rankcli import cli

    assert list(cli.COMMANDS) == COMMANDS
    whole = typer.main.get_command(app)
    for name in COMMANDS:
        alone = typer.main.get_command(cli.make_app(name))
        assert list(alone.commands) == [name]
        a, b = alone.commands[name], whole.commands[name]
        assert a.help == b.help and a.short_help == b.short_help
        assert [_described(p) for p in a.params] == [_described(p) for p in b.params], name
        assert [_described(p) for p in alone.params] == [_described(p) for p in whole.params]


def test_a_mistyped_command_is_still_told_what_exists(cli):
    result = cli("evl")
    assert result.returncode == 2 and "No such command" in result.stderr.decode()


def test_version(cli):
    result = cli("--version")
    assert result.returncode == 0
    assert result.stdout.decode().strip() == f"rankcli {__version__}"


def test_help_and_version_import_nothing_heavy():
    """Start-up time is measured by bench/startup.py; what keeps it low is that --version and --help import none of
    the heavy libraries."""
    for args in (["--version"], ["--help"]):
        code = (f"import sys\nfrom rankcli.cli import main\ntry:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
                "print([m for m in ('numpy', 'pyarrow', 'lightgbm', 'scipy', 'sklearn') if m in sys.modules], "
                "file=sys.stderr)")
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
        assert result.stderr.strip().splitlines()[-1] == "[]", (args, result.stderr)


def test_core_imports_no_cli_or_io_libraries():
    code = ("import sys; import rankcli.core.groups; "
            "print(sorted(m for m in ('typer', 'rich', 'pyarrow', 'lightgbm') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert result.stdout.strip() == "[]"


def test_usage_error_exit_status(cli):
    result = cli("convert", "--no-such-option")
    assert result.returncode == ExitStatus.USAGE
    assert b"No such option" in result.stderr
    assert result.stdout == b""


def test_every_command_has_help():
    import typer

    group = typer.main.get_command(app)
    for name, command in group.commands.items():
        assert command.help and len(command.help.strip()) > 10, name
        assert command.short_help, name


def test_exit_statuses_of_signals_are_documented_in_the_help(cli):
    assert (ExitStatus.HANGUP, ExitStatus.INTERRUPTED, ExitStatus.TERMINATED) == (129, 130, 143)
    out = " ".join(cli("--help").stdout.decode().split())
    for text in ("129 hangup (SIGHUP)", "130 interrupted", "143 terminated (SIGTERM"):
        assert text in out
