"""End-to-end tests of `rankcli experiment`: resume after a kill, --jobs independence, JSON shape, errors."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from rankcli.formats.parquet import write_dataset
from tests.conftest import REPO, run_main
from tests.experiment.test_experiment import synthetic, write_folds

# Small and fast: 30 queries, 3 trees, no early stopping.
FAST = ["--trees", "3", "--early-stopping", "0", "--no-plots"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("exp") / "data.parquet"
    write_dataset(path, synthetic(30, seed=4))
    return path


def run(capsys, *args):
    """``rankcli experiment ARGS`` in-process: (status, stdout, stderr)."""
    return run_main(capsys, "experiment", *args)


def _results(exp_dir):
    # seconds is wall time, the only column allowed to differ between runs
    return pq.read_table(exp_dir / "trials.parquet").drop(["seconds"]).to_pylist()


def test_resume_after_kill_equals_uninterrupted_and_jobs_do_not_matter(capsys, data, tmp_path):
    args = ["--losses", "lambdamart,xendcg,listnet", "--trials", "3", "--seed", "9", *FAST]
    status, _, err = run(capsys, data, "-o", tmp_path / "ref", *args)
    assert status == 0, err
    expected = _results(tmp_path / "ref")
    assert len(expected) == 3 * 3 * 2

    # --jobs 2 (two worker processes): identical trial results
    status, _, err = run(capsys, data, "-o", tmp_path / "par", *args, "--jobs", "2")
    assert status == 0, err
    assert _results(tmp_path / "par") == expected

    # a CLI process killed after the first unit lands in trials.parquet, then rerun: the same final results
    target = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "rankcli", "experiment", str(data), "-o", str(target), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 120
    while not (target / "trials.parquet").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = _results(target)
    assert 0 < len(partial) < len(expected)
    status, _, err = run(capsys, data, "-o", target, *args)
    assert status == 0, err
    assert "already done (resuming)" in err
    assert _results(target) == expected
    assert (target / "summary.md").read_text() == (tmp_path / "ref" / "summary.md").read_text()


def test_json_shape_and_files(capsys, data, tmp_path):
    status, out, err = run(capsys, data, "-o", tmp_path / "e", "--losses", "lambdamart,xendcg", "--trials", "2",
              "--metric", "ndcg@3,ndcg@5", "--label-noise", "0.3", "--json", *FAST)
    assert status == 0, err
    doc = json.loads(out)
    assert list(doc) == ["test", "settings"]
    # the test is named: the corrected resampled t-test over trials of 30 * (0.6, 0.2, 0.2) queries
    assert {k: doc["test"][k] for k in ("name", "n_test", "n_train")} == {"name": "corrected-ttest", "n_test": 6,
                                                                         "n_train": 24}
    assert doc["test"]["label"].startswith("corrected resampled t-test across trials (Nadeau & Bengio 2003)")
    assert [s["setting"] for s in doc["settings"]] == ["baseline", "label-noise=0.3"]
    for s in doc["settings"]:
        assert list(s) == ["setting", "losses", "tests"]
        assert list(s["losses"]) == ["lambdamart", "xendcg"]
        assert list(s["losses"]["xendcg"]) == ["ndcg@3", "ndcg@5"]
        assert set(s["losses"]["xendcg"]["ndcg@5"]) == {"mean", "stderr"}
        assert [(t["a"], t["b"], t["metric"]) for t in s["tests"]] == [("lambdamart", "xendcg", "ndcg@3"),
                                                                       ("lambdamart", "xendcg", "ndcg@5")]
        assert all(set(t) == {"a", "b", "metric", "test", "n", "difference", "p_value", "p_adjusted"}
                   for t in s["tests"])
        assert all(t["test"] == "corrected-ttest" for t in s["tests"])
        assert all(t["n"] == 2 for t in s["tests"])          # random splits: the units are the 2 trials
    for name in ("config.json", "trials.parquet", "summary.md", "summary.json", "convergence.csv",
                 "sweep-label-noise.csv"):
        assert (tmp_path / "e" / name).exists(), name
    conv = (tmp_path / "e" / "convergence.csv").read_text().splitlines()
    assert conv[0] == "setting,loss,tree,mean,stderr,trials,running" and len(conv) == 1 + 2 * 2 * 3
    full = json.loads((tmp_path / "e" / "summary.json").read_text())
    assert full["protocol"] == "random-splits" and full["unit"] == "trial" and full["test"] == doc["test"]
    assert "p (corrected-ttest)" in (tmp_path / "e" / "summary.md").read_text()
    t = full["settings"][0]["tests"][0]
    means = {x: full["settings"][0]["losses"][x][t["metric"]]["mean"] for x in (t["a"], t["b"])}
    assert t["difference"] == pytest.approx(means[t["b"]] - means[t["a"]])
    sweep = [line.split(",") for line in (tmp_path / "e" / "sweep-label-noise.csv").read_text().splitlines()]
    assert sweep[0][-4:] == ["xendcg - lambdamart", "xendcg - lambdamart p_adjusted", "xendcg - lambdamart n",
                             "test"]
    assert sweep[1][-1] == "corrected-ttest"
    # the text rendering of the curves goes to stderr with --json
    assert "convergence (baseline)" in err


BEFORE_TEST = REPO / "tests" / "data" / "experiment-before-test"


def test_a_directory_written_before_test_existed_resumes_under_every_test(capsys, tmp_path):
    """An experiment directory written by rankcli before --test existed (tests/data/experiment-before-test, its
    PROVENANCE.md says how) resumes when its command is run again: no unit is trained again, and the summary is
    computed anew, under the corrected test by default and under the paper's test with --test ttest (the test is not
    part of the identity); a larger --trials extends it."""
    shutil.copytree(BEFORE_TEST, tmp_path / "old")
    exp, trials = tmp_path / "old" / "exp", (tmp_path / "old" / "exp" / "trials.parquet").read_bytes()
    command = [tmp_path / "old" / "data.parquet", "-o", exp, "--losses", "lambdamart,xendcg", "--trials", "2",
               "--trees", "3", "--early-stopping", "0", "--no-plots", "--metric", "ndcg@5"]
    values = {r["loss"]: r["value"] for r in pq.read_table(exp / "trials.parquet").to_pylist() if r["trial"] == 0}
    assert len(values) == 2
    for test in (None, "ttest", "corrected-ttest"):
        status, out, err = run(capsys, *command, *(["--test", test] if test else []))
        assert status == 0, err
        assert "4 units (2 losses x 2 trials x 1 settings), 4 already done (resuming)" in err
        assert "0 units trained, 4 resumed" in err
        assert (exp / "trials.parquet").read_bytes() == trials
        summary = json.loads((exp / "summary.json").read_text())
        assert summary["test"]["name"] == (test or "corrected-ttest")
        assert summary["settings"][0]["tests"][0]["test"] == (test or "corrected-ttest")
        assert json.loads((exp / "config.json").read_text())["test"] == (test or "corrected-ttest")
        label = "corrected resampled t-test" if test != "ttest" else "the paper's test (trials treated as independent)"
        assert label in out and label in (exp / "summary.md").read_text()
    status, _, err = run(capsys, *command[:6], "3", *command[7:])
    assert status == 0, err
    assert "2 units trained, 4 resumed" in err


@pytest.mark.parametrize("args, message", [
    (["--test", "permutation"], "Error: --test permutation: across repeated random splits the units are the trials, "
                                "which share test and training queries and so are not independent; the permutation "
                                "test treats them as independent and has no correction for the overlap"),
    (["--test", "wilcoxon"], "Error: --test wilcoxon: across repeated random splits"),
    (["--test", "bootstrap"], "Error: --test bootstrap: across repeated random splits"),
    (["--test", "t"], "Error: --test: expected one of corrected-ttest, ttest, permutation, wilcoxon, bootstrap, "
                      "got 't'\n"),
])
def test_tests_that_take_overlapping_trials_as_independent_are_refused(capsys, data, tmp_path, args, message):
    status, _, err = run(capsys, data, "-o", tmp_path / "e", "--trials", "2", *args, *FAST)
    assert status == 2 and err.startswith(message.replace("\\n", "\n")), err
    assert not (tmp_path / "e").exists()


def test_different_configuration_refused(capsys, data, tmp_path):
    status, _, err = run(capsys, data, "-o", tmp_path / "e", "--losses", "xendcg", "--trials", "1", *FAST)
    assert status == 0, err
    status, _, err = run(capsys, data, "-o", tmp_path / "e", "--losses", "xendcg", "--trials", "1", "--seed", "1",
                         *FAST)
    assert status == 4
    assert err == (
        f"Error: {tmp_path / 'e'}: holds an experiment with a different configuration (seed: 0 before, 1 now); "
        "rerun with the same options to resume it, or pass --overwrite to start over\n")
    status, _, err = run(capsys, data, "-o", tmp_path / "e", "--losses", "xendcg", "--trials", "1", "--seed", "1",
                         "--overwrite", *FAST)
    assert status == 0, err


@pytest.mark.parametrize("args, message", [
    (["--split", "0.5,0.5"], "Error: --split: expected three fractions (train, validation, test), got '0.5,0.5'\n"),
    (["--losses", "lambdamrt"], "Error: unknown loss 'lambdamrt'; did you mean 'lambdamart'?"),
    (["--label-noise", "0.1,x"], "Error: --label-noise: expected comma-separated numbers, got 'x'\n"),
    (["--label-noise", "1.5"], "Error: --label-noise: levels must be in [0, 1], got 1.5\n"),
    (["--trials", "0"], "Error: --trials must be >= 1, got 0\n"),
    (["--learning-rate", "-1"], "Error: --learning-rate must be positive, got -1\n"),
    (["--num-leaves", "1"], "Error: --num-leaves must be at least 2, got 1\n"),
    (["--min-data-in-leaf", "-1"], "Error: --min-data-in-leaf must be 0 or more, got -1\n"),
    (["--use-given-splits"], "Error: --folds needs DATA to be a directory holding Fold1/ .. FoldK/"),
    (["--folds"], "Error: --folds needs DATA to be a directory holding Fold1/ .. FoldK/"),
    (["--folds", "--trials", "3"], "Error: --trials does not combine with --folds: each fold is trained once per "
                                   "loss (the folds are the trials); drop --trials\n"),
    (["--use-given-splits", "--trials", "3"], "Error: --trials does not combine with --use-given-splits"),
    (["--folds", "--split", "0.5,0.25,0.25"], "Error: --split does not combine with --folds"),
    (["--position-bias", "1,x"], "Error: --position-bias: expected comma-separated numbers, got 'x'\n"),
    (["--position-bias", "-1"], "Error: --position-bias: levels are PBM exponents eta >= 0 (examination "
                                "(1/r)^eta), got -1\n"),
    (["--position-bias", "inf"], "Error: --position-bias: levels are PBM exponents eta >= 0"),
    (["--position-bias", "1,1"], "Error: --position-bias: a level is listed twice, got 1,1\n"),
    (["--position-bias", "1", "--logging-fraction", "0"], "Error: --logging-fraction: a fraction of the training "
                                                          "queries in (0, 1), got 0\n"),
    (["--position-bias", "1", "--logging-fraction", "1"], "Error: --logging-fraction: a fraction of the training "
                                                          "queries in (0, 1), got 1\n"),
    (["--logging-fraction", "0.1"], "Error: --logging-fraction sets the logging ranker of the --position-bias sweep; "
                                    "give --position-bias ETA[,ETA...] or drop it\n"),
    (["--losses", "xendcg", "--step", "paper"], "Error: --step is ListNet's boosting step (listnet), not --losses "
                                                "xendcg's\n"),
    (["--losses", "xendcg,lambdamart", "--step", "paper"], "Error: --step is ListNet's boosting step (listnet), "
                                                           "and --losses xendcg,lambdamart has none\n"),
    (["--losses", "xendcg,listnet", "--loss-option", "temperature=1"],
     "Error: --loss-option temperature=1: no loss of --losses xendcg,listnet has an option 'temperature'\n"),
    (["--losses", "listnet", "--loss-option", "approxndcg:temperature=1"],
     "Error: --loss-option approxndcg:temperature=1: approxndcg is not trained here (--losses listnet)\n"),
    (["--losses", "approxndcg,lambdaloss", "--loss-option", "sigma=0"],
     "Error: --loss-option lambdaloss:sigma: expected >= 0.0001, <= 10000, got '0'\n"),
])
def test_usage_errors(capsys, data, tmp_path, args, message):
    status, _, err = run(capsys, data, "-o", tmp_path / "e", *args, *FAST)
    assert status == 2
    assert err.startswith(message)
    assert not (tmp_path / "e" / "trials.parquet").exists()


@pytest.mark.parametrize("args, status, message", [
    (["--select-by", "foo"], 2, "Error: unknown metric 'foo'"),
    (["--preset", "nope"], 2, "Error: unknown preset 'nope' (choose from paper-web30k, paper-yahoo)\n"),
])
def test_bad_select_by_or_preset_fails_before_exp_dir_is_created(capsys, data, tmp_path, args, status, message):
    """Checked up front: not after writing config.json (a corrected rerun was then refused as a different config)."""
    got, _, err = run(capsys, data, "-o", tmp_path / "e", "--losses", "xendcg", "--trials", "1", *args, *FAST)
    assert got == status and err.startswith(message)
    assert not (tmp_path / "e").exists()


def test_missing_data(capsys, tmp_path):
    status, _, err = run(capsys, tmp_path / "nope.parquet", "-o", tmp_path / "e")
    assert status == 3
    assert err == f"Error: {tmp_path / 'nope.parquet'}: no such file or directory\n"


def test_param_parsing():
    from rankcli.cli.experiment import _parse_params
    from rankcli.errors import UsageError

    assert _parse_params(["max_bin=63", "lambda_l2=0.5", "boosting=dart", "extra_trees=true"]) == {
        "max_bin": 63, "lambda_l2": 0.5, "boosting": "dart", "extra_trees": True}
    with pytest.raises(UsageError, match="--param expects key=value, got 'max_bin'"):
        _parse_params(["max_bin"])


# --- folds pooled as LETOR results are reported, the sign convention (b - a), curves carried forward ----------------

FOLD_ARGS = ["--losses", "lambdamart,xendcg", "--trees", "3", "--early-stopping", "0", "--no-plots"]


@pytest.fixture(scope="module")
def folds(tmp_path_factory):
    return write_folds(tmp_path_factory.mktemp("folds") / "data", k=2, n_queries=16)


def test_folds_end_to_end(capsys, folds, tmp_path):
    status, out, err = run(capsys, folds, "--folds", "-o", tmp_path / "e", *FOLD_ARGS)
    assert status == 0, err
    assert "experiment: 4 units (2 losses x 2 folds x 1 settings)" in err
    assert "paired t-test over the pooled test queries (n = queries" in out and "xendcg - lambdamart" in out
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    t = summary["settings"][0]["tests"][0]
    assert (t["a"], t["b"], t["trials"]) == ("lambdamart", "xendcg", 2) and t["n"] > 2
    md = (tmp_path / "e" / "summary.md").read_text()
    assert "| difference | metric | mean difference | stderr | n | p (ttest) | p adjusted |" in md
    assert f"| xendcg - lambdamart | ndcg@5 | {t['difference']:+.4f} |" in md and f"| {t['n']} |" in md
    assert sorted(pq.read_table(tmp_path / "e" / "trials.parquet").column("trial").to_pylist()) == [1] * 4 + [2] * 4
    assert sorted(p.name for p in (tmp_path / "e" / "queries").iterdir()) == [
        f"baseline__0000{k}__{x}.parquet" for k in (1, 2) for x in ("lambdamart", "xendcg")]
    # --jobs 2: workers read each fold when a unit needs it; the same results
    status, _, err = run(capsys, folds, "--folds", "-o", tmp_path / "par", *FOLD_ARGS, "--jobs", "2")
    assert status == 0, err
    assert _results(tmp_path / "par") == _results(tmp_path / "e")
    assert (tmp_path / "par" / "summary.json").read_text() == (tmp_path / "e" / "summary.json").read_text()
    # the old spelling on one fold's directory: the same per-query tests
    status, out, err = run(capsys, folds / "Fold1", "--use-given-splits", "-o", tmp_path / "one", *FOLD_ARGS)
    assert status == 0, err
    one = json.loads((tmp_path / "one" / "summary.json").read_text())["settings"][0]["tests"][0]
    assert one["trials"] == 1 and one["n"] > 1
    # --test: compare's tests over the pooled queries (a rerun resumes and summarises again); not the corrected one
    status, out, err = run(capsys, folds, "--folds", "-o", tmp_path / "e", *FOLD_ARGS, "--test", "wilcoxon")
    assert status == 0 and "0 units trained, 4 resumed" in err, err
    assert "Wilcoxon signed-rank test over the pooled test queries (n = queries" in out
    assert json.loads((tmp_path / "e" / "summary.json").read_text())["test"] == {
        "name": "wilcoxon", "label": "Wilcoxon signed-rank test over the pooled test queries"}
    status, _, err = run(capsys, folds, "--folds", "-o", tmp_path / "e", *FOLD_ARGS, "--test", "corrected-ttest")
    assert status == 2 and err.startswith("Error: --test corrected-ttest corrects for trials whose test sets are "
                                          "drawn from one pool of queries (repeated random splits); with --folds"), err


def test_folds_data_errors(capsys, folds, tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(folds, bad)
    (bad / "Fold2" / "vali.parquet").unlink()
    status, _, err = run(capsys, bad, "--folds", "-o", tmp_path / "e", *FOLD_ARGS)
    assert status == 3
    assert err.startswith(f"Error: {bad / 'Fold2'}: no vali.parquet, but {bad / 'Fold1' / 'vali.parquet'} exists")
    shutil.copy(bad / "Fold1" / "vali.parquet", bad / "Fold2" / "vali.parquet")
    write_dataset(bad / "Fold2" / "train.parquet", synthetic(8, seed=3, n_features=6), overwrite=True)
    status, _, err = run(capsys, bad, "--folds", "-o", tmp_path / "e", *FOLD_ARGS)
    assert status == 3
    assert err.startswith(f"Error: {bad / 'Fold2' / 'train.parquet'}: 6 features (f1..f6), but "
                          f"{bad / 'Fold1' / 'train.parquet'} has 4 features (f1..f4)")
    assert not (tmp_path / "e").exists()


def test_folds_resume_after_ctrl_c(capsys, folds, tmp_path):
    """SIGINT (Ctrl-C) once the first unit is saved: exit 130; the same command then resumes to the same results."""
    args = [str(folds), "--folds", *FOLD_ARGS]
    status, _, err = run(capsys, *args, "-o", tmp_path / "ref")
    assert status == 0, err
    target = tmp_path / "stopped"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "rankcli", "experiment", *args, "-o", str(target)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 120
    while not (target / "trials.parquet").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    assert proc.wait() == 130
    assert 0 < len(_results(target)) < len(_results(tmp_path / "ref"))
    status, _, err = run(capsys, *args, "-o", target)
    assert status == 0, err
    assert "already done (resuming)" in err
    assert _results(target) == _results(tmp_path / "ref")
    assert (target / "summary.md").read_text() == (tmp_path / "ref" / "summary.md").read_text()
    assert (target / "summary.json").read_text() == (tmp_path / "ref" / "summary.json").read_text()


def test_convergence_with_early_stopping_counts_every_trial_at_every_tree(capsys, data, tmp_path):
    status, out, err = run(capsys, data, "-o", tmp_path / "e", "--losses", "lambdamart,xendcg", "--trials", "4",
                           "--trees", "30", "--early-stopping", "2", "--no-plots")
    assert status == 0, err
    rows = [line.split(",") for line in (tmp_path / "e" / "convergence.csv").read_text().splitlines()[1:]]
    assert {r[5] for r in rows} == {"4"}                      # trials: every point averages all 4 trials
    assert any(int(r[6]) < 4 for r in rows)                   # ... though some had stopped (carried forward)
    assert "carries forward the value of the model it keeps" in out


@pytest.mark.parametrize("losses", ["xendcg,,lambdamart", "xendcg,", ",xendcg"])
def test_an_empty_loss_name_is_a_usage_error_as_an_empty_metric_is(capsys, data, tmp_path, losses):
    """'xendcg,,lambdamart' trained two losses and 'xendcg,' one, while '--metric ndcg@5,,' was exit 2."""
    status, out, err = run(capsys, data, "-o", tmp_path / "e", "--losses", losses, "--trials", "1", *FAST)
    assert status == 2 and err == f"Error: --losses: empty loss name in {losses!r}\n"
    assert not (tmp_path / "e").exists()


def test_position_bias_sweep_reports_naive_against_ips_per_loss(capsys, data, tmp_path):
    """Does IPS undo position bias: each loss trained naive and +ips on clicks a logging ranker logged; the JSON and
    summary.md
    carry the variants and their paired tests (whatever the numbers say)."""
    data = tmp_path / "d.parquet"
    write_dataset(data, synthetic(60, seed=4))
    args = ["--losses", "xendcg,lambdamart", "--trials", "2", "--position-bias", "0,1", "--json", *FAST]
    status, out, err = run(capsys, data, "-o", tmp_path / "e", *args)
    assert status == 0, err
    assert ("experiment: 24 units (2 losses x 2 trials x 3 settings, naive and +ips variants, and both +control on "
            "the randomised log, in the position-bias settings)") in err
    doc = json.loads(out)
    assert [s["setting"] for s in doc["settings"]] == ["baseline", "position-bias=0", "position-bias=1"]
    for s in doc["settings"][1:]:
        assert list(s["losses"]) == ["xendcg", "xendcg+ips", "xendcg+control", "xendcg+ips+control", "lambdamart"]
        assert {(t["a"], t["b"]) for t in s["tests"]} == {("xendcg", "xendcg+ips"),
                                                          ("xendcg+control", "xendcg+ips+control")}
        assert all(t["n"] == 2 for t in s["tests"])
    md = (tmp_path / "e" / "summary.md").read_text()
    assert ("| position-bias | xendcg | xendcg+ips | xendcg+control | xendcg+ips+control | lambdamart | xendcg+ips - "
            "xendcg | xendcg+ips+control - xendcg+control | p adjusted (xendcg+ips - xendcg) |") in md
    assert "lambdamart: naive only" in md
    assert (tmp_path / "e" / "sweep-position-bias.csv").read_text().startswith("level,setting,xendcg,")
    # rerun: everything resumed, the same summary
    before = md
    status, _, err = run(capsys, data, "-o", tmp_path / "e", *args)
    assert status == 0 and "24 already done (resuming)" in err
    assert (tmp_path / "e" / "summary.md").read_text() == before


def test_experiment_imports_lightgbm_without_scikit_learn(data, tmp_path):
    """Like train and predict, an experiment on one machine loads LightGBM without its scikit-learn integration
    (which rankcli never uses and which costs ~1.5-2 s of CPU in every process); it imported it in full."""
    import subprocess
    import sys

    from tests.conftest import REPO

    code = ("import sys\nfrom rankcli.cli import main\n"
            f"status = main(['experiment', {str(data)!r}, '-o', {str(tmp_path / 'exp')!r}, '--losses', 'xendcg', "
            f"'--trials', '1', *{FAST!r}])\n"
            "print(status, 'lightgbm' in sys.modules, 'sklearn' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.stdout.split()[-3:] == ["0", "True", "False"], result.stderr


def test_every_loss_side_by_side_with_its_options(capsys, data, tmp_path):
    losses = "lambdamart,xendcg,listnet,listmle,listmle-pa,approxndcg,lambdaloss"
    status, _, err = run(capsys, data, "-o", tmp_path / "e", "--losses", losses, "--trials", "2", "--json",
                         "--loss-option", "approxndcg:temperature=0.5", "--step", "diagonal", *FAST)
    assert status == 0, err
    rows = _results(tmp_path / "e")
    assert {r["loss"] for r in rows} == set(losses.split(",")) and len(rows) == 7 * 2 * 2
    recorded = json.loads((tmp_path / "e" / "config.json").read_text())["config"]["loss_options"]
    assert recorded == {"approxndcg": {"temperature": 0.5},  # listnet's diagonal step is as before the option
                        "lambdaloss": {"variant": "ndcg-loss2++", "mu": 10.0, "sigma": 1.0}}
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    assert summary["loss_options"]["listnet"] == {"step": "diagonal"}
    assert "Loss options: listnet step=diagonal; approxndcg temperature=0.5; lambdaloss variant=ndcg-loss2++, mu=10, " \
           "sigma=1." in (tmp_path / "e" / "summary.md").read_text()
    # the same command without --step resumes with the step the directory started with; another step is refused
    status, _, err = run(capsys, data, "-o", tmp_path / "e", "--losses", losses, "--trials", "2",
                         "--loss-option", "approxndcg:temperature=0.5", *FAST)
    assert status == 0 and "0 units trained, 14 resumed" in err
    status, _, err = run(capsys, data, "-o", tmp_path / "e", "--losses", losses, "--trials", "2",
                         "--loss-option", "approxndcg:temperature=0.5", "--step", "paper", *FAST)
    assert status == 4 and '"listnet": {"step": "paper"}} now' in err
