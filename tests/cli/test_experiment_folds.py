"""`rankcli experiment --folds` on fold trees a user's hands made: fold names that are not directories, folds whose
test queries overlap, bad labels named by fold, file and row; and what a finished experiment leaves behind."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from rankcli.formats.parquet import read_dataset, write_dataset
from tests.conftest import run_main
from tests.experiment.test_experiment import synthetic, write_folds

FAST = ["--losses", "lambdamart,xendcg", "--trees", "2", "--early-stopping", "0", "--no-plots"]


@pytest.fixture(scope="module")
def folds(tmp_path_factory):
    return write_folds(tmp_path_factory.mktemp("folds") / "data", k=3, n_queries=8)


def run(capsys, *args):
    return run_main(capsys, "experiment", *args)


def _copy(folds, tmp_path):
    root = tmp_path / "data"
    shutil.copytree(folds, root)
    return root


# --- a last FoldK that is not a directory --------------------------------------------------------------------------


@pytest.mark.parametrize("kind, said", [("dangling", "a dangling symbolic link (to "),
                                        ("loop", "a symbolic link loop"), ("file", "a regular file"),
                                        ("link to a file", "a symbolic link to a regular file")])
def test_a_fold_name_that_is_not_a_directory_is_named(capsys, folds, tmp_path, kind, said):
    """A last Fold3 that was a dangling link, a loop or a file was skipped: two folds ran, exit 0."""
    root = _copy(folds, tmp_path)
    fold3 = root / "Fold3"
    shutil.rmtree(fold3)
    {"dangling": lambda: fold3.symlink_to(tmp_path / "nowhere"), "loop": lambda: fold3.symlink_to(fold3),
     "file": lambda: fold3.write_text("not a fold\n"),
     "link to a file": lambda: fold3.symlink_to(root / "Fold1" / "train.parquet")}[kind]()
    status, _, err = run(capsys, root, "--folds", "-o", tmp_path / "e", *FAST)
    assert status == 3
    assert err.startswith(f"Error: {fold3}: {said}")
    assert ", not a fold directory; --folds reads the directories Fold1/ .. FoldK/" in err
    assert not (tmp_path / "e").exists()


# --- overlapping test queries --------------------------------------------------------------------------------------


def _set_qids(path, qids_of_queries):
    """Give the first queries of ``path`` the qids ``qids_of_queries``."""
    ds = read_dataset(path)
    per_query = ds.qids[ds.offsets[:-1]].copy()
    per_query[: len(qids_of_queries)] = qids_of_queries
    ds.qids = np.repeat(per_query, np.diff(ds.offsets))
    write_dataset(path, ds, overwrite=True)
    return per_query


def test_a_query_in_two_folds_test_sets_is_refused_naming_both(capsys, folds, tmp_path):
    """Test queries in two folds were pooled twice (n = 136 for 135 queries), exit 0."""
    root = _copy(folds, tmp_path)
    qid = int(_set_qids(root / "Fold1" / "test.parquet", [])[0])
    _set_qids(root / "Fold3" / "test.parquet", [qid])
    status, _, err = run(capsys, root, "--folds", "-o", tmp_path / "e", *FAST)
    assert status == 3
    assert err.startswith(f"Error: qid {qid} is a test query of Fold1 ({root / 'Fold1' / 'test.parquet'}) and of "
                          f"Fold3 ({root / 'Fold3' / 'test.parquet'}); the pooled tests would count it twice; if "
                          "these are different queries that share a number, give every query its own qid")
    assert "--allow-overlap" in err and not (tmp_path / "e").exists()


@pytest.mark.parametrize("part, name", [("train", "train.parquet"), ("vali", "vali.parquet")])
def test_a_fold_whose_test_queries_are_in_its_train_or_validation_is_refused(capsys, folds, tmp_path, part, name):
    root = _copy(folds, tmp_path)
    test_qids = _set_qids(root / "Fold2" / "test.parquet", [])
    _set_qids(root / "Fold2" / name, [int(test_qids[1]), int(test_qids[2])])
    status, _, err = run(capsys, root, "--folds", "-o", tmp_path / "e", *FAST)
    assert status == 3
    assert err.startswith(f"Error: {root / 'Fold2' / 'test.parquet'}: qid {test_qids[1]} is also in "
                          f"{root / 'Fold2' / name} (1 more of its test queries too); a fold's test queries must be "
                          "new to its models")


def test_allow_overlap_runs_and_the_summary_says_so(capsys, folds, tmp_path):
    root = _copy(folds, tmp_path)
    qid = int(_set_qids(root / "Fold1" / "test.parquet", [])[0])
    _set_qids(root / "Fold2" / "test.parquet", [qid])
    _set_qids(root / "Fold3" / "train.parquet", [int(_set_qids(root / "Fold3" / "test.parquet", [])[0])])
    status, out, err = run(capsys, root, "--folds", "--allow-overlap", "-o", tmp_path / "e", *FAST)
    assert status == 0, err
    first = ("1 test query is in the test sets of more than one fold (e.g. qid "
             f"{qid}: Fold1 and Fold2); the pooled tests count each once per fold")
    assert f"overlap allowed (--allow-overlap): {first}" in out
    assert "Fold3: 1 of its test queries is also in its training data" in out
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    assert summary["overlap"][0].startswith(first) and summary["overlap"][1].startswith("Fold3: 1 of its test")
    assert f"Overlap allowed (`--allow-overlap`): {first}" in (tmp_path / "e" / "summary.md").read_text()
    # --json carries it too; and a rerun resumes (the flag is not part of the configuration's identity)
    status, out, err = run(capsys, root, "--folds", "--allow-overlap", "-o", tmp_path / "e", *FAST, "--json")
    assert status == 0, err
    assert json.loads(out)["overlap"] == summary["overlap"]
    # without the flag the same data are refused, also on resume
    status, _, err = run(capsys, root, "--folds", "-o", tmp_path / "e", *FAST)
    assert status == 3 and f"qid {qid} is a test query of Fold1" in err


def test_allow_overlap_without_folds_is_a_usage_error(capsys, tmp_path):
    write_dataset(tmp_path / "d.parquet", synthetic(10))
    status, _, err = run(capsys, tmp_path / "d.parquet", "--allow-overlap", "-o", tmp_path / "e", *FAST)
    assert status == 2 and err.startswith("Error: --allow-overlap applies to --folds")


def test_folds_that_do_not_overlap_say_nothing_of_it(capsys, folds, tmp_path):
    status, out, err = run(capsys, folds, "--folds", "--allow-overlap", "-o", tmp_path / "e", *FAST)
    assert status == 0, err
    assert "overlap" not in out and "overlap" not in json.loads((tmp_path / "e" / "summary.json").read_text())


# --- bad labels named by fold, file and row -----------------------------------------------------------------------


@pytest.mark.parametrize("name, value, said", [("test.parquet", np.nan, "label is NaN at row 5"),
                                               ("train.parquet", np.inf, "label is infinite at row 5"),
                                               ("vali.parquet", -np.inf, "label is infinite at row 5")])
def test_a_bad_label_names_the_fold_file_and_row(capsys, folds, tmp_path, name, value, said):
    """`Error: label is NaN at row 0` named no fold and no file (and came after the folds before it had trained)."""
    root = _copy(folds, tmp_path)
    ds = read_dataset(root / "Fold2" / name)
    ds.labels[5] = value
    write_dataset(root / "Fold2" / name, ds, overwrite=True)
    status, _, err = run(capsys, root, "--folds", "-o", tmp_path / "e", *FAST)
    assert status == 3
    assert err == f"Error: {root / 'Fold2' / name}: {said}; every document needs a finite label\n"
    assert not (tmp_path / "e").exists()  # before any unit, before EXP_DIR


def test_a_label_a_loss_cannot_train_on_is_named_before_any_unit(capsys, folds, tmp_path):
    root = _copy(folds, tmp_path)
    ds = read_dataset(root / "Fold3" / "train.parquet")
    ds.labels[[7, 9]] = [2.5, -1]
    write_dataset(root / "Fold3" / "train.parquet", ds, overwrite=True)
    status, _, err = run(capsys, root, "--folds", "-o", tmp_path / "e", *FAST)
    assert status == 3
    assert err.startswith(f"Error: {root / 'Fold3' / 'train.parquet'}: label at row 7: --loss lambdamart (LightGBM "
                          "lambdarank) needs non-negative integer labels, got 2.5")
    assert not (tmp_path / "e").exists()
    # xendcg takes 2.5 (labels >= 0): the first row it refuses is the -1
    status, _, err = run(capsys, root, "--folds", "-o", tmp_path / "e", *FAST[:1], "xendcg", *FAST[2:])
    assert status == 3
    assert err.startswith(f"Error: {root / 'Fold3' / 'train.parquet'}: label at row 9: --loss xendcg needs "
                          "non-negative labels (2^label - gamma), got -1")


def test_a_bad_label_in_pooled_data_names_the_file_and_its_row(capsys, tmp_path):
    """Random splits: the unit said "training data: label of row N", a row of the trial's training part."""
    d = tmp_path / "pool"
    d.mkdir()
    write_dataset(d / "a.parquet", synthetic(10, seed=1))
    ds = synthetic(10, seed=2)
    ds.qids += 1000
    ds.labels[3] = np.nan
    write_dataset(d / "b.parquet", ds)
    status, _, err = run(capsys, d, "-o", tmp_path / "e", "--trials", "2", *FAST)
    assert status == 3
    assert err == f"Error: {d / 'b.parquet'}: label is NaN at row 3; every document needs a finite label\n"


