"""Tests of rankcli.experiment: settings, seeding, perturbations touch only training data, summary, resume."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from scipy import stats as sps

from rankcli import experiment as ex
from rankcli.core.stats import paired_test
from rankcli.dataset import Dataset
from rankcli.dataset.pooling import concat_datasets
from rankcli.display.numbers import p_value_or_reason
from rankcli.errors import InputError, OutputError, UsageError
from rankcli.experiment.render import P_DIGITS
from rankcli.formats import experiment_store as store
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
    pooled = concat_datasets([a, b])
    assert pooled.n_queries == 5 and pooled.n_rows == a.n_rows + b.n_rows
    assert np.unique(pooled.qids[pooled.offsets[:-1]]).shape[0] == 5


# --- summary ----------------------------------------------------------------------------------------------------------

#: The (train, validation, test) query counts of a 0.6,0.2,0.2 split of 150 queries (the sample's).
SIZES = (90, 30, 30)


def _holm(ps) -> np.ndarray:
    order = np.argsort(ps)
    expected = np.empty(len(ps))
    expected[order] = np.maximum.accumulate(np.minimum(1, np.sort(ps) * (len(ps) - np.arange(len(ps)))))
    return expected


def test_summarize_means_stderr_and_paired_tests():
    """The default across trials is the corrected resampled t-test, computed here by hand (variance (1/J + n_test /
    n_train) s^2, n_train = training + validation queries), Holm over its p-values; --test ttest is scipy's paired
    t-test. Every test record names its test, and so does the summary."""
    rng = np.random.default_rng(0)
    vals = {loss: rng.random(5) for loss in "abc"}
    rows = [dict(trial=t, setting="baseline", loss=loss, metric="ndcg@5", value=float(vals[loss][t]), trees=1,
                 seconds=0.0) for loss in "abc" for t in range(5)]
    rows.append(dict(trial=7, setting="baseline", loss="a", metric="ndcg@5", value=9.0, trees=1, seconds=0.0))
    for test in ("corrected-ttest", "ttest"):
        cfg = ex.ExperimentConfig(losses=["a", "b", "c"], trials=5, metrics=["ndcg@5"], correction="holm",
                                  test=None if test == "corrected-ttest" else test)
        out = ex.summarize_experiment(rows, cfg, [ex.BASELINE], sizes=SIZES)
        s = out["settings"][0]
        for loss in cfg.losses:  # trial 7 is beyond --trials and ignored
            assert s["losses"][loss]["ndcg@5"]["mean"] == pytest.approx(vals[loss].mean())
            assert s["losses"][loss]["ndcg@5"]["stderr"] == pytest.approx(vals[loss].std(ddof=1) / np.sqrt(5))
        assert [(t["a"], t["b"]) for t in s["tests"]] == [("a", "b"), ("a", "c"), ("b", "c")]
        if test == "ttest":
            ps = [sps.ttest_rel(vals[t["a"]], vals[t["b"]]).pvalue for t in s["tests"]]
            assert out["test"] == {"name": "ttest", "label": "paired t-test across trials, the paper's test (trials "
                                                              "treated as independent)"}
        else:
            d = [vals[t["b"]] - vals[t["a"]] for t in s["tests"]]
            se = [np.sqrt((1 / 5 + 30 / 120) * x.var(ddof=1)) for x in d]
            ps = [2 * sps.t.sf(abs(x.mean() / e), 4) for x, e in zip(d, se)]
            assert [t["stderr"] for t in s["tests"]] == pytest.approx(se)
            assert {k: out["test"][k] for k in ("name", "n_test", "n_train", "variance")} == {
                "name": "corrected-ttest", "n_test": 30, "n_train": 120, "variance": "(1/J + n_test/n_train) s^2"}
        assert [t["test"] for t in s["tests"]] == [test] * 3
        assert [t["p_value"] for t in s["tests"]] == pytest.approx(ps)
        assert [t["p_adjusted"] for t in s["tests"]] == pytest.approx(_holm(ps))
        # one sign convention: difference = mean(b) - mean(a), over n = 5 trials
        for t in s["tests"]:
            assert t["difference"] == pytest.approx(vals[t["b"]].mean() - vals[t["a"]].mean())
            assert t["n"] == t["trials"] == 5
        assert all(s["losses"][loss]["ndcg@5"]["n"] == 5 for loss in cfg.losses)
        shape = ex.json_shape(out)
        assert list(shape) == ["test", "settings"] and shape["test"] == out["test"]
        assert set(shape["settings"][0]) == {"setting", "losses", "tests"}
        assert set(shape["settings"][0]["losses"]["a"]["ndcg@5"]) == {"mean", "stderr"}
        assert set(shape["settings"][0]["tests"][0]) == {"a", "b", "metric", "test", "n", "difference", "p_value",
                                                         "p_adjusted"}
    with pytest.raises(UsageError, match="the corrected t-test needs the trials' query counts"):
        ex.summarize_experiment(rows, ex.ExperimentConfig(losses=["a", "b"], trials=5, metrics=["ndcg@5"]),
                                [ex.BASELINE])


def test_convergence_carries_a_stopped_trial_forward_so_every_point_averages_all_trials():
    """A trial that stopped early keeps the value of the model it keeps (its best iteration) at every later tree, so
    that every point of the curve averages the same trials (averaging only those still running, 3, 2, 1, would make
    the curve jump where a trial stops)."""
    cfg = ex.ExperimentConfig(losses=["a", "b"], trials=3)
    curves = [("baseline", 0, "a", np.array([0.1, 0.2, 0.3])),     # ran to the end, keeps 3 trees
              ("baseline", 1, "a", np.array([0.3, 0.4])),          # stopped after 2 trees, keeps 1: 0.3 onwards
              ("baseline", 2, "a", np.array([0.2])),               # stopped after 1 tree
              ("baseline", 5, "a", np.array([9.0])),               # beyond --trials: left out
              ("baseline", 0, "b", np.array([0.5, 0.6]))]          # not finished (no kept entry): left out
    kept = {("baseline", 0, "a"): 3, ("baseline", 1, "a"): 1, ("baseline", 2, "a"): 1, ("baseline", 5, "a"): 1}
    conv = ex.convergence(curves, cfg, [ex.BASELINE], kept)
    a = conv["baseline"]["a"]
    grid = np.array([[0.1, 0.2, 0.3], [0.3, 0.4, 0.3], [0.2, 0.2, 0.2]])
    assert a["mean"] == pytest.approx(grid.mean(axis=0).tolist())
    assert a["stderr"] == pytest.approx((grid.std(axis=0, ddof=1) / np.sqrt(3)).tolist())
    assert a["trials"] == [3, 3, 3] and a["running"] == [3, 2, 1]
    assert conv["baseline"]["b"] == {"mean": [], "stderr": [], "trials": [], "running": []}
    # without kept, a stopped trial carries its last value
    last = ex.convergence(curves[:3], cfg, [ex.BASELINE])["baseline"]["a"]
    assert last["mean"] == pytest.approx([0.2, (0.2 + 0.4 + 0.2) / 3, (0.3 + 0.4 + 0.2) / 3])


def test_summarize_single_trial_has_no_test():
    cfg = ex.ExperimentConfig(losses=["a", "b"], trials=1, metrics=["ndcg@5"])
    rows = [dict(trial=0, setting="baseline", loss=x, metric="ndcg@5", value=0.5, trees=1, seconds=0.0)
            for x in "ab"]
    s = ex.summarize_experiment(rows, cfg, [ex.BASELINE], sizes=SIZES)["settings"][0]
    assert np.isnan(s["tests"][0]["p_value"]) and np.isnan(s["losses"]["a"]["ndcg@5"]["stderr"])
    assert s["tests"][0]["reason"] == "fewer than two trials" and s["tests"][0]["n"] == 1


def test_position_bias_tests_are_one_compare_family_over_the_same_units():
    """The naive-against-IPS tests of a setting are one call of compare.compare_values (one family for the
    correction), over the units where every tested variant has a value, as the tests of the other settings are. The
    controls on the randomised log are a second family, corrected apart: they leave the main tests' p-values alone."""
    cfg = ex.ExperimentConfig(losses=["xendcg", "listnet"], trials=4, metrics=["ndcg@5"], position_bias=[1.0],
                              test="ttest")
    setting = ex.setting_for("position-bias", 1.0)
    rng = np.random.default_rng(3)
    names = ex.setting_losses(cfg, setting)
    assert names == ["xendcg", "xendcg+ips", "xendcg+control", "xendcg+ips+control",
                     "listnet", "listnet+ips", "listnet+control", "listnet+ips+control"]
    vals = {name: rng.random(4) for name in names}
    rows = [dict(trial=t, setting=setting.name, loss=name, metric="ndcg@5", value=float(vals[name][t]), trees=1,
                 seconds=0.0) for name in names for t in range(4) if (name, t) != ("listnet+ips", 3)]
    tests = ex.summarize_experiment(rows, cfg, [setting])["settings"][0]["tests"]
    assert [(t["a"], t["b"], t["n"]) for t in tests] == [
        ("xendcg", "xendcg+ips", 3), ("listnet", "listnet+ips", 3),
        ("xendcg+control", "xendcg+ips+control", 4), ("listnet+control", "listnet+ips+control", 4)]
    main, control = tests[:2], tests[2:]
    ps = [sps.ttest_rel(vals[t["b"]][:3], vals[t["a"]][:3]).pvalue for t in main]
    assert [t["p_value"] for t in main] == pytest.approx(ps)
    assert [t["p_adjusted"] for t in main] == pytest.approx(np.maximum.accumulate(
        np.minimum(1, np.sort(ps) * np.array([2, 1])))[np.argsort(np.argsort(ps))])
    ps = [sps.ttest_rel(vals[t["b"]], vals[t["a"]]).pvalue for t in control]
    assert [t["p_adjusted"] for t in control] == pytest.approx(np.maximum.accumulate(
        np.minimum(1, np.sort(ps) * np.array([2, 1])))[np.argsort(np.argsort(ps))])


