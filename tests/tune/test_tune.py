"""rankcli tune: trial 0 is train's model, the budget is exact (extended, resumed, shared by processes), seeded runs
repeat, a --space narrows, only training and validation data are read, and the parameter files it writes are read by
train and experiment with their documented precedence."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("optuna")
pytest.importorskip("sklearn")

from tests.conftest import REPO  # noqa: E402

FAST = ("--trees", "15", "--early-stopping", "5", "--threads", "1")


def tune_args(letor, out, *extra, budget=4, losses=("lambdamart", "xendcg")):
    args = ["tune", letor["train"], "--valid", letor["vali"], "-o", out, "--budget", str(budget), *FAST]
    for loss in losses:
        args += ["--loss", loss]
    return [*args, *extra]


def trials_of(out: Path, loss: str) -> list[dict]:
    from rankcli.tune.runner import collect_one

    return collect_one(out, loss)


def finished(out: Path, loss: str) -> list[dict]:
    return [t for t in trials_of(out, loss) if t["state"] == "COMPLETE"]


def test_trial_0_is_trains_model_and_the_outputs_are_written(run, letor, tmp_path):
    out = tmp_path / "t"
    status, stdout, err = run(*tune_args(letor, out, "--json"))
    assert status == 0, err
    doc = json.loads(stdout)
    for loss in ("lambdamart", "xendcg"):
        s = doc["losses"][loss]
        assert s["trials"] == 4 and s["best_value"] >= s["default_value"]
        status, model_json, err = run("train", letor["train"], "--valid", letor["vali"], "-o", tmp_path / loss,
                                      "--loss", loss, *FAST, "--json")
        assert status == 0, err
        assert json.loads(model_json)["best_valid_metric"] == s["default_value"]  # exactly train's value
        rows = (out / loss / "trials.csv").read_text().splitlines()
        assert rows[0].startswith("trial,state,value,trees,trees_trained,seconds,retry_of,learning_rate")
        assert len(rows) == 5
        best = json.loads((out / loss / "best.json").read_text())
        assert best["losses"][loss]["params"] == s["best_params"]
    assert set(json.loads((out / "best.json").read_text())["losses"]) == {"lambdamart", "xendcg"}
    curve = (out / "best-so-far.csv").read_text().splitlines()
    assert curve[0] == "loss,trials,best" and len(curve) == 9
    assert (out / "best-so-far.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_larger_budget_extends_and_a_seeded_rerun_repeats(run, letor, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert run(*tune_args(letor, a, budget=3, losses=("xendcg",)))[0] == 0
    first = finished(a, "xendcg")
    status, _, err = run(*tune_args(letor, a, budget=5, losses=("xendcg",)))
    assert status == 0, err
    extended = finished(a, "xendcg")
    assert len(extended) == 5 and extended[:3] == first
    assert run(*tune_args(letor, b, budget=5, losses=("xendcg",)))[0] == 0
    again = finished(b, "xendcg")
    # budgets 3 and 5 both give 2 random start-up trials: the extended study is the fresh one
    assert [(t["params"], t["value"]) for t in again] == [(t["params"], t["value"]) for t in extended]
    status, _, err = run(*tune_args(letor, a, budget=4, losses=("xendcg",)))
    assert status == 2 and "already has 5 finished trials, more than --budget 4" in err


def test_another_configuration_is_refused_unless_overwrite(run, letor, tmp_path):
    out = tmp_path / "t"
    assert run(*tune_args(letor, out, budget=2, losses=("xendcg",)))[0] == 0
    status, _, err = run(*tune_args(letor, out, "--seed", "3", budget=2, losses=("xendcg",)))
    assert status == 4 and "holds a study with another configuration (train.seed: 0 before, 3 now)" in err
    status, _, err = run(*tune_args(letor, out, "--seed", "3", "--overwrite", budget=2, losses=("xendcg",)))
    assert status == 0, err
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    status, _, err = run(*tune_args(letor, foreign, "--overwrite", budget=2, losses=("xendcg",)))
    assert status == 4 and "holds no rankcli tune output" in err


def test_space_file_narrows_fixes_and_adds(run, letor, tmp_path):
    space = tmp_path / "space.toml"
    space.write_text('[num_leaves]\nlow = 40\nhigh = 48\n[feature_fraction]\nvalue = 0.75\n'
                     '[bagging_freq]\nvalue = 1\n[bagging_fraction]\nlow = 0.5\nhigh = 1.0\ndefault = 1.0\n'
                     '[xendcg.gamma]\nchoices = ["mean"]\n')
    out = tmp_path / "t"
    status, stdout, err = run(*tune_args(letor, out, "--space", space, "--param", "lambda_l2=0.5", "--json",
                                         budget=5, losses=("xendcg",)))
    assert status == 0, err
    s = json.loads(stdout)["losses"]["xendcg"]
    assert s["clipped"] == ["num_leaves", "gamma"] and s["default_value"] is None  # train's 31 is outside 40..48
    assert s["fixed"] == {"feature_fraction": 0.75, "bagging_freq": 1} and "lambda_l2" not in s["searched"]
    for t in finished(out, "xendcg"):
        p = t["params"]
        assert 40 <= p["num_leaves"] <= 48 and p["feature_fraction"] == 0.75 and p["gamma"] == "mean"
        assert 0.5 <= p["bagging_fraction"] <= 1.0 and "lambda_l2" not in p
    assert finished(out, "xendcg")[0]["params"]["num_leaves"] == 40  # trial 0: train's value clipped into the range


@pytest.mark.parametrize("text, message", [
    ("[num_leaves]\nlow = 50\nhigh = 10\n", "num_leaves: low must be a number below high, got low=50, high=10"),
    ("[num_leaves]\nlow = 1\nhigh = 10\nstep = 2\n", "num_leaves: unknown key 'step'"),
    ("[learning_rate]\nlow = 0\nhigh = 1\nlog = true\n", "learning_rate: a log scale needs low > 0"),
    ("[bagging_fraction]\nlow = 0.5\nhigh = 1.0\n", "bagging_fraction: a parameter rankcli does not search by "
                                                     "default needs its default"),
    ("[num_leafs]\nlow = 2\nhigh = 9\ndefault = 3\n", "LightGBM has no parameter 'num_leafs'"),
    ("[num_leaf]\nlow = 2\nhigh = 9\n", "num_leaf is LightGBM's alias of num_leaves: name it num_leaves"),
    ("[seed]\nvalue = 3\n", "seed cannot be set with --param"),
    ("num_leaves = [", "not valid TOML"),
])
def test_bad_space_files_are_named(run, letor, tmp_path, text, message):
    space = tmp_path / "space.toml"
    space.write_text(text)
    status, _, err = run(*tune_args(letor, tmp_path / "t", "--space", space, budget=2, losses=("xendcg",)))
    assert status in (2, 3) and message in err, err
    assert not (tmp_path / "t").exists()  # refused before any output


SPACE_TOML = '[num_leaves]\nlow = 8\nhigh = 16\n[xendcg.gamma]\nchoices = ["mean"]\n'
SPACE_ENTRIES = {"num_leaves": {"low": 8, "high": 16}, "xendcg": {"gamma": {"choices": ["mean"]}}}


def test_toml_space_without_tomllib_reads_with_tomli(tmp_path, monkeypatch):
    """Python 3.10 has no tomllib: the tune extra's tomli reads the file, with the same checks."""
    tomli = pytest.importorskip("tomli", reason="tomli is not installed (the tune extra's TOML reader on 3.10)")
    from rankcli.errors import InputError
    from rankcli.tune.space import read_space_file

    monkeypatch.setitem(sys.modules, "tomllib", None)  # `import tomllib` raises ImportError, as on 3.10
    read = []
    real = tomli.loads
    monkeypatch.setattr(tomli, "loads", lambda text, **k: read.append(text) or real(text, **k))
    space = tmp_path / "space.toml"
    space.write_text(SPACE_TOML)
    assert read_space_file(space) == {"path": str(space), "entries": SPACE_ENTRIES}
    assert read == [SPACE_TOML]  # tomli read it
    space.write_text("num_leaves = [")
    with pytest.raises(InputError, match="not valid TOML"):
        read_space_file(space)