# --- what a finished experiment leaves ------------------------------------------------------------------------------


def test_a_finished_experiment_leaves_no_lock_files(capsys, folds, tmp_path):
    status, _, err = run(capsys, folds, "--folds", "-o", tmp_path / "e", *FAST, "--jobs", "2")
    assert status == 0, err
    assert not (tmp_path / "e" / ".locks").exists() and not (tmp_path / "e" / ".trials.lock").exists()
    assert sorted(p.name for p in (tmp_path / "e").iterdir() if p.name.startswith(".")) == []
    # and a resumed run (nothing to train) leaves none either
    status, _, err = run(capsys, folds, "--folds", "-o", tmp_path / "e", *FAST)
    assert status == 0, err
    assert not (tmp_path / "e" / ".locks").exists() and not (tmp_path / "e" / ".trials.lock").exists()


# --- what the summary and the usage line say ------------------------------------------------------------------------


def test_the_folds_summary_speaks_of_folds(capsys, folds, tmp_path):
    """It said "Every point averages all trials" under --folds."""
    status, out, err = run(capsys, folds, "--folds", "-o", tmp_path / "e", *FAST)
    assert status == 0, err
    assert "Every point averages all folds; a fold that stopped early" in out
    assert "trial" not in out


def test_the_usage_line_names_data_as_the_docs_do(capsys):
    status, out, _ = run_main(capsys, "experiment", "--help")
    assert status == 0
    assert "Usage: rankcli experiment [OPTIONS] DATA" in out and "{data}" not in out
