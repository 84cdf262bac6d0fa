"""explain at scale: each permutation scored by the trees that read the feature only gives the whole model's
numbers; the progress counts TreeSHAP's batches in its total and advances through them; the contributions on a
seeded sample of queries (which rows, the JSON's record, the ratio estimator's standard error by simulation)."""

from __future__ import annotations

import numpy as np
import pytest

from rankcli.dataset import Dataset
from rankcli.explain import explain
from rankcli.explain.contributions import estimate, sample_queries
from rankcli.explain.grouping import feature_groups
from rankcli.explain.progress import Work
from rankcli.explain.ranking import batch_permutation, permutation, permuted_metrics, tree_permuted_metrics
from rankcli.explain.trees import tree_scorer
from rankcli.train import TrainedModel

PARAMS = {"objective": "lambdarank", "num_leaves": 7, "learning_rate": 0.2, "min_data_in_leaf": 5,
          "feature_fraction": 0.5, "verbosity": -1, "seed": 1, "deterministic": True, "force_row_wise": True,
          "num_threads": 1}


def _data(rng, n_queries: int = 60, features: int = 6) -> Dataset:
    """Queries of 3..25 documents; f1, f2 make the labels; f6 is constant (never split on); ties from rounding."""
    sizes = rng.integers(3, 26, n_queries)
    n = int(sizes.sum())
    x = np.round(rng.normal(size=(n, features)), 1).astype(np.float32)
    x[:, -1] = 1.0
    labels = np.digitize(x[:, 0] + 0.5 * x[:, 1] + rng.normal(scale=0.5, size=n), [0.5, 1.5]).astype(np.float64)
    qids = np.repeat(np.arange(n_queries, dtype=np.int64) * 3 + 7, sizes)
    return Dataset(qids=qids, labels=labels, features=np.asfortranarray(x),
                   feature_names=[f"f{j}" for j in range(1, features + 1)])


@pytest.fixture(scope="module")
def model_and_data():
    import lightgbm

    rng = np.random.default_rng(11)
    train, test = _data(rng), _data(rng, n_queries=50)
    booster = lightgbm.train(PARAMS, lightgbm.Dataset(train.features, train.labels, group=np.diff(train.offsets)),
                             num_boost_round=30)
    booster = lightgbm.Booster(model_str=booster.model_to_string())
    info = {"format": "rankcli-model/1", "loss": {"name": "lambdamart"}, "features": train.feature_names,
            "convention": "paper"}
    return TrainedModel(booster, info), test


def test_a_batch_permutation_is_the_data_s_permutation_restricted():
    sizes = np.array([3, 1, 5, 2, 4, 6])
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    whole = permutation(offsets, 5, 2)
    for q0, q1 in ((0, 2), (2, 5), (3, 6)):
        a, b = int(offsets[q0]), int(offsets[q1])
        np.testing.assert_array_equal(batch_permutation(offsets[q0:q1 + 1] - a, 5, 2, a), whole[a:b] - a)


def test_scores_from_the_trees_reading_a_group_are_the_whole_model_s(model_and_data):
    model, test = model_and_data
    booster = model.booster
    scorer = tree_scorer(booster, test.n_features, 1)
    assert scorer is not None and scorer.n_trees == booster.num_trees()
    values = scorer.leaf_matrix(booster, test.features)
    np.testing.assert_allclose(values.sum(axis=0), booster.predict(test.features, raw_score=True), atol=1e-12)
    perm = np.random.default_rng(0).permutation(test.n_rows)
    partial = 0
    for columns in ([0], [1], [2, 3], [4]):
        reading = scorer.trees_reading(columns)
        partial += 0 < reading.sum() < scorer.n_trees
        x = np.array(test.features)
        x[:, columns] = x[perm][:, columns]
        sub = scorer.submodel(reading).predict(x, raw_score=True) if reading.any() else 0.0
        np.testing.assert_allclose(scorer.rest(values, reading) + sub, booster.predict(x, raw_score=True),
                                   atol=1e-12)
    assert partial >= 3   # feature_fraction 0.5: most groups are read by some trees only