def test_toml_space_without_a_toml_reader_says_what_to_install(run, letor, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tomllib", None)
    monkeypatch.setitem(sys.modules, "tomli", None)
    space = tmp_path / "space.toml"
    space.write_text(SPACE_TOML)
    status, _, err = run(*tune_args(letor, tmp_path / "t", "--space", space, budget=1, losses=("xendcg",)))
    assert status == 2 and "TOML needs Python 3.11 or the tomli package (pip install tomli)" in err
    assert "write the space as JSON" in err and not (tmp_path / "t").exists()
    from rankcli.tune.space import read_space_file

    as_json = tmp_path / "space.json"
    as_json.write_text(json.dumps(SPACE_ENTRIES))
    assert read_space_file(as_json)["entries"] == SPACE_ENTRIES  # JSON needs no TOML reader


def test_the_tune_extra_installs_tomli_exactly_where_python_has_no_tomllib():
    import ast

    from packaging.requirements import Requirement

    text = (REPO / "pyproject.toml").read_text()
    start = text.index("\ntune = [")
    extra = ast.literal_eval(text[start + len("\ntune = "):text.index("]", start) + 1])  # requirement strings
    tomli = [Requirement(r) for r in extra if Requirement(r).name == "tomli"]
    assert len(tomli) == 1 and tomli[0].marker is not None
    assert tomli[0].marker.evaluate({"python_version": "3.10"})
    assert not tomli[0].marker.evaluate({"python_version": "3.11"})
    assert not tomli[0].marker.evaluate({"python_version": "3.13"})


def test_missing_optuna_is_exit_2_with_the_pip_line(run, letor, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "optuna" else real(name, *a))
    status, _, err = run(*tune_args(letor, tmp_path / "t"))
    assert status == 2 and 'pip install "rankcli[tune]"' in err


def test_tune_reads_only_the_training_and_validation_files(run, letor, tmp_path, monkeypatch):
    from rankcli.formats import parquet

    read = []
    real = parquet.read_dataset
    monkeypatch.setattr(parquet, "read_dataset", lambda path, *a, **k: read.append(Path(path)) or real(path, *a, **k))
    assert run(*tune_args(letor, tmp_path / "t", budget=2))[0] == 0
    assert read and set(read) <= {letor["train"], letor["vali"]}


def test_a_trial_left_running_by_a_dead_process_is_failed_and_run_again(letor, tmp_path):
    from rankcli.train import TrainConfig
    from rankcli.tune.config import TuneConfig
    from rankcli.tune.runner import run_tune
    from rankcli.tune.study import LossStudy, Worker

    config = TuneConfig(["xendcg"], 2, TrainConfig(trees=15, early_stopping=5, threads=1))
    out = tmp_path / "t"
    run_tune(letor["train"], letor["vali"], out, TuneConfig(["xendcg"], 1, config.train))
    dead = Worker(out)  # a process that takes trial 1, the last of the budget, and dies
    claimed = LossStudy(out / "xendcg", config.space_of("xendcg"), 0, 2, dead).claim()
    dead.close()
    result = run_tune(letor["train"], letor["vali"], out, config)
    trials = result.losses["xendcg"].trials
    assert [t["state"] for t in trials] == ["COMPLETE", "FAIL", "COMPLETE"]
    assert trials[2]["retry_of"] == claimed.trial.number == 1 and trials[2]["params"] == claimed.params
    fresh = run_tune(letor["train"], letor["vali"], tmp_path / "fresh", config).losses["xendcg"].finished
    assert [(t["params"], t["value"]) for t in fresh] == [(t["params"], t["value"]) for t in result.losses[
        "xendcg"].finished]  # the resumed study is the uninterrupted one


def _files_state(out: Path, loss: str) -> tuple[list[str], dict | None]:
    """trials.csv's (trial, state, value) cells and best.json's entry of ``loss``."""
    import csv

    with open(out / loss / "trials.csv", newline="") as f:
        rows = [(r["trial"], r["state"], r["value"]) for r in csv.DictReader(f)]
    best = out / loss / "best.json"
    return rows, json.loads(best.read_text())["losses"][loss] if best.exists() else None


def _journal_state(out: Path, loss: str) -> tuple[list[str], dict | None]:
    trials = trials_of(out, loss)
    done = [t for t in trials if t["state"] == "COMPLETE"]
    best = max(done, key=lambda t: (t["value"], -t["trial"])) if done else None
    return ([(str(t["trial"]), t["state"], "" if t["value"] is None else repr(t["value"])) for t in trials],
            best and {"trial": best["trial"], "value": best["value"], "params": best["params"]})


def test_trials_and_best_are_written_after_every_trial_and_everything_on_interruption(letor, tmp_path, monkeypatch):
    """A run killed at any point leaves each loss's trials.csv and best.json as of its last finished trial; an
    interrupted one (Ctrl-C, SIGTERM) writes every file, the plot included, before it stops."""
    from rankcli.train import TrainConfig
    from rankcli.tune import trial as trial_module
    from rankcli.tune.config import TuneConfig
    from rankcli.tune.runner import run_tune

    out = tmp_path / "t"
    config = TuneConfig(["lambdamart", "xendcg"], 4, TrainConfig(trees=3, early_stopping=0, threads=1))
    seen = []

    def on_trial(loss, record, best):  # what a SIGKILL now would leave
        rows, entry = _files_state(out, loss)
        journal_rows, journal_best = _journal_state(out, loss)
        assert rows == journal_rows and len(rows) == record["trial"] + 1
        assert {k: entry[k] for k in ("trial", "value", "params")} == journal_best and entry["value"] == best
        seen.append(loss)

    real, calls = trial_module.train_trial, []

    def interrupted_at_the_sixth(*args, **kw):
        calls.append(1)
        if len(calls) == 6:  # xendcg's trial 1: lambdamart's 4 and xendcg's trial 0 finished
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(trial_module, "train_trial", interrupted_at_the_sixth)
    with pytest.raises(KeyboardInterrupt):
        run_tune(letor["train"], letor["vali"], out, config, on_trial=on_trial)
    assert seen == ["lambdamart"] * 4 + ["xendcg"]
    for loss in ("lambdamart", "xendcg"):
        rows, entry = _files_state(out, loss)
        assert rows == _journal_state(out, loss)[0]
        assert {k: entry[k] for k in ("trial", "value", "params")} == _journal_state(out, loss)[1]
    assert [r[1] for r in _files_state(out, "xendcg")[0]] == ["COMPLETE", "RUNNING"]  # the trial interrupted
    curve = (out / "best-so-far.csv").read_text().splitlines()
    assert len(curve) == 1 + 4 + 1
    assert set(json.loads((out / "best.json").read_text())["losses"]) == {"lambdamart", "xendcg"}
    assert (out / "best-so-far.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    monkeypatch.setattr(trial_module, "train_trial", real)
    result = run_tune(letor["train"], letor["vali"], out, config)  # the rerun runs the interrupted trial again
    assert [t["state"] for t in result.losses["xendcg"].trials] == ["COMPLETE", "FAIL"] + ["COMPLETE"] * 3
    assert len(_files_state(out, "xendcg")[0]) == 5


def _cli(*args, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "rankcli", *map(str, args)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, **kw)


@pytest.mark.slow
def test_sigint_mid_run_and_a_rerun_lose_no_finished_trial(letor, tmp_path):
    out = tmp_path / "t"
    args = tune_args(letor, out, budget=8, losses=("xendcg",))
    args[args.index("15")] = "60"  # slower trials, so that the signal lands in one
    proc = _cli(*args)
    deadline = time.time() + 60
    while time.time() < deadline and len(finished(out, "xendcg") if (out / "xendcg" / "study.journal").exists()
                                         else []) < 2:
        time.sleep(0.05)
    before = finished(out, "xendcg")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    after_signal = finished(out, "xendcg")
    assert len(after_signal) >= len(before) >= 2 and len(after_signal) < 8
    rows, best = _files_state(out, "xendcg")  # the files as the journal stands: every finished trial, the plot
    assert rows == _journal_state(out, "xendcg")[0] and best["value"] == _journal_state(out, "xendcg")[1]["value"]
    assert (out / "best-so-far.png").exists() and len((out / "best-so-far.csv").read_text().splitlines()) == \
        1 + len(after_signal)
    rerun = _cli(*args)
    _, err = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, err
    done = finished(out, "xendcg")
    assert len(done) == 8 and done[:len(after_signal)] == after_signal


@pytest.mark.slow
def test_two_processes_finish_exactly_the_budget(letor, tmp_path):
    out = tmp_path / "t"
    args = tune_args(letor, out, budget=6, losses=("xendcg",))
    procs = [_cli(*args), _cli(*args)]
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
    assert len(finished(out, "xendcg")) == 6
    assert all(t["state"] == "COMPLETE" for t in trials_of(out, "xendcg"))
    jobs = tune_args(letor, out, "--jobs", "2", budget=8, losses=("xendcg",))
    status = subprocess.run([sys.executable, "-m", "rankcli", *map(str, jobs)],
                            env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, timeout=180)
    assert status.returncode == 0, status.stderr
    assert len(finished(out, "xendcg")) == 8


# ------------------------------------------------------------------------------------- parameter files
def _model(run, letor, out, *args) -> dict:
    status, stdout, err = run("train", letor["train"], "--valid", letor["vali"], "-o", out, *FAST, "--json", *args)
    assert status == 0, err
    return json.loads(stdout)


def test_train_params_file_precedence_explicit_then_param_then_file_then_preset(run, letor, tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"params": {"learning_rate": 0.1, "num_leaves": 7, "min_data_in_leaf": 3,
                                        "lambda_l2": 2.0, "gamma": "mean"}}))
    info = _model(run, letor, tmp_path / "m", "--preset", "paper-yahoo", "--params-file", f, "--num-leaves", "9",
                  "--param", "lambda_l2=3")
    p = info["params"]
    assert (p["learning_rate"], p["num_leaves"], p["min_data_in_leaf"], p["lambda_l2"], p["max_bin"]) == \
        (0.1, 9, 3, 3, 255)  # file > preset; explicit > file; --param > file; the preset where the file is silent
    assert info["loss"]["gamma"] == "fixed:0.5"  # the file's mean (gamma 0.5)
    assert info["params_file"]["params"]["num_leaves"] == 7 and info["params_file"]["path"] == str(f)
    explicit = _model(run, letor, tmp_path / "m2", "--params-file", f, "--gamma", "fixed:0.2")
    assert explicit["loss"]["gamma"] == "fixed:0.2"


