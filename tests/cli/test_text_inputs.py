"""SVMlight/LETOR text (and LightGBM's ``.query`` sidecars) given where a command reads data: train, predict, eval
--model, explain, info, tune and experiment convert it on the fly to a temporary Parquet file, say so in one stderr
line with the ``convert`` command that makes it permanent, give the results the converted file gives, and leave no
temporary behind. ``experiment --folds`` finds LightGBM's and RankLib's fold file names."""

from __future__ import annotations

import json
import shlex
import shutil
import tempfile

import pyarrow.parquet as pq
import pytest

from rankcli.cli import main
from tests.conftest import SAMPLE
from tests.conftest import run_main as run

LETOR = SAMPLE / "letor"
LGB = SAMPLE / "lightgbm-example"
FAST = ("--trees", "2", "--threads", "1")


@pytest.fixture(autouse=True)
def own_tmpdir(tmp_path, monkeypatch):
    """The temporaries go to a directory of this test's own, which must be empty again after each command."""
    tmp = tmp_path / "system-tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    yield tmp
    assert list(tmp.iterdir()) == [], "a temporary Parquet file was left behind"


@pytest.fixture(scope="module")
def letor(tmp_path_factory):
    """The LETOR sample's text files (copied: the suggested outputs go beside them), their conversion and a model."""
    d = tmp_path_factory.mktemp("text-inputs")
    for name in ("train.txt", "vali.txt", "test.txt"):
        shutil.copy(LETOR / name, d / name)
    assert main(["convert", str(d / "train.txt"), str(d / "vali.txt"), str(d / "test.txt"), "-o", str(d / "pq")]) == 0
    assert main(["train", str(d / "pq" / "train.parquet"), "-o", str(d / "model"), *FAST]) == 0
    return d


def note_of(err: str) -> str:
    """The one stderr line that says the text was converted, and the command it gives."""
    notes = [line for line in err.splitlines() if "SVMlight text, converted" in line]
    assert len(notes) == 1, err
    return notes[0]


def permanent(note: str) -> list[str]:
    """The ``rankcli convert ...`` command of a note, as arguments (it is run by the tests: it must work)."""
    words = shlex.split(note.split("to convert once: ", 1)[1])
    assert words[:2] == ["rankcli", "convert"], note
    return words[1:]


def test_train_on_text_with_sidecars_is_the_model_of_the_converted_files(capsys, tmp_path):
    for name in ("rank.train", "rank.train.query", "rank.test", "rank.test.query"):
        shutil.copy(LGB / name, tmp_path / name)
    args = ("--trees", "3", "--threads", "1", "--min-data-in-leaf", "2", "--loss", "lambdamart")
    status, _, err = run(capsys, "train", tmp_path / "rank.train", "--valid", tmp_path / "rank.test", "-o",
                         tmp_path / "m", *args)
    assert status == 0, err
    note = note_of(err)
    assert note.endswith(f"rankcli convert {tmp_path}/rank.train {tmp_path}/rank.test -o {tmp_path}/parquet/")
    assert run(capsys, *permanent(note))[0] == 0
    out = tmp_path / "parquet"
    status, _, err = run(capsys, "train", out / "rank.train.parquet", "--valid", out / "rank.test.parquet", "-o",
                         tmp_path / "m2", *args)
    assert status == 0 and "converted" not in err
    trees = [(tmp_path / m / "model.txt").read_text().split("end of trees")[0] for m in ("m", "m2")]
    assert trees[0] == trees[1] and "Tree=2" in trees[0]


def test_predict_on_text_scores_as_the_converted_file(capsys, tmp_path, letor):
    status, _, err = run(capsys, "predict", letor / "model", letor / "test.txt", "-o", tmp_path / "a.parquet")
    assert status == 0, err
    note = note_of(err)
    assert note.endswith(f"-o {letor}/test.parquet --num-features 40")  # the model's columns, whatever the text has
    assert run(capsys, "predict", letor / "model", letor / "pq" / "test.parquet", "-o", tmp_path / "b.parquet")[0] == 0
    a, b = (pq.read_table(tmp_path / f"{x}.parquet") for x in "ab")
    assert a.column("score").equals(b.column("score")) and a.num_rows == 578


def test_eval_model_on_text(capsys, letor):
    status, out, err = run(capsys, "eval", letor / "test.txt", "--model", letor / "model", "--json")
    assert status == 0, err
    note_of(err)
    status, expected, _ = run(capsys, "eval", letor / "pq" / "test.parquet", "--model", letor / "model", "--json")
    assert status == 0
    drop = lambda d: {k: v for k, v in json.loads(d).items() if k not in ("input", "run", "path")}  # noqa: E731
    assert drop(out) == drop(expected)


def test_explain_on_text(capsys, letor):
    args = ("--repeats", "1", "--no-contributions", "--json")
    status, out, err = run(capsys, "explain", letor / "model", letor / "test.txt", *args)
    assert status == 0, err
    note_of(err)
    status, expected, _ = run(capsys, "explain", letor / "model", letor / "pq" / "test.parquet", *args)
    assert status == 0
    assert json.loads(out)["features"] == json.loads(expected)["features"]


