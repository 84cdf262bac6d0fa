"""Standard output and the shell: a closed pipe (on stdout or on stderr, the log) ends any command quietly with exit
141; a write to stdout that fails otherwise (``/dev/full``, ``ulimit -f``, a closed descriptor) is exit 4 with the
system's reason; usage errors are one line.

``STDOUT_CASES`` holds, for every command in ``rankcli.cli.COMMANDS``, command lines that write to standard output;
a command added to ``COMMANDS`` without one fails ``test_every_command_has_a_stdout_case``, and its ``--help`` is
covered at once. Commands run in-process (the same boundary as a process, at a fraction of the cost) with
``sys.stdout`` replaced; a few real processes check what only a process shows (the interpreter's exit, ulimit)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rankcli import cli
from rankcli.cli import main
from rankcli.errors import ExitStatus
from tests.conftest import REPO, SAMPLE

LETOR = SAMPLE / "letor"

#: Per command, argument lists (``{name}`` is a file of the ``files`` fixture: a LETOR text file, a dataset, a model,
#: two Parquet runs, a click log, TREC qrels and a TREC run; ``{tmp}`` the test's directory) whose run writes to
#: standard output. A new command adds its line here.
STDOUT_CASES: dict[str, list[list[str]]] = {
    "convert": [["convert", "{letor}", "-o", "-"], ["convert", "{letor}", "-o", "{tmp}/c.parquet"]],
    "info": [["info", "{data}"], ["info", "{data}", "--json"]],
    "export": [["export", "{data}", "-o", "-"], ["export", "{data}", "-o", "-", "--format", "trec-qrels"],
               ["export", "{data}", "-o", "{tmp}/e.txt", "--json"]],
    "split": [["split", "{data}", "-o", "{tmp}/folds", "--folds", "3"],
              ["split", "{data}", "-o", "{tmp}/s", "--split", "0.6,0.2,0.2", "--json"]],
    "train": [["train", "{data}", "-o", "{tmp}/m", "--trees", "1", "--threads", "1"]],
    "predict": [["predict", "{model}", "{data}", "-o", "-"], ["predict", "{model}", "{data}", "-o", "-", "--format",
                                                              "trec"]],
    "eval": [["eval", "{run}"], ["eval", "{run}", "--json"], ["eval", "{run}", "--format", "trec_eval"],
             ["eval", "--qrels", "{qrels}", "--run", "{trec_run}", "-q", "--format", "trec_eval"]],
    "simulate-clicks": [["simulate-clicks", "{data}", "-o", "-", "--seed", "1"],
                        ["simulate-clicks", "{data}", "-o", "{tmp}/s.parquet", "--seed", "1"]],
    "propensity": [["propensity", "{clicks}"], ["propensity", "{clicks}", "--json"]],
    "compare": [["compare", "{run}", "{run2}"], ["compare", "{run}", "{run2}", "--json"]],
    "experiment": [["experiment", "{data}", "-o", "{tmp}/x", "--trials", "1", "--trees", "1", "--losses",
                    "lambdamart", "--no-plots"]],
    "tune": [["tune", "{data}", "--valid", "{data}", "-o", "{tmp}/t", "--loss", "xendcg", "--budget", "1", "--trees",
              "1", "--threads", "1"],
             ["tune", "{data}", "--valid", "{data}", "-o", "{tmp}/t2", "--loss", "xendcg", "--budget", "1", "--trees",
              "1", "--threads", "1", "--json"]],
    "trec_eval": [["trec_eval", "-q", "-m", "all_trec", "{qrels}", "{trec_run}"], ["trec_eval", "-h"]],
    "trec-eval": [["trec-eval", "{qrels}", "{trec_run}"]],
    "explain": [["explain", "{model}"], ["explain", "{model}", "{data}", "--repeats", "1", "--json"]],
    "export-model": [["export-model", "{model}", "-t", "solr", "-o", "{tmp}/em", "--check", "{data}"],
                     ["export-model", "{model}", "-t", "vespa", "-o", "{tmp}/em2", "--json"]],
    "fuse": [["fuse", "{trec_run}", "{trec_run}", "-o", "-"],
             ["fuse", "{run}", "{run}", "-o", "{tmp}/f.parquet", "--json"]],
    "click-model": [["click-model", "fit", "{clicks}", "-o", "{tmp}/cm", "--model", "pbm", "--iterations", "2"],
                    ["click-model", "fit", "{clicks}", "-o", "{tmp}/cm2", "--model", "sdbn", "--json"]],
}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("stdout")
    out = {"letor": LETOR / "test.txt", "data": d / "data.parquet", "model": d / "model", "run": d / "run.parquet",
           "run2": d / "run2.parquet", "clicks": d / "clicks.parquet", "qrels": d / "qrels.txt",
           "trec_run": d / "run.trec"}
    steps = [["convert", out["letor"], "-o", out["data"]],
             ["train", out["data"], "-o", out["model"], "--trees", "2", "--threads", "1"],
             ["predict", out["model"], out["data"], "-o", out["run"]],
             ["train", out["data"], "-o", d / "model2", "--trees", "3", "--threads", "1", "--loss", "pointwise"],
             ["predict", d / "model2", out["data"], "-o", out["run2"]],
             ["simulate-clicks", out["data"], "-o", out["clicks"], "--model", "pbm", "--ranker", "random",
              "--keep-no-click", "--seed", "1"],
             ["export", out["data"], "-o", out["qrels"], "--format", "trec-qrels"],
             ["predict", out["model"], out["data"], "-o", out["trec_run"], "--format", "trec"]]
    for args in steps:
        assert main([str(a) for a in args]) == 0, args
    return out


def _args(template: list[str], files: dict, tmp: Path) -> list[str]:
    return [a.format(tmp=tmp, **files) for a in template]


def _cases() -> list[tuple[str, int]]:
    return [(name, i) for name in cli.COMMANDS for i in range(len(STDOUT_CASES.get(name, [[]])))]


def _run_with_stdout(capsys, monkeypatch, stream, args) -> tuple[int, str]:
    """``main(args)`` with ``sys.stdout`` = ``stream``: the exit status and stderr."""
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdout", stream)
    try:
        status = main(args)
    finally:
        monkeypatch.undo()
    return status, capsys.readouterr().err


def _stdout_temporaries() -> list[str]:
    mine = f"+{os.getpid()}+"
    return [n for n in os.listdir(tempfile.gettempdir()) if n.startswith(".rankcli-stdout+") and mine in n]


def _temporaries(root: Path) -> list[str]:
    return [str(p) for p in root.rglob("*") if re.search(r"\+\d+\+[0-9a-f]{8}\.(tmp|old)", p.name)]


def _closed_pipe():
    """A text stream on a pipe whose reader has already gone: every write fails with EPIPE."""
    read, write = os.pipe()
    os.close(read)
    return os.fdopen(write, "w")


def test_every_command_has_a_stdout_case():
    """A new command joins ``COMMANDS`` and gets a line here: the tests below then cover it."""
    assert set(STDOUT_CASES) == set(cli.COMMANDS), "give each command of rankcli.cli.COMMANDS a case in STDOUT_CASES"


@pytest.mark.parametrize("name,case", _cases())
def test_a_closed_pipe_ends_every_command_quietly_with_141(capsys, monkeypatch, tmp_path, files, name, case):
    args = _args(STDOUT_CASES[name][case], files, tmp_path)
    with _closed_pipe() as stream:
        status, err = _run_with_stdout(capsys, monkeypatch, stream, args)
    assert status == ExitStatus.BROKEN_PIPE == 141, (args, err)
    assert "Error" not in err and "Traceback" not in err, err
    assert _temporaries(tmp_path) == [] and _stdout_temporaries() == []


@pytest.mark.parametrize("name,case", _cases())
def test_a_full_standard_output_is_exit_4_for_every_command(capsys, monkeypatch, tmp_path, files, name, case):
    args = _args(STDOUT_CASES[name][case], files, tmp_path)
    with open("/dev/full", "w") as stream:
        status, err = _run_with_stdout(capsys, monkeypatch, stream, args)
    assert status == ExitStatus.OUTPUT, (args, err)
    assert err.endswith("Error: cannot write standard output: No space left on device\n"), err
    assert "Traceback" not in err
    assert _temporaries(tmp_path) == [] and _stdout_temporaries() == []


@pytest.mark.parametrize("args", [["--help"], ["--version"], *[[name, "--help"] for name in cli.COMMANDS]],
                         ids=lambda a: " ".join(a))
def test_help_and_version_on_a_closed_pipe_or_a_full_device(capsys, monkeypatch, args):
    with _closed_pipe() as stream:
        assert _run_with_stdout(capsys, monkeypatch, stream, args) == (ExitStatus.BROKEN_PIPE, "")
    with open("/dev/full", "w") as stream:
        assert _run_with_stdout(capsys, monkeypatch, stream, args) == (
            ExitStatus.OUTPUT, "Error: cannot write standard output: No space left on device\n")


def test_a_closed_pipe_leaves_the_written_output_in_place(capsys, monkeypatch, tmp_path, files):
    """train writes its model, then its summary line: the reader's going away does not undo the model."""
    with _closed_pipe() as stream:
        status, _ = _run_with_stdout(capsys, monkeypatch, stream, _args(STDOUT_CASES["train"][0], files, tmp_path))
    assert status == ExitStatus.BROKEN_PIPE
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["model.txt", "rankcli.json"]