def test_train_params_file_from_tune_reproduces_the_best_trial(run, letor, tmp_path):
    out = tmp_path / "t"
    status, stdout, err = run(*tune_args(letor, out, "--json", budget=3, losses=("lambdamart",)))
    assert status == 0, err
    best = json.loads(stdout)["losses"]["lambdamart"]["best_value"]
    for source in (out, out / "best.json", out / "lambdamart" / "best.json"):
        info = _model(run, letor, tmp_path / "m", "--loss", "lambdamart", "--params-file", source, "--overwrite")
        assert info["best_valid_metric"] == best
    status, _, err = run("train", letor["train"], "--valid", letor["vali"], "-o", tmp_path / "x", "--loss", "xendcg",
                         "--params-file", out / "lambdamart" / "best.json")
    assert status == 2 and "has parameters for lambdamart, not for --loss xendcg" in err


@pytest.mark.parametrize("content, status, message", [
    ('{"params": {"seed": 3}}', 2, "--params-file"),
    ('{"params": {"num_leaves": 7.5}}', 2, "num_leaves must be a whole number, got 7.5"),
    ("{not json", 3, "not valid JSON"),
    ('{"model": 1}', 3, "not a parameter file"),
    ('{"params": {"x": [1]}}', 3, "parameter 'x' must be a number, a word or true/false"),
])
def test_bad_params_files(run, letor, tmp_path, content, status, message):
    f = tmp_path / "p.json"
    f.write_text(content)
    got, _, err = run("train", letor["train"], "--valid", letor["vali"], "-o", tmp_path / "m", "--params-file", f)
    assert got == status and message in err, err