def test_info_on_lightgbm_text(capsys, tmp_path):
    shutil.copy(LGB / "rank.train", tmp_path / "rank.train")
    shutil.copy(LGB / "rank.train.query", tmp_path / "rank.train.query")
    status, out, err = run(capsys, "info", tmp_path / "rank.train", "--json")
    assert status == 0, err
    assert note_of(err).endswith(f"rankcli convert {tmp_path}/rank.train -o {tmp_path}/rank.train.parquet")
    info = json.loads(out)
    assert (info["rows"], info["queries"], info["features"]) == (27, 4, 300)  # the sidecar's 4 queries
    assert info["path"] == str(tmp_path / "rank.train")


def test_tune_on_text(capsys, tmp_path, letor):
    pytest.importorskip("optuna")
    status, _, err = run(capsys, "tune", letor / "train.txt", "--valid", letor / "vali.txt", "-o", tmp_path / "t",
                         "--loss", "xendcg", "--budget", "1", "--trees", "2", "--early-stopping", "0",
                         "--threads", "1")
    assert status == 0, err
    note_of(err)
    assert (tmp_path / "t" / "best.json").is_file()


@pytest.mark.parametrize("layout", ["ranklib", "lightgbm"])
def test_experiment_folds_on_text_directories(capsys, tmp_path, layout):
    data = tmp_path / "data"
    if layout == "ranklib":  # MSLR's and RankLib's Fold1/ .. FoldK/ with train.txt, vali.txt, test.txt
        for k in (1, 2):
            (data / f"Fold{k}").mkdir(parents=True)
            for name in ("train.txt", "vali.txt", "test.txt"):
                shutil.copy(LETOR / "test.txt", data / f"Fold{k}" / name)  # the smallest file, for speed
        extra = ("--allow-overlap",)  # the same queries in every part
    else:  # LightGBM's example directory: rank.train, rank.test and their .query files (queries numbered from 0)
        shutil.copytree(LGB, data)
        extra = ("--allow-overlap", "--min-data-in-leaf", "2")
    status, out, err = run(capsys, "experiment", data, "-o", tmp_path / "x", "--folds", "--losses", "xendcg",
                           *FAST, *extra, "--json")
    assert status == 0, err
    note = note_of(err)
    if layout == "ranklib":
        assert note.endswith(f"for f in Fold1 Fold2; do rankcli convert {data}/$f -o {data}-parquet/$f/; done")
    else:
        assert note.endswith(f"rankcli convert {data} -o {data}-parquet/")
        assert run(capsys, *permanent(note))[0] == 0  # and experiment --folds finds the converted names
        status, _, err = run(capsys, "experiment", f"{data}-parquet", "-o", tmp_path / "y", "--folds", "--losses",
                             "xendcg", *FAST, *extra)
        assert status == 0, err
    trials = set(pq.read_table(tmp_path / "x" / "trials.parquet").column("trial").to_pylist())
    assert len(trials) == (2 if layout == "ranklib" else 1)


def test_experiment_on_a_text_file_pools_its_queries(capsys, tmp_path, letor):
    status, _, err = run(capsys, "experiment", letor / "train.txt", "-o", tmp_path / "x", "--losses", "xendcg",
                         "--trials", "1", *FAST)
    assert status == 0, err
    note_of(err)


def test_text_that_does_not_parse_names_the_line_and_leaves_nothing(capsys, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1 qid:1 1:0.5\n0 qid:1 1:abc\n")
    status, out, err = run(capsys, "info", bad)
    assert (status, out) == (3, "")
    assert f"{bad}:2: non-numeric feature value" in err


@pytest.mark.parametrize("command", ["train", "predict", "eval", "info", "export-model"])
def test_a_zero_based_file_is_pointed_to_convert_which_has_the_option(capsys, tmp_path, letor, command):
    """Only convert has --zero-based: a command reading text on the fly names the conversion that reads the file,
    not an option it lacks; what it names works."""
    zero = tmp_path / "zero.txt"
    zero.write_text("1 qid:1 0:0.5 1:0.2\n0 qid:1 0:0.1 1:0.3\n")
    args = {"train": ["train", zero, "-o", tmp_path / "m", *FAST],
            "predict": ["predict", letor / "model", zero, "-o", tmp_path / "m"],
            "eval": ["eval", zero, "--model", letor / "model"], "info": ["info", zero],
            "export-model": ["export-model", letor / "model", "--target", "onnx", "-o", tmp_path / "x",
                             "--check", zero]}[command]
    status, out, err = run(capsys, *args)
    assert (status, out) == (3, "")
    assert err.splitlines()[-1] == (f"Error: {zero}:1: feature index must be >= 1 (a 0-based file: convert it with "
                                    "rankcli convert --zero-based and pass the Parquet file), got '0:0.5'"), err
    assert not (tmp_path / "m").exists() and not (tmp_path / "x").exists()
    status, _, _ = run(capsys, "convert", zero, "-o", tmp_path / "zero.parquet", "--zero-based")
    assert status == 0 and pq.read_table(tmp_path / "zero.parquet").num_rows == 2
