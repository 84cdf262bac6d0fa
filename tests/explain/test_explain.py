"""rankcli.explain on LightGBM models: a feature the labels were generated from outranks pure noise, the
contributions are TreeSHAP's centred within each query (against a loop), batch by batch alike, groups sum."""

from __future__ import annotations

import numpy as np
import pytest

from rankcli.dataset import Dataset
from rankcli.errors import UsageError
from rankcli.explain import explain
from rankcli.explain.contributions import mean_abs_contributions, query_batches
from rankcli.explain.grouping import feature_groups, membership
from rankcli.train import TrainedModel


def _synthetic(rng, n_queries=120, size=20):
    """f1 makes the labels, f2 helps a little, f3 is pure noise, f4 is constant (never split on)."""
    n = n_queries * size
    x = rng.normal(size=(n, 4)).astype(np.float32)
    x[:, 3] = 1.0
    signal = 1.5 * x[:, 0] + 0.3 * x[:, 1] + rng.normal(scale=0.5, size=n)
    labels = np.digitize(signal, [0.5, 1.5, 2.5]).astype(np.float64)
    qids = np.repeat(np.arange(n_queries, dtype=np.int64), size)
    return Dataset(qids=qids, labels=labels, features=np.asfortranarray(x), feature_names=["f1", "f2", "f3", "f4"])


@pytest.fixture(scope="module")
def model_and_data():
    import lightgbm

    rng = np.random.default_rng(3)
    train, test = _synthetic(rng), _synthetic(rng, n_queries=80)
    params = {"objective": "lambdarank", "num_leaves": 15, "learning_rate": 0.1, "min_data_in_leaf": 10,
              "verbosity": -1, "seed": 1, "deterministic": True, "force_row_wise": True, "num_threads": 1}
    booster = lightgbm.train(params, lightgbm.Dataset(train.features, train.labels, group=np.diff(train.offsets)),
                             num_boost_round=40)
    booster = lightgbm.Booster(model_str=booster.model_to_string())
    info = {"format": "rankcli-model/1", "loss": {"name": "lambdamart"}, "features": train.feature_names,
            "convention": "paper"}
    return TrainedModel(booster, info), test


def test_the_generating_feature_outranks_noise(model_and_data):
    model, test = model_and_data
    original = test.features.copy()
    e = explain(model, test, data_name="test", repeats=3, seed=1)
    rows = {r["feature"]: r for r in e.rows()}
    assert [r["feature"] for r in e.rows()][0] == "f1"
    assert rows["f1"]["drop"] > 10 * max(rows["f3"]["drop"], 1e-3)
    assert rows["f1"]["p_value"] < 1e-6 and rows["f1"]["n"] == test.n_queries
    assert rows["f3"]["p_value"] > 0.01
    assert rows["f4"]["splits"] == 0 and rows["f4"]["drop"] == 0.0 and rows["f4"]["p_value"] == 1.0
    assert rows["f4"]["mean_abs_contribution"] == 0.0
    assert rows["f1"]["mean_abs_contribution"] > rows["f3"]["mean_abs_contribution"]
    assert sum(r["gain_share"] for r in e.rows()) == pytest.approx(1.0)
    d = e.as_dict()
    assert d["metric"] == "ndcg@10" and d["convention"]["no_relevant"] == "skip" and d["test"] == "ttest"
    assert d["correction"] == "holm" and d["repeats"] == 3
    # the same seed gives the same numbers; the data's features are as they were
    again = explain(model, test, data_name="test", repeats=3, seed=1)
    assert again.rows() == e.rows()
    np.testing.assert_array_equal(test.features, original)


def test_without_data_only_the_trees(model_and_data):
    model, _ = model_and_data
    e = explain(model)
    rows = e.rows()
    assert [r["feature"] for r in rows][0] == "f1"
    assert all(r[k] is None for r in rows for k in ("drop", "drop_stderr", "p_value", "n", "mean_abs_contribution"))
    np.testing.assert_allclose([r["gain"] for r in sorted(rows, key=lambda r: r["feature"])],
                               model.booster.feature_importance("gain"))
    with pytest.raises(UsageError, match="--per-query needs DATA"):
        e.per_query()


def _reference_contributions(c, offsets, groups):
    """mean |c - query mean| per group, a loop per query."""
    out = np.zeros(len(groups))
    for a, b in zip(offsets[:-1], offsets[1:]):
        for k, g in enumerate(groups):
            s = c[a:b][:, list(g.columns)].sum(axis=1)
            out[k] += np.abs(s - s.mean()).sum()
    return out / offsets[-1]


def test_contributions_centred_within_queries_by_batches(model_and_data):
    model, test = model_and_data
    booster = model.booster
    groups = feature_groups(test.feature_names, ["pair=f2,f3"])
    full = booster.predict(test.features, pred_contrib=True)
    want = _reference_contributions(full, test.offsets, groups)
    for rows in (1, 37, 500, 10 ** 6):
        batches = list(query_batches(test.features, test.offsets, rows))
        assert sum(b[0].shape[0] for b in batches) == test.n_rows
        assert all(b[0].shape[0] <= max(rows, 20) for b in batches)
        got = mean_abs_contributions(lambda x: booster.predict(x, pred_contrib=True), batches, 4,
                                     membership(groups, 4))
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-14)


def test_options_are_checked(model_and_data):
    model, test = model_and_data
    with pytest.raises(UsageError, match="--repeats"):
        explain(model, test, repeats=0)
    with pytest.raises(UsageError, match="--convention trec"):
        explain(model, test, convention="trec")
    with pytest.raises(UsageError, match="no feature 'f9'; did you mean"):
        explain(model, test, groups=["g=f1,f9"])
    with pytest.raises(UsageError, match="already in group"):
        explain(model, test, groups=["a=f1,f2", "b=f2"])
    with pytest.raises(UsageError, match="unknown test"):
        explain(model, test, test="ztest")
    with pytest.raises(UsageError, match="--test wilcoxon with --repeats 2: the signed-rank test assumes"):
        explain(model, test, test="wilcoxon")
    with pytest.raises(UsageError, match="group name 'qid' is also the qid column"):
        explain(model, test, groups=["qid=f1,f2"])
    with pytest.raises(UsageError, match="group name 'err@5' is also the column of the model's err@5"):
        explain(model, test, metric="ERR@5", groups=["err@5=f1"], repeats=1)
    assert explain(model, test, test="wilcoxon", repeats=1, contributions=False).ranking.test == "wilcoxon"
    assert explain(model, groups=["ndcg@10=f1"]).groups[0].name == "ndcg@10"   # no data, no per-query table


def test_every_group_error_names_the_group_definition(tmp_path):
    """A group named like a feature left out of it says which --group (or file line) defines it, as the others do."""
    names = ["f1", "f2", "f3"]
    with pytest.raises(UsageError) as exc:
        feature_groups(names, ["f2=f1"])
    assert str(exc.value) == "--group 'f2=f1': group name 'f2' is also a feature not in it; name the group otherwise"
    (tmp_path / "groups.txt").write_text("# groups\nf3=f1,f2\n")
    with pytest.raises(UsageError) as exc:
        feature_groups(names, files=[tmp_path / "groups.txt"])
    assert str(exc.value).startswith(f"{tmp_path / 'groups.txt'}:2: group name 'f3' is also a feature not in it")
    with pytest.raises(UsageError, match=r"^--group 'g=f1,zz': the model has no feature 'zz'"):
        feature_groups(names, ["g=f1,zz"])