# ----------------------------------------------------------------------------------------------------------------------
# Real processes: the interpreter's own flush at exit, SIGPIPE, ulimit


def _process(args, stdout, *, shell_prefix: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "rankcli", *map(str, args)]
    if shell_prefix:
        quoted = " ".join(f"'{c}'" for c in command)
        command = ["bash", "-c", f"{shell_prefix}; exec {quoted}"]
    return subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, env=env, timeout=120)


@pytest.mark.parametrize("args", [["--help"], ["export", "{data}", "-o", "-"], ["eval", "{run}"]],
                         ids=lambda a: a[0])
def test_a_process_whose_reader_left_exits_141_without_a_word(tmp_path, files, args):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte is written
    try:
        result = _process(_args(args, files, tmp_path), write)
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (141, b"")


def test_a_process_on_dev_full_says_why_once(files, tmp_path):
    with open("/dev/full", "wb") as full:
        result = _process(["info", files["data"]], full)
    assert (result.returncode, result.stderr) == (4, b"Error: cannot write standard output: No space left on device\n")


def test_a_file_size_limit_on_standard_output_is_exit_4(files, tmp_path):
    """``ulimit -f``: Python ignores SIGXFSZ, so the write fails with EFBIG, first in ``-o -``'s temporary copy."""
    with open(tmp_path / "out.txt", "wb") as out:
        result = _process(["export", files["data"], "-o", "-"], out, shell_prefix="ulimit -f 16")
    assert result.returncode == 4
    assert result.stderr.decode().startswith("Error: cannot write standard output: File too large"), result.stderr
    assert _stdout_temporaries() == []


