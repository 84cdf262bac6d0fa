"""rankcli.distributed: --dask for train, experiment and convert, on an in-process LocalCluster of 2 worker processes.

One cluster serves the whole module (start-up takes a few seconds). Skipped, with the reason, when the optional
``dask`` extra (dask[distributed], pandas) is not installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

pytest.importorskip("distributed", reason='the optional extra is not installed: pip install "rankcli[dask]"')
pytest.importorskip("pandas", reason='the optional extra is not installed: pip install "rankcli[dask]"')

from rankcli import distributed as rd  # noqa: E402
from rankcli.core import metrics  # noqa: E402
from rankcli.dataset import Dataset  # noqa: E402
from rankcli.distributed import cluster as dask_cluster  # noqa: E402
from rankcli.errors import OutputError, SchemaError, UsageError  # noqa: E402
from rankcli.formats import parquet, partitions  # noqa: E402
from tests.conftest import SAMPLE, run_cli  # noqa: E402
from tests.formats.test_partitions import write_row_groups  # noqa: E402


# ---------------------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def client():
    with rd.connect("local:2", threads_per_worker=1, memory_limit="1GB") as c:
        yield c


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    """The LETOR sample converted to Parquet: train/vali/test, one row group each (rankcli convert's layout)."""
    from rankcli.convert import convert

    out = tmp_path_factory.mktemp("sample") / "letor"
    convert([str(SAMPLE / "letor")], out)
    return out


def hidden_from_workers(client, paths, kind="exists"):
    """In place of :func:`rankcli.distributed.cluster.visible_everywhere`: no worker sees any path."""
    return {p: False for p in paths}


def ndcg5(booster, ds: Dataset) -> float:
    scores = booster.predict(ds.features)
    return metrics.evaluate(["ndcg@5"], ds.labels, scores, ds.offsets).means["ndcg@5"]


# ------------------------------------------------------------------------------------------------ parsing, no cluster
def test_parse_dask_target():
    assert rd.parse_dask_target("local:3").workers == 3
    assert rd.parse_dask_target("local").workers >= 1
    assert rd.parse_dask_target("tcp://10.0.0.5:8786").address == "tcp://10.0.0.5:8786"
    assert rd.parse_dask_target("sched.example.org").address == "tcp://sched.example.org:8786"
    assert rd.parse_dask_target("sched:9000").address == "tcp://sched:9000"
    for bad in ("local:0", "local:x", "http://h:1", "a b"):
        with pytest.raises(UsageError):
            rd.parse_dask_target(bad)


def test_library_losses_are_refused_with_the_reason():
    for loss in ("xendcg", "listnet", "ranknet"):
        with pytest.raises(UsageError, match="custom objective runs separately on every worker and sees only"):
            rd.check_dask_loss(loss)
    for loss in rd.NATIVE_LOSSES:
        assert rd.check_dask_loss(loss) == loss


def test_missing_extra_is_a_usage_error_saying_what_to_install(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("pandas", "sklearn") else
                        real(name, *a))
    with pytest.raises(UsageError, match=r'^--dask needs pandas, which is not installed; install the optional extra: '
                                         r'pip install "rankcli\[dask\]"$'):
        rd.require_dask()
    with pytest.raises(UsageError, match=r"^--dask needs pandas, sklearn, which are not installed"):
        rd.require_dask(training=True)


def test_unreachable_scheduler_is_an_output_error_naming_the_address():
    with pytest.raises(OutputError, match=r"cannot reach the Dask scheduler at tcp://127\.0\.0\.1:9"):
        with rd.connect("tcp://127.0.0.1:9", timeout=0.5):
            pass


def test_unreachable_scheduler_cli_exit_4(sample):
    res = run_cli("train", sample / "train.parquet", "-o", sample.parent / "m-unreachable", "--loss", "lambdamart",
                  "--dask", "tcp://127.0.0.1:9", env={"RANKCLI_DASK_TIMEOUT": "0.5"})
    assert res.returncode == 4, res.stderr
    assert res.stderr.decode().startswith("Error: cannot reach the Dask scheduler at tcp://127.0.0.1:9 ")
    assert not (sample.parent / "m-unreachable").exists()


# -------------------------------------------------------------------------------------------------------- partitions
def test_query_straddling_row_groups_is_refused(sample, tmp_path):
    table = parquet.read_table(sample / "train.parquet")
    path = tmp_path / "straddle.parquet"
    pq.write_table(table, path, row_group_size=1000)  # cuts wherever row 1000 falls, inside some query
    qids = table.column("qid").to_numpy()
    assert qids[999] == qids[1000]
    with pytest.raises(SchemaError, match=rf"qid {qids[1000]} spans row groups 0 and 1"):
        partitions.plan_partitions(path)
    res = run_cli("train", path, "-o", tmp_path / "m", "--loss", "lambdamart", "--dask", "local:1")
    assert res.returncode == 3
    assert f"qid {qids[1000]} spans row groups 0 and 1" in res.stderr.decode()
    assert not (tmp_path / "m").exists()


# ---------------------------------------------------------------------------------------------------------- training
def test_distributed_lambdamart_equals_single_machine_when_bins_agree(client, sample, tmp_path):
    """With features on a coarse grid (every worker sees every value, so LightGBM's per-worker bin boundaries agree)
    and min_data_in_leaf=1 (data-parallel LightGBM estimates leaf counts from hessians), the distributed model is the
    single-machine model: same scores, same NDCG@5."""
    from rankcli.train import TrainConfig, train_model

    ds = parquet.read_dataset(sample / "train.parquet")
    ds.features = np.round(ds.features, 1).astype(np.float32)
    path = write_row_groups(ds, tmp_path / "coarse.parquet", 400)
    test = parquet.read_dataset(sample / "test.parquet")
    config = TrainConfig(loss="lambdamart", trees=15, learning_rate=0.1, min_data_in_leaf=1, early_stopping=0)
    result, info = rd.train_distributed(client, path, None, config)
    single = train_model(ds, None, config)
    assert info.workers == 2 and info.partitions >= 2 and info.rows == ds.n_rows
    assert result.trees_trained == 15
    np.testing.assert_allclose(result.booster.predict(test.features), single.booster.predict(test.features),
                               atol=1e-9)
    assert abs(ndcg5(result.booster, test) - ndcg5(single.booster, test)) < 1e-9


def test_distributed_lambdamart_reaches_single_machine_ndcg(client, sample, tmp_path):
    """The sample as it is, LightGBM's defaults: the models differ a little (each worker finds the bins of some
    features on its own rows; leaf counts are estimated from hessians), so on ~60 test queries one split's NDCG@5
    moves by about 0.014 either way (measured over 8 splits: mean difference -0.002). Over 4 random query splits the
    mean difference must stay within 0.025 (3.5 standard errors); the exact agreement is the test above."""
    from rankcli.dataset.pooling import concat_datasets
    from rankcli.train import TrainConfig, train_model

    pooled = concat_datasets([parquet.read_dataset(sample / f"{n}.parquet") for n in ("train", "vali", "test")])
    config = TrainConfig(loss="lambdamart", trees=30, learning_rate=0.05, early_stopping=0)
    diffs = []
    for seed in range(4):
        order = np.random.default_rng(seed).permutation(pooled.n_queries)
        train, test = pooled.take_queries(np.sort(order[:90])), pooled.take_queries(np.sort(order[90:]))
        path = write_row_groups(train, tmp_path / f"split{seed}.parquet", 800)
        result, _ = rd.train_distributed(client, path, None, config)
        single = train_model(train, None, config)
        diffs.append(ndcg5(result.booster, test) - ndcg5(single.booster, test))
    assert abs(float(np.mean(diffs))) < 0.025, diffs


def test_model_directory_and_early_stopping(client, sample, tmp_path):
    from rankcli.train import TrainConfig, load_model

    valid = parquet.read_dataset(sample / "vali.parquet")
    config = TrainConfig(loss="xendcg-native", trees=40, learning_rate=0.2, early_stopping=5)
    seen = []
    result, info = rd.train_distributed(client, sample / "train.parquet", valid, config,
                                        on_iteration=lambda i, v, b: seen.append((i, v, b)))
    assert len(result.curve) == result.trees_trained == 40 and len(seen) == 40
    best = int(np.argmax(result.curve[: result.best_iteration])) + 1
    assert result.best_iteration == best
    # single-machine early stopping would have stopped 5 trees after the best one, unless that is past the end
    assert all(v <= result.curve[best - 1] for v in result.curve[: min(40, best + 5)])
    content = rd.save_distributed_model(result, config, info, tmp_path / "model", train_path=sample / "train.parquet",
                                        valid_path=sample / "vali.parquet", feature_names=valid.feature_names)
    assert sorted(p.name for p in (tmp_path / "model").iterdir()) == ["model.txt", "rankcli.json"]
    stored = json.loads((tmp_path / "model" / "rankcli.json").read_text())
    assert stored == json.loads(json.dumps(content))
    for key in ("loss", "params", "seed", "features", "data_sha256", "best_iteration", "curve", "versions", "seconds"):
        assert key in stored
    assert stored["dask"]["workers"] == 2 and stored["params"]["tree_learner"] == "data"
    model = load_model(tmp_path / "model")
    np.testing.assert_allclose(model.predict(valid), result.booster.predict(valid.features))
    assert model.booster.current_iteration() == result.best_iteration


def test_labels_checked_like_single_machine(client, sample, tmp_path):
    from rankcli.core.labels import NonIntegerLabelsError
    from rankcli.train import TrainConfig

    ds = parquet.read_dataset(sample / "train.parquet")
    ds.labels = ds.labels * 0.25  # 0, 0.25, ... 1.0
    path = write_row_groups(ds, tmp_path / "real.parquet", 500)
    with pytest.raises(NonIntegerLabelsError, match="--label-grades"):
        rd.train_distributed(client, path, None, TrainConfig(loss="lambdamart", trees=2, early_stopping=0))
    result, _ = rd.train_distributed(client, path, None, TrainConfig(loss="lambdamart", trees=2, early_stopping=0,
                                                                     label_grades=True))
    assert result.label_values == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_labels_beyond_float32_are_refused_like_single_machine(client, sample, tmp_path):
    """pointwise (LightGBM's regression) keeps labels as float32: --dask trained on an inf label where single-machine
    training refuses it; both now check the labels by one rule (rankcli.train.trainable_labels)."""
    from rankcli.errors import InputError
    from rankcli.train import TrainConfig

    ds = parquet.read_dataset(sample / "train.parquet")
    ds.labels = ds.labels.copy()
    ds.labels[3] = 1e39
    path = write_row_groups(ds, tmp_path / "huge.parquet", 500)
    with pytest.raises(InputError, match=r"keeps labels as 32-bit floats, which end at 3.403e\+38, got a label of 1e"):
        rd.train_distributed(client, path, None, TrainConfig(loss="pointwise", trees=2, early_stopping=0))


def test_options_and_validation_are_checked_like_single_machine(client, sample, tmp_path):
    """dart with early stopping, and a validation set on which the metric has no value, are refused as rankcli train
    refuses them (--dask trained on: a model cut where dart's reweighted trees never scored, an all-NaN curve)."""
    from rankcli.errors import InputError
    from rankcli.train import TrainConfig

    valid = parquet.read_dataset(sample / "vali.parquet")
    config = TrainConfig(loss="pointwise", trees=2, early_stopping=1, params={"boosting": "dart"})
    with pytest.raises(UsageError, match="boosting=dart does not combine with early stopping"):
        rd.train_distributed(client, sample / "train.parquet", valid, config)
    valid.labels = np.zeros_like(valid.labels)
    with pytest.raises(InputError, match="no validation query has a relevant document"):
        rd.train_distributed(client, sample / "train.parquet", valid, TrainConfig(loss="pointwise", trees=2))


def test_training_file_must_be_visible_to_every_worker(client, sample, monkeypatch):
    from rankcli.errors import InputError
    from rankcli.train import TrainConfig

    monkeypatch.setattr(dask_cluster, "visible_everywhere", hidden_from_workers)
    with pytest.raises(InputError, match="not visible to every Dask worker"):
        rd.train_distributed(client, sample / "train.parquet", None, TrainConfig(loss="pointwise", trees=1))


# -------------------------------------------------------------------------------------------------------- experiment
def test_experiment_on_the_cluster_equals_jobs_1_and_resumes(client, sample, tmp_path):
    from rankcli.experiment import ExperimentConfig, run_experiment

    def config():
        return ExperimentConfig(losses=["lambdamart", "xendcg"], trials=3, trees=8, early_stopping=3,
                                metrics=["ndcg@5", "ndcg@10"])

    local = run_experiment(sample, tmp_path / "jobs1", config(), jobs=1)
    on_cluster = run_experiment(sample, tmp_path / "dask", config(), dask=client)
    assert on_cluster.ran_units == local.ran_units == 6
    cols = ["trial", "setting", "loss", "metric", "value", "trees"]
    a = pq.read_table(tmp_path / "jobs1" / "trials.parquet").select(cols)
    b = pq.read_table(tmp_path / "dask" / "trials.parquet").select(cols)
    assert a.equals(b)
    again = run_experiment(sample, tmp_path / "dask", config(), dask=client)
    assert again.ran_units == 0 and again.resumed_units == 6


def test_experiment_data_sent_when_workers_cannot_read_the_path(client, sample, tmp_path, monkeypatch):
    from rankcli.experiment import ExperimentConfig, run_experiment

    monkeypatch.setattr(dask_cluster, "visible_everywhere", hidden_from_workers)
    cfg = ExperimentConfig(losses=["pointwise"], trials=2, trees=5, early_stopping=0, metrics=["ndcg@5"])
    on_cluster = run_experiment(sample, tmp_path / "shipped", cfg, dask=client)
    local = run_experiment(sample, tmp_path / "local", ExperimentConfig(**{**cfg.__dict__}), jobs=1)
    assert on_cluster.summary == local.summary


def test_experiment_folds_on_the_cluster_follow_the_same_protocol(client, sample, tmp_path, monkeypatch):
    """--folds with --dask: the same units, seeds, per-query files and pooled tests as a --jobs 1 run, whether the
    workers read the folds themselves or are sent them."""
    import shutil

    from rankcli.experiment import ExperimentConfig, run_experiment
    from rankcli.formats.experiment_store import queries_path

    root = tmp_path / "folds"
    for k in (1, 2):
        shutil.copytree(sample, root / f"Fold{k}")
    # each fold its own test queries (a copied test file is refused): Fold2 swaps validation and test
    (root / "Fold2" / "test.parquet").rename(root / "Fold2" / "swap.parquet")
    (root / "Fold2" / "vali.parquet").rename(root / "Fold2" / "test.parquet")
    (root / "Fold2" / "swap.parquet").rename(root / "Fold2" / "vali.parquet")

    def config():
        return ExperimentConfig(losses=["pointwise", "xendcg"], folds=True, trees=4, early_stopping=0,
                                metrics=["ndcg@5"])

    local = run_experiment(root, tmp_path / "jobs1", config(), jobs=1)
    on_cluster = run_experiment(root, tmp_path / "dask", config(), dask=client)
    assert on_cluster.summary == local.summary and local.summary["settings"][0]["tests"][0]["trials"] == 2
    for k in (1, 2):
        for loss in ("pointwise", "xendcg"):
            a = pq.read_table(queries_path(tmp_path / "jobs1", "baseline", k, loss))
            b = pq.read_table(queries_path(tmp_path / "dask", "baseline", k, loss))
            assert a.column_names == b.column_names == ["qid", "ndcg@5"]
            for col in a.column_names:
                assert np.array_equal(a.column(col).to_numpy(), b.column(col).to_numpy(), equal_nan=True)
    monkeypatch.setattr(dask_cluster, "visible_everywhere", hidden_from_workers)
    shipped = run_experiment(root, tmp_path / "shipped", config(), dask=client)
    assert shipped.summary == local.summary


# ----------------------------------------------------------------------------------------------------------- convert
def test_convert_directory_on_the_cluster(client, sample, tmp_path):
    result = rd.convert_on_cluster(client, [str(SAMPLE / "letor")], tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".rankcli-output.json", "test.parquet",
                                                                     "train.parquet", "vali.parquet"]
    assert result.features == 40 and len(result.files) == 3
    for name in ("train", "vali", "test"):
        ours = pq.read_table(tmp_path / "out" / f"{name}.parquet")
        reference = pq.read_table(sample / f"{name}.parquet")
        assert ours.select(reference.column_names).equals(reference)
        parquet.check_query_aligned(tmp_path / "out" / f"{name}.parquet")
    with pytest.raises(OutputError, match="already exists"):
        rd.convert_on_cluster(client, [str(SAMPLE / "letor")], tmp_path / "out")


def test_convert_pads_narrower_files_to_the_widest(client, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("1 qid:1 1:0.5 3:1\n0 qid:1 2:0.25\n")
    (tmp_path / "in" / "b.txt").write_text("2 qid:7 1:1 7:2\n")
    result = rd.convert_on_cluster(client, [str(tmp_path / "in")], tmp_path / "out")
    assert result.features == 7
    for name in ("a", "b"):
        names = pq.read_schema(tmp_path / "out" / f"{name}.parquet").names
        assert parquet.feature_columns(names) == [f"f{i}" for i in range(1, 8)]


# --------------------------------------------------------------------------------------------------------------- CLI
def test_train_cli_on_a_running_scheduler(client, sample, tmp_path):
    """`rankcli train --dask tcp://...` against this module's cluster: same model directory as single-machine."""
    address = client.scheduler.address
    res = run_cli("train", sample / "train.parquet", "--valid", sample / "vali.parquet", "-o", tmp_path / "m",
                  "--loss", "pointwise", "--trees", "10", "--early-stopping", "3", "--dask", address, "--json")
    assert res.returncode == 0, res.stderr.decode()
    summary = json.loads(res.stdout)  # stdout holds only the JSON: workers' and LightGBM's chatter stays out
    assert summary["model_dir"] == str(tmp_path / "m") and summary["dask"]["scheduler"] == address
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["model.txt", "rankcli.json"]
    assert f"training pointwise on the Dask cluster {address} (2 workers)" in res.stderr.decode()
    res = run_cli("train", sample / "train.parquet", "-o", tmp_path / "m2", "--loss", "listnet", "--dask", address)
    assert res.returncode == 2 and "--loss listnet cannot train with --dask" in res.stderr.decode()


def test_train_cli_params_file_is_recorded_as_on_one_machine(client, sample, tmp_path):
    """`train --dask --params-file`: the file's parameters train the model and rankcli.json records the file (path,
    SHA-256, parameters) exactly as single-machine training does."""
    f = tmp_path / "best.json"
    f.write_text(json.dumps({"format": "rankcli-params/1", "losses": {"lambdamart": {
        "params": {"num_leaves": 7, "learning_rate": 0.2, "min_data_in_leaf": 3}}}}))
    common = ("--valid", sample / "vali.parquet", "--loss", "lambdamart", "--trees", "3", "--early-stopping", "0",
              "--params-file", f, "--num-leaves", "5")
    res = run_cli("train", sample / "train.parquet", "-o", tmp_path / "dask", *common, "--dask",
                  client.scheduler.address)
    assert res.returncode == 0, res.stderr.decode()
    res = run_cli("train", sample / "train.parquet", "-o", tmp_path / "here", *common)
    assert res.returncode == 0, res.stderr.decode()
    dask, here = (json.loads((tmp_path / d / "rankcli.json").read_text()) for d in ("dask", "here"))
    assert dask["params_file"] == here["params_file"]
    assert dask["params_file"]["path"] == str(f) and dask["params_file"]["params"]["num_leaves"] == 7
    assert (dask["params"]["num_leaves"], dask["params"]["learning_rate"], dask["params"]["min_data_in_leaf"]) \
        == (5, 0.2, 3)  # the explicit flag over the file, the file over train's defaults
    assert "dask" in dask and "dask" not in here


def test_scheduler_without_workers_is_an_output_error():
    from distributed import LocalCluster

    with LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cluster:
        with rd.connect(cluster.scheduler_address) as c:
            with pytest.raises(OutputError, match="has no workers"):
                rd.require_workers(c, timeout=0.2)


def test_experiment_cli_on_a_running_scheduler(client, sample, tmp_path):
    address = client.scheduler.address
    res = run_cli("experiment", sample, "-o", tmp_path / "exp", "--losses", "pointwise,xendcg", "--trials", "2",
                  "--trees", "5", "--early-stopping", "0", "--metric", "ndcg@5", "--no-plots", "--json",
                  "--dask", address)
    assert res.returncode == 0, res.stderr.decode()
    summary = json.loads(res.stdout)
    assert [s["setting"] for s in summary["settings"]] == ["baseline"]
    assert f"on the Dask cluster {address}" in res.stderr.decode()
    assert pq.read_table(tmp_path / "exp" / "trials.parquet").num_rows == 4
    res = run_cli("experiment", sample, "-o", tmp_path / "exp2", "--dask", address, "--jobs", "2")
    assert res.returncode == 2
    assert res.stderr.decode() == "Error: --jobs and --dask do not combine: with --dask the cluster's workers run " \
                                  "the units\n"


def test_click_model_fit_on_the_cluster_equals_the_local_fit(client, monkeypatch):
    """The E-step's sums per partition of sessions, added on the workers, give the local fit (to rounding)."""
    from rankcli.click_model import cluster as cm_cluster
    from rankcli.core import click_models as cm
    from tests.click_model_data import simulated_log, true_parameters

    monkeypatch.setattr(cm_cluster, "PARTITION_SESSIONS", 700)  # 5 partitions: a pairwise sum of sums
    params = true_parameters("dbn", 80, 5, np.random.default_rng(1))
    log = simulated_log("dbn", params, 3000, np.random.default_rng(2))
    layout = cm.Layout(log.n_items, log.max_rank)
    local = cm.fit(cm.DBN(), log, iterations=5)
    runner = cm_cluster.DaskRunner(client, cm.DBN(), log, layout, "exact")
    remote = cm.fit(cm.DBN(), None, iterations=5, layout=layout, runner=runner)
    assert all(np.allclose(local.values[f], remote.values[f], rtol=0, atol=1e-12) for f in local.values)
    assert np.allclose(local.log_likelihood, remote.log_likelihood, rtol=1e-12)
