"""convert --normalize, and the transform's round trip: the footer records it, train records it in the model, and
predict, eval --model and experiment apply it to raw data, never twice, and refuse data normalised another way."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from rankcli.core.normalize import Normalization, normalize
from rankcli.formats.parquet import read_dataset

FAST = ["--trees", "8", "--threads", "1", "--num-leaves", "7", "--min-data-in-leaf", "5"]


@pytest.fixture(scope="module")
def folds(tmp_path_factory, sample_dir):
    """The sample fold converted raw, zscore per dataset and minmax per query."""
    from rankcli.cli import main

    d = tmp_path_factory.mktemp("norm")
    for name, extra in (("raw", []), ("z", ["--normalize", "zscore", "--per", "dataset"]),
                        ("mq", ["--normalize", "minmax"])):
        assert main(["convert", str(sample_dir / "letor"), "-o", str(d / name), *extra]) == 0
    return d


def _scores(path):
    return pq.read_table(path).column("score").to_numpy()


def test_the_footer_records_the_transform_and_per_dataset_takes_the_training_files_statistics(folds):
    raw = read_dataset(folds / "raw" / "train.parquet")
    recorded = {part: json.loads(read_dataset(folds / "z" / f"{part}.parquet").metadata["normalize"])
                for part in ("train", "vali", "test")}
    assert recorded["train"] == recorded["vali"] == recorded["test"]
    t = Normalization.from_dict(recorded["train"], "footer")
    assert t.method == "zscore" and t.per == "dataset" and t.n_features == raw.n_features
    np.testing.assert_allclose(t.stats["mean"], raw.features.astype(np.float64).mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(t.stats["std"], raw.features.astype(np.float64).std(axis=0, ddof=1), rtol=1e-9)
    for part in ("train", "test"):
        got = read_dataset(folds / "z" / f"{part}.parquet")
        src = read_dataset(folds / "raw" / f"{part}.parquet")
        np.testing.assert_array_equal(got.features, normalize(src.features, src.offsets, t))
        np.testing.assert_array_equal(got.labels, src.labels)
    mq = read_dataset(folds / "mq" / "test.parquet")
    assert json.loads(mq.metadata["normalize"]) == {"method": "minmax", "per": "query"}
    assert mq.features.min() == 0.0 and mq.features.max() == 1.0


def test_round_trip_convert_train_predict(run, folds, tmp_path):
    model = tmp_path / "model"
    status, _, err = run("train", folds / "z" / "train.parquet", "--valid", folds / "raw" / "vali.parquet", "-o", model,
                         *FAST)
    assert status == 0, err
    info = json.loads((model / "rankcli.json").read_text())
    assert info["normalize"] == json.loads(read_dataset(folds / "z" / "train.parquet").metadata["normalize"])
    # raw test data is normalised with the training statistics; normalised test data is not normalised twice
    for name in ("raw", "z"):
        assert run("predict", model, folds / name / "test.parquet", "-o", tmp_path / f"{name}.parquet")[0] == 0
    np.testing.assert_array_equal(_scores(tmp_path / "raw.parquet"), _scores(tmp_path / "z.parquet"))
    # never scored on raw features: the scores differ from the booster's on the raw matrix
    import lightgbm

    booster = lightgbm.Booster(model_file=str(model / "model.txt"))
    raw = read_dataset(folds / "raw" / "test.parquet")
    assert not np.array_equal(booster.predict(raw.features), _scores(tmp_path / "raw.parquet"))
    np.testing.assert_array_equal(booster.predict(read_dataset(folds / "z" / "test.parquet").features),
                                  _scores(tmp_path / "raw.parquet"))
    # eval --model applies it too
    a = json.loads(run("eval", folds / "raw" / "test.parquet", "--model", model, "--json")[1])
    b = json.loads(run("eval", tmp_path / "raw.parquet", "--json")[1])
    assert a["metrics"] == b["metrics"]


def test_data_normalised_another_way_is_refused(run, folds, tmp_path):
    z_model, raw_model = tmp_path / "z", tmp_path / "r"
    assert run("train", folds / "z" / "train.parquet", "-o", z_model, *FAST)[0] == 0
    assert run("train", folds / "raw" / "train.parquet", "-o", raw_model, *FAST)[0] == 0
    assert json.loads((raw_model / "rankcli.json").read_text())["normalize"] is None
    status, _, err = run("predict", z_model, folds / "mq" / "test.parquet", "-o", tmp_path / "x.parquet")
    assert status == 3 and "has features normalised minmax per query, but the model's training data had features " \
        "normalised zscore per dataset" in err
    status, _, err = run("predict", raw_model, folds / "z" / "test.parquet", "-o", tmp_path / "x.parquet")
    assert status == 3 and "had raw features; give the raw data" in err
    status, _, err = run("eval", folds / "mq" / "test.parquet", "--model", raw_model)
    assert status == 3 and "normalised minmax per query" in err
    # a validation set normalised another way than the training data
    status, _, err = run("train", folds / "z" / "train.parquet", "--valid", folds / "mq" / "vali.parquet", "-o",
                         tmp_path / "v", *FAST)
    assert status == 3 and "but the training data" in err
    assert not (tmp_path / "x.parquet").exists()


def test_per_dataset_statistics_of_other_data_are_refused(run, folds, tmp_path, sample_dir):
    alone = tmp_path / "test.parquet"
    assert run("convert", sample_dir / "letor" / "test.txt", "-o", alone, "--normalize", "zscore", "--per",
               "dataset")[0] == 0
    model = tmp_path / "m"
    assert run("train", folds / "z" / "train.parquet", "-o", model, *FAST)[0] == 0
    status, _, err = run("predict", model, alone, "-o", tmp_path / "x.parquet")
    assert status == 3 and "with other statistics than the model's training data" in err


def test_experiment_folds_bring_raw_parts_to_the_training_transform(run, folds, tmp_path):
    import shutil

    fold = tmp_path / "fold"
    fold.mkdir()
    shutil.copy(folds / "z" / "train.parquet", fold / "train.parquet")
    shutil.copy(folds / "raw" / "vali.parquet", fold / "vali.parquet")
    shutil.copy(folds / "raw" / "test.parquet", fold / "test.parquet")
    from rankcli.experiment.data import load_data

    data = load_data(fold, folds=True)
    _, valid, test = data.fold(1)
    np.testing.assert_array_equal(test.features, read_dataset(folds / "z" / "test.parquet").features)
    np.testing.assert_array_equal(valid.features, read_dataset(folds / "z" / "vali.parquet").features)
    shutil.copy(folds / "mq" / "test.parquet", fold / "test.parquet")
    from rankcli.errors import InputError

    with pytest.raises(InputError, match="normalised minmax per query"):
        load_data(fold, folds=True)


def test_convert_options_are_checked(run, sample_dir, tmp_path):
    letor = sample_dir / "letor"
    status, _, err = run("convert", letor / "train.txt", "-o", tmp_path / "a.parquet", "--per", "dataset")
    assert status == 2 and "--per dataset needs --normalize" in err
    status, _, err = run("convert", letor / "train.txt", "-o", tmp_path / "a.parquet", "--normalize", "linear")
    assert status == 2 and "choose one of zscore, minmax, sum" in err
    status, _, err = run("convert", letor / "vali.txt", letor / "test.txt", "-o", tmp_path / "d", "--normalize",
                         "sum", "--per", "dataset")
    assert status == 2 and "an input named train" in err
    assert not (tmp_path / "a.parquet").exists() and not (tmp_path / "d").exists()
    # one file per dataset: its own statistics; sum per query: each query's |x| sums to 1 where it is not 0
    assert run("convert", letor / "test.txt", "-o", tmp_path / "s.parquet", "--normalize", "sum")[0] == 0
    ds = read_dataset(tmp_path / "s.parquet")
    sums = np.add.reduceat(np.abs(ds.features.astype(np.float64)), ds.offsets[:-1], axis=0)
    assert np.all((np.abs(sums - 1) < 1e-5) | (sums == 0))


def test_an_experiment_on_raw_parts_equals_one_on_parts_normalised_like_the_training_data(folds, tmp_path):
    """The experiment bins its folds from the files by row; a raw validation or test part beside normalised training
    data must still be scored normalised: the experiment's numbers equal those of the fully normalised fold."""
    import shutil

    from rankcli.experiment import ExperimentConfig, run_experiment

    results = {}
    for name, parts in (("mixed", ("z", "raw", "raw")), ("normalised", ("z", "z", "z"))):
        root = tmp_path / name / "data"
        for k in (1, 2, 3):
            fold = root / f"Fold{k}"
            fold.mkdir(parents=True)
            for part, source in zip(("train", "vali", "test"), parts):
                shutil.copy(folds / source / f"{part}.parquet", fold / f"{part}.parquet")
        config = ExperimentConfig(losses=["lambdamart"], folds=True, trees=5, early_stopping=0, allow_overlap=True)
        results[name] = run_experiment(root, tmp_path / name / "exp", config).summary["settings"]
    assert results["mixed"] == results["normalised"]


