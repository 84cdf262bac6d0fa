"""rankcli tune and experiment --tune when trials fail, when the study's records are missing and when the journal is
damaged: a failed trial takes a draw (never the same parameters again) and not the budget, --max-failures failed
trials in a row end the loss's study with exit 3 naming the parameters and the value, the journal's own record of
the study's identity refuses a rerun with other options even without study.json, and a damaged journal is exit 3
naming the file, never a traceback."""

from __future__ import annotations

import json
import math
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

FAST = ("--trees", "3", "--early-stopping", "0", "--threads", "1")


@pytest.fixture(scope="module")
def tuned(letor, tmp_path_factory) -> Path:
    """A finished tune of xendcg, budget 2 (copy it before changing it)."""
    from rankcli.cli import main

    out = tmp_path_factory.mktemp("tuned") / "t"
    assert main([str(a) for a in tune_args(letor, out, budget=2)]) == 0
    return out


def copy_of(tuned: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(tuned, tmp_path / "t"))


def tune_args(letor, out, *extra, budget=3, losses=("xendcg",)):
    args = ["tune", letor["train"], "--valid", letor["vali"], "-o", out, "--budget", str(budget), *FAST]
    for loss in losses:
        args += ["--loss", loss]
    return [*args, *extra]


def trials_of(out: Path, loss: str = "xendcg") -> list[dict]:
    from rankcli.tune.runner import collect_one

    return collect_one(out, loss)


def failing(module, monkeypatch, fails, limit: int = 60) -> list:
    """Patch ``module.train_trial`` so that a trial for which ``fails(config, call)`` holds has a NaN validation value
    (the others train); returns the list of the trained configurations. More than ``limit`` trainings fail the test:
    a tune that retries a failing trial forever stops here instead of hanging."""
    from rankcli.tune.trial import TrialOutcome

    real, seen = module.train_trial, []

    def train_trial(prepared, config, objective=None):
        seen.append(config)
        assert len(seen) <= limit, "the tune kept training"
        if fails(config, len(seen)):
            return TrialOutcome(math.nan, 3, 3, 0.0, None)
        return real(prepared, config, objective)

    monkeypatch.setattr(module, "train_trial", train_trial)
    return seen


def non_default(config) -> bool:
    return config.learning_rate != 0.05  # every trial but trial 0 draws another learning rate


def params_key(config) -> tuple:
    return (config.learning_rate, config.num_leaves, config.min_data_in_leaf, json.dumps(config.params, sort_keys=True),
            config.gamma)


# ------------------------------------------------------------------------------------------------ failed trials
def test_a_trial_that_always_fails_ends_the_study_with_exit_3_naming_its_parameters(run, letor, tmp_path,
                                                                                       monkeypatch):
    from rankcli.tune import trial as trial_module

    seen = failing(trial_module, monkeypatch, lambda config, call: config.loss == "xendcg" and non_default(config))
    out = tmp_path / "t"
    status, _, err = run(*tune_args(letor, out, "--max-failures", "4", losses=("xendcg", "lambdamart")))
    assert status == 3, err
    assert "--loss xendcg: 4 trials in a row had no finite validation ndcg@5 (the last, trial 4: learning_rate=" in err
    assert "gave nan), so its study ends there (--max-failures 4)" in err
    assert [c.loss for c in seen] == ["xendcg"] * 5 + ["lambdamart"] * 3  # the other loss goes on
    assert [t["state"] for t in trials_of(out, "lambdamart")] == ["COMPLETE"] * 3
    seen[:] = [c for c in seen if c.loss == "xendcg"]
    assert len(seen) == 5  # trial 0, then 4 failures
    assert len({params_key(c) for c in seen}) == 5  # every failure drew new parameters
    trials = trials_of(out)
    assert [t["state"] for t in trials] == ["COMPLETE"] + ["FAIL"] * 4 and trials[4]["invalid"] == "nan"
    rows = (out / "xendcg" / "trials.csv").read_text().splitlines()
    assert len(rows) == 6 and rows[5].split(",")[1:3] == ["FAIL", "nan"]
    assert json.loads((out / "best.json").read_text())["losses"]["xendcg"]["trial"] == 0  # every file written
    status, _, err = run(*tune_args(letor, out, "--max-failures", "4"))  # the rerun trains nothing and says why
    assert status == 3 and "4 trials in a row" in err and len(seen) == 5
    status, _, err = run(*tune_args(letor, out, "--max-failures", "6"))  # a larger limit tries 2 more
    assert status == 3 and "6 trials in a row" in err and len(seen) == 7
    assert len({params_key(c) for c in seen}) == 7


