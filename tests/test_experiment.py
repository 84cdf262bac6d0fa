"""Tests of rankcli.experiment: settings, seeding, perturbations touch only training data, summary, resume."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps

from rankcli import experiment as ex
from rankcli.dataset import Dataset
from rankcli.errors import InputError, OutputError
from rankcli.formats.parquet import feature_names, write_dataset


def synthetic(n_queries: int = 40, seed: int = 0, n_features: int = 4) -> Dataset:
    """Graded labels 0..4 loosely driven by the first two features (so that models learn something)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 12, n_queries)
    n = int(sizes.sum())
    x = rng.normal(size=(n, n_features)).astype(np.float32)
    y = np.clip(np.round(x[:, 0] + 0.5 * x[:, 1] + rng.normal(scale=0.7, size=n) + 1), 0, 4)
    return Dataset(qids=np.repeat(np.arange(n_queries, dtype=np.int64) + 100, sizes), labels=y, features=x,
                   feature_names=feature_names(n_features))


@pytest.fixture(scope="module")
def data() -> ex.ExperimentData:
    return ex.ExperimentData(pooled=synthetic())


def _same(a: Dataset, b: Dataset) -> bool:
    return (np.array_equal(a.qids, b.qids) and np.array_equal(a.labels, b.labels)
            and np.array_equal(a.features, b.features) and np.array_equal(a.offsets, b.offsets))


# --- settings and seeds -----------------------------------------------------------------------------------------------

def test_plan_settings_names_and_aliases():
    cfg = ex.ExperimentConfig(augment_negatives=[0, 0.2], label_noise=[0.0, 0.3], click_noise=[0.05, 0.1])
    settings, sweeps = ex.plan_settings(cfg)
    assert [s.name for s in settings] == ["baseline", "augment-negatives=0.2", "label-noise=0.3",
                                          "click-noise=0.05", "click-noise=0.1"]
    # level 0 of augmentation and label noise changes nothing: it is the baseline, not run twice
    assert [(lv, s.name) for lv, s in sweeps["label-noise"]] == [(0.0, "baseline"), (0.3, "label-noise=0.3")]
    assert list(sweeps) == ["augment-negatives", "label-noise", "click-noise"]


def test_split_shared_by_settings_and_losses_differs_by_trial(data):
    cfg = ex.ExperimentConfig(seed=3)
    t0 = ex.trial_split(data, cfg, 0)
    again = ex.trial_split(data, cfg, 0)
    t1 = ex.trial_split(data, cfg, 1)
    assert all(_same(a, b) for a, b in zip(t0, again))
    assert not _same(t0[0], t1[0])
    # query-level, disjoint and covering
    qs = [set(d.qids.tolist()) for d in t0]
    assert not (qs[0] & qs[1]) and not (qs[0] & qs[2]) and not (qs[1] & qs[2])
    assert set().union(*qs) == set(data.pooled.qids.tolist())
    assert [d.n_queries for d in t0] == [24, 8, 8]
    other_seed = ex.trial_split(data, ex.ExperimentConfig(seed=4), 0)
    assert not _same(t0[0], other_seed[0])


def test_seeds_depend_on_trial_and_setting_only():
    assert ex.model_seed(0, 1, "baseline") == ex.model_seed(0, 1, "baseline")
    assert ex.model_seed(0, 1, "baseline") != ex.model_seed(0, 2, "baseline")
    assert ex.model_seed(0, 1, "baseline") != ex.model_seed(0, 1, "label-noise=0.1")
    a = ex.perturbation_rng(5, 2, "label-noise=0.1").random(3)
    b = ex.perturbation_rng(5, 2, "label-noise=0.1").random(3)
    assert np.array_equal(a, b)


# --- perturbations touch only the training (and for clicks validation) data -----------------------------------------

def _perturbed(data, name, level):
    cfg = ex.ExperimentConfig()
    train, valid, test = ex.trial_split(data, cfg, 0)
    setting = ex.setting_for(name, level) if name != "baseline" else ex.BASELINE
    new_train, new_valid = ex.perturb(setting, train, valid, cfg, ex.perturbation_rng(0, 0, setting.name))
    return (train, valid, test), (new_train, new_valid)


def test_baseline_is_untouched(data):
    (train, valid, _), (t2, v2) = _perturbed(data, "baseline", None)
    assert t2 is train and v2 is valid


