"""rankcli.simulate: the dataset-level API (output columns, rankers, label grades) and learning from its clicks."""

from __future__ import annotations

import numpy as np
import pytest

from rankcli.core.labels import NonIntegerLabelsError
from rankcli.dataset import Dataset
from rankcli.errors import UsageError
from rankcli.simulate import ClickSummary, display_ranks, parse_click_probs, simulate_clicks


def synthetic(n_queries, size, seed, n_features=5):
    """Relevance grows with f1 + 0.5 f2 (grades 0..4, mostly low); the other features are noise."""
    rng = np.random.default_rng(seed)
    n = n_queries * size
    x = rng.random((n, n_features)).astype(np.float32)
    s = x[:, 0] + 0.5 * x[:, 1] + rng.normal(0, 0.05, n)
    grades = np.digitize(s, np.quantile(s, [0.5, 0.75, 0.9, 0.97])).astype(np.float64)
    return Dataset(qids=np.repeat(np.arange(100, 100 + n_queries), size), labels=grades, features=x,
                   feature_names=[f"f{i}" for i in range(1, n_features + 1)])


def test_output_dataset_columns():
    ds = synthetic(30, 12, 0)
    ds.docids = np.array([f"d{i}" for i in range(ds.n_rows)], dtype=object)
    out, summary = simulate_clicks(ds, impressions=4, rng=np.random.default_rng(1))
    assert isinstance(summary, ClickSummary)
    assert list(out.extra) == ["source_qid", "position", "relevance"]
    assert out.n_queries == summary.kept and out.n_rows == summary.rows
    assert np.array_equal(np.unique(out.qids), np.arange(1, summary.kept + 1))
    rows = np.array([int(d[1:]) for d in out.docids])
    np.testing.assert_array_equal(out.features, ds.features[rows])
    np.testing.assert_array_equal(out.extra["relevance"], ds.labels[rows])
    np.testing.assert_array_equal(out.extra["source_qid"], ds.qids[rows])
    assert set(np.unique(out.labels)) <= {0.0, 1.0}
    d = summary.as_dict()
    assert d["impressions"] == 120 and d["kept_impressions"] + d["dropped_impressions"] == 120
    assert len(d["by_grade"]) == 5 and d["by_position"][0]["position"] == 1

    ds.docids = None
    out, _ = simulate_clicks(ds, impressions=2, rng=np.random.default_rng(1))
    assert list(out.extra) == ["source_qid", "position", "relevance", "source_row"]
    np.testing.assert_array_equal(out.features, ds.features[out.extra["source_row"]])


def test_display_ranks():
    ds = Dataset(qids=np.array([1, 1, 1, 2, 2]), labels=np.array([1.0, 3.0, 1.0, 0.0, 2.0]))
    assert display_ranks(ds, "random") is None
    np.testing.assert_array_equal(display_ranks(ds, "input"), [0, 1, 2, 0, 1])
    np.testing.assert_array_equal(display_ranks(ds, "label"), [1, 0, 2, 1, 0])  # ties in input order
    np.testing.assert_array_equal(display_ranks(ds, np.array([0.5, 0.1, 0.9, 2.0, 2.0])), [1, 2, 0, 0, 1])
    with pytest.raises(UsageError, match="one score per row"):
        display_ranks(ds, np.zeros(3))
    with pytest.raises(UsageError, match="unknown ranker"):
        display_ranks(ds, "best")


def test_label_grades_and_parse():
    ds = synthetic(10, 8, 2)
    ds.labels = ds.labels * 0.1 + 0.05
    with pytest.raises(NonIntegerLabelsError, match="pass --label-grades"):
        simulate_clicks(ds, rng=np.random.default_rng(0))
    out, summary = simulate_clicks(ds, label_grades=True, rng=np.random.default_rng(0))
    assert summary.grade_values == pytest.approx([0.05, 0.15, 0.25, 0.35, 0.45])
    assert np.all(np.isin(out.extra["relevance"], ds.labels))
    assert parse_click_probs("0, 0.5 ,1") == (0.0, 0.5, 1.0)
    with pytest.raises(UsageError, match="got 'a'"):
        parse_click_probs("0.1,a")


def _pair_accuracy(scores, labels, offsets):
    """Fraction of same-query pairs with different labels that the scores order correctly (ties count half)."""
    good = total = 0.0
    for a, b in zip(offsets[:-1], offsets[1:]):
        s, y = scores[a:b], labels[a:b]
        dy = np.sign(y[:, None] - y[None, :])
        ds_ = np.sign(s[:, None] - s[None, :])
        mask = dy > 0
        good += np.sum((ds_[mask] > 0) + 0.5 * (ds_[mask] == 0))
        total += mask.sum()
    return good / total


PARAMS = {"objective": "lambdarank", "num_threads": 1, "verbose": -1, "min_data_in_leaf": 10, "num_leaves": 7,
          "learning_rate": 0.1, "seed": 0, "deterministic": True}


@pytest.fixture(scope="module")
def learning():
    lgb = pytest.importorskip("lightgbm")
    train, test = synthetic(300, 20, 3), synthetic(100, 20, 4)

    def accuracy(ds):
        booster = lgb.train(PARAMS, lgb.Dataset(ds.features, ds.labels, group=np.diff(ds.offsets)), 40)
        return _pair_accuracy(booster.predict(test.features), test.labels, test.offsets)

    return train, accuracy, accuracy(train)


@pytest.mark.parametrize("model,ranker,probs,floor", [
    ("cascade", "random", (0, 0.1, 0.3, 0.6, 1), 0.95),  # noise free: irrelevant documents are never clicked
    ("pbm", "label", (0, 0.1, 0.3, 0.6, 1), 0.95),
    ("cascade", "random", (0, 0, 0, 0, 1), 0.7),  # clicks on grade 4 only still order the rest, roughly
])
def test_training_on_noise_free_clicks_learns_the_relevance_order(learning, model, ranker, probs, floor):
    train, accuracy, with_labels = learning
    clicks, summary = simulate_clicks(train, model=model, click_probs=probs, impressions=5, ranker=ranker,
                                      rng=np.random.default_rng(5))
    assert summary.clicks > 300
    assert np.all(clicks.labels[clicks.extra["relevance"] == 0] == 0)
    acc = accuracy(clicks)
    assert acc > floor and with_labels > 0.97, (acc, with_labels)
    assert _pair_accuracy(train.features[:, 2].astype(float), train.labels, train.offsets) < 0.6  # a noise feature


def test_cascade_on_the_ideal_order_teaches_the_reverse(learning):
    """Documented position bias: shown in label order, the documents skipped above a click are the *more* relevant
    ones, so a cascade log from the label ranker trains a model that ranks backwards (use random or a model)."""
    train, accuracy, _ = learning
    clicks, _ = simulate_clicks(train, click_probs=(0, 0.1, 0.3, 0.6, 1), impressions=5, ranker="label",
                                rng=np.random.default_rng(5))
    assert accuracy(clicks) < 0.3