def test_identical_repeats_are_not_a_sample():
    """Losses differing by the same amount in every trial (what repeats of one fixed split gave): the t-test has no
    variance to use; it is reported not testable with its reason, never p = 0."""
    rows = [dict(trial=t, setting="baseline", loss=x, metric="ndcg@5", value=v, trees=1, seconds=0.0)
            for t in range(4) for x, v in (("a", 0.5), ("b", 0.625))]
    for test in ("corrected-ttest", "ttest"):
        cfg = ex.ExperimentConfig(losses=["a", "b"], trials=4, metrics=["ndcg@5"], test=test)
        s = ex.summarize_experiment(rows, cfg, [ex.BASELINE], sizes=SIZES)["settings"][0]
        t = s["tests"][0]
        assert np.isnan(t["p_value"]) and "zero variance" in t["reason"] and t["test"] == test
        assert (t["difference"], t["n"]) == (0.125, 4)
    assert p_value_or_reason(t["p_value"], P_DIGITS, t["reason"]) == f"not testable: {t['reason']}"
    assert p_value_or_reason(0.01234, P_DIGITS) == "0.012"


# --- running, resuming, refusing -------------------------------------------------------------------------------------

def test_run_resume_and_refuse(tmp_path):
    path = tmp_path / "d.parquet"
    write_dataset(path, synthetic(30))
    cfg = dict(losses=["lambdamart", "xendcg"], trials=2, trees=3, early_stopping=0, label_noise=[0.2])
    seen = []
    res = ex.run_experiment(path, tmp_path / "exp", ex.ExperimentConfig(**cfg), on_unit=seen.append)
    assert res.ran_units == 8 and len(seen) == 8
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "exp" / "trials.parquet")
    assert table.column_names == list(store.TRIAL_COLUMNS)
    assert table.num_rows == 8 * 2
    assert set(table.column("trees").to_pylist()) == {3}
    curves = store.load_curves(tmp_path / "exp")
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