def test_experiment_params_file_applies_per_loss_and_is_recorded(run, letor, tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"losses": {"xendcg": {"params": {"num_leaves": 5, "lambda_l2": 1.0}},
                                        "lambdamart": {"params": {"num_leaves": 6}}}}))
    exp = tmp_path / "e"
    status, stdout, err = run("experiment", letor["train"], "-o", exp, "--trials", "2", "--losses",
                              "lambdamart,xendcg", "--trees", "10", "--no-plots", "--json", "--params-file", f)
    assert status == 0, err
    h = json.loads(stdout)["hyperparameters"]
    assert h["source"] == "params-file" and h["params_file"]["xendcg"]["params"]["num_leaves"] == 5
    config = json.loads((exp / "config.json").read_text())
    assert config["config"]["params_file"] == {"lambdamart": {"num_leaves": 6},
                                               "xendcg": {"num_leaves": 5, "lambda_l2": 1.0}}
    summary = (exp / "summary.md").read_text()
    assert "from " + str(f) in summary  # and the parameters each loss trained with
    assert "| lambdamart | num_leaves=6 |" in summary and "| xendcg | num_leaves=5, lambda_l2=1 |" in summary
    status, _, err = run("experiment", letor["train"], "-o", tmp_path / "e2", "--params-file", f, "--tune", "2",
                         "--losses", "xendcg")
    assert status == 2 and "--tune and --params-file do not combine" in err


