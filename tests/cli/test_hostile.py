"""Every command against a table of hostile inputs: no input, however hostile, reaches the user as a traceback, but
as an ``Error:`` line and a documented exit status (2 usage, 3 invalid input, 4 output/filesystem).

In-process (``rankcli.cli.main`` with capsys), so the whole table runs in seconds. A row rankcli does not pass yet is
marked ``xfail(strict=True)`` saying what fails, so that its fix flips it."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from rankcli.cli import main
from rankcli.errors import ExitStatus
from tests.conftest import SAMPLE, run_main

LETOR = SAMPLE / "letor"
DOCUMENTED = {ExitStatus.USAGE, ExitStatus.INVALID_INPUT, ExitStatus.OUTPUT}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Valid inputs (a dataset, a run, a model, TREC files) and hostile ones, made once."""
    d = tmp_path_factory.mktemp("hostile")
    ok = d / "ok.parquet"
    assert main(["convert", str(LETOR / "test.txt"), "-o", str(ok)]) == 0
    model = d / "model"
    assert main(["train", str(ok), "-o", str(model), "--trees", "2", "--threads", "1"]) == 0
    run = d / "run.parquet"
    assert main(["predict", str(model), str(ok), "-o", str(run)]) == 0
    clicks = d / "clicks.parquet"  # a PBM log for propensity and train --propensity
    assert main(["simulate-clicks", str(ok), "-o", str(clicks), "--model", "pbm", "--ranker", "random",
                 "--max-rank", "10", "--keep-no-click", "--impressions", "20", "--seed", "1"]) == 0
    (d / "run.txt").write_text("1840 Q0 SD01840-000 1 1.0 t\n")
    (d / "qrels.txt").write_text("1840 0 SD01840-000 1\n")
    bad = {
        "bad-bytes": d / "bad.bin",
        "empty": d / "empty.txt",
        "missing": d / "no-such-file.parquet",
        "directory": d / "a-directory",
        "symlink-loop": d / "loop1",
        "garbage-parquet": d / "garbage.parquet",
        "truncated-parquet": d / "truncated.parquet",
        "text-as-parquet": d / "text.parquet",
    }
    bad["bad-bytes"].write_bytes(bytes(range(256)) * 64)
    bad["empty"].write_bytes(b"")
    bad["directory"].mkdir()
    (d / "loop2").symlink_to(bad["symlink-loop"])
    bad["symlink-loop"].symlink_to(d / "loop2")
    bad["garbage-parquet"].write_bytes(b"PAR1" + os.urandom(2000) + b"PAR1")
    data = ok.read_bytes()
    bad["truncated-parquet"].write_bytes(data[: len(data) // 2])
    bad["text-as-parquet"].write_bytes((LETOR / "test.txt").read_bytes()[:5000])
    return {"dir": d, "ok": ok, "model": model, "run": run, "trec_run": d / "run.txt", "qrels": d / "qrels.txt",
            "clicks": clicks, "bad": bad}


def run(capsys, args):
    return run_main(capsys, *args)


def check(capsys, args, expected=None):
    status, _, err = run(capsys, args)
    assert "Traceback" not in err, (args, err)
    assert status in DOCUMENTED, (args, status, err)
    assert err.splitlines()[-1].startswith("Error: ") or "Usage:" in err, (args, err)
    if expected is not None:
        assert status == expected, (args, status, err)
    return err


# Each command with INPUT standing for the hostile input (and OUT for a fresh output path).
COMMANDS = {
    "convert": ["convert", "INPUT", "-o", "OUT"],
    "info": ["info", "INPUT"],
    "export": ["export", "INPUT", "-o", "OUT"],
    "export-qrels": ["export", "INPUT", "-o", "OUT", "--format", "trec-qrels"],
    "train": ["train", "INPUT", "-o", "OUT", "--trees", "1"],
    "train-valid": ["train", "OK", "--valid", "INPUT", "-o", "OUT", "--trees", "1"],
    "predict": ["predict", "MODEL", "INPUT", "-o", "OUT"],
    "eval": ["eval", "INPUT"],
    "eval-model": ["eval", "INPUT", "--model", "MODEL"],
    "eval-trec-run": ["eval", "--qrels", "QRELS", "--run", "INPUT"],
    "eval-trec-qrels": ["eval", "--qrels", "INPUT", "--run", "TRECRUN"],
    "simulate-clicks": ["simulate-clicks", "INPUT", "-o", "OUT"],
    "compare": ["compare", "RUN", "INPUT"],
    "compare-trec": ["compare", "--qrels", "QRELS", "TRECRUN", "INPUT"],
    "experiment": ["experiment", "INPUT", "-o", "OUT", "--trials", "1", "--trees", "1", "--no-plots"],
    "propensity": ["propensity", "INPUT", "-o", "OUT"],
    "train-propensity": ["train", "INPUT", "-o", "OUT", "--trees", "1", "--propensity", "pbm:1"],
    "train-propensity-learn": ["train", "INPUT", "-o", "OUT", "--trees", "1", "--loss", "lambdamart", "--propensity",
                               "learn"],
    "train-pool-impressions": ["train", "INPUT", "-o", "OUT", "--trees", "1", "--pool-impressions"],
    "train-propensity-file": ["train", "CLICKS", "-o", "OUT", "--trees", "1", "--propensity", "INPUT"],
}

#: Rows where the right status is known (others: any documented status).
EXPECTED = {
    "missing": ExitStatus.INVALID_INPUT,
    "symlink-loop": ExitStatus.INVALID_INPUT,
}
#: Rows that pass a usage check before the input is read (the status is then 2, and documented).
USAGE_FIRST = {("eval", "empty"), ("eval", "bad-bytes"), ("eval", "directory"), ("eval", "missing"),
               ("eval", "symlink-loop"), ("eval", "text-as-parquet")}


#: Not hostile for that command: SVMlight text under a .parquet name is still SVMlight text to convert, and the
#: commands that read data convert it for the run (tests/cli/test_text_inputs.py).
VALID = {("convert", "text-as-parquet"), ("info", "text-as-parquet"), ("train-valid", "text-as-parquet"),
         ("predict", "text-as-parquet"), ("eval-model", "text-as-parquet")}


def _args(template, files, tmp_path, hostile):
    sub = {"INPUT": hostile, "OUT": tmp_path / "out" / "result", "OK": files["ok"], "MODEL": files["model"],
           "RUN": files["run"], "TRECRUN": files["trec_run"], "QRELS": files["qrels"], "CLICKS": files["clicks"]}
    (tmp_path / "out").mkdir(exist_ok=True)
    return [sub.get(a, a) for a in template]


@pytest.mark.parametrize("kind", ["bad-bytes", "empty", "missing", "directory", "symlink-loop", "garbage-parquet",
                                  "truncated-parquet", "text-as-parquet"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_hostile_inputs(capsys, files, tmp_path, command, kind):
    if (command, kind) in VALID:
        pytest.skip("a valid input for this command")
    args = _args(COMMANDS[command], files, tmp_path, files["bad"][kind])
    expected = EXPECTED.get(kind)
    if (command, kind) in USAGE_FIRST:
        expected = None
    check(capsys, args, expected)
    out = tmp_path / "out"
    assert not out.exists() or [p.name for p in out.iterdir()] == [], "an output was left behind"


# ----------------------------------------------------------------------------------------------------------------------
# Hostile outputs: every writing command, with a valid input


WRITERS = {
    "convert": ["convert", LETOR / "test.txt", "-o", "OUT"],
    "export": ["export", "OK", "-o", "OUT"],
    "train": ["train", "OK", "-o", "OUT", "--trees", "1"],
    "predict": ["predict", "MODEL", "OK", "-o", "OUT"],
    "eval": ["eval", "RUN", "--per-query", "OUT"],
    "simulate-clicks": ["simulate-clicks", "OK", "-o", "OUT"],
    "experiment": ["experiment", "OK", "-o", "OUT", "--trials", "1", "--trees", "1", "--no-plots"],
    "propensity": ["propensity", "CLICKS", "-o", "OUT", "--bootstrap", "10"],
    "train-propensity": ["train", "CLICKS", "-o", "OUT", "--trees", "1", "--propensity", "pbm:1"],
    "train-propensity-learn": ["train", "CLICKS", "-o", "OUT", "--trees", "1", "--loss", "lambdamart",
                               "--propensity", "learn"],
}


def _out_args(template, files, out):
    sub = {"OUT": out, "OK": files["ok"], "MODEL": files["model"], "RUN": files["run"], "CLICKS": files["clicks"]}
    return [sub.get(a, a) for a in template]


@pytest.mark.parametrize("command", list(WRITERS))
def test_output_into_a_missing_directory(capsys, files, tmp_path, command):
    err = check(capsys, _out_args(WRITERS[command], files, tmp_path / "no" / "such" / "out"), ExitStatus.OUTPUT)
    assert "does not exist" in err


@pytest.mark.parametrize("command", list(WRITERS))
def test_output_where_the_filesystem_refuses_files(capsys, files, command):
    """/proc exists but takes no new files, as a read-only mount (works as root too)."""
    if not os.path.isdir("/proc/self"):
        pytest.skip("needs /proc")
    check(capsys, _out_args(WRITERS[command], files, "/proc/rankcli-hostile"), ExitStatus.OUTPUT)


@pytest.mark.parametrize("command", list(WRITERS))
def test_output_into_a_read_only_directory(capsys, files, tmp_path, command):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories; /proc stands in for it above")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        check(capsys, _out_args(WRITERS[command], files, ro / "out"), ExitStatus.OUTPUT)
    finally:
        ro.chmod(0o755)


@pytest.mark.parametrize("command", ["export", "predict", "eval", "simulate-clicks", "propensity"])
def test_output_that_is_a_directory(capsys, files, tmp_path, command):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "keep").write_text("x")
    check(capsys, _out_args(WRITERS[command], files, tmp_path / "d") + ["--overwrite"], ExitStatus.OUTPUT)
    assert (tmp_path / "d" / "keep").read_text() == "x"


# ----------------------------------------------------------------------------------------------------------------------
# Hostile model directories (predict, eval --model, simulate-clicks --ranker)


def _broken_models(model, root):
    made = {}

    def copy(name):
        d = root / name
        shutil.copytree(model, d)
        return d

    made["empty"] = root / "empty-model"
    made["empty"].mkdir()
    d = copy("no-model-txt")
    (d / "model.txt").unlink()
    d = copy("json-garbage")
    (d / "rankcli.json").write_text("{not json")
    d = copy("json-list")
    (d / "rankcli.json").write_text("[1, 2]")
    d = copy("loss-a-string")
    info = json.loads((d / "rankcli.json").read_text())
    info["loss"] = "xendcg"
    (d / "rankcli.json").write_text(json.dumps(info))
    d = copy("features-a-number")
    info = json.loads((d / "rankcli.json").read_text())
    info["features"] = 7
    (d / "rankcli.json").write_text(json.dumps(info))
    d = copy("model-txt-truncated")
    text = (d / "model.txt").read_bytes()
    (d / "model.txt").write_bytes(text[: len(text) // 3])
    d = copy("model-txt-garbage")
    (d / "model.txt").write_bytes(bytes(range(256)) * 8)
    return made | {p.name: p for p in root.iterdir() if p.name not in ("empty-model",)}


MODEL_ROWS = ["empty-model", "no-model-txt", "json-garbage", "json-list", "loss-a-string", "features-a-number",
              "model-txt-truncated", "model-txt-garbage"]


@pytest.fixture(scope="module")
def broken_models(files, tmp_path_factory):
    return _broken_models(files["model"], tmp_path_factory.mktemp("models"))


@pytest.mark.parametrize("command", ["predict", "eval-model", "simulate-clicks-ranker"])
@pytest.mark.parametrize("model", MODEL_ROWS)
def test_hostile_model_directories(capsys, files, broken_models, tmp_path, command, model):
    path = broken_models["empty" if model == "empty-model" else model]
    args = {"predict": ["predict", path, files["ok"], "-o", tmp_path / "run.parquet"],
            "eval-model": ["eval", files["ok"], "--model", path],
            "simulate-clicks-ranker": ["simulate-clicks", files["ok"], "-o", tmp_path / "c.parquet",
                                       "--ranker", path]}[command]
    check(capsys, args, ExitStatus.INVALID_INPUT)


# ----------------------------------------------------------------------------------------------------------------------
# Single cases that the table's rows do not reach: two columns of one name, a negative seed, a huge group size,
# a feature overflowing float32, a read-only file system


def test_run_with_two_score_columns(capsys, files, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pq.read_table(files["run"])
    twice = pa.Table.from_arrays(t.columns + [t.column("score")], names=t.column_names + ["score"])
    pq.write_table(twice, tmp_path / "two.parquet")
    check(capsys, ["eval", tmp_path / "two.parquet"], ExitStatus.INVALID_INPUT)
    check(capsys, ["compare", files["run"], tmp_path / "two.parquet"], ExitStatus.INVALID_INPUT)


@pytest.mark.parametrize("command", ["train", "simulate-clicks", "compare", "experiment"])
def test_negative_seed_is_a_usage_error(capsys, files, tmp_path, command):
    args = {"train": ["train", files["ok"], "-o", tmp_path / "m", "--trees", "1"],
            "simulate-clicks": ["simulate-clicks", files["ok"], "-o", tmp_path / "c.parquet"],
            "compare": ["compare", files["run"], files["run"]],
            "experiment": ["experiment", files["ok"], "-o", tmp_path / "e", "--trials", "1", "--trees", "1",
                           "--no-plots"]}[command]
    check(capsys, args + ["--seed", "-1"], ExitStatus.USAGE)


def test_sidecar_with_a_huge_group_size(capsys, tmp_path):
    (tmp_path / "x.txt").write_text("1 1:0.5\n0 1:0.25\n")
    (tmp_path / "x.txt.query").write_text("99999999999999999999999\n")
    check(capsys, ["convert", tmp_path / "x.txt", "-o", tmp_path / "x.parquet"], ExitStatus.INVALID_INPUT)


def test_feature_overflowing_float32(capsys, tmp_path):
    (tmp_path / "x.txt").write_text("1 qid:1 1:1e39\n0 qid:1 1:0.5\n")
    check(capsys, ["convert", tmp_path / "x.txt", "-o", tmp_path / "x.parquet"], ExitStatus.INVALID_INPUT)


def test_experiment_on_a_read_only_file_system(capsys, files):
    if not os.path.isdir("/proc/self"):
        pytest.skip("needs /proc")
    check(capsys, ["experiment", files["ok"], "-o", "/proc/self/rankcli-exp", "--trials", "1", "--trees", "1",
                   "--no-plots"], ExitStatus.OUTPUT)


# ----------------------------------------------------------------------------------------------------------------------
# Hostile propensity files (train CLICKS --propensity FILE)

TEN = list(range(1, 11))
PROPENSITY_FILES = {
    "a-list": "[1, 2]",
    "strings": json.dumps({"positions": TEN, "propensity": ["1"] * 10}),
    "nan": '{"positions": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "propensity": [NaN, 1, 1, 1, 1, 1, 1, 1, 1, 1]}',
    "overflow": '{"positions": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "propensity": [1e400, 1, 1, 1, 1, 1, 1, 1, 1, 1]}',
    "booleans": json.dumps({"positions": TEN, "propensity": [True] * 10}),
    "boolean-position": json.dumps({"positions": [True] + TEN[1:], "propensity": [1.0] * 10}),
    "positions-null": json.dumps({"positions": None, "propensity": [1.0] * 10}),
    "nested": "[" * 100_000 + "]" * 100_000,
    "not-utf8": "\udcff",
}


@pytest.mark.parametrize("name", list(PROPENSITY_FILES))
def test_hostile_propensity_files(capsys, files, tmp_path, name):
    f = tmp_path / "p.json"
    f.write_bytes(PROPENSITY_FILES[name].encode("utf-8", "surrogateescape"))
    check(capsys, ["train", files["clicks"], "-o", tmp_path / "m", "--trees", "1", "--propensity", f],
          ExitStatus.INVALID_INPUT)
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_propensity_file_that_is_not_a_regular_file(capsys, files, tmp_path, special):
    """/dev/zero was read until memory ran out; a FIFO would block forever."""
    if special == "fifo":
        special = tmp_path / "fifo"
        os.mkfifo(special)
    elif not os.path.exists(special):
        pytest.skip("needs /dev/zero")
    err = check(capsys, ["train", files["clicks"], "-o", tmp_path / "m", "--trees", "1", "--propensity", special],
                ExitStatus.INVALID_INPUT)
    assert "not a regular file" in err or "a device" in err or "a FIFO" in err