def write_folds(root, k: int = 2, n_queries: int = 12, valid: bool = True, seed: int = 0, n_features: int = 4):
    """``root/Fold1 .. FoldK`` with train/vali/test Parquet files (distinct synthetic queries in each file)."""
    for fold in range(1, k + 1):
        d = root / f"Fold{fold}"
        d.mkdir(parents=True)
        for j, part in enumerate(("train", "vali", "test")):
            if part == "vali" and not valid:
                continue
            ds = synthetic(n_queries if part == "train" else n_queries // 2, seed=seed + 10 * fold + j,
                           n_features=n_features)
            ds.qids = ds.qids + 1000 * fold + 100 * j
            write_dataset(d / f"{part}.parquet", ds)
    return root


def test_load_data_directory_pooled_or_folds(tmp_path):
    parts = {"train": synthetic(6, seed=1), "vali": synthetic(3, seed=2), "test": synthetic(3, seed=3)}
    for name, ds in parts.items():
        write_dataset(tmp_path / f"{name}.parquet", ds)
    pooled = ex.load_data(tmp_path)
    assert pooled.folds is None and pooled.pooled.n_queries == 12  # test, train, vali in name order
    one = ex.load_data(tmp_path, folds=True)                        # a train/vali/test directory is one fold
    assert [f.number for f in one.folds] == [1]
    assert [d.n_queries for d in one.fold(1)] == [6, 3, 3]
    cfg = ex.ExperimentConfig(folds=True, trials=1)
    assert ex.trial_ids(cfg) == [1]
    assert all(_same(a, b) for a, b in zip(ex.trial_split(one, cfg, 1), parts.values()))
    (tmp_path / "vali.parquet").unlink()
    assert ex.load_data(tmp_path, folds=True).fold(1)[1] is None
    (tmp_path / "train.parquet").unlink()
    with pytest.raises(InputError, match="no train.parquet; DATA .* needs train.parquet, vali.parquet and test"):
        ex.load_data(tmp_path, folds=True)


def test_fold_directories(tmp_path):
    root = write_folds(tmp_path / "d", k=3)
    data = ex.load_data(root, folds=True)
    assert [(f.number, f.train.parent.name) for f in data.folds] == [(1, "Fold1"), (2, "Fold2"), (3, "Fold3")]
    train, valid, test = data.fold(2)
    assert set(test.qids.tolist()) == {q + 2000 + 200 for q in range(100, 106)}
    # a file instead of a directory is a usage error
    with pytest.raises(UsageError, match="--folds needs DATA to be a directory holding Fold1/ .. FoldK/"):
        ex.load_data(root / "Fold1" / "train.parquet", folds=True)
    # pooling a directory of fold directories says to pass --folds
    with pytest.raises(InputError, match="no \\*.parquet file in the directory; it holds fold directories: "
                                         "pass --folds"):
        ex.load_data(root)


def test_fold_without_validation_is_refused_when_others_have_one(tmp_path):
    root = write_folds(tmp_path / "d", k=2)
    (root / "Fold2" / "vali.parquet").unlink()
    with pytest.raises(InputError, match="Fold2: no vali.parquet, but .*Fold1/vali.parquet exists; every fold "
                                         "needs the same parts"):
        ex.load_data(root, folds=True)
    # no fold with validation is a protocol (no early stopping); it is read
    (root / "Fold1" / "vali.parquet").unlink()
    assert [f.valid for f in ex.load_data(root, folds=True).folds] == [None, None]


def test_folds_with_different_feature_columns_are_refused(tmp_path):
    root = write_folds(tmp_path / "d", k=2)
    write_dataset(root / "Fold2" / "test.parquet", synthetic(6, seed=7, n_features=3), overwrite=True)
    with pytest.raises(InputError, match="Fold2/test.parquet: 3 features \\(f1..f3\\), but .*Fold1/train.parquet has 4 "
                                         "features \\(f1..f4\\); every file of every fold needs the same feature"):
        ex.load_data(root, folds=True)


def test_fold_numbers_without_gaps_and_not_mixed_with_files(tmp_path):
    root = write_folds(tmp_path / "d", k=3)
    shutil.rmtree(root / "Fold2")
    with pytest.raises(InputError, match="numbered 1..K without gaps, got Fold1, Fold3 \\(Fold2 missing\\)"):
        ex.load_data(root, folds=True)
    shutil.rmtree(root / "Fold3")
    # Fold0 beside Fold1: it was silently left out (folds 1..K were trained)
    shutil.copytree(root / "Fold1", root / "Fold0")
    with pytest.raises(InputError, match="Fold0: folds are numbered from 1 \\(Fold1/ .. FoldK/\\), got Fold0"):
        ex.load_data(root, folds=True)
    shutil.rmtree(root / "Fold0")
    write_dataset(root / "train.parquet", synthetic(5))
    with pytest.raises(InputError, match="holds both fold directories \\(Fold1\\) and train/test files"):
        ex.load_data(root, folds=True)