def test_walked_submodels_score_as_lightgbm_s_submodels_bit_for_bit(model_and_data, monkeypatch):
    """The compiled walk's submodel and LightGBM's booster of the same trees give equal scores to the bit (the same
    leaves, added in the same order), zeros, a tiny value and NaN among the rows."""
    from rankcli.core.trees import leaves
    from rankcli.explain.trees import WalkedTrees

    if not leaves.available():
        pytest.skip("the compiled leaf walk is not built")
    model, test = model_and_data
    scorer = tree_scorer(model.booster, test.n_features, 1)
    x = np.array(test.features, dtype=np.float64)
    x[::7, 0], x[1::7, 1], x[2::7, 2] = 0.0, 1e-36, np.nan
    for columns in ([0], [1], [2, 3], list(range(test.n_features))):
        reading = scorer.trees_reading(columns)
        if not reading.any():
            continue
        walked = scorer.submodel(reading)
        assert isinstance(walked, WalkedTrees)
        with monkeypatch.context() as m:
            m.setenv("RANKCLI_PURE_PYTHON", "1")
            booster = scorer.submodel(reading)
        assert not isinstance(booster, WalkedTrees)
        for threads in (1, 2):
            np.testing.assert_array_equal(walked.predict(x, num_threads=threads),
                                          booster.predict(x, raw_score=True))


def test_the_tree_path_gives_the_whole_model_s_permuted_metrics(model_and_data):
    from rankcli.core.metrics import Convention, parse_metric, per_query

    model, test = model_and_data
    spec, conv = parse_metric("ndcg@10"), Convention.preset("paper")

    def metric(scores, rows=slice(None), offsets=test.offsets):
        return per_query([spec], test.labels[rows], scores, offsets, conv)[str(spec)]

    groups = feature_groups(test.feature_names, ["g=f3,f4"])
    used = [True] * len(groups)
    features = np.array(test.features, order="F")
    base, whole = permuted_metrics(lambda x: model.booster.predict(x, raw_score=True), features, metric,
                                   test.offsets, groups, repeats=3, seed=4, used=used)
    scorer = tree_scorer(model.booster, test.n_features, 1)
    for batch_rows in (23, 10_000):   # a query or a few per batch (one above 23 rows alone), all at once
        fast = tree_permuted_metrics(scorer, model.booster, features, metric, test.offsets, groups, repeats=3,
                                     seed=4, used=used, base=base, batch_rows=batch_rows)
        np.testing.assert_allclose(fast, whole, atol=1e-12)
    np.testing.assert_array_equal(features, test.features)


def test_models_whose_scores_are_not_a_sum_of_leaves_take_the_whole_model(model_and_data):
    import lightgbm

    _, test = model_and_data
    group = np.diff(test.offsets)
    for extra in ({"objective": "binary"}, {"linear_tree": True},
                  {"boosting": "rf", "bagging_fraction": 0.5, "bagging_freq": 1}):
        labels = (test.labels > 0).astype(float)
        params = {**PARAMS, **extra}
        b = lightgbm.train(params, lightgbm.Dataset(test.features, labels, group=group), num_boost_round=3)
        assert tree_scorer(b, test.n_features, 1) is None, extra


def test_the_explanation_is_the_same_by_either_path(model_and_data, monkeypatch):
    import rankcli.explain.trees as trees

    model, test = model_and_data
    fast = explain(model, test, repeats=2, seed=3, contributions=False)
    monkeypatch.setattr(trees, "tree_scorer", lambda *a, **k: None)
    slow = explain(model, test, repeats=2, seed=3, contributions=False)
    for a, b in zip(fast.rows(), slow.rows()):
        assert a["feature"] == b["feature"]
        assert a["drop"] == pytest.approx(b["drop"], abs=1e-12)
        assert a["p_value"] == pytest.approx(b["p_value"], abs=1e-9)


class _Recording(Work):
    """Work that also records each advance and each report."""

    def __init__(self, report=None):
        super().__init__(report)
        self.advances: list[tuple[str, float]] = []

    def advance(self, stage: str, tree_rows: float) -> None:
        self.advances.append((stage, tree_rows))
        super().advance(stage, tree_rows)


def test_the_progress_total_includes_treeshap_s_batches_and_advances_through_them(model_and_data, monkeypatch):
    import rankcli.explain as library

    model, test = model_and_data
    made: list[_Recording] = []
    reports: list[tuple[float, float]] = []

    def recording(report):
        made.append(_Recording(report))
        return made[-1]

    monkeypatch.setattr(library, "Work", recording)
    e = explain(model, test, repeats=2, seed=1, contributions_queries=20, batch_rows=40,
                progress=lambda done, total: reports.append((done, total)))
    work = made[0]
    trees = model.booster.num_trees()
    rows = int(np.diff(test.offsets)[e.sample.queries].sum())
    assert work.planned["shap"] == rows * trees        # the total counts every sampled row's TreeSHAP
    shap = [n for stage, n in work.advances if stage == "shap"]
    assert len(shap) >= rows // 40 and sum(shap) == rows * trees   # batch by batch (the first a probe), all done
    assert work.done == work.planned                   # the estimate ends at its total
    assert work.cost("shap") is not None               # TreeSHAP's measured cost, not the guess, at the end
    during = [d / t for d, t in reports if t > 0]
    first = next(i for i, (stage, _) in enumerate(work.advances) if stage == "shap")
    assert reports[-1][0] == pytest.approx(reports[-1][1])
    assert len(set(during[first:first + len(shap)])) > len(shap) // 2   # the bar moves through the batches