def test_a_failed_trial_takes_a_draw_and_not_the_budget(run, letor, tmp_path, monkeypatch):
    """The first two drawn trials fail: the budget still finishes 4 trials, with 6 distinct parameter sets (before,
    TPE proposed the failed parameters again and again), and the failures are listed."""
    from rankcli.tune import trial as trial_module

    seen = failing(trial_module, monkeypatch, lambda config, call: call in (2, 3))
    out = tmp_path / "t"
    status, stdout, err = run(*tune_args(letor, out, "--json", budget=4))
    assert status == 0, err
    s = json.loads(stdout)["losses"]["xendcg"]
    assert s["trials"] == 4 and s["failed"] == 2 and s["ran"] == 6
    assert len(seen) == 6 and len({params_key(c) for c in seen}) == 6
    assert [t["state"] for t in trials_of(out)] == ["COMPLETE", "FAIL", "FAIL", "COMPLETE", "COMPLETE", "COMPLETE"]
    assert "trial 1 ndcg@5 nan: failed, not counted" in err


def test_max_failures_is_at_least_1_and_its_default_is_the_librarys(run, letor, tmp_path):
    import re

    from rankcli.cli.tune import command
    from rankcli.tune.draws import DEFAULT_MAX_FAILURES

    status, _, err = run(*tune_args(letor, tmp_path / "t", "--max-failures", "0"))
    assert status == 2 and "--max-failures must be at least 1, got 0" in err and not (tmp_path / "t").exists()
    import inspect

    assert inspect.signature(command).parameters["max_failures"].default == DEFAULT_MAX_FAILURES
    page = (REPO / "docs" / "commands" / "tune.md").read_text()
    assert re.search(rf"\| `--max-failures` \| {DEFAULT_MAX_FAILURES} \|", page)


def test_experiment_tune_counts_finished_trainings_and_ends_on_failures(run, letor, tmp_path, monkeypatch):
    """experiment --tune's budget is tune's: trainings with a finite value; failures take draws, and 10 in a row end
    the unit with exit 3 naming the parameters."""
    from rankcli.train import TrainConfig, load_training_data
    from rankcli.tune import inline

    seen = failing(inline, monkeypatch, lambda config, call: call in (2, 3))
    base = TrainConfig(loss="xendcg", trees=3, early_stopping=0, threads=1)
    prepared = load_training_data(letor["train"], letor["vali"], base).prepare()
    tuned = inline.tune_in_memory(prepared, base, 4)
    assert tuned.trials == 4 and tuned.failed == 2 and len(seen) == 6
    assert len({params_key(c) for c in seen}) == 6
    monkeypatch.undo()
    seen = failing(inline, monkeypatch, lambda config, call: non_default(config))
    status, _, err = run("experiment", letor["train"], "-o", tmp_path / "e", "--trials", "1", "--losses", "xendcg",
                         "--tune", "3", *FAST[:4], "--no-plots")
    assert status == 3, err
    assert "baseline, trial 0, xendcg: --loss xendcg: 10 trials in a row had no finite validation ndcg@5" in err
    assert "gave nan" in err and "rankcli tune's --max-failures default" in err
    assert len(seen) == 11 and len({params_key(c) for c in seen}) == 11


def test_the_failure_streak_passes_over_trials_without_an_outcome():
    from rankcli.tune.draws import failure_streak

    def rec(n, state, invalid=None):
        return {"trial": n, "state": state, "invalid": invalid, "params": {"x": n}}

    assert failure_streak([]) is None
    assert failure_streak([rec(0, "COMPLETE"), rec(1, "FAIL", "nan")]).count == 1
    # a dead process's trial (FAIL, no outcome) and a running one neither break nor extend the streak
    trials = [rec(0, "FAIL", "nan"), rec(1, "FAIL"), rec(2, "RUNNING"), rec(3, "FAIL", "inf")]
    assert failure_streak(trials) == (2, 3, {"x": 3}, "inf")
    assert failure_streak([*trials, rec(4, "COMPLETE")]) is None


