"""A TREC file or standard input of mostly blank lines is read in bounded memory by ``rankcli trec_eval`` and ``rankcli
eval`` (rankcli/formats/trec/blank.py): its whitespace-only lines are dropped as its blocks arrive (each run kept as
one empty line), and every message still names the file's own line."""

from __future__ import annotations

import io
import os
import random
import resource
import subprocess
import sys

import pytest

from rankcli.cli import main
from rankcli.formats.trec import file_bytes as trec_eval_bytes
from rankcli.formats.trec import join_native as trec_fast
from rankcli.formats.trec.blank import LineMap

RUN = b"".join(b"%d Q0 d%d %d %d.5 tag\n" % (q, d, d + 1, 20 - d) for q in (1, 2) for d in range(10))
QRELS = b"".join(b"%d 0 d%d %d\n" % (q, d, d % 2) for q in (1, 2) for d in range(0, 10, 2))
BLANK = 40 << 20  # newlines: 40 MB
PATHS = ["C", "numpy"]
HEAD = RUN.index(b"\n", 100) + 1  # the run's first lines, before the blank ones


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(trec_eval_bytes, "BLOCK", 64)
    monkeypatch.setattr(trec_eval_bytes, "MAX_LINE", 40)


def _random_text(rng: random.Random) -> bytes:
    blanks = [b"", b" ", b"\t \r", b"\r", b"\x0b\x0c", b"   "]
    lines = []
    for _ in range(rng.randrange(1, 60)):
        kind = rng.random()
        if kind < 0.5:
            lines += [rng.choice(blanks)] * rng.choice([1, 1, 2, 7, 40])
        elif kind < 0.6:
            lines.append(b"# a comment")
        else:
            lines.append(b"%d Q0 d%d 1 0.5 r" % (rng.randrange(9), rng.randrange(99)))
    text = b"\n".join(lines)
    return text + b"\n" if rng.random() < 0.8 else text


def _check_kept(original: bytes, kept: bytes, lines: LineMap) -> None:
    """Each kept line is the file's line ``true_line`` names (a blank one: a blank line), the lines with ink are all
    kept in order, and two of them have a blank line between them in the kept text exactly when in the file."""
    file_lines, kept_lines = original.split(b"\n"), kept.split(b"\n")
    assert len(kept_lines) <= len(file_lines)
    where = [lines.true_line(k + 1) - 1 for k in range(len(kept_lines))]
    assert where == sorted(set(where))
    for k, line in enumerate(kept_lines):
        assert line == file_lines[where[k]] or (not line.strip() and not file_lines[where[k]].strip())
    ink = [i for i, line in enumerate(file_lines) if line.strip()]
    assert [where[k] for k, line in enumerate(kept_lines) if line.strip()] == ink
    gaps = [any(not file_lines[j].strip() for j in range(a + 1, b)) for a, b in zip(ink, ink[1:])]
    kept_ink = [k for k, line in enumerate(kept_lines) if line.strip()]
    assert gaps == [any(not kept_lines[j].strip() for j in range(a + 1, b)) for a, b in zip(kept_ink, kept_ink[1:])]


@pytest.mark.parametrize("stdin", [False, True])
def test_the_kept_lines_are_the_files_against_a_line_by_line_reading(tmp_path, small_blocks, monkeypatch, stdin):
    rng = random.Random(5)
    for case in range(150):
        text = _random_text(rng)
        lines = LineMap()
        if stdin:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text)))
            kept = trec_eval_bytes.read_input("-", lines=lines)
        else:
            (tmp_path / "run").write_bytes(text)
            kept = trec_eval_bytes.read_input(str(tmp_path / "run"), lines=lines)
        _check_kept(text, kept, lines)
        if text.count(b"\n\n\n\n") and text.endswith(b"\n"):
            assert len(kept) < len(text), case


def _set_path(monkeypatch, path: str) -> None:
    if path == "C" and not trec_fast.available():
        pytest.skip("the C path is not built")
    monkeypatch.setenv("RANKCLI_PURE_PYTHON", "1" if path == "numpy" else "0")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("command", ["trec_eval", "eval"])
