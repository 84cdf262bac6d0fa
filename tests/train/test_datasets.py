"""rankcli.train.datasets: a split's LightGBM Datasets are built once per binning and reused by every training that
keeps it (no rebuild: the same C handle, a construction count), the models are those of a fresh build byte for byte,
and a Dataset binned from a Sequence over Parquet (or over rows of an in-memory matrix) gives the model that the
numpy matrix gives."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rankcli.dataset import Dataset
from rankcli.formats.feature_rows import ParquetFeatureRows
from rankcli.formats.parquet import QueryAlignedWriter, dataset_table, read_dataset, write_dataset
from rankcli.runtime.startup import import_lightgbm_lean
from rankcli.train import MatrixRows, TrainConfig, binning_params, prepare, train_model, train_prepared
from rankcli.train.datasets import binning_key, lightgbm_data_random_seed, predict_rows
from rankcli.train.model import lightgbm_resolved_params


def _dataset(rng: np.random.Generator, n_queries: int, features: int = 6) -> Dataset:
    sizes = rng.integers(5, 40, n_queries)
    n = int(sizes.sum())
    x = rng.normal(size=(n, features)).astype(np.float32)
    x[rng.random((n, features)) < 0.3] = 0.0  # zeros, as real features have them (sampled values are the non-zeros)
    x[:, 1] = np.round(x[:, 1] * 3)  # few distinct values
    labels = np.clip(np.round(x[:, 0] + rng.normal(0, 0.7, n) + 1), 0, 4).astype(np.float64)
    qids = np.repeat(np.arange(n_queries, dtype=np.int64) + 100, sizes)
    return Dataset(qids=qids, labels=labels, features=np.asfortranarray(x),
                   feature_names=[f"f{i}" for i in range(1, features + 1)])


@pytest.fixture(scope="module")
def split():
    rng = np.random.default_rng(7)
    return _dataset(rng, 80), _dataset(rng, 25)


def _config(**kw) -> TrainConfig:
    return TrainConfig(**{"trees": 8, "threads": 1, "early_stopping": 3, **kw})


def _text(result) -> str:
    return result.booster.model_to_string(num_iteration=result.best_iteration)


def test_data_random_seed_is_lightgbms():
    lightgbm = import_lightgbm_lean()
    x = np.random.default_rng(0).normal(size=(50, 2))
    for seed in (0, 1, 7, 12345, 2**31 - 1):
        booster = lightgbm.Booster(params={"seed": seed, "verbosity": -1, "objective": "regression"},
                                   train_set=lightgbm.Dataset(x, label=x[:, 0]))
        assert lightgbm_resolved_params(booster)["data_random_seed"] == lightgbm_data_random_seed(seed)


def test_binning_key_separates_binning_from_training_parameters():
    base = {"seed": 3, "max_bin": 255, "learning_rate": 0.1, "num_leaves": 31, "min_data_in_leaf": 20}
    same = [dict(base, learning_rate=0.02), dict(base, num_leaves=400), dict(base, min_data_in_leaf=5),
            dict(base, lambda_l2=3.0, feature_fraction=0.5), dict(base, num_threads=2, verbosity=-1)]
    assert all(binning_key(p) == binning_key(base) for p in same)
    assert binning_key(dict(base, max_bin=63)) != binning_key(base)
    assert binning_key(dict(base, min_data_in_bin=1)) != binning_key(base)
    assert binning_key(dict(base, seed=4)) != binning_key(base)  # the bins' row sample is seeded
    bins = binning_params(base)
    assert bins["feature_pre_filter"] is False and bins["data_random_seed"] == lightgbm_data_random_seed(3)
    assert "min_data_in_leaf" not in bins and "learning_rate" not in bins


def test_a_prepared_split_is_binned_once_for_every_loss_and_tuning_change(split):
    train, valid = split
    data = prepare(train, valid)
    configs = [_config(loss="xendcg"), _config(loss="lambdamart"), _config(loss="listnet"),
               _config(loss="xendcg", learning_rate=0.2, num_leaves=7), _config(loss="xendcg", min_data_in_leaf=3),
               _config(loss="pointwise", min_data_in_leaf=40, params={"lambda_l2": 2.0})]
    handle = None
    for config in configs:
        result = train_prepared(data, config)
        train_set, valid_set = data.lightgbm_sets(dict(result.params, seed=config.seed), np.zeros(train.n_rows))
        handle = handle or (train_set._handle.value, valid_set._handle.value)
        assert (train_set._handle.value, valid_set._handle.value) == handle  # the same C Datasets, not rebuilt
        # the model of a Dataset used by earlier trainings is the model of a fresh one, byte for byte
        assert _text(result) == _text(train_model(train, valid, config)), config
    assert data.constructions == 2  # one training and one validation Dataset


def test_another_binning_is_built_once_and_kept(split):
    train, valid = split
    data = prepare(train, valid)
    first = train_prepared(data, _config())
    coarse = _config(params={"max_bin": 15})
    assert _text(train_prepared(data, coarse)) == _text(train_model(train, valid, coarse))
    assert data.constructions == 4
    assert _text(train_prepared(data, _config())) == _text(first)
    train_prepared(data, dataclasses.replace(coarse, loss="lambdamart"))
    assert data.constructions == 4  # both binnings kept


def test_lowering_min_data_in_leaf_on_a_reused_dataset_is_not_refused(split):
    """With LightGBM's default feature_pre_filter=true a lower min_data_in_leaf on a constructed Dataset is refused
    ("Reducing `min_data_in_leaf` with `feature_pre_filter=true` ..."); rankcli's Datasets are built without it."""
    train, valid = split
    data = prepare(train, valid)
    train_prepared(data, _config(min_data_in_leaf=60))
    low = _config(min_data_in_leaf=2)
    assert _text(train_prepared(data, low)) == _text(train_model(train, valid, low))


