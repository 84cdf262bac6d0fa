"""Streaming scoring (rankcli.train.scoring): ``predict`` and ``eval --model`` read the features a row group at a time
and score batches of whole queries, and give exactly what scoring the whole matrix gives: the same run file, byte for
byte, and the same metrics; on files whose row groups split queries, on an empty file, and with a tiny batch
budget."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from rankcli.core.metrics import Convention
from rankcli.dataset import Dataset
from rankcli.evaluate import evaluate_model, evaluate_run, model_run
from rankcli.formats.parquet import dataset_table, write_dataset
from rankcli.predict import predict_dataset, predict_file, write_run
from rankcli.train import TrainConfig, save_model, train_model


def _data(rng: np.random.Generator, n_queries: int, docids: bool) -> Dataset:
    sizes = rng.integers(1, 25, n_queries)
    n = int(sizes.sum())
    x = rng.normal(size=(n, 4)).astype(np.float32)
    x[:, 3] = np.round(x[:, 3])  # equal scores within queries: ties
    labels = np.clip(np.round(x[:, 0] + rng.normal(0, 1, n) + 1), 0, 4)
    qids = np.repeat(rng.permutation(10 * n_queries)[:n_queries].astype(np.int64), sizes)
    ids = np.array([f"d{i % 7}-{i}" for i in range(n)], dtype=object) if docids else None
    return Dataset(qids=qids, labels=labels, features=x, feature_names=["f1", "f2", "f3", "f4"], docids=ids)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    rng = np.random.default_rng(11)
    train = _data(rng, 60, False)
    config = TrainConfig(trees=6, early_stopping=0, threads=1, min_data_in_leaf=5)
    d = tmp_path_factory.mktemp("scoring")
    save_model(train_model(train, None, config), config, d / "m", feature_names=train.feature_names)
    return d / "m"


def _files(tmp_path, docids: bool):
    """The same dataset as a query-aligned file, a file whose row groups of 13 rows split queries, and an empty
    file."""
    ds = _data(np.random.default_rng(5), 50, docids)
    write_dataset(tmp_path / "aligned.parquet", ds)
    pq.write_table(dataset_table(ds), tmp_path / "split.parquet", row_group_size=13)
    empty = ds.take_rows(np.zeros(0, dtype=np.int64))
    write_dataset(tmp_path / "empty.parquet", empty)
    return [tmp_path / "aligned.parquet", tmp_path / "split.parquet", tmp_path / "empty.parquet"]


@pytest.mark.parametrize("docids", [False, True])
@pytest.mark.parametrize("fmt", ["parquet", "trec"])
def test_streamed_run_is_the_whole_matrix_run(model, tmp_path, docids, fmt):
    for data in _files(tmp_path, docids):
        ds, scores, m = predict_dataset(model, data)
        whole = tmp_path / f"whole-{data.stem}.{fmt}"
        write_run(whole, ds, scores, fmt=fmt, tag=model.resolve().name, source=str(data),
                  metadata={"model": str(model), "loss": m.info["loss"]["name"], "data": str(data)})
        for batch_rows in (1, 5, 64, 100_000):
            out = tmp_path / f"streamed-{data.stem}-{batch_rows}.{fmt}"
            summary = predict_file(model, data, out, fmt=fmt, batch_rows=batch_rows)
            assert summary["rows"] == ds.n_rows and summary["queries"] == ds.n_queries
            assert out.read_bytes() == whole.read_bytes(), (data.name, batch_rows)


@pytest.mark.parametrize("preset, ties", [("paper", None), ("trec", None), ("sklearn", None), ("paper", "average"),
                                          ("lightgbm", None)])
def test_streamed_evaluation_is_the_whole_run_evaluation(model, tmp_path, preset, ties):
    convention = Convention.preset(preset)
    if ties is not None:
        from dataclasses import replace

        convention = replace(convention, ties=ties)
    metrics = ["ndcg@3", "ndcg@10", "map", "err@5", "P@5", "recip_rank"]
    for data in _files(tmp_path, docids=preset == "trec"):
        whole = evaluate_run(model_run(data, model, docids=convention.ties == "docid-desc"), metrics, convention)
        for batch_rows in (1, 9, 100_000):
            streamed = evaluate_model(data, model, metrics, convention, batch_rows=batch_rows)
            assert streamed.as_dict() == whole.as_dict() or (whole.result.queries == 0 and
                                                             str(streamed.as_dict()) == str(whole.as_dict()))
            assert np.array_equal(streamed.qids, whole.qids) and streamed.source == whole.source
            assert streamed.rows == whole.rows
            for name, values in whole.result.per_query.items():
                assert np.array_equal(streamed.result.per_query[name], values, equal_nan=True), name


def test_streamed_errors_name_the_row_in_the_file(model, tmp_path):
    from rankcli.errors import InputError

    ds = _data(np.random.default_rng(5), 50, False)
    ds.labels[-3] = np.nan
    write_dataset(tmp_path / "nan.parquet", ds)
    with pytest.raises(InputError) as whole:
        model_run(tmp_path / "nan.parquet", model)
    with pytest.raises(InputError) as streamed:
        evaluate_model(tmp_path / "nan.parquet", model, ["ndcg@5"], batch_rows=4)
    assert str(streamed.value) == str(whole.value) and f"row {ds.n_rows - 3}" in str(whole.value)