def test_a_raw_validation_set_is_validated_as_the_normalised_training_data_is(run, folds, tmp_path):
    """Training bins its files by row; a raw validation set beside normalised training data is normalised with the
    training data's transform first: the validation curve and the model equal those with the normalised one."""
    out = {}
    for name in ("raw", "z"):
        status, _, err = run("train", folds / "z" / "train.parquet", "--valid", folds / name / "vali.parquet",
                             "-o", tmp_path / name, *FAST)
        assert status == 0, err
        out[name] = json.loads((tmp_path / name / "rankcli.json").read_text())
    assert out["raw"]["curve"] == out["z"]["curve"]
    assert (tmp_path / "raw" / "model.txt").read_bytes() == (tmp_path / "z" / "model.txt").read_bytes()


def test_a_value_the_transform_takes_beyond_float32_names_file_column_row_and_value(run, folds, tmp_path):
    """A raw value that the model's zscore takes beyond the float32 range, in a later batch: the message names the
    file, the column, the row in the file and the value as a plain number (it had printed ``np.float32(3e+38)``,
    no file, and the row within its batch)."""
    import pyarrow as pa

    from rankcli.errors import InputError
    from rankcli.train.scoring import open_scoring, score_batches

    model = tmp_path / "model"
    assert run("train", folds / "z" / "train.parquet", "-o", model, *FAST)[0] == 0
    table = pq.read_table(folds / "raw" / "test.parquet")
    t = Normalization.from_dict(json.loads(read_dataset(folds / "z" / "train.parquet").metadata["normalize"]), "")
    j = int(np.argmin(np.where(np.asarray(t.stats["std"]) > 0, t.stats["std"], np.inf)))  # the narrowest feature
    row = table.num_rows - 3
    values = table.column(f"f{j + 1}").to_numpy().copy()
    values[row] = np.float32(3e38)
    bad = tmp_path / "bad.parquet"
    pq.write_table(table.set_column(table.schema.get_field_index(f"f{j + 1}"), f"f{j + 1}", pa.array(values)), bad)
    message = (f"{bad}: column f{j + 1} row {row}: the value 3e+38 normalised (zscore per dataset) is beyond the "
               "float32 range")
    with pytest.raises(InputError) as caught:
        list(score_batches(open_scoring(model, bad), batch_rows=40))
    assert str(caught.value) == message
    status, _, err = run("predict", model, bad, "-o", tmp_path / "s.parquet")
    assert status == 3 and err == f"Error: {message}\n", err