def test_folds_with_the_same_test_file_are_refused(tmp_path):
    """Three copies of one fold pooled its 27 test queries into n = 81 with exit 0: each query counted three times,
    the t-test's standard error shrunk by sqrt(3). A copy or a link holds the same qids: refused as overlapping."""
    from rankcli.experiment.data import check_data

    def check(root):
        check_data(ex.load_data(root, folds=True), ex.ExperimentConfig(folds=True, losses=["xendcg"]))

    root = write_folds(tmp_path / "d", k=3)
    shutil.copy(root / "Fold1" / "test.parquet", root / "Fold3" / "test.parquet")
    with pytest.raises(InputError, match="qid 1300 is a test query of Fold1 .*Fold1/test.parquet.* and of Fold3 "
                                         ".*Fold3/test.parquet.* \\(5 more test queries are in two folds\\); the "
                                         "pooled tests would count it twice"):
        check(root)
    (root / "Fold3" / "test.parquet").unlink()
    (root / "Fold3" / "test.parquet").symlink_to(root / "Fold2" / "test.parquet")
    with pytest.raises(InputError, match="qid 2300 is a test query of Fold2 .* and of Fold3"):
        check(root)
    shutil.rmtree(root / "Fold3")
    check(root)


@pytest.mark.parametrize("kind", ["device", "dangling", "directory"])
def test_fold_file_that_is_not_a_regular_file_is_named(tmp_path, kind):
    """A test.parquet linked to /dev/zero read "no test.parquet; ... got test.parquet, train.parquet, vali.parquet"
    (and two such links would have been hashed forever by the same-test-file check)."""
    root = write_folds(tmp_path / "d", k=2)
    target = root / "Fold2" / "test.parquet"
    target.unlink()
    {"device": lambda: target.symlink_to("/dev/zero"), "dangling": lambda: target.symlink_to(root / "nowhere"),
     "directory": lambda: target.mkdir()}[kind]()
    with pytest.raises(InputError, match="Fold2/test.parquet: not a regular file"):
        ex.load_data(root, folds=True)


def test_a_unit_whose_validation_part_has_no_relevant_document_is_refused_naming_the_unit(tmp_path):
    """Such a split trained with a NaN selection metric after every tree (early stopping blind); the refusal says which
    setting, trial and loss."""
    ds = synthetic(12, seed=0)
    first = ds.qids == ds.qids[0]
    ds.labels = np.where(first, ds.labels, 0.0)   # one query with relevant documents
    write_dataset(tmp_path / "d.parquet", ds)
    with pytest.raises(InputError, match=r"^baseline, trial \d+, lambdamart: validation data: no validation query "
                                         "has a relevant document"):
        ex.run_experiment(tmp_path / "d.parquet", tmp_path / "exp",
                          ex.ExperimentConfig(losses=["lambdamart"], trials=3, trees=2, early_stopping=1))


def test_an_empty_dataset_hashes_into_the_fingerprint():
    """A fold with an empty test.parquet ended in a traceback hashing its (0, n) feature matrix ("memoryview: cannot
    cast view with zeros in shape or strides", exit 1)."""
    import hashlib

    empty = Dataset(qids=np.zeros(0, dtype=np.int64), labels=np.zeros(0), features=np.zeros((0, 4), np.float32),
                    feature_names=feature_names(4))
    h = hashlib.blake2b(digest_size=16)
    ex.data.hash_datasets(h, [empty])
    assert h.hexdigest() != hashlib.blake2b(digest_size=16).hexdigest()


def test_fold_part_without_rows_is_refused(tmp_path):
    root = write_folds(tmp_path / "d", k=2)
    empty = Dataset(qids=np.zeros(0, dtype=np.int64), labels=np.zeros(0), features=np.zeros((0, 4), np.float32),
                    feature_names=feature_names(4))
    write_dataset(root / "Fold2" / "test.parquet", empty, overwrite=True)
    with pytest.raises(InputError, match="Fold2/test.parquet: no rows; every part of every fold needs queries"):
        ex.load_data(root, folds=True)


FOLD_CFG = dict(losses=["lambdamart", "xendcg"], folds=True, trees=3, early_stopping=0, metrics=["ndcg@3", "ndcg@5"])


def pooled_values(exp, setting: str, loss: str, folds=(1, 2, 3)) -> dict:
    """A loss's per-query test values of ``setting``, pooled over the per-query files of ``folds``."""
    import pyarrow.parquet as pq

    parts = [pq.read_table(store.queries_path(exp, setting, k, loss)) for k in folds]
    return {m: np.concatenate([p.column(m).to_numpy() for p in parts]) for m in FOLD_CFG["metrics"]}


