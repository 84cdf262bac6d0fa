"""``rankcli experiment --fuse``: each trial's losses fused into one more run, reported and tested as a loss; the
fused run is the fusion of the losses' stored test scores; resume; the option at its default leaves the identity
as it was."""

from __future__ import annotations

import json

import numpy as np
import pytest

import rankcli.experiment as ex
from rankcli.core.metrics import Convention, evaluate
from rankcli.errors import UsageError
from rankcli.experiment.data import trial_parts
from rankcli.experiment.fusion import fuse_scores
from rankcli.formats import experiment_store as store
from rankcli.formats.parquet import write_dataset
from tests import reference_fusion as ref
from tests.experiment.test_experiment import synthetic, write_folds

CFG = dict(losses=["lambdamart", "xendcg"], trials=2, trees=3, early_stopping=0, fuse="rrf")


def test_fused_run_is_reported_and_tested_beside_the_losses(tmp_path):
    path = tmp_path / "d.parquet"
    write_dataset(path, synthetic(30))
    res = ex.run_experiment(path, tmp_path / "exp", ex.ExperimentConfig(**CFG))
    assert res.ran_units == 4  # the losses; the fused runs are made from their scores
    summary = json.loads((tmp_path / "exp" / "summary.json").read_text())
    base = summary["settings"][0]
    assert list(base["losses"]) == ["lambdamart", "xendcg", "fused-rrf"]
    assert {(t["a"], t["b"]) for t in base["tests"]} == {
        ("lambdamart", "xendcg"), ("lambdamart", "fused-rrf"), ("xendcg", "fused-rrf")}
    data = ex.load_data(path)
    config = ex.ExperimentConfig(**CFG)
    for trial in (0, 1):
        test = trial_parts(data, config, trial).test
        scores = {loss: store.read_scores(store.scores_path(tmp_path / "exp", "baseline", trial, loss))
                  for loss in CFG["losses"]}
        fused = fuse_scores(test.offsets, scores, "rrf")
        # the fusion is the definition's, every loss ranking every test row
        runs = [{str(q): {f"r{i}": float(s[i]) for i in range(a, b)}
                 for q, (a, b) in enumerate(zip(test.offsets[:-1], test.offsets[1:]))} for s in scores.values()]
        want = ref.fuse(runs, "rrf", params={"k": 60})
        assert all(abs(fused[int(d[1:])] - want[q][d]) < 1e-12 for q in want for d in want[q])
        value = evaluate(["ndcg@10"], test.labels, fused, test.offsets, Convention.preset("paper")).means["ndcg@10"]
        stored = [r for r in _rows(tmp_path / "exp") if (r["trial"], r["loss"], r["metric"]) ==
                  (trial, "fused-rrf", "ndcg@10")]
        assert stored and stored[0]["value"] == pytest.approx(value, abs=1e-15)
    again = ex.run_experiment(path, tmp_path / "exp", ex.ExperimentConfig(**CFG))
    assert again.ran_units == 0 and again.summary == res.summary


def _rows(exp_dir):
    import pyarrow.parquet as pq

    return pq.read_table(exp_dir / "trials.parquet").to_pylist()


def test_folds_pool_the_fused_runs_queries(tmp_path):
    root = write_folds(tmp_path / "d", k=2, n_queries=12)
    res = ex.run_experiment(root, tmp_path / "exp", ex.ExperimentConfig(
        losses=["lambdamart", "xendcg"], folds=True, trees=3, early_stopping=0, fuse="combmnz"))
    tests = res.summary["settings"][0]["tests"]
    fused = [t for t in tests if t["b"] == "fused-mnz"]
    assert len(fused) == 2 * 2 and all(t["n"] > 2 for t in fused)  # 2 losses x 2 metrics, over pooled queries
    assert store.queries_path(tmp_path / "exp", "baseline", 1, "fused-mnz").is_file()


def test_the_option_at_its_default_leaves_the_identity_as_it_was():
    plain = ex.ExperimentConfig(losses=["lambdamart", "xendcg"], trials=2)
    assert "fuse" not in plain.identity()
    fused = ex.ExperimentConfig(losses=["lambdamart", "xendcg"], trials=2, fuse="reciprocal-rank-fusion")
    fused.validate()
    assert fused.identity()["fuse"] == "rrf" and {k: v for k, v in fused.identity().items() if k != "fuse"} == \
        plain.identity()


@pytest.mark.parametrize("fuse, losses, message", [
    ("probfuse", ["lambdamart", "xendcg"], "learns from judged training queries"),
    ("rbc", ["lambdamart", "xendcg"], "rbc needs --phi"),
    ("rrf", ["xendcg"], "two losses or more, got 1"),
    ("nonsense", ["lambdamart", "xendcg"], "unknown fusion method"),
])
def test_methods_that_cannot_run_unattended_are_refused(fuse, losses, message):
    with pytest.raises(UsageError, match=message):
        ex.ExperimentConfig(losses=losses, trials=2, fuse=fuse).validate()


def test_the_command_line_option(tmp_path, run):
    path = tmp_path / "d.parquet"
    write_dataset(path, synthetic(24))
    status, out, err = run("experiment", path, "-o", tmp_path / "exp", "--losses", "lambdamart,xendcg", "--trials",
                           "2", "--trees", "3", "--fuse", "rrf", "--no-plots")
    assert status == 0, err
    assert "fused-rrf" in out and "fused-rrf - lambdamart" in out
    assert np.isfinite(json.loads((tmp_path / "exp" / "summary.json").read_text())["settings"][0]["losses"][
        "fused-rrf"]["ndcg@5"]["mean"])