# ---------------------------------------------------------------------------------------------- the identity
def test_a_rerun_with_other_options_is_refused_without_study_json(run, letor, tuned, tmp_path):
    out = copy_of(tuned, tmp_path)
    (out / "xendcg" / "study.json").unlink()
    status, _, err = run(*tune_args(letor, out, "--trees", "4", budget=3))  # the later --trees wins
    assert status == 4 and "holds a study with another configuration (train.trees: 3 before, 4 now)" in err, err
    status, _, err = run(*tune_args(letor, out, "--select-by", "ndcg@1", budget=3))
    assert status == 4 and 'train.select_by: "ndcg@5" before, "ndcg@1" now' in err, err
    assert len(trials_of(out)) == 2  # nothing trained under the other options
    status, _, err = run(*tune_args(letor, out, budget=3))  # the same options resume, and study.json is back
    assert status == 0, err
    assert len([t for t in trials_of(out) if t["state"] == "COMPLETE"]) == 3
    assert json.loads((out / "xendcg" / "study.json").read_text())["identity"]["train"]["trees"] == 3


def _strip_identity(journal: Path) -> None:
    """The journal as an earlier version wrote it: without the study's identity."""
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(line for line in lines if "rankcli_identity" not in line))


def test_a_journal_without_a_record_resumes_only_by_a_matching_study_json(run, letor, tuned, tmp_path):
    from rankcli.tune.journal import load_study, recorded_identity

    out = copy_of(tuned, tmp_path)
    journal = out / "xendcg" / "study.journal"
    _strip_identity(journal)
    study_json = (out / "xendcg" / "study.json").read_text()
    (out / "xendcg" / "study.json").unlink()
    status, _, err = run(*tune_args(letor, out, budget=3))
    assert status == 4 and "holds a study whose configuration is recorded nowhere" in err, err
    (out / "xendcg" / "study.json").write_text(study_json)  # an earlier version's directory: study.json decides
    status, _, err = run(*tune_args(letor, out, "--trees", "4", budget=3))
    assert status == 4 and "train.trees: 3 before, 4 now" in err
    status, _, err = run(*tune_args(letor, out, budget=3))
    assert status == 0, err
    assert recorded_identity(load_study(journal, "xendcg"))["train"]["trees"] == 3  # recorded from now on


def test_a_study_of_the_earlier_sampler_is_not_continued(run, letor, tuned, tmp_path):
    out = copy_of(tuned, tmp_path)
    journal = out / "xendcg" / "study.journal"
    _strip_identity(journal)
    doc = json.loads((out / "xendcg" / "study.json").read_text())
    del doc["identity"]["sampler"]  # a study.json as the version before this sampler wrote it
    (out / "xendcg" / "study.json").write_text(json.dumps(doc))
    status, _, err = run(*tune_args(letor, out, budget=3))
    assert status == 4 and "sampler: null before" in err, err