def test_experiment_tune_tunes_each_unit_on_its_own_training_and_validation_data(letor, tmp_path, monkeypatch):
    import numpy as np

    from rankcli.experiment import ExperimentConfig, load_data, run_experiment, trial_split
    from rankcli.tune import inline

    seen, prepared_seen = [], []
    real = inline.train_trial

    def spy(prepared, config, objective=None):
        seen.append((set(prepared.train.qids.tolist()), set(prepared.valid.qids.tolist())))
        prepared_seen.append(prepared)
        return real(prepared, config, objective)

    monkeypatch.setattr(inline, "train_trial", spy)
    config = ExperimentConfig(losses=["lambdamart", "xendcg"], trials=2, tune=3, trees=10, early_stopping=5)
    result = run_experiment(letor["train"], tmp_path / "e", config)
    assert len(seen) == 2 * 2 * 3
    # every tuning trial of a (setting, trial) trains on one prepared split, binned once: 2 Datasets (train, valid)
    assert len({id(p) for p in prepared_seen}) == 2
    assert all(p.constructions == 2 for p in prepared_seen)
    splits = [trial_split(load_data(letor["train"]), config, t) for t in (0, 1)]
    for train_q, valid_q in seen:
        split = next(s for s in splits if set(s.train.qids.tolist()) == train_q)
        assert valid_q == set(split.valid.qids.tolist())
        assert not (train_q | valid_q) & set(split.test.qids.tolist())  # no test query reached tuning
    h = result.summary["hyperparameters"]
    assert h["source"] == "tuned" and h["budget"] == 3 and len(h["units"]) == 4
    for u in h["units"]:
        assert u["trials"] == 3 and u["validation"] >= u["default_validation"]
        assert set(u["params"]) >= {"learning_rate", "num_leaves", "min_data_in_leaf", "lambda_l2"}
    assert "| baseline | 0 | lambdamart |" in (tmp_path / "e" / "summary.md").read_text()
    assert np.isfinite(result.summary["settings"][0]["losses"]["xendcg"]["ndcg@5"]["mean"])


def _experiment(run, letor, out, *extra):
    return run("experiment", letor["train"], "-o", out, "--trials", "1", "--losses", "lambdamart,xendcg", "--trees",
               "3", "--early-stopping", "0", "--no-plots", "--json", *extra)


