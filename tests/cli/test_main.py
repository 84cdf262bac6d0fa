import subprocess
import sys
import time

from rankcli import __version__
from rankcli.cli import app
from rankcli.errors import ExitStatus
from tests.conftest import REPO


def test_help_lists_every_subcommand(cli):
    result = cli("--help")
    assert result.returncode == 0
    out = result.stdout.decode()
    for name in ["convert", "info", "export", "train", "predict", "eval", "simulate-clicks", "compare", "experiment"]:
        assert name in out


def test_version(cli):
    result = cli("--version")
    assert result.returncode == 0
    assert result.stdout.decode().strip() == f"rankcli {__version__}"


def test_help_and_version_are_fast_and_import_nothing_heavy():
    code = ("import sys, time; t = time.perf_counter(); from rankcli.cli import main; main(['--version']); "
            "heavy = [m for m in ('numpy', 'pyarrow', 'lightgbm', 'scipy', 'sklearn') if m in sys.modules]; "
            "print(heavy, time.perf_counter() - t, file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    heavy, seconds = result.stderr.strip().rsplit("] ", 1)
    assert heavy == "[", f"heavy modules imported at start-up: {heavy}]"
    assert float(seconds) < 0.5
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rankcli", "--help"], capture_output=True, check=True, cwd=REPO)
    assert time.perf_counter() - start < 2.0  # includes the interpreter's own start-up


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