def test_work_weighs_each_stage_by_its_measured_cost():
    seen = []
    w = Work(lambda done, total: seen.append((done, total)))
    w.plan("predict", 1000)
    w.plan("shap", 10)
    w.measure("predict", 0.5, 100)        # 5 ms per tree-row
    w.advance("predict", 100)
    w.measure("shap", 4.0, 2)             # 2 s per tree-row: 400 times dearer
    w.advance("shap", 2)
    done, total = w.seconds()
    assert total == pytest.approx(1000 * 0.005 + 10 * 2.0)
    assert done == pytest.approx(100 * 0.005 + 2 * 2.0)
    assert seen[-1] == (done, total) and len(seen) == 4
    unmeasured = Work()
    unmeasured.plan("shap", 1)
    unmeasured.measure("predict", 1.0, 1)
    assert unmeasured.seconds()[1] > 1.0  # TreeSHAP before its first timing: guessed dearer than a prediction


def test_the_sample_is_seeded_and_sorted_and_all_means_every_query():
    s = sample_queries(1000, 200, 7)
    assert s.queries.shape == (200,) and np.all(np.diff(s.queries) > 0) and not s.complete and s.seed == 7
    np.testing.assert_array_equal(s.queries, sample_queries(1000, 200, 7).queries)
    assert not np.array_equal(s.queries, sample_queries(1000, 200, 8).queries)
    for limit in (None, 1000, 5000):
        whole = sample_queries(1000, limit, 7)
        assert whole.complete and whole.seed is None and np.array_equal(whole.queries, np.arange(1000))
    offsets = np.array([0, 2, 5, 6, 10])
    rows, sub = sample_queries(4, 2, 0).rows(offsets)
    expected = np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in sample_queries(4, 2, 0).queries])
    np.testing.assert_array_equal(rows, expected)
    np.testing.assert_array_equal(np.diff(sub), np.diff(offsets)[sample_queries(4, 2, 0).queries])


def test_the_standard_error_matches_the_spread_of_samples():
    """The ratio estimator's standard error (without replacement) against the spread of 4,000 simulated samples."""
    rng = np.random.default_rng(5)
    n_pop, m, sims = 2000, 200, 4000
    sizes = rng.integers(2, 150, n_pop)
    sums = rng.gamma(2.0, 1.0, (n_pop, 2)) * sizes[:, None] * rng.uniform(0.2, 2.0, (n_pop, 1))
    drawn = np.argsort(rng.random((sims, n_pop)), axis=1)[:, :m]
    ratios = sums[drawn].sum(axis=1) / sizes[drawn].sum(axis=1)[:, None]
    truth, zero = estimate(sums, sizes, n_pop)
    assert np.all(zero == 0)
    np.testing.assert_allclose(ratios.mean(axis=0), truth, rtol=0.01)
    stderr = np.array([estimate(sums[d], sizes[d], n_pop)[1] for d in drawn[:300]]).mean(axis=0)
    np.testing.assert_allclose(stderr, ratios.std(axis=0), rtol=0.1)


def test_the_json_records_the_sample(model_and_data):
    model, test = model_and_data
    e = explain(model, test, repeats=1, seed=2, contributions_queries=10)
    s = e.as_dict()["contributions"]
    assert s["queries"] == 10 and s["of"] == test.n_queries and s["sampled"] and s["seed"] == 2
    assert "uniformly without replacement" in s["drawn"] and len(s["qids"]) == 10
    assert set(s["qids"]) <= set(int(q) for q in test.qids)
    assert all(r["mean_abs_contribution_stderr"] >= 0 for r in e.rows() if r["splits"] > 0)
    whole = explain(model, test, repeats=1, seed=2, contributions_queries=None).as_dict()["contributions"]
    assert whole == {"queries": test.n_queries, "of": test.n_queries, "sampled": False, "seed": None,
                     "drawn": None, "qids": None}
    assert explain(model, test, repeats=1, contributions=False).as_dict()["contributions"] is None