# ---------------------------------------------------------------------------------------------- damaged journals
def _damage(journal: Path, how: str) -> int:
    """Damage ``journal``; returns the line number the error must name."""
    lines = journal.read_bytes().split(b"\n")[:-1]
    if how == "garbage":
        lines.insert(3, b"\x00\xffnot json")
        journal.write_bytes(b"\n".join(lines) + b"\n")
        return 4
    if how == "not-an-entry":
        lines.insert(2, b'["op_code", 1]')
        journal.write_bytes(b"\n".join(lines) + b"\n")
        return 3
    if how == "truncated":  # cut inside the last line
        journal.write_bytes(b"\n".join(lines[:-1]) + b"\n" + lines[-1][: len(lines[-1]) // 2])
        return len(lines)
    raise AssertionError(how)


@pytest.mark.parametrize("how, message", [
    ("garbage", "not an entry of an Optuna journal"),
    ("not-an-entry", "not an entry of an Optuna journal"),
    ("truncated", "the journal ends inside a line"),
])
def test_a_damaged_journal_is_exit_3_naming_the_file_and_line(run, letor, tuned, tmp_path, how, message):
    out = copy_of(tuned, tmp_path)
    journal = out / "xendcg" / "study.journal"
    line = _damage(journal, how)
    before = journal.read_bytes()
    status, _, err = run(*tune_args(letor, out, budget=3))
    assert status == 3 and err.startswith(f"Error: {journal}:{line}: {message}") and ", got '" in err, err
    assert journal.read_bytes() == before  # nothing appended to a damaged journal
    if how == "truncated":
        status, _, err = run(*tune_args(letor, out, "--overwrite", budget=2))  # what the message offers
        assert status == 0, err


def test_entries_optuna_cannot_replay_are_exit_3_naming_the_file(run, letor, tuned, tmp_path):
    out = copy_of(tuned, tmp_path)
    journal = out / "xendcg" / "study.journal"
    with open(journal, "a") as f:
        f.write('{"op_code": 99, "worker_id": "x"}\n')
    status, _, err = run(*tune_args(letor, out, budget=3))
    assert status == 3 and f"Error: {journal}: an Optuna journal that Optuna cannot replay" in err, err


@pytest.mark.parametrize("what", ["directory", "device", "broken link"])
def test_a_journal_that_is_not_a_file_is_exit_3(run, letor, tuned, tmp_path, what):
    out = copy_of(tuned, tmp_path)
    journal = out / "xendcg" / "study.journal"
    journal.unlink()
    if what == "directory":
        journal.mkdir()
    else:
        journal.symlink_to("/dev/null" if what == "device" else tmp_path / "nowhere")
    status, _, err = run(*tune_args(letor, out, budget=3))
    assert status == 3 and f"Error: {journal}: the study's journal is not a regular file" in err, err


def test_a_journal_of_another_loss_is_refused(run, letor, tuned, tmp_path):
    out = copy_of(tuned, tmp_path)
    (out / "lambdamart").mkdir()
    (out / "lambdamart" / "study.journal").write_bytes((out / "xendcg" / "study.journal").read_bytes())
    status, _, err = run(*tune_args(letor, out, budget=2, losses=("xendcg", "lambdamart")))
    assert status == 3 and "holds the study of xendcg, not of lambdamart" in err, err


def test_no_entry_is_appended_after_a_line_cut_short(letor, tmp_path):
    """A journal cut inside its last line while a process works on it (another process hit a full disk): the next
    append is refused (exit 3) instead of fusing its entry with the fragment into a line no reader can parse."""
    from rankcli.errors import InputError
    from rankcli.train import TrainConfig
    from rankcli.tune.config import TuneConfig
    from rankcli.tune.runner import run_tune
    from rankcli.tune.study import LossStudy, Worker

    config = TuneConfig(["xendcg"], 3, TrainConfig(trees=3, early_stopping=0, threads=1))
    out = tmp_path / "t"
    run_tune(letor["train"], letor["vali"], out, TuneConfig(["xendcg"], 1, config.train))
    worker = Worker(out)
    study = LossStudy(out / "xendcg", config.space_of("xendcg"), 0, 3, worker)
    journal = out / "xendcg" / "study.journal"
    with open(journal, "ab") as f:
        f.write(b'{"op_code": 5, "worker_id"')
    size = journal.stat().st_size
    with pytest.raises(InputError, match="the journal ends inside a line"):
        study.claim()
    assert journal.stat().st_size == size
    with open(journal, "ab") as f:  # the fragment completed into a line that is not JSON: named, not a traceback
        f.write(b": 1\n")
    size = journal.stat().st_size
    with pytest.raises(InputError, match=rf"^{journal}:\d+: not an entry of an Optuna journal"):
        study.claim()
    assert journal.stat().st_size == size
    worker.close()


# ---------------------------------------------------------------------------------------------- attacks
def _failing_cli(out_args, fail_when: str, env_extra=None) -> subprocess.Popen:
    """``rankcli`` in a subprocess whose trials fail (NaN) where the Python expression ``fail_when`` (of ``config``)
    holds, after sleeping ``RANKCLI_TEST_SLEEP`` seconds in a failing trial (creating the file ``RANKCLI_TEST_MARK``
    first, if set)."""
    code = ("import math, os, sys, time\n"
            "from rankcli.tune import trial\n"
            "real = trial.train_trial\n"
            "def fake(prepared, config, objective=None):\n"
            f"    if {fail_when}:\n"
            "        if os.environ.get('RANKCLI_TEST_MARK'):\n"
            "            open(os.environ['RANKCLI_TEST_MARK'], 'w').close()\n"
            "        time.sleep(float(os.environ.get('RANKCLI_TEST_SLEEP', '0')))\n"
            "        return trial.TrialOutcome(math.nan, 3, 3, 0.0, None)\n"
            "    return real(prepared, config, objective)\n"
            "trial.train_trial = fake\n"
            "from rankcli.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env_extra or {})}
    return subprocess.Popen([sys.executable, "-c", code, *map(str, out_args)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


@pytest.mark.slow
def test_two_processes_share_a_study_while_one_trial_fails(letor, tmp_path):
    """Two processes on one study, the trial of start-up draw 1 fails in whichever takes it: both finish (exit 0),
    the budget's 5 trials finish, the failed parameters are never proposed again."""
    from rankcli.train import TrainConfig
    from rankcli.tune.config import TuneConfig
    from rankcli.tune.draws import startup_point

    space = TuneConfig(["xendcg"], 5, TrainConfig(trees=3, early_stopping=0, threads=1)).space_of("xendcg")
    bad = startup_point(space, 0, 1)["learning_rate"]
    out = tmp_path / "t"
    args = tune_args(letor, out, budget=5)
    procs = [_failing_cli(args, f"config.learning_rate == {bad!r}") for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
    trials = trials_of(out)
    assert sum(t["state"] == "COMPLETE" for t in trials) == 5
    assert [t["params"]["learning_rate"] for t in trials].count(bad) == 1
    assert [t["state"] for t in trials if t["params"]["learning_rate"] == bad] == ["FAIL"]


@pytest.mark.slow
def test_sigint_during_a_failing_trial_and_a_rerun(letor, tmp_path):
    """Ctrl-C while a trial that will fail is training: exit 130, every file written; the rerun (where it trains
    normally) runs that trial's parameters again in its place and finishes the budget."""
    from rankcli.train import TrainConfig
    from rankcli.tune.config import TuneConfig
    from rankcli.tune.draws import startup_point

    out = tmp_path / "t"
    args = tune_args(letor, out, budget=4)
    mark = tmp_path / "training"
    proc = _failing_cli(args, "config.learning_rate != 0.05", {"RANKCLI_TEST_SLEEP": "30",
                                                                "RANKCLI_TEST_MARK": str(mark)})
    deadline = time.time() + 60
    while time.time() < deadline and not mark.exists():  # trial 1 is training (and will fail)
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert [t["state"] for t in trials_of(out)] == ["COMPLETE", "RUNNING"]
    assert (out / "best.json").exists() and (out / "xendcg" / "trials.csv").exists()
    rerun = _failing_cli(args, "False")
    _, err = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, err
    trials = trials_of(out)
    assert [t["state"] for t in trials] == ["COMPLETE", "FAIL", "COMPLETE", "COMPLETE", "COMPLETE"]
    assert trials[2]["retry_of"] == 1 and trials[2]["params"] == trials[1]["params"]
    space = TuneConfig(["xendcg"], 4, TrainConfig(trees=3, early_stopping=0, threads=1)).space_of("xendcg")
    assert trials[2]["params"] == startup_point(space, 0, 1)  # start-up draw 1, as an uninterrupted run has it


def test_a_trial_whose_process_died_before_it_drew_runs_its_draw_again(letor, tmp_path):
    """A process killed between taking a trial and suggesting its parameters (the trial has none yet): the trial run
    in its place has the draw's parameters, so the resumed study is the uninterrupted one."""
    from rankcli.train import TrainConfig
    from rankcli.tune.config import TuneConfig
    from rankcli.tune.draws import startup_point
    from rankcli.tune.runner import run_tune
    from rankcli.tune.study import LossStudy, Worker

    config = TuneConfig(["xendcg"], 4, TrainConfig(trees=3, early_stopping=0, threads=1))
    out = tmp_path / "t"
    run_tune(letor["train"], letor["vali"], out, TuneConfig(["xendcg"], 1, config.train))
    dead = Worker(out)
    study = LossStudy(out / "xendcg", config.space_of("xendcg"), 0, 4, dead)
    with study.claim_lock():  # claim() up to Optuna's ask, without the suggestions
        from rankcli.tune.draws import ask

        ask(study.study, study.space, 0, 1, 4, 1).set_user_attr("worker", dead.id)
    dead.close()
    result = run_tune(letor["train"], letor["vali"], out, config)
    trials = result.losses["xendcg"].trials
    assert [t["state"] for t in trials] == ["COMPLETE", "FAIL", "COMPLETE", "COMPLETE", "COMPLETE"]
    assert trials[2]["params"] == startup_point(config.space_of("xendcg"), 0, 1)
    fresh = run_tune(letor["train"], letor["vali"], tmp_path / "fresh", config).losses["xendcg"].finished
    assert [(t["params"], t["value"]) for t in fresh] == [(t["params"], t["value"]) for t in result.losses[
        "xendcg"].finished]