def _write(path, ds: Dataset, row_group_rows: int):
    import pyarrow as pa

    table = dataset_table(ds)
    with QueryAlignedWriter(path, table.schema.with_metadata(None), {"kind": "dataset"},
                            target_rows=row_group_rows) as writer:
        writer.write(pa.table(table))


@pytest.mark.parametrize("sample", [None, 300])
def test_binning_from_parquet_or_matrix_rows_gives_the_matrix_model(split, tmp_path, sample):
    """A Sequence over a Parquet file read a row group at a time, and one over rows of a pooled matrix, give the
    model of the numpy matrix byte for byte; with a sample smaller than the data (bin_construct_sample_cnt) the
    Sequence is sampled by row number, as LightGBM samples a matrix."""
    train, valid = split
    params = {} if sample is None else {"bin_construct_sample_cnt": sample}
    config = _config(params=params)
    expected = _text(train_model(train, valid, config))
    _write(tmp_path / "train.parquet", train, 97)
    _write(tmp_path / "valid.parquet", valid, 50)
    t_index = read_dataset(tmp_path / "train.parquet", features=False)
    v_index = read_dataset(tmp_path / "valid.parquet", features=False)
    rows = ParquetFeatureRows(tmp_path / "train.parquet", t_index.feature_names)
    assert len(rows.row_group_ends()) > 3
    from_file = prepare(t_index, v_index, train_rows=rows,
                        valid_rows=ParquetFeatureRows(tmp_path / "valid.parquet", v_index.feature_names))
    assert _text(train_prepared(from_file, config)) == expected
    # rows of a pooled matrix: the training queries first, then the validation queries
    pooled = np.concatenate([train.features, valid.features])
    no_features = [dataclasses.replace(d, features=None) for d in (train, valid)]
    from_rows = prepare(*no_features, train_rows=MatrixRows(pooled, np.arange(train.n_rows)),
                        valid_rows=MatrixRows(pooled, train.n_rows + np.arange(valid.n_rows)))
    assert _text(train_prepared(from_rows, config)) == expected


def test_predict_rows_in_batches_gives_the_whole_matrix_scores(split):
    train, valid = split
    booster = train_model(train, valid, _config()).booster
    whole = booster.predict(valid.features)
    assert np.array_equal(predict_rows(booster, MatrixRows(valid.features), batch_rows=7), whole)


def test_train_command_model_is_the_in_memory_model(split, tmp_path):
    """``rankcli train`` bins the files through Sequences: the same model.txt as training on the matrices."""
    from rankcli.cli import main

    train, valid = split
    write_dataset(tmp_path / "t.parquet", train)
    write_dataset(tmp_path / "v.parquet", valid)
    assert main(["train", str(tmp_path / "t.parquet"), "--valid", str(tmp_path / "v.parquet"), "-o",
                 str(tmp_path / "m"), "--trees", "8", "--early-stopping", "3", "--threads", "1"]) == 0
    assert (tmp_path / "m" / "model.txt").read_text() == _text(train_model(train, valid, _config()))


def test_after_binning_the_row_groups_and_the_freed_heap_are_released(split, tmp_path, monkeypatch):
    """What keeps `train`'s peak memory down at scale (BENCHMARKS.md, Scale): once a Dataset is built, its Parquet
    reader drops the decoded row group and Arrow's unused buffers, and the C heap's free pages (the binning sampler's
    rows) go back to the operating system before LightGBM allocates its training buffers."""
    import rankcli.train.datasets as datasets

    events: list[str] = []
    monkeypatch.setattr(datasets, "release_free_memory", lambda: events.append("heap") or True)

    class Rows(ParquetFeatureRows):
        def release(self) -> None:
            super().release()
            events.append(f"rows {self.path.stem}")

    train, valid = split
    _write(tmp_path / "train.parquet", train, 97)
    _write(tmp_path / "valid.parquet", valid, 50)
    t_index = read_dataset(tmp_path / "train.parquet", features=False)
    v_index = read_dataset(tmp_path / "valid.parquet", features=False)
    t_rows = Rows(tmp_path / "train.parquet", t_index.feature_names)
    data = prepare(t_index, v_index, train_rows=t_rows,
                   valid_rows=Rows(tmp_path / "valid.parquet", v_index.feature_names))
    train_prepared(data, _config())
    assert events == ["rows train", "heap", "rows valid", "heap"]
    decoded = t_rows.decoded
    t_rows[0]  # the row group was dropped: reading again decodes it again
    assert t_rows.decoded == decoded + 1
    train_prepared(data, _config(learning_rate=0.2))
    assert len(events) == 4  # a reused Dataset is not built, nor released, again