def test_folds_pool_test_queries_and_test_over_them(tmp_path):
    """Folds as LETOR results are reported: each fold trained once per loss; the paired tests run over the pooled test
    queries of all folds (n = queries), with difference = mean(b) - mean(a); trials.parquet's trial column is the fold
    number."""
    import pyarrow.parquet as pq

    root = write_folds(tmp_path / "d", k=3, n_queries=16)
    res = ex.run_experiment(root, tmp_path / "exp", ex.ExperimentConfig(**FOLD_CFG, label_noise=[0.3]))
    assert res.config.trials == 3 and res.ran_units == 3 * 2 * 2
    table = pq.read_table(tmp_path / "exp" / "trials.parquet")
    assert table.column_names == list(store.TRIAL_COLUMNS)
    assert sorted(set(table.column("trial").to_pylist())) == [1, 2, 3]
    summary = json.loads((tmp_path / "exp" / "summary.json").read_text())
    assert summary["protocol"] == "folds" and summary["unit"] == "query" and summary["trials"] == 3
    for s in summary["settings"]:
        pooled = {}
        for loss in FOLD_CFG["losses"]:
            parts = [pq.read_table(store.queries_path(tmp_path / "exp", s["setting"], k, loss)) for k in (1, 2, 3)]
            pooled[loss] = {m: np.concatenate([p.column(m).to_numpy() for p in parts]) for m in FOLD_CFG["metrics"]}
            # the fold means in trials.parquet are the means of the per-query files
            for k, p in zip((1, 2, 3), parts):
                row = next(r for r in table.to_pylist() if (r["setting"], r["trial"], r["loss"], r["metric"]) ==
                           (s["setting"], k, loss, "ndcg@5"))
                assert row["value"] == pytest.approx(np.nanmean(p.column("ndcg@5").to_numpy()))
        for t in s["tests"]:
            a, b = pooled[t["a"]][t["metric"]], pooled[t["b"]][t["metric"]]
            ok = ~np.isnan(a) & ~np.isnan(b)
            assert t["n"] == int(ok.sum()) > 3 * 2      # queries, not folds
            assert t["trials"] == 3
            assert t["difference"] == pytest.approx(b[ok].mean() - a[ok].mean())
            assert t["p_value"] == pytest.approx(sps.ttest_rel(b[ok], a[ok]).pvalue)
            assert s["losses"][t["a"]][t["metric"]]["n"] == t["n"]
    # the --json shape carries n and the difference
    assert ex.json_shape(res.summary)["settings"][0]["tests"][0]["n"] == summary["settings"][0]["tests"][0]["n"]
    # --test permutation: compare's test on the pooled queries (seeded by --seed, the pair and the metric, 10,000
    # sign vectors); a rerun with another test trains nothing
    again = ex.run_experiment(root, tmp_path / "exp", ex.ExperimentConfig(**FOLD_CFG, label_noise=[0.3],
                                                                        test="permutation", seed=0))
    assert again.ran_units == 0 and again.summary["test"] == {"name": "permutation", "label": "paired permutation "
                                                              "test over the pooled test queries",
                                                              "permutations": 10000, "seed": 0}
    for s in again.summary["settings"]:
        for mi, t in enumerate(s["tests"]):
            a, b = pooled_values(tmp_path / "exp", s["setting"], t["a"]), pooled_values(tmp_path / "exp", s["setting"],
                                                                                          t["b"])
            a, b = a[t["metric"]], b[t["metric"]]
            ok = ~np.isnan(a) & ~np.isnan(b)
            expected = paired_test(b[ok], a[ok], "permutation", rng=np.random.default_rng([0, 0, mi]),
                                   permutations=10000)
            assert (t["test"], t["p_value"]) == ("permutation", expected.p_value)
    # a number of trials other than the number of folds is refused (before EXP_DIR is touched)
    with pytest.raises(UsageError, match="trials do not combine with folds: each of the 3 folds"):
        ex.run_experiment(root, tmp_path / "exp2", ex.ExperimentConfig(**FOLD_CFG, trials=5))
    assert not (tmp_path / "exp2").exists()


def test_use_given_splits_one_fold_tests_over_queries_not_repeats(tmp_path):
    """The old --use-given-splits trained one deterministic split --trials times and t-tested the identical repeats
    (p = 0 between losses differing by a constant). Now a one-fold directory is one trial, tested over its queries."""
    root = write_folds(tmp_path / "d", k=1, n_queries=16)
    res = ex.run_experiment(root / "Fold1", tmp_path / "exp", ex.ExperimentConfig(**FOLD_CFG))
    assert res.config.trials == 1 and res.ran_units == 2
    t = res.summary["settings"][0]["tests"][0]
    assert t["trials"] == 1 and t["n"] >= 6


def test_folds_resume_after_interrupt_equals_uninterrupted(tmp_path):
    import pyarrow.parquet as pq

    root = write_folds(tmp_path / "d", k=2)
    ref = ex.run_experiment(root, tmp_path / "ref", ex.ExperimentConfig(**FOLD_CFG))
    seen = []

    def interrupt(u):
        seen.append(u)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ex.run_experiment(root, tmp_path / "exp", ex.ExperimentConfig(**FOLD_CFG), on_unit=interrupt)
    # a unit whose per-query file is lost is run again (the pooled tests need it)
    store.queries_path(tmp_path / "exp", "baseline", 1, "lambdamart").unlink()
    again = ex.run_experiment(root, tmp_path / "exp", ex.ExperimentConfig(**FOLD_CFG))
    assert (again.resumed_units, again.ran_units) == (1, 3)
    assert again.summary == ref.summary
    cols = ["trial", "setting", "loss", "metric", "value", "trees"]
    assert pq.read_table(tmp_path / "exp" / "trials.parquet").select(cols).equals(
        pq.read_table(tmp_path / "ref" / "trials.parquet").select(cols))
    assert (tmp_path / "exp" / "summary.md").read_text() == (tmp_path / "ref" / "summary.md").read_text()


def test_random_split_identity_is_unchanged_so_old_experiments_resume():
    ident = ex.ExperimentConfig(trials=3).identity()
    assert ident["use_given_splits"] is False and "folds" not in ident
    assert ex.ExperimentConfig(folds=True).identity()["folds"] is True