def test_experiment_tune_space_is_searched_recorded_and_part_of_the_configuration(run, letor, tmp_path):
    space = tmp_path / "space.toml"
    space.write_text('[num_leaves]\nvalue = 7\n[xendcg.gamma]\nchoices = ["mean"]\n'
                     '[learning_rate]\nlow = 0.05\nhigh = 0.06\n')
    exp = tmp_path / "e"
    status, stdout, err = _experiment(run, letor, exp, "--tune", "3", "--space", space)
    assert status == 0, err
    h = json.loads(stdout)["hyperparameters"]
    assert h["space"]["path"] == str(space) and f"search space as {space} changes it" in err
    assert len(h["units"]) == 2
    for u in h["units"]:
        assert u["params"]["num_leaves"] == 7 and 0.05 <= u["params"]["learning_rate"] <= 0.06
        assert u["params"]["gamma"] == "mean" if u["loss"] == "xendcg" else "gamma" not in u["params"]
    config = json.loads((exp / "config.json").read_text())
    entries = {"num_leaves": {"value": 7}, "xendcg": {"gamma": {"choices": ["mean"]}},
               "learning_rate": {"low": 0.05, "high": 0.06}}
    assert config["config"]["tune_space"] == entries and config["tune_space"]["path"] == str(space)
    same = tmp_path / "space.json"  # the same space as JSON: the same configuration, resumed
    same.write_text(json.dumps(entries))
    status, _, err = _experiment(run, letor, exp, "--tune", "3", "--space", same)
    assert status == 0 and "0 units trained, 2 resumed" in err, err
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**entries, "num_leaves": {"value": 9}}))
    for args in (("--space", other), ()):  # another space, or none: another configuration
        status, _, err = _experiment(run, letor, exp, "--tune", "3", *args)
        assert status == 4 and "tune_space" in err, err
    status, stdout, err = _experiment(run, letor, exp, "--tune", "3", "--space", other, "--overwrite")
    assert status == 0, err
    assert {u["params"]["num_leaves"] for u in json.loads(stdout)["hyperparameters"]["units"]} == {9}


@pytest.mark.parametrize("extra, status, message", [
    (("--space", "{space}"), 2, "changes the search space of --tune: give --tune N, or drop --space"),
    (("--tune", "2", "--space", "{bad}"), 2, "num_leaves: low must be a number below high"),
    (("--tune", "2", "--space", "{space}", "--param", "lambda_l2=0.5"), 2, "lambda_l2 is also set by --param"),
    (("--tune", "2", "--space", "{alias}"), 2, "num_leaf is LightGBM's alias of num_leaves"),
])
def test_experiment_space_is_checked_before_any_output(run, letor, tmp_path, extra, status, message):
    files = {"space": ("space.toml", "[lambda_l2]\nvalue = 1.0\n"), "bad": ("bad.json", '{"num_leaves": {"low": 9, '
                                                                             '"high": 2}}'),
             "alias": ("alias.toml", "[num_leaf]\nlow = 2\nhigh = 9\n")}
    paths = {}
    for key, (name, text) in files.items():
        paths[key] = tmp_path / name
        paths[key].write_text(text)
    got, _, err = _experiment(run, letor, tmp_path / "e", *(a.format(**paths) for a in extra))
    assert got == status and message in err, err
    assert not (tmp_path / "e").exists()


def test_experiment_tune_trains_the_drawn_loss_options_even_when_one_is_set(letor, monkeypatch):
    """A loss option set for the unit (--loss-option, or the value a resumed experiment records) is trial 0's value,
    and every later trial trains with the value it drew (never the set one in its place); a trial that draws
    ndcg-loss2, which mu means nothing to, trains without the set mu (no refusal)."""
    from rankcli.train import TrainConfig, load_training_data
    from rankcli.tune import inline

    trained = []
    real = inline.train_trial
    monkeypatch.setattr(inline, "train_trial", lambda prepared, config, objective=None: trained.append(
        (config.resolved_loss_options["variant"], config.loss_options.get("mu"))) or real(prepared, config, objective))
    base = TrainConfig(loss="lambdaloss", trees=3, early_stopping=0, threads=1, seed=1, loss_options={"mu": 0.7})
    prepared = load_training_data(letor["train"], letor["vali"], base).prepare()
    tuned = inline.tune_in_memory(prepared, base, 8)
    assert trained[0] == ("ndcg-loss2++", 0.7)  # trial 0 at the set value, then the drawn ones
    drawn = [mu for variant, mu in trained[1:] if variant == "ndcg-loss2++"]
    assert drawn and 0.7 not in drawn and len(set(drawn)) == len(drawn)
    assert all(mu is None for variant, mu in trained if variant == "ndcg-loss2")
    assert {v for v, _ in trained} == {"ndcg-loss2++", "ndcg-loss2"}
    assert tuned.params.get("mu", 0.7) in [mu for _, mu in trained]


