"""End-to-end tests of `rankcli experiment`: resume after a kill, --jobs independence, JSON shape, errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from rankcli.cli import main
from rankcli.formats.parquet import write_dataset
from tests.conftest import REPO
from tests.test_experiment import synthetic

# Small and fast: 30 queries, 3 trees, no early stopping.
FAST = ["--trees", "3", "--early-stopping", "0", "--no-plots"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("exp") / "data.parquet"
    write_dataset(path, synthetic(30, seed=4))
    return path


def run(capsys, *args):
    """The CLI in-process (fast: no interpreter start-up): (status, stdout, stderr)."""
    status = main(["experiment", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


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
    assert list(doc) == ["settings"]
    assert [s["setting"] for s in doc["settings"]] == ["baseline", "label-noise=0.3"]
    for s in doc["settings"]:
        assert list(s) == ["setting", "losses", "tests"]
        assert list(s["losses"]) == ["lambdamart", "xendcg"]
        assert list(s["losses"]["xendcg"]) == ["ndcg@3", "ndcg@5"]
        assert set(s["losses"]["xendcg"]["ndcg@5"]) == {"mean", "stderr"}
        assert [(t["a"], t["b"], t["metric"]) for t in s["tests"]] == [("lambdamart", "xendcg", "ndcg@3"),
                                                                       ("lambdamart", "xendcg", "ndcg@5")]
        assert all(set(t) == {"a", "b", "metric", "p_value", "p_adjusted"} for t in s["tests"])
    for name in ("config.json", "trials.parquet", "summary.md", "summary.json", "convergence.csv",
                 "sweep-label-noise.csv"):
        assert (tmp_path / "e" / name).exists(), name
    conv = (tmp_path / "e" / "convergence.csv").read_text().splitlines()
    assert conv[0] == "setting,loss,tree,mean,trials" and len(conv) == 1 + 2 * 2 * 3
    # the text rendering of the curves goes to stderr with --json
    assert "convergence (baseline)" in err


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
    (["--use-given-splits"], "Error: --use-given-splits needs DATA to be a directory"),
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