def test_experiment_config_embeds_one_train_config():
    """The hyperparameters live in one validated TrainConfig (given whole, or field by field); config.json's identity
    stays the flat dictionary earlier versions wrote, so their experiment directories still resume."""
    from rankcli.experiment.config import train_config
    from rankcli.train import TrainConfig

    flat = ex.ExperimentConfig(folds=True, trees=7, learning_rate=0.1, params={"max_bin": 63}, position_bias=[1.0])
    whole = ex.ExperimentConfig(folds=True, position_bias=[1.0],
                                train=TrainConfig(trees=7, learning_rate=0.1, params={"max_bin": 63}, threads=1))
    assert flat == whole and flat.train.trees == 7 and flat.train.threads == 1
    assert flat.identity() == {
        "augment_negatives": [], "click_impressions": 10, "click_noise": [], "convention": "paper",
        "early_stopping": 50, "folds": True, "label_noise": [], "learning_rate": 0.1, "logging_fraction": 0.01,
        "losses": ["lambdamart", "xendcg", "listnet"], "metrics": ["ndcg@5", "ndcg@10"], "min_data_in_leaf": None,
        "num_leaves": None, "params": {"max_bin": 63}, "position_bias": [1.0], "preset": None, "seed": 0,
        "select_by": "ndcg@5", "split": [0.6, 0.2, 0.2], "threads": 1, "trees": 7,
        "loss_options": {"listnet": {"step": "paper"}}}
    assert ex.ExperimentConfig(trials=3).identity() == {
        "augment_negatives": [], "click_impressions": 10, "click_noise": [], "convention": "paper",
        "early_stopping": 50, "label_noise": [], "learning_rate": None, "losses": ["lambdamart", "xendcg", "listnet"],
        "metrics": ["ndcg@5", "ndcg@10"], "min_data_in_leaf": None, "num_leaves": None, "params": {}, "preset": None,
        "seed": 0, "select_by": "ndcg@5", "split": [0.6, 0.2, 0.2], "threads": 1, "trees": 500,
        "use_given_splits": False, "loss_options": {"listnet": {"step": "paper"}}}
    # a unit trains the experiment's TrainConfig with its own loss, options and seed
    assert train_config(flat, "listnet", 11) == TrainConfig(loss="listnet", seed=11, trees=7, learning_rate=0.1,
                                                            params={"max_bin": 63}, threads=1)
    diagonal = ex.ExperimentConfig(loss_options={"listnet": {"step": "diagonal"}})
    assert train_config(diagonal, "listnet", 11).loss_options == {"step": "diagonal"}
    assert train_config(diagonal, "xendcg", 11).loss_options == {}
    # one set of checks: TrainConfig's, with its messages
    with pytest.raises(UsageError, match="--trees must be at least 1, got 0"):
        ex.ExperimentConfig(trees=0)
    with pytest.raises(UsageError, match="unknown metric 'foo'"):
        ex.ExperimentConfig(select_by="foo")
    with pytest.raises(TypeError, match="unexpected keyword argument 'loss'"):
        ex.ExperimentConfig(loss="xendcg")  # each unit has its own loss


def test_loss_options_are_part_of_the_configuration_and_an_earlier_directory_resumes_with_listnets_step(tmp_path):
    """Experiments written before ListNet had a step option trained its diagonal step and recorded no loss_options:
    rerunning their command resumes them with the diagonal step (the same units as an explicit --step diagonal); a
    new experiment records the paper's step, and other options are part of the identity too."""
    import pyarrow.parquet as pq

    path = tmp_path / "d.parquet"
    write_dataset(path, synthetic(30))
    cfg = dict(losses=["xendcg", "listnet"], trees=3, early_stopping=0)

    def listnet_values(exp):
        rows = pq.read_table(tmp_path / exp / "trials.parquet").to_pylist()
        return sorted((r["trial"], r["metric"], r["value"]) for r in rows if r["loss"] == "listnet")

    ex.run_experiment(path, tmp_path / "new", ex.ExperimentConfig(trials=2, **cfg))
    stored = json.loads((tmp_path / "new" / "config.json").read_text())["config"]
    assert stored["loss_options"] == {"listnet": {"step": "paper"}}
    # an earlier version's directory: the diagonal step, no loss_options recorded
    ex.run_experiment(path, tmp_path / "old", ex.ExperimentConfig(trials=1, loss_options={
        "listnet": {"step": "diagonal"}}, **cfg))
    assert "loss_options" not in json.loads((tmp_path / "old" / "config.json").read_text())["config"]
    resumed = ex.run_experiment(path, tmp_path / "old", ex.ExperimentConfig(trials=2, **cfg))
    assert (resumed.resumed_units, resumed.ran_units) == (2, 2)
    ex.run_experiment(path, tmp_path / "diag", ex.ExperimentConfig(trials=2, loss_options={
        "listnet": {"step": "diagonal"}}, **cfg))
    assert listnet_values("old") == listnet_values("diag") != listnet_values("new")
    with pytest.raises(OutputError, match=r'loss_options: null before, \{"listnet": \{"step": "paper"\}\} now'):
        ex.run_experiment(path, tmp_path / "old", ex.ExperimentConfig(trials=2, loss_options={
            "listnet": {"step": "paper"}}, **cfg))
    # the new directory resumes with the paper's step, and refuses another temperature of a new loss
    approx = dict(losses=["approxndcg"], trees=3, early_stopping=0, trials=1)
    ex.run_experiment(path, tmp_path / "approx", ex.ExperimentConfig(**approx))
    again = ex.run_experiment(path, tmp_path / "approx", ex.ExperimentConfig(**approx))
    assert again.ran_units == 0
    with pytest.raises(OutputError, match='"temperature": 0.1}} before, .*"temperature": 0.5}} now'):
        ex.run_experiment(path, tmp_path / "approx", ex.ExperimentConfig(
            loss_options={"approxndcg": {"temperature": "0.5"}}, **approx))
    with pytest.raises(UsageError, match="approxndcg:temperature: expected >= 0.0001, <= 10000, got '-1'"):
        ex.ExperimentConfig(loss_options={"approxndcg": {"temperature": "-1"}}, **approx).validate()