def test_augmentation_only_grows_training_lists(data):
    (train, valid, _), (t2, v2) = _perturbed(data, "augment-negatives", 0.5)
    assert v2 is valid
    sz, new_sz = np.diff(train.offsets), np.diff(t2.offsets)
    assert np.array_equal(new_sz, sz + np.floor(0.5 * sz + 0.5).astype(int))
    added = t2.extra["augmented"]
    assert np.all(t2.labels[added] == 0)
    # every query keeps its own rows first, unchanged, and its qid on the added rows
    assert np.array_equal(t2.qids, np.repeat(train.qids[train.offsets[:-1]], new_sz))
    keep = ~added
    assert np.array_equal(t2.labels[keep], train.labels) and np.array_equal(t2.features[keep], train.features)
    # added documents are copies of other training queries' documents
    own = {q: {tuple(r) for r in train.features[train.qids == q]} for q in np.unique(train.qids)}
    every = {tuple(r) for r in train.features}
    for i in np.flatnonzero(added):
        row = tuple(t2.features[i])
        assert row in every and row not in own[t2.qids[i]]


def test_label_noise_only_changes_training_labels(data):
    (train, valid, _), (t2, v2) = _perturbed(data, "label-noise", 0.4)
    assert v2 is valid
    assert np.array_equal(t2.features, train.features) and np.array_equal(t2.offsets, train.offsets)
    touched = t2.extra["noisy"]
    assert np.array_equal(np.add.reduceat(touched.astype(int), train.offsets[:-1]),
                          np.floor(0.4 * np.diff(train.offsets) + 0.5).astype(int))
    assert np.array_equal(t2.labels[~touched], train.labels[~touched])
    assert set(np.unique(t2.labels[touched])) <= {0, 1, 2, 3, 4}


def test_click_noise_replaces_training_and_validation_with_clicks(data):
    (train, valid, _), (t2, v2) = _perturbed(data, "click-noise", 0.1)
    for orig, clicked in ((train, t2), (valid, v2)):
        assert set(np.unique(clicked.labels)) <= {0.0, 1.0}
        # exactly one click per impression (no-click impressions are dropped), at most 10 impressions per query
        assert np.all(np.add.reduceat(clicked.labels, clicked.offsets[:-1]) == 1)
        assert clicked.n_queries <= 10 * orig.n_queries
        assert set(np.unique(clicked.extra["source_qid"])) <= set(orig.qids.tolist())


def test_click_noise_level_is_the_grade0_click_probability(data):
    # On many impressions the clicked grade-0 share grows with the level.
    ds = synthetic(200, seed=1)
    rates = []
    for p0 in (0.05, 0.5):
        clicks = ex.click_dataset(ds, p0, 10, np.random.default_rng(0))
        rel = clicks.extra["relevance"][clicks.labels == 1]
        rates.append(np.mean(rel == 0))
    assert rates[1] > rates[0] + 0.1


def test_concat_renumbers_colliding_qids():
    a, b = synthetic(3, seed=1), synthetic(2, seed=2)
    pooled = ex.concat_datasets([a, b])
    assert pooled.n_queries == 5 and pooled.n_rows == a.n_rows + b.n_rows
    assert np.unique(pooled.qids[pooled.offsets[:-1]]).shape[0] == 5


# --- summary ----------------------------------------------------------------------------------------------------------

def test_summarize_means_stderr_and_paired_tests():
    cfg = ex.ExperimentConfig(losses=["a", "b", "c"], trials=5, metrics=["ndcg@5"], correction="holm")
    rng = np.random.default_rng(0)
    vals = {loss: rng.random(5) for loss in cfg.losses}
    rows = [dict(trial=t, setting="baseline", loss=loss, metric="ndcg@5", value=float(vals[loss][t]), trees=1,
                 seconds=0.0) for loss in cfg.losses for t in range(5)]
    rows.append(dict(trial=7, setting="baseline", loss="a", metric="ndcg@5", value=9.0, trees=1, seconds=0.0))
    out = ex.summarize(rows, cfg, [ex.BASELINE])
    s = out["settings"][0]
    for loss in cfg.losses:  # trial 7 is beyond --trials and ignored
        assert s["losses"][loss]["ndcg@5"]["mean"] == pytest.approx(vals[loss].mean())
        assert s["losses"][loss]["ndcg@5"]["stderr"] == pytest.approx(vals[loss].std(ddof=1) / np.sqrt(5))
    assert [(t["a"], t["b"]) for t in s["tests"]] == [("a", "b"), ("a", "c"), ("b", "c")]
    ps = [sps.ttest_rel(vals[t["a"]], vals[t["b"]]).pvalue for t in s["tests"]]
    assert [t["p_value"] for t in s["tests"]] == pytest.approx(ps)
    order = np.argsort(ps)
    holm = np.maximum.accumulate(np.minimum(1, np.sort(ps) * (3 - np.arange(3))))
    expected = np.empty(3)
    expected[order] = holm
    assert [t["p_adjusted"] for t in s["tests"]] == pytest.approx(expected)
    shape = ex.json_shape(out)
    assert set(shape) == {"settings"}
    assert set(shape["settings"][0]) == {"setting", "losses", "tests"}
    assert set(shape["settings"][0]["losses"]["a"]["ndcg@5"]) == {"mean", "stderr"}
    assert set(shape["settings"][0]["tests"][0]) == {"a", "b", "metric", "p_value", "p_adjusted"}


