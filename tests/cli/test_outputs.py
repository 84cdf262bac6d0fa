"""Outputs that never lose data (docs/reliability.md's promises): --overwrite only over rankcli's own
outputs, outputs that hold inputs refused, symlinks written through, special files refused, signals, umask, ``-o -``,
trailing slashes, fsync order, and concurrent experiment runs sharing one EXP_DIR.

Commands run in-process (``rankcli.cli.main``) except where a real process is the point (signals, umask, stdout)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rankcli.cli import main
from rankcli.errors import ExitStatus
from rankcli.formats import atomic
from tests.conftest import REPO, SAMPLE
from tests.conftest import run_main as run

LETOR = SAMPLE / "letor"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("outputs")
    assert main(["convert", str(LETOR / "test.txt"), "-o", str(d / "test.parquet")]) == 0
    return d / "test.parquet"


@pytest.fixture(scope="module")
def model(tmp_path_factory, dataset):
    d = tmp_path_factory.mktemp("model")
    assert main(["train", str(dataset), "-o", str(d / "m"), "--trees", "2", "--threads", "1"]) == 0
    return d / "m"


def _tree(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ----------------------------------------------------------------------------------------------------------------------
# 12.1: --overwrite replaces only what rankcli wrote; an output holding an input is a usage error


def test_convert_into_its_own_input_directory_is_refused_and_deletes_nothing(capsys, tmp_path):
    fold = tmp_path / "fold"
    fold.mkdir()
    for name in ("train.txt", "vali.txt", "test.txt"):
        (fold / name).write_bytes((LETOR / name).read_bytes())
    (fold / "NOTES.md").write_text("my notes")
    before = _tree(fold)
    status, _, err = run(capsys, "convert", fold, "-o", fold, "--overwrite")
    assert status == ExitStatus.USAGE
    assert err == f"Error: {fold}: is also an input ({fold}); write the output to another path\n"
    assert _tree(fold) == before
    # through a symlink to the same directory: the same
    (tmp_path / "link").symlink_to(fold)
    status, _, err = run(capsys, "convert", fold, "-o", tmp_path / "link", "--overwrite")
    assert status == ExitStatus.USAGE and _tree(fold) == before


def test_train_into_the_data_directory_is_refused(capsys, tmp_path, dataset):
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.parquet").write_bytes(dataset.read_bytes())
    before = _tree(data)
    status, _, err = run(capsys, "train", data / "train.parquet", "-o", data, "--overwrite", "--trees", "1")
    assert status == ExitStatus.USAGE
    assert err == f"Error: {data}: holds the input {data / 'train.parquet'}; write the output to another path\n"
    assert _tree(data) == before


def test_every_command_refuses_writing_over_its_input(capsys, tmp_path, dataset, model):
    data = tmp_path / "d.parquet"
    data.write_bytes(dataset.read_bytes())
    qrels = tmp_path / "q.txt"
    qrels.write_text("1 0 a 1\n")
    trec = tmp_path / "r.txt"
    trec.write_text("1 Q0 a 1 1.0 t\n")
    cases = [
        ["export", data, "-o", data, "--overwrite"],
        ["predict", model, data, "-o", data, "--overwrite"],
        ["predict", model, data, "-o", model / "model.txt", "--overwrite"],
        ["predict", model, data, "-o", model, "--overwrite"],
        ["eval", data, "--per-query", data, "--overwrite"],
        ["eval", "--qrels", qrels, "--run", trec, "--per-query", qrels, "--overwrite"],
        ["eval", data, "--model", model, "--per-query", model / "rankcli.json", "--overwrite"],
        ["simulate-clicks", data, "-o", data, "--overwrite"],
        ["simulate-clicks", data, "-o", model / "model.txt", "--ranker", model, "--overwrite"],
        ["experiment", data, "-o", tmp_path, "--trials", "1", "--trees", "1"],
        ["train", data, "-o", tmp_path, "--overwrite", "--trees", "1"],
    ]
    before = _tree(tmp_path)
    for args in cases:
        status, _, err = run(capsys, *args)
        assert status == ExitStatus.USAGE, (args, err)
        assert "input" in err, (args, err)
    assert _tree(tmp_path) == before


def test_overwrite_refuses_a_directory_rankcli_did_not_write(capsys, tmp_path, dataset):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    for args in (["train", dataset, "-o", mine, "--overwrite", "--trees", "1"],
                 ["convert", LETOR / "test.txt", "-o", f"{mine}/", "--overwrite"]):
        status, _, err = run(capsys, *args)
        assert status == ExitStatus.OUTPUT, err
        assert err.startswith(f"Error: {mine}: is a directory holding files rankcli did not write (thesis.tex)")
    assert _tree(mine) == {"thesis.tex": b"years of work"}


def test_overwrite_replaces_a_previous_output_of_the_same_kind_only(capsys, tmp_path, dataset, model):
    out = tmp_path / "conv"
    assert run(capsys, "convert", LETOR, "-o", out)[0] == 0
    assert json.loads((out / atomic.MARKER).read_text())["kind"] == "converted"
    status, _, err = run(capsys, "convert", LETOR, "-o", out)
    assert status == ExitStatus.OUTPUT and err == f"Error: {out}: already exists; pass --overwrite to replace it\n"
    assert run(capsys, "convert", LETOR, "-o", out, "--overwrite")[0] == 0
    # a converted directory is not a model directory, and the other way round
    status, _, err = run(capsys, "train", dataset, "-o", out, "--overwrite", "--trees", "1")
    assert status == ExitStatus.OUTPUT and "holds a rankcli converted directory, not a model directory" in err
    m = tmp_path / "m"
    assert run(capsys, "train", dataset, "-o", m, "--trees", "1")[0] == 0
    status, _, err = run(capsys, "convert", LETOR, "-o", m, "--overwrite")
    assert status == ExitStatus.OUTPUT and "holds a rankcli model directory, not a converted directory" in err
    assert run(capsys, "train", dataset, "-o", m, "--trees", "1", "--overwrite")[0] == 0
    # a file added to an output makes it the user's
    (out / "NOTES.md").write_text("notes")
    status, _, err = run(capsys, "convert", LETOR, "-o", out, "--overwrite")
    assert status == ExitStatus.OUTPUT and "did not write (NOTES.md" in err
    assert (out / "NOTES.md").read_text() == "notes"


#: Every one-file output: its kind and the command line writing it to ``{out}`` (``{data}``, ``{model}``, ``{run}``,
#: ``{clicks}`` are inputs made once).
ONE_FILE_OUTPUTS = {
    "dataset": ["convert", str(LETOR / "test.txt"), "-o", "{out}"],
    "click log": ["simulate-clicks", "{data}", "-o", "{out}", "--seed", "1"],
    "run": ["predict", "{model}", "{data}", "-o", "{out}"],
    "TREC run file": ["predict", "{model}", "{data}", "-o", "{out}", "--format", "trec"],
    "per-query file": ["eval", "{run}", "--per-query", "{out}"],
    "SVMlight text file": ["export", "{data}", "-o", "{out}"],
    "TREC qrels file": ["export", "{data}", "-o", "{out}", "--format", "trec-qrels"],
    "propensity file": ["propensity", "{clicks}", "-o", "{out}", "--bootstrap", "20"],
    "plot": ["propensity", "{clicks}", "--plot", "{out}", "--bootstrap", "20"],
}


def test_overwrite_of_one_file_replaces_only_the_same_kind(capsys, tmp_path, dataset, model):
    """`eval RUN --per-query other-run.parquet --overwrite` must not replace a run with a per-query file. Every
    one-file output replaces, with --overwrite, only an empty file or one of its own kind; any other file, rankcli's
    or the user's, is refused whatever the flags and left as it was (the README's promise, for every output)."""
    from rankcli.formats.atomic import kinds

    inputs = {"data": dataset, "model": model, "run": tmp_path / "in-run.parquet", "clicks": tmp_path / "in-c.parquet"}
    assert run(capsys, "predict", model, dataset, "-o", inputs["run"])[0] == 0
    assert run(capsys, "simulate-clicks", dataset, "-o", inputs["clicks"], "--model", "pbm", "--ranker", "random",
               "--keep-no-click", "--seed", "1")[0] == 0
    written = {}
    for kind, template in ONE_FILE_OUTPUTS.items():
        written[kind] = tmp_path / f"{kind.replace(' ', '-')}.out"
        args = [a.format(out=written[kind], **inputs) for a in template]
        assert run(capsys, *args)[0] == 0, args
        assert kinds.file_kind(written[kind]) == kind, kind
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    foreign = tmp_path / "foreign.parquet"
    pq.write_table(pq.read_table(inputs["run"]).replace_schema_metadata({}), foreign)  # a run another tool wrote
    order = list(ONE_FILE_OUTPUTS)
    for i, (kind, template) in enumerate(ONE_FILE_OUTPUTS.items()):
        other = order[(i + 1) % len(order)]
        for target in (written[other], notes, foreign):
            before = target.read_bytes()
            status, _, err = run(capsys, *[a.format(out=target, **inputs) for a in template], "--overwrite")
            assert status == ExitStatus.OUTPUT, (kind, target, err)
            named = f"rankcli {kind}" if kind in kinds.MARKED else kind
            assert f"not {'an' if named[0] in 'aeiouS' else 'a'} {named};" in err, (kind, target, err)
            assert target.read_bytes() == before
        status, _, err = run(capsys, *[a.format(out=written[kind], **inputs) for a in template])
        assert status == ExitStatus.OUTPUT and err.endswith("already exists; pass --overwrite to replace it\n")
        assert run(capsys, *[a.format(out=written[kind], **inputs) for a in template], "--overwrite")[0] == 0
    readme = " ".join((REPO / "README.md").read_text().split())
    assert "which replaces only an output of the same kind" in readme and "never an input, nor a file or directory " \
        "of another kind" in readme


def test_outputs_written_before_the_marker_are_still_recognised(capsys, tmp_path, dataset, model):
    out = tmp_path / "conv"
    assert run(capsys, "convert", LETOR, "-o", out)[0] == 0
    (out / atomic.MARKER).unlink()  # as an older rankcli left it: the Parquet footers say "rankcli convert"
    assert atomic.directory_kind(out) == "converted"
    assert run(capsys, "convert", LETOR, "-o", out, "--overwrite")[0] == 0
    old_model = tmp_path / "old-model"
    old_model.mkdir()
    for name in ("model.txt", "rankcli.json"):
        (old_model / name).write_bytes((model / name).read_bytes())
    assert atomic.directory_kind(old_model) == "model"
    assert run(capsys, "train", dataset, "-o", old_model, "--trees", "1", "--overwrite")[0] == 0


def test_an_empty_directory_is_an_output_without_overwrite(capsys, tmp_path, dataset):
    (tmp_path / "m").mkdir()
    (tmp_path / "c").mkdir()
    assert run(capsys, "train", dataset, "-o", tmp_path / "m", "--trees", "1")[0] == 0
    assert (tmp_path / "m" / "model.txt").is_file()
    assert run(capsys, "convert", LETOR, "-o", tmp_path / "c")[0] == 0
    assert (tmp_path / "c" / "test.parquet").is_file()


def test_experiment_overwrite_needs_an_experiment_config(capsys, tmp_path, dataset):
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "config.json").write_text('{"name": "my project"}')
    (exp / "summary.md").write_text("my summary")
    status, _, err = run(capsys, "experiment", dataset, "-o", exp, "--trials", "1", "--trees", "1", "--overwrite",
                         "--no-plots")
    assert status == ExitStatus.OUTPUT and "holds no rankcli experiment" in err
    assert (exp / "summary.md").read_text() == "my summary"


# ----------------------------------------------------------------------------------------------------------------------
# 12.2: symlinks and special files


def test_symlinked_output_is_written_through_and_stays_a_link(capsys, tmp_path, dataset):
    target = tmp_path / "real.txt"
    target.write_text("1 qid:1 1:0.5\n")  # an SVMlight file: what export --overwrite may replace
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    assert run(capsys, "export", dataset, "-o", link, "--overwrite")[0] == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith("2 qid:1840 ")
    # a link to a model directory: the directory is replaced, the link stays
    (tmp_path / "v1").mkdir()
    (tmp_path / "current").symlink_to(tmp_path / "v1")
    assert run(capsys, "train", dataset, "-o", tmp_path / "current", "--trees", "1")[0] == 0
    assert (tmp_path / "current").is_symlink() and (tmp_path / "v1" / "model.txt").is_file()


def test_special_files_and_symlink_loops_are_refused(capsys, tmp_path, dataset):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "to-null").symlink_to("/dev/null")
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    for out, what in ((fifo, "is a special file"), (tmp_path / "to-null", "is a special file"),
                      ("/dev/null", "is a special file"), (tmp_path / "a", "is a symlink loop")):
        status, _, err = run(capsys, "export", dataset, "-o", out, "--overwrite")
        assert status == ExitStatus.OUTPUT, err
        assert err.startswith(f"Error: {out}: {what}"), err
    assert (tmp_path / "to-null").is_symlink() and stat.S_ISFIFO(os.stat(fifo).st_mode)


# ----------------------------------------------------------------------------------------------------------------------
# 12.13: -o - and trailing slashes


def test_dash_is_standard_output_for_text(capsys, tmp_path, dataset, model):
    status, out, err = run(capsys, "export", dataset, "-o", "-")
    assert status == 0 and out.startswith("2 qid:1840 ") and out.count("\n") == 578
    assert not Path("-").exists()
    status, out, _ = run(capsys, "predict", model, dataset, "-o", "-", "--format", "trec")
    assert status == 0 and out.splitlines()[0].startswith("1840 Q0 ")
    status, _, err = run(capsys, "export", dataset, "-o", "-", "--json")
    assert status == ExitStatus.USAGE and "both write to standard output" in err
    status, _, err = run(capsys, "eval", dataset, "--per-query", "-")
    assert status == ExitStatus.USAGE


def test_parquet_to_a_terminal_is_refused_and_to_a_pipe_is_written(capsys, monkeypatch, tmp_path, dataset):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    for args in (["convert", LETOR / "test.txt", "-o", "-"], ["simulate-clicks", dataset, "-o", "-"]):
        status, _, err = run(capsys, *args)
        assert status == ExitStatus.USAGE and "will not write Parquet to a terminal" in err
    monkeypatch.undo()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "rankcli", "convert", str(LETOR / "test.txt"), "-o", "-"],
                          capture_output=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "piped.parquet").write_bytes(proc.stdout)
    assert pq.read_table(tmp_path / "piped.parquet").equals(pq.read_table(dataset))
    assert b"rows" in proc.stderr  # the summary table went to stderr
    assert list(tmp_path.iterdir()) == [tmp_path / "piped.parquet"]


def test_trailing_slash_names_a_directory(capsys, tmp_path, dataset, model):
    for args, name in ((["predict", model, dataset, "-o", f"{tmp_path}/run/"], "run.parquet"),
                       (["export", dataset, "-o", f"{tmp_path}/x/"], "data.txt"),
                       (["simulate-clicks", dataset, "-o", f"{tmp_path}/c/"], "clicks.parquet"),
                       (["eval", dataset, "--per-query", f"{tmp_path}/q/"], "per-query.parquet")):
        status, _, err = run(capsys, *args)
        assert status == ExitStatus.USAGE, err
        assert "names a directory, but the output is one file; give a file name" in err and name in err
    assert list(tmp_path.iterdir()) == []
    # directory outputs: the slash is that directory; convert of one file makes OUTPUT/<name>.parquet
    assert run(capsys, "convert", LETOR / "test.txt", "-o", f"{tmp_path}/one/")[0] == 0
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == [atomic.MARKER, "test.parquet"]
    assert run(capsys, "train", dataset, "-o", f"{tmp_path}/m/", "--trees", "1")[0] == 0
    assert (tmp_path / "m" / "model.txt").is_file()


# ----------------------------------------------------------------------------------------------------------------------
# 12.11: an interrupt after the final rename is a success


def test_interrupt_after_the_output_is_in_place_is_success(capsys, monkeypatch, tmp_path, dataset):
    import rankcli.cli._common as common

    def interrupt(message):
        raise KeyboardInterrupt

    monkeypatch.setattr(common, "log", interrupt)  # export logs "wrote ..." after the rename
    status, _, err = run(capsys, "export", dataset, "-o", tmp_path / "x.txt")
    assert status == 0 and err == ""
    assert (tmp_path / "x.txt").read_text().startswith("2 qid:1840 ")
    monkeypatch.undo()

    import rankcli.formats.svmlight_writer as svmlight

    def interrupt_writing(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(svmlight, "write_lines", interrupt_writing)
    status, _, err = run(capsys, "export", dataset, "-o", tmp_path / "y.txt")
    assert status == ExitStatus.INTERRUPTED and err == "Error: interrupted\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.txt"]


# ----------------------------------------------------------------------------------------------------------------------
# 12.9: SIGTERM and SIGHUP; durable renames


@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, ExitStatus.TERMINATED), (signal.SIGHUP, ExitStatus.HANGUP)])
def test_sigterm_and_sighup_clean_up_and_exit_128_plus_n(tmp_path, sig, status):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "rankcli", "convert", "-", "-o", str(tmp_path / "o.parquet"),
                             "--block-bytes", "64"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path, env=env)
    for i in range(200):
        proc.stdin.write(b"1 qid:%d 1:0.5 2:0.25\n" % i)
    proc.stdin.flush()
    deadline = time.time() + 60
    while time.time() < deadline and not any(p.name.startswith(".o.parquet+") for p in tmp_path.iterdir()):
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    assert err.decode().endswith(f"Error: terminated ({signal.Signals(sig).name})\n")
    assert b"Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_temporaries_name_their_owner_and_only_dead_owners_are_cleaned(tmp_path):
    name = atomic.temporary_name("out.parquet")
    host = atomic.owner_token()
    assert name.startswith(f".out.parquet+{host}+{os.getpid()}+") and name.endswith(".tmp")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = tmp_path / f".out.parquet+{host}+{dead.pid}+0123abcd.tmp"
        stale_part = tmp_path / f".out.parquet+{host}+{dead.pid}+0123abcd.tmp.part0"
        stale_dir = tmp_path / f".out.parquet+{host}+{dead.pid}+89abcdef.old"
        live = tmp_path / f".out.parquet+{host}+{alive.pid}+0123abcd.tmp"
        other_host = tmp_path / f".out.parquet+elsewhere+{dead.pid}+0123abcd.tmp"
        unknown = tmp_path / ".out.parquet.k2j3h4.tmp"  # an older rankcli's: owner unknown
        other_target = tmp_path / f".other.parquet+{host}+{dead.pid}+0123abcd.tmp"
        for p in (stale, stale_part, live, other_host, unknown, other_target):
            p.write_text("x")
        stale_dir.mkdir()
        (stale_dir / "f").write_text("x")
        with atomic.atomic_path(tmp_path / "out.parquet") as tmp:
            tmp.write_text("new")
        left = sorted(p.name for p in tmp_path.iterdir())
        assert left == sorted(p.name for p in (live, other_host, unknown, other_target)) + ["out.parquet"]
    finally:
        alive.kill()
        alive.wait()


def test_file_and_directory_are_fsynced_around_the_rename(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", "dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"))
        real_fsync(fd)

    def replace(a, b):
        events.append(("rename", Path(b).name))
        real_replace(a, b)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    with atomic.atomic_path(tmp_path / "x") as tmp:
        tmp.write_text("data")
    assert events == [("fsync", "file"), ("rename", "x"), ("fsync", "dir")]
    events.clear()
    with atomic.atomic_directory(tmp_path / "d", kind="converted") as tmp:
        (tmp / "a.parquet").write_text("data")
    rename = events.index(("rename", "d"))
    assert ("fsync", "file") in events[:rename] and events[rename + 1:] == [("fsync", "dir")]


# ----------------------------------------------------------------------------------------------------------------------
# 12.12: modes follow the umask


@pytest.mark.parametrize("umask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_outputs_honour_the_umask(tmp_path, dataset, umask, file_mode, dir_mode):
    code = (f"import os, sys; os.umask({umask}); from rankcli.cli import main; "
            f"sys.exit(main(['convert', {str(LETOR / 'test.txt')!r}, '-o', 'one.parquet']) or "
            f"main(['convert', {str(LETOR)!r}, '-o', 'fold']) or "
            f"main(['export', {str(dataset)!r}, '-o', 'x.txt']))")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for f in ("one.parquet", "x.txt", "fold/test.parquet", "fold/train.parquet", f"fold/{atomic.MARKER}"):
        assert stat.S_IMODE(os.stat(tmp_path / f).st_mode) == file_mode, f
    assert stat.S_IMODE(os.stat(tmp_path / "fold").st_mode) == dir_mode


# ----------------------------------------------------------------------------------------------------------------------
# 12.14: concurrent experiment runs on one EXP_DIR


def _unit_result(setting, trial, loss, value):
    from rankcli.experiment import UnitResult

    return UnitResult(setting, trial, loss, {"ndcg@5": value}, 3, 0.1, [value] * 3)


def test_concurrent_stores_keep_every_run_s_rows(tmp_path):
    from rankcli.formats.experiment_store import ResultStore

    a = ResultStore(tmp_path, ["baseline"], ["xendcg"], ["ndcg@5"])
    b = ResultStore(tmp_path, ["baseline"], ["xendcg"], ["ndcg@5"])  # opened before a wrote anything
    a.add(_unit_result("baseline", 0, "xendcg", 0.5))
    b.add(_unit_result("baseline", 1, "xendcg", 0.6))
    rows = pq.read_table(tmp_path / "trials.parquet").to_pylist()
    assert [(r["trial"], r["value"]) for r in rows] == [(0, 0.5), (1, 0.6)]


def test_units_are_claimed_once_and_a_dead_holder_frees_its_claim(tmp_path):
    from rankcli.experiment import BASELINE, UnitClaims
    from rankcli.formats.experiment_store import ResultStore

    base = BASELINE
    units = [(base, t, "xendcg") for t in range(3)]
    store = ResultStore(tmp_path, ["baseline"], ["xendcg"], ["ndcg@5"])

    def done():
        return store.done(["ndcg@5"])

    first, second = UnitClaims(tmp_path, units, store, done), UnitClaims(tmp_path, units, store, done)
    assert first.next(wait=False) is units[0]
    assert second.next(wait=False) is units[1]  # unit 0 is another run's: put off
    assert first.next(wait=False) is units[2]
    assert second.next(wait=False) is None  # only unit 0 is left, and it is held
    for t in (0, 2):  # the first run finishes its units
        store.add(_unit_result("baseline", t, "xendcg", 0.5))
        first.release(("baseline", t, "xendcg"))
    assert second.next(wait=True) is None  # it waited for units 0 and 2, which the other run finished
    assert not second.ran(units[0]) and second.ran(units[1]) and not second.ran(units[2])
    first.release_all()
    second.release_all()

    # A run killed while holding a claim: the kernel drops the lock, the unit is trained by the next run.
    lock = tmp_path / ".locks" / "baseline__00001__xendcg.lock"
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], "
                               "os.O_RDWR); fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); "
                               "time.sleep(60)", str(lock)], stdout=subprocess.PIPE)
    assert holder.stdout.readline() == b"held\n"
    third = UnitClaims(tmp_path, units, store, done)
    assert third.next(wait=False) is None  # units 0 and 2 are done, unit 1 is held
    holder.kill()
    holder.wait()
    assert third.next(wait=True) is units[1]
    third.release_all()


def test_a_run_skips_the_unit_another_run_is_training(tmp_path):
    """run_experiment with one unit held by "another run", which stores it and lets go a little later: the unit is
    not trained again, and the summary includes the other run's result."""
    from rankcli import experiment as ex
    from rankcli.formats import experiment_store
    from rankcli.formats.atomic import FileLock
    from rankcli.formats.parquet import write_dataset
    from tests.experiment.test_experiment import synthetic

    path = tmp_path / "d.parquet"
    write_dataset(path, synthetic(30))
    cfg = dict(losses=["xendcg"], trials=3, trees=2, early_stopping=0, metrics=["ndcg@5"])
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / experiment_store.LOCKS_DIR).mkdir()
    held = FileLock(exp / experiment_store.LOCKS_DIR / "baseline__00001__xendcg.lock")
    assert held.acquire()

    def other_run():
        time.sleep(1.0)
        store = experiment_store.ResultStore(exp, ["baseline"], ["xendcg"], ["ndcg@5"])
        store.add(_unit_result("baseline", 1, "xendcg", 0.123))
        held.release()

    thread = threading.Thread(target=other_run)
    thread.start()
    try:
        result = ex.run_experiment(path, exp, ex.ExperimentConfig(**cfg))
    finally:
        thread.join()
    assert result.ran_units == 2 and result.resumed_units == 0  # the third unit: the other run's
    rows = pq.read_table(exp / "trials.parquet").to_pylist()
    assert [r["trial"] for r in rows] == [0, 1, 2] and rows[1]["value"] == 0.123
    assert result.summary["settings"][0]["losses"]["xendcg"]["ndcg@5"]["trials"] == 3