def test_experiment_tune_5_trials_3_end_to_end_lists_each_units_parameters(run, letor, tmp_path):
    exp = tmp_path / "e"
    status, stdout, err = run("experiment", letor["train"], "-o", exp, "--trials", "3", "--losses",
                              "lambdamart,xendcg", "--tune", "5", "--trees", "3", "--early-stopping", "0",
                              "--no-plots", "--json")
    assert status == 0, err
    h = json.loads(stdout)["hyperparameters"]
    assert h["source"] == "tuned" and h["budget"] == 5 and h["space"] is None
    assert sorted((u["trial"], u["loss"]) for u in h["units"]) == [(t, loss) for t in range(3)
                                                                    for loss in ("lambdamart", "xendcg")]
    summary = (exp / "summary.md").read_text()
    assert "tuned per loss and trial on that trial's own training and validation data, 5 trainings each" in summary
    for u in h["units"]:
        assert u["trials"] == 5 and u["validation"] >= u["default_validation"]
        shown = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in u["params"].items())
        assert f"| baseline | {u['trial']} | {u['loss']} | {u['validation']:.4f} | " \
               f"{u['default_validation']:.4f} | {shown} |" in summary
    assert "tuned per loss and trial" in err


def test_experiment_tuning_does_not_depend_on_the_test_rows(run, letor, tmp_path):
    """Two copies of one fold that differ only in their test file (its labels reversed, its features shifted): every
    unit's tuning (the trials' parameters and validation values) is the same, while the test metrics differ."""
    import dataclasses
    import shutil

    from rankcli.formats.parquet import read_dataset, write_dataset

    docs = {}
    for name in ("a", "b"):
        fold = tmp_path / name
        fold.mkdir()
        for part in ("train", "vali", "test"):
            shutil.copy(letor[part], fold / f"{part}.parquet")
    test = read_dataset(tmp_path / "b" / "test.parquet")
    write_dataset(tmp_path / "b" / "test.parquet", dataclasses.replace(
        test, labels=test.labels.max() - test.labels, features=test.features + 1.0), overwrite=True)
    for name in ("a", "b"):
        status, stdout, err = run("experiment", tmp_path / name, "--folds", "-o", tmp_path / f"e{name}", "--losses",
                                  "lambdamart,xendcg", "--tune", "3", "--trees", "3", "--early-stopping", "0",
                                  "--no-plots", "--json")
        assert status == 0, err
        docs[name] = json.loads(stdout)
    assert docs["a"]["hyperparameters"]["units"] == docs["b"]["hyperparameters"]["units"]
    assert docs["a"]["settings"] != docs["b"]["settings"]


def test_every_loss_tunes_and_its_trial_0_is_trains_model(run, letor, tmp_path):
    """Every loss train knows (the newest included) tunes, with trial 0 worth exactly train's validation value."""
    from rankcli.train import LOSSES

    out = tmp_path / "t"
    fast = ("--trees", "3", "--early-stopping", "0", "--threads", "1")
    args = ["tune", letor["train"], "--valid", letor["vali"], "-o", out, "--budget", "2", *fast, "--json"]
    for loss in LOSSES:
        args += ["--loss", loss]
    status, stdout, err = run(*args)
    assert status == 0, err
    doc = json.loads(stdout)["losses"]
    assert set(doc) == set(LOSSES)
    for loss, s in doc.items():
        assert s["trials"] == 2 and s["failed"] == 0 and (out / loss / "best.json").is_file(), loss
        status, model, err = run("train", letor["train"], "--valid", letor["vali"], "-o", tmp_path / loss, "--loss",
                                 loss, *fast, "--json")
        assert status == 0, err
        assert json.loads(model)["best_valid_metric"] == s["default_value"], loss


def test_experiment_tune_with_the_newest_losses(run, letor, tmp_path):
    status, stdout, err = run("experiment", letor["train"], "-o", tmp_path / "e", "--trials", "1", "--losses",
                              "listmle,listmle-pa,approxndcg,lambdaloss", "--tune", "2", "--trees", "3",
                              "--early-stopping", "0", "--no-plots", "--json")
    assert status == 0, err
    units = json.loads(stdout)["hyperparameters"]["units"]
    assert sorted(u["loss"] for u in units) == ["approxndcg", "lambdaloss", "listmle", "listmle-pa"]
    by_loss = {u["loss"]: u["params"] for u in units}
    # temperature and sigma only rescale the scores under Newton boosting: not searched by default
    assert "temperature" not in by_loss["approxndcg"] and "sigma" not in by_loss["lambdaloss"]
    assert "variant" in by_loss["lambdaloss"]