def test_a_closed_standard_output_descriptor_is_exit_4(files):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(["bash", "-c", f"exec '{sys.executable}' -m rankcli info '{files['data']}' >&-"],
                            stderr=subprocess.PIPE, env=env, timeout=120)
    assert (result.returncode, result.stderr) == (4, b"Error: cannot write standard output: Bad file descriptor\n")


def test_the_log_s_reader_leaving_is_141_and_a_full_log_loses_only_the_log(files, tmp_path):
    """stderr carries progress and logs: a closed pipe there ends the command as on stdout (typer made it exit 1 with
    no output written); a log that cannot be written (/dev/full) loses its lines, not the command's results."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "rankcli", "train", str(files["data"]), "-o", str(tmp_path / "m"), "--trees",
               "2", "--threads", "1"]
    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=write, env=env, timeout=120)
    finally:
        os.close(write)
    assert (result.returncode, result.stdout) == (141, b"")
    assert not (tmp_path / "m").exists() and _temporaries(tmp_path) == []
    with open("/dev/full", "wb") as full:
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=full, env=env, timeout=120)
    assert result.returncode == 0 and result.stdout.startswith(f"{tmp_path / 'm'}: xendcg, 2 trees".encode())
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["model.txt", "rankcli.json"]


def test_141_is_in_every_exit_table():
    from rankcli.errors import ExitStatus

    assert ExitStatus.BROKEN_PIPE == 141
    assert "141 standard output closed" in " ".join(cli.HELP.split())
    for page in ("README.md", "docs/reliability.md"):
        assert re.search(r"^\| 141 \| .*closed", (REPO / page).read_text(), re.M), page


# ----------------------------------------------------------------------------------------------------------------------
# Usage errors: one line, as the README promises, keeping the hint


@pytest.mark.parametrize("args", [["info", "--bogus"], ["info"], ["info", "a", "b"], ["evl"], ["eval", "--metric"],
                                  ["train", "x.parquet", "-o", "m", "--trees", "abc"], ["train", "x", "--tres", "3"],
                                  *[[name, "--no-such-option"] for name in cli.COMMANDS]], ids=" ".join)
def test_a_usage_error_is_one_line(capsys, args):
    capsys.readouterr()
    status = main(args)
    out, err = capsys.readouterr()
    assert (status, out) == (ExitStatus.USAGE, "")
    assert err.count("\n") == 1 and err.startswith("Error: ") and err.endswith("\n"), err
    if args[0] in cli.COMMANDS and args[1:] != ["--metric"]:
        assert err.endswith(f" Try 'rankcli {args[0]} --help'.\n"), err


def test_the_readme_shows_a_usage_error_as_it_is(capsys):
    """The README's example of a usage error is the command's output, word for word."""
    readme = " ".join((REPO / "README.md").read_text().split())
    found = re.search(r"`rankcli (\w+)` given `(--\w+)` prints `(Error: [^`]+)`", readme)
    assert found and "Errors are one line on stderr" in readme
    capsys.readouterr()
    assert main([found.group(1), found.group(2)]) == ExitStatus.USAGE
    assert capsys.readouterr().err == found.group(3) + "\n"