# --- position bias: naive against IPS on clicks logged by a trained ranker (does IPS undo the bias?) -----------------

PB_CFG = dict(losses=["xendcg", "lambdamart"], trials=2, trees=3, early_stopping=0, position_bias=[0.0, 1.0],
              metrics=["ndcg@3", "ndcg@5"], seed=5)


def _trials(exp_dir):
    import pyarrow.parquet as pq

    return pq.read_table(exp_dir / "trials.parquet").drop(["seconds"])


def test_position_bias_settings_variants_and_paired_tests(tmp_path):
    path = tmp_path / "d.parquet"
    write_dataset(path, synthetic(40, seed=2))
    res = ex.run_experiment(path, tmp_path / "exp", ex.ExperimentConfig(**PB_CFG))
    # eta = 0 is a setting of its own (clicks without bias), not the graded baseline
    assert [s.name for s in res.settings] == ["baseline", "position-bias=0", "position-bias=1"]
    # baseline: the losses; position-bias settings: naive, +ips and the two controls on the randomised log where the
    # loss takes IPS (lambdamart naive only)
    assert res.ran_units == 2 * (2 + 5 + 5)
    rows = _trials(tmp_path / "exp").to_pylist()
    names = {s: {r["loss"] for r in rows if r["setting"] == s} for s in ("baseline", "position-bias=1")}
    variants = ["xendcg", "xendcg+ips", "xendcg+control", "xendcg+ips+control", "lambdamart"]
    assert names == {"baseline": {"xendcg", "lambdamart"}, "position-bias=1": set(variants)}
    summary = json.loads((tmp_path / "exp" / "summary.json").read_text())
    for s in summary["settings"][1:]:
        assert list(s["losses"]) == variants
        # only naive against IPS is tested, per loss and metric, over the trials; then the control's
        assert [(t["a"], t["b"], t["metric"]) for t in s["tests"]] == [
            ("xendcg", "xendcg+ips", "ndcg@3"), ("xendcg", "xendcg+ips", "ndcg@5"),
            ("xendcg+control", "xendcg+ips+control", "ndcg@3"), ("xendcg+control", "xendcg+ips+control", "ndcg@5")]
        for t in s["tests"]:
            assert t["n"] == 2
            assert t["difference"] == pytest.approx(s["losses"][t["b"]][t["metric"]]["mean"]
                                                    - s["losses"][t["a"]][t["metric"]]["mean"])
    sweep = summary["sweeps"]["position-bias"]
    assert [r["level"] for r in sweep] == [0.0, 1.0]
    assert all("xendcg+ips - xendcg" in r and "xendcg+ips - xendcg p_adjusted" in r for r in sweep)
    assert all("xendcg+ips+control - xendcg+control p_adjusted" in r for r in sweep)
    md = (tmp_path / "exp" / "summary.md").read_text()
    assert "## sweep position-bias: test ndcg@5" in md and "| xendcg+ips - xendcg | ndcg@5 |" in md
    assert "| xendcg+ips+control - xendcg+control | ndcg@5 |" in md
    assert "lambdamart: naive only" in md
    # same seed, another directory: identical trials
    again = ex.run_experiment(path, tmp_path / "again", ex.ExperimentConfig(**PB_CFG))
    assert _trials(tmp_path / "again").equals(_trials(tmp_path / "exp"))
    assert again.summary == res.summary
    # another seed: other clicks, other results
    ex.run_experiment(path, tmp_path / "seed", ex.ExperimentConfig(**{**PB_CFG, "seed": 6}))
    assert not _trials(tmp_path / "seed").equals(_trials(tmp_path / "exp"))


def test_position_bias_resume_is_keyed_by_variant(tmp_path):
    path = tmp_path / "d.parquet"
    write_dataset(path, synthetic(40, seed=2))
    cfg = {**PB_CFG, "position_bias": [1.0], "losses": ["xendcg"]}
    ex.run_experiment(path, tmp_path / "ref", ex.ExperimentConfig(**cfg))
    seen = []

    def interrupt(u):
        seen.append(u)
        if len(seen) == 2:   # trial 0: baseline xendcg, then position-bias=1 xendcg (naive); xendcg+ips not yet
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ex.run_experiment(path, tmp_path / "exp", ex.ExperimentConfig(**cfg), on_unit=interrupt)
    assert [(u.setting, u.loss) for u in seen] == [("baseline", "xendcg"), ("position-bias=1", "xendcg")]
    again = ex.run_experiment(path, tmp_path / "exp", ex.ExperimentConfig(**cfg))
    assert (again.resumed_units, again.ran_units) == (2, 8)
    assert _trials(tmp_path / "exp").equals(_trials(tmp_path / "ref"))
    assert (tmp_path / "exp" / "summary.md").read_text() == (tmp_path / "ref" / "summary.md").read_text()


