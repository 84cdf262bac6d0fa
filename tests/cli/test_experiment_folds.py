"""`rankcli experiment --folds` on fold trees a user's hands made: fold names that are not directories, folds whose
test queries overlap, bad labels named by fold, file and row; and what a finished experiment leaves behind."""

from __future__ import annotations

import pytest

from tests.conftest import run_main
from tests.test_experiment import write_folds

FAST = ["--losses", "lambdamart,xendcg", "--trees", "2", "--early-stopping", "0", "--no-plots"]


@pytest.fixture(scope="module")
def folds(tmp_path_factory):
    return write_folds(tmp_path_factory.mktemp("folds") / "data", k=3, n_queries=8)


def run(capsys, *args):
    return run_main(capsys, "experiment", *args)


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