def test_a_seeded_run_repeats_and_a_larger_budget_adds_its_difference_to_every_loss(run, letor, tmp_path):
    fast = ("--trees", "3", "--early-stopping", "0")
    runs = {}
    for name, seed in (("a", "0"), ("b", "0"), ("c", "1")):
        status, stdout, err = run(*tune_args(letor, tmp_path / name, *fast, "--seed", seed, "--json", budget=3))
        assert status == 0, err
        runs[name] = {loss: [(t["params"], t["value"], t["trees"]) for t in finished(tmp_path / name, loss)]
                      for loss in ("lambdamart", "xendcg")}
    assert runs["a"] == runs["b"]  # the same command, the same trials
    for loss in ("lambdamart", "xendcg"):  # another seed (LightGBM's too): trial 0 has train's parameters still
        assert runs["c"][loss][0][0] == runs["a"][loss][0][0]
        assert [t[0] for t in runs["c"][loss][1:]] != [t[0] for t in runs["a"][loss][1:]]
    status, stdout, err = run(*tune_args(letor, tmp_path / "a", *fast, "--json", budget=5))
    assert status == 0, err
    for loss, s in json.loads(stdout)["losses"].items():
        assert s["ran"] == 2 and s["trials"] == 5
        done = finished(tmp_path / "a", loss)
        assert len(done) == 5 and [(t["params"], t["value"], t["trees"]) for t in done[:3]] == runs["a"][loss]


def test_a_first_run_stopped_by_bad_data_leaves_nothing_that_blocks_the_next(run, letor, tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"junk")
    out = tmp_path / "t"
    status, _, err = run(*tune_args(letor, out, budget=2, losses=("xendcg",))[:3], bad,
                         *tune_args(letor, out, budget=2, losses=("xendcg",))[4:])
    assert status == 3 and "not a readable Parquet file" in err
    status, _, err = run(*tune_args(letor, out, budget=2, losses=("xendcg",)))
    assert status == 0, err
    assert len(finished(out, "xendcg")) == 2


@pytest.mark.slow
def test_dask_workers_share_the_study(letor, tmp_path):
    pytest.importorskip("distributed")
    out = tmp_path / "t"
    done = subprocess.run([sys.executable, "-m", "rankcli", *map(str, tune_args(letor, out, "--dask", "local:2",
                                                                                budget=3, losses=("xendcg",)))],
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert len(finished(out, "xendcg")) == 3


def test_the_losses_own_options_are_searched_and_their_best_values_train(run, letor, tmp_path):
    """lambdaloss's variant and mu and listnet's step are dimensions of their losses' spaces (trial 0 at train's
    defaults), approxndcg's temperature and lambdaloss's sigma are when a --space names them; the best values go into
    train --params-file as loss options, below an explicit --loss-option."""
    from rankcli.train import LOSSES
    from rankcli.tune.space import loss_space

    space = loss_space("lambdaloss", {})
    names = [d.name for d in space.dimensions]
    assert {"variant", "mu"} <= set(names) and "sigma" not in names
    assert space.defaults()["variant"] == "ndcg-loss2++" and space.defaults()["mu"] == 10.0
    assert "temperature" not in [d.name for d in loss_space("approxndcg", {}).dimensions]
    assert LOSSES["listnet"].search["step"] == {"choices": ["paper", "diagonal"], "default": "paper"}
    spec = tmp_path / "space.toml"
    spec.write_text("[approxndcg.temperature]\nlow = 0.05\nhigh = 0.5\n[lambdaloss.sigma]\nlow = 0.5\nhigh = 2.0\n")
    out = tmp_path / "t"
    status, stdout, err = run(*tune_args(letor, out, "--json", "--space", spec, budget=3,
                                         losses=("approxndcg", "lambdaloss", "listnet")))
    assert status == 0, err
    doc = json.loads(stdout)
    for loss in ("approxndcg", "lambdaloss", "listnet"):
        assert doc["losses"][loss]["trials"] == 3
        best = doc["losses"][loss]["best_params"]
        status, _, err = run("train", letor["train"], "--valid", letor["vali"], "-o", tmp_path / loss, "--loss", loss,
                             *FAST, "--params-file", out / loss / "best.json")
        assert status == 0, err
        recorded = json.loads((tmp_path / loss / "rankcli.json").read_text())["loss"]["options"]
        for name in ({"approxndcg": ["temperature"], "listnet": ["step"]}.get(loss, ["variant", "sigma"])):
            assert recorded[name] == pytest.approx(best[name]) if isinstance(best[name], float) else best[name]
    status, _, err = run("train", letor["train"], "-o", tmp_path / "explicit", "--loss", "approxndcg", *FAST[:2],
                         "--params-file", out / "approxndcg" / "best.json", "--loss-option", "temperature=0.7")
    assert status == 0, err
    assert json.loads((tmp_path / "explicit" / "rankcli.json").read_text())["loss"]["options"] == {"temperature": 0.7}