def test_position_bias_ips_with_unit_propensities_is_the_naive_pooling(data):
    """The IPS variant differs from the naive one only by the propensities: with every propensity 1 both train on the
    same pooled lists and labels (the library's --pool-impressions path)."""
    cfg = ex.ExperimentConfig(**{**PB_CFG, "losses": ["xendcg", "ranknet", "lambdamart"]})
    train, valid, _ = ex.trial_split(data, cfg, 0)
    logs = ex.position_bias_logs(train, valid, cfg, ex.setting_for("position-bias", 1.0), 0)
    # the click log: the non-logging training queries, top 10 of the logging ranker, every impression kept
    n_log = ex.logging_query_count(train.n_queries, cfg.logging_fraction)
    assert n_log == 5
    assert np.unique(logs.train.extra["source_qid"]).shape[0] == train.n_queries - n_log
    assert logs.train.n_queries == (train.n_queries - n_log) * cfg.click_impressions
    assert logs.train.extra["position"].max() <= ex.DISPLAYED_POSITIONS
    assert logs.propensity[0] == 1.0 and np.all(logs.propensity > 0)  # relative to position 1, not capped at 1
    naive = ex.variant_data(logs, "xendcg", cfg)
    ips = ex.variant_data(logs, "xendcg+ips", cfg)
    assert _same(naive[0], ips[0]) is False  # estimated propensities reweight the clicks
    flat = ex.ClickLogs(logs.train, logs.valid, np.ones_like(logs.propensity), logs.estimate, logs.randomised)
    for name in ("xendcg", "ranknet"):
        a, b = ex.variant_data(flat, name, cfg), ex.variant_data(flat, name + ex.IPS_SUFFIX, cfg)
        assert _same(a[0], b[0]) and _same(a[1], b[1])
    assert ex.variant_data(flat, "ranknet+ips", cfg)[2] is not None  # the pairwise IPS objective
    # lambdamart: the impressions as logged
    lm = ex.variant_data(logs, "lambdamart", cfg)
    assert lm[0] is logs.train and lm[2] is None


def test_position_bias_configuration_checks_and_identity(tmp_path):
    assert ex.logging_query_count(100, 0.01) == 5 and ex.logging_query_count(1000, 0.01) == 10
    assert ex.logging_query_count(1001, 0.01) == 11
    for bad, msg in (({"position_bias": [-1.0]}, "--position-bias: levels are PBM exponents eta >= 0"),
                     ({"position_bias": [float("nan")]}, "--position-bias"),
                     ({"position_bias": [1.0, 1.0]}, "--position-bias: a level is listed twice"),
                     ({"position_bias": [1.0], "logging_fraction": 0.0}, "--logging-fraction"),
                     ({"position_bias": [1.0], "logging_fraction": 1.0}, "--logging-fraction")):
        with pytest.raises(UsageError, match=msg):
            ex.ExperimentConfig(**bad).validate()
    # experiments without the sweep keep their identity (directories of earlier versions resume)
    assert "position_bias" not in ex.ExperimentConfig().identity()
    assert "logging_fraction" not in ex.ExperimentConfig().identity()
    assert ex.ExperimentConfig(position_bias=[1.0]).identity()["logging_fraction"] == 0.01
    # too few training queries to leave any after the logging ranker's: the unit is named
    path = tmp_path / "d.parquet"
    write_dataset(path, synthetic(20, seed=2))
    with pytest.raises(InputError, match=r"position-bias=1, trial 0, xendcg: the logging ranker takes 12 of the 12 "
                                         r"training queries \(--logging-fraction 0.99, at least 5\), leaving none"):
        ex.run_experiment(path, tmp_path / "exp", ex.ExperimentConfig(**{**PB_CFG, "losses": ["xendcg"],
                                                                          "position_bias": [1.0],
                                                                          "logging_fraction": 0.99}))
    # graded labels the click model cannot take
    ds = synthetic(20, seed=2)
    ds.labels = ds.labels + 0.5
    write_dataset(tmp_path / "g.parquet", ds)
    with pytest.raises(InputError, match="--position-bias needs integer grades 0..4"):
        ex.run_experiment(tmp_path / "g.parquet", tmp_path / "exp2", ex.ExperimentConfig(**PB_CFG))


def test_position_bias_under_folds_tests_naive_against_ips_over_the_pooled_queries(tmp_path):
    root = write_folds(tmp_path / "d", k=2, n_queries=80)
    res = ex.run_experiment(root, tmp_path / "exp", ex.ExperimentConfig(
        losses=["xendcg"], folds=True, trees=3, early_stopping=0, position_bias=[1.0], metrics=["ndcg@5"]))
    assert res.ran_units == 2 * (1 + 4)
    s = res.summary["settings"][1]
    assert s["setting"] == "position-bias=1"
    assert list(s["losses"]) == ["xendcg", "xendcg+ips", "xendcg+control", "xendcg+ips+control"]
    t, control = s["tests"]
    assert (control["a"], control["b"], control["trials"]) == ("xendcg+control", "xendcg+ips+control", 2)
    assert (t["a"], t["b"], t["trials"]) == ("xendcg", "xendcg+ips", 2)
    assert t["n"] > 2 * 10  # the pooled test queries, not the folds
    for k in (1, 2):
        assert store.queries_path(tmp_path / "exp", "position-bias=1", k, "xendcg+ips").is_file()


def test_position_bias_variants_of_the_new_losses():
    """approxndcg and lambdaloss take IPS labels (an +ips variant and the two controls on the randomised log); listmle
    and listmle-pa are trained naive only."""
    from rankcli.experiment.settings import Setting, setting_losses, setting_pairs

    config = ex.ExperimentConfig(losses=["listmle", "approxndcg", "listmle-pa", "lambdaloss"], position_bias=[1.0])
    setting = Setting("position-bias=1", "position-bias", 1.0)
    assert setting_losses(config, setting) == [
        "listmle", "approxndcg", "approxndcg+ips", "approxndcg+control", "approxndcg+ips+control", "listmle-pa",
        "lambdaloss", "lambdaloss+ips", "lambdaloss+control", "lambdaloss+ips+control"]
    assert setting_pairs(config, setting) == [
        ("approxndcg", "approxndcg+ips"), ("lambdaloss", "lambdaloss+ips"),
        ("approxndcg+control", "approxndcg+ips+control"), ("lambdaloss+control", "lambdaloss+ips+control")]
