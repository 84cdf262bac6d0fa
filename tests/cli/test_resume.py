"""Directories written by an earlier rankcli resume: an experiment directory (a sweep, a parameter file, a loss
option off its earlier value) and a tune directory, both in tests/data/resume (its PROVENANCE.md says how they were
written). Rerunning the command that wrote each trains nothing again and leaves what was written as it was."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import REPO, run_main

RESUME = REPO / "tests" / "data" / "resume"
EXPERIMENT = ["experiment", "train.parquet", "-o", "exp", "--losses", "lambdamart,listnet", "--loss-option",
              "listnet:step=paper", "--params-file", "tune/best.json", "--label-noise", "0,0.3", "--trials", "2",
              "--trees", "2", "--early-stopping", "0", "--no-plots", "--metric", "ndcg@5", "--seed", "3",
              "--threads", "1"]
TUNE = ["tune", "train.parquet", "--valid", "valid.parquet", "-o", "tune", "--loss", "lambdamart", "--loss",
        "listnet", "--budget", "2", "--trees", "2", "--early-stopping", "0", "--seed", "7", "--threads", "1"]


@pytest.fixture
def copy(tmp_path, monkeypatch):
    shutil.copytree(RESUME, tmp_path / "resume")
    monkeypatch.chdir(tmp_path / "resume")
    return tmp_path / "resume"


def test_the_experiment_directory_resumes(capsys, copy):
    kept = {name: (copy / "exp" / name).read_bytes() for name in ("trials.parquet", "config.json")}
    summary = json.loads((copy / "exp" / "summary.json").read_text())
    status, _, err = run_main(capsys, *EXPERIMENT)
    assert status == 0, err
    assert "8 units (2 losses x 2 trials x 2 settings), 8 already done (resuming)" in err
    assert "0 units trained, 8 resumed" in err
    assert {name: (copy / "exp" / name).read_bytes() for name in kept} == kept
    assert json.loads((copy / "exp" / "summary.json").read_text()) == summary


def test_the_tune_directory_resumes(capsys, copy):
    kept = {path: path.read_bytes() for path in [copy / "tune" / "best.json", copy / "tune" / "best-so-far.csv",
                                                 *(copy / "tune").glob("*/trials.csv"),
                                                 *(copy / "tune").glob("*/best.json")]}
    status, _, err = run_main(capsys, *TUNE)
    assert status == 0, err
    assert err.count("; resuming") == 2 and "tune: 0 trials trained here" in err, err
    assert {path: path.read_bytes() for path in kept} == kept