def test_convergence_means_over_the_trials_that_reached_each_tree():
    cfg = ex.ExperimentConfig(losses=["a", "b"], trials=3)
    curves = [("baseline", 0, "a", np.array([0.1, 0.2, 0.3])), ("baseline", 1, "a", np.array([0.3, 0.4])),
              ("baseline", 2, "a", np.array([0.2, np.nan])), ("baseline", 5, "a", np.array([9.0]))]
    conv = ex.convergence(curves, cfg, [ex.BASELINE])
    assert conv["baseline"]["a"]["mean"] == pytest.approx([0.2, 0.3, 0.3])
    assert conv["baseline"]["a"]["trials"] == [3, 2, 1]
    assert conv["baseline"]["b"] == {"mean": [], "trials": []}


def test_summarize_single_trial_has_no_test():
    cfg = ex.ExperimentConfig(losses=["a", "b"], trials=1, metrics=["ndcg@5"])
    rows = [dict(trial=0, setting="baseline", loss=x, metric="ndcg@5", value=0.5, trees=1, seconds=0.0)
            for x in "ab"]
    s = ex.summarize(rows, cfg, [ex.BASELINE])["settings"][0]
    assert np.isnan(s["tests"][0]["p_value"]) and np.isnan(s["losses"]["a"]["ndcg@5"]["stderr"])


# --- running, resuming, refusing ---------------------------------------------------------------------------------------

def test_run_resume_and_refuse(tmp_path):
    path = tmp_path / "d.parquet"
    write_dataset(path, synthetic(30))
    cfg = dict(losses=["lambdamart", "xendcg"], trials=2, trees=3, early_stopping=0, label_noise=[0.2])
    seen = []
    res = ex.run_experiment(path, tmp_path / "exp", ex.ExperimentConfig(**cfg), on_unit=seen.append)
    assert res.ran_units == 8 and len(seen) == 8
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "exp" / "trials.parquet")
    assert table.column_names == list(ex.TRIAL_COLUMNS)
    assert table.num_rows == 8 * 2
    assert set(table.column("trees").to_pylist()) == {3}
    curves = ex.load_curves(tmp_path / "exp")
    assert len(curves) == 8 and all(c[3].shape == (3,) for c in curves)
    assert {(c[0], c[1], c[2]) for c in curves} == {(r["setting"], r["trial"], r["loss"]) for r in table.to_pylist()}
    summary = json.loads((tmp_path / "exp" / "summary.json").read_text())
    assert [s["setting"] for s in summary["settings"]] == ["baseline", "label-noise=0.2"]
    # same configuration: resumes, nothing to do; more trials: extends
    again = ex.run_experiment(path, tmp_path / "exp", ex.ExperimentConfig(**cfg))
    assert again.ran_units == 0 and again.summary == res.summary
    more = ex.run_experiment(path, tmp_path / "exp", ex.ExperimentConfig(**{**cfg, "trials": 3}))
    assert more.ran_units == 4
    # a different configuration is refused, unless overwrite
    with pytest.raises(OutputError, match="different configuration.*trees: 3 before, 4 now"):
        ex.run_experiment(path, tmp_path / "exp", ex.ExperimentConfig(**{**cfg, "trees": 4}))
    fresh = ex.run_experiment(path, tmp_path / "exp", ex.ExperimentConfig(**{**cfg, "trials": 1}), overwrite=True)
    assert fresh.ran_units == 4


def test_refuses_foreign_directory(tmp_path):
    path = tmp_path / "d.parquet"
    write_dataset(path, synthetic(10))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="holds no rankcli experiment"):
        ex.run_experiment(path, tmp_path / "other", ex.ExperimentConfig(trials=1), overwrite=True)
    assert (tmp_path / "other" / "notes.txt").exists()


def test_load_data_directory_pooled_or_given(tmp_path):
    parts = {"train": synthetic(6, seed=1), "vali": synthetic(3, seed=2), "test": synthetic(3, seed=3)}
    for name, ds in parts.items():
        write_dataset(tmp_path / f"{name}.parquet", ds)
    pooled = ex.load_data(tmp_path)
    assert pooled.given is None and pooled.pooled.n_queries == 12  # test, train, vali in name order
    given = ex.load_data(tmp_path, use_given_splits=True)
    assert [d.n_queries for d in given.given] == [6, 3, 3]
    cfg = ex.ExperimentConfig(use_given_splits=True)
    assert all(_same(a, b) for a, b in zip(ex.trial_split(given, cfg, 0), ex.trial_split(given, cfg, 5)))
    (tmp_path / "vali.parquet").unlink()
    assert ex.load_data(tmp_path, use_given_splits=True).given[1] is None
    (tmp_path / "train.parquet").unlink()
    with pytest.raises(InputError, match="--use-given-splits expects train.parquet"):
        ex.load_data(tmp_path, use_given_splits=True)