def test_an_error_after_blank_lines_names_the_files_line(tmp_path, monkeypatch, capsys, path, command):
    _set_path(monkeypatch, path)
    blanks = b"\n" * 1_500_000 + b" \t\r\n" * 300_000 + b"\n\n" * 1000
    (tmp_path / "run").write_bytes(RUN[:HEAD] + blanks + RUN[HEAD:] + b"\r\n" * 99 + b"1 Q0 d99 5\n")
    (tmp_path / "qrels").write_bytes(b"\n" * 2_000_000 + QRELS)
    bad = RUN.count(b"\n") + 1_500_000 + 300_000 + 2000 + 99 + 1
    files = [str(tmp_path / "qrels"), str(tmp_path / "run")]
    argv = ["trec_eval", *files] if command == "trec_eval" else ["eval", "--qrels", files[0], "--run", files[1]]
    assert main(argv) == 3
    assert f"run:{bad}: expected" in capsys.readouterr().err
    (tmp_path / "run").write_bytes(RUN)
    (tmp_path / "qrels").write_bytes(b"\n" * 2_000_000 + QRELS + b"\n" * 5 + b"3 0 d1\n")
    assert main(argv) == 3
    bad = 2_000_000 + QRELS.count(b"\n") + 6
    assert f"qrels:{bad}: expected 4 fields" in capsys.readouterr().err


@pytest.fixture(scope="module")
def blank_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("blank")
    with open(d / "run", "wb") as f:
        f.write(RUN[:HEAD])
        f.write(b"\n" * BLANK)
        f.write(RUN[HEAD:])
    (d / "qrels").write_bytes(QRELS)
    (d / "small").write_bytes(RUN)
    return d


#: The address space a process may take (``ulimit -v``): enough for rankcli on a small file (about 130 MB for
#: trec_eval and the C path of eval, 320 MB for eval's numpy path, on one CPU), not for 40 MB of blank lines read whole
#: (the files' bytes and the numpy readers' per-line arrays: 395 MB and 1.8 GB for trec_eval, 704 MB and 3.7 GB for
#: eval, measured before they were dropped as read).
LIMIT = {"trec_eval": 260 << 20, "eval": 560 << 20}


def _run_limited(argv: list, path: str, stdin=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, RANKCLI_PURE_PYTHON="1" if path == "numpy" else "0", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MALLOC_ARENA_MAX="2")
    limit = LIMIT[argv[0]]

    def limited():  # one CPU: as many threads (and their stacks) wherever the test runs
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run([sys.executable, "-m", "rankcli", *argv], env=env, stdin=stdin, capture_output=True,
                          preexec_fn=limited, timeout=300)


def _argv(command: str, qrels: str, run: str) -> list:
    return ["trec_eval", qrels, run] if command == "trec_eval" else ["eval", "--qrels", qrels, "--run", run,
                                                                     "--json"]


_CONTROLS: dict = {}


@pytest.mark.parametrize("command, path, how", [(c, p, "file") for c in ("trec_eval", "eval") for p in PATHS]
                         + [("trec_eval", "C", "stdin"), ("trec_eval", "numpy", "stdin"), ("eval", "C", "stdin")])
def test_a_file_of_blank_lines_is_read_in_bounded_memory(blank_files, command, path, how):
    """Standard input is read by the same code on both paths of eval: three cases of it of four."""
    if path == "C" and not trec_fast.available():
        pytest.skip("the C path is not built")
    d = blank_files
    if (command, path) not in _CONTROLS:
        _CONTROLS[command, path] = _run_limited(_argv(command, str(d / "qrels"), str(d / "small")), path)
    control = _CONTROLS[command, path]
    assert control.returncode == 0, control.stderr  # the limit is enough for rankcli itself
    run = str(d / "run") if how == "file" else ("-" if command == "trec_eval" else "/dev/stdin")
    with open(d / "run", "rb") as f:
        big = _run_limited(_argv(command, str(d / "qrels"), run), path, stdin=f if how == "stdin" else None)
    assert big.returncode == 0, big.stderr[-500:]
    assert big.stdout.replace(b"/dev/stdin", str(d / "small").encode()) \
        .replace(str(d / "run").encode(), str(d / "small").encode()) == control.stdout
