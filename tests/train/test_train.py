"""rankcli.train: objectives on LightGBM, model selection, reproducibility, the model directory."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from rankcli.core.labels import NonIntegerLabelsError
from rankcli.errors import SchemaError, UsageError
from rankcli.train import (
    LOSSES,
    LibraryObjective,
    TrainConfig,
    check_loss,
    load_model,
    resolve_params,
    save_model,
    train_model,
)
from rankcli.train.model import lightgbm_resolved_params
from tests.letor_sample import load_letor

FAST = dict(trees=8, threads=1, num_leaves=7, min_data_in_leaf=5)


@pytest.fixture(scope="module")
def data():
    return load_letor("train", 46), load_letor("vali", 46)


@pytest.mark.parametrize("loss", list(LOSSES))
def test_every_loss_trains_and_beats_a_constant(data, loss):
    train, valid = data
    result = train_model(train, valid, TrainConfig(loss=loss, early_stopping=0, **FAST))
    assert result.best_iteration == result.trees_trained == 8
    assert len(result.curve) == 8 and all(np.isfinite(result.curve))
    # a constant score ranks in input order; every loss must do better on validation NDCG@5
    from rankcli.core.metrics import Convention, evaluate
    base = evaluate(["ndcg@5"], valid.labels, np.zeros(valid.n_rows), valid.offsets, Convention.preset("paper"))
    assert max(result.curve) > base.means["ndcg@5"]
    assert result.params["objective"] == (LOSSES[loss].lightgbm or f"rankcli:{loss}")


def test_same_seed_same_bytes_different_seed_different_model(data, tmp_path):
    train, valid = data
    texts = []
    for i, seed in enumerate((7, 7, 8)):
        config = TrainConfig(loss="xendcg", seed=seed, **FAST)
        result = train_model(train, valid, config)
        save_model(result, config, tmp_path / f"m{i}", feature_names=train.feature_names)
        texts.append((tmp_path / f"m{i}" / "model.txt").read_bytes())
    assert texts[0] == texts[1]
    assert texts[0] != texts[2]


def test_objective_survives_deepcopy_and_gamma_depends_on_seed_and_iteration(data):
    train, _ = data
    obj = LibraryObjective("xendcg", train.labels, train.offsets, "uniform", seed=3)
    assert copy.deepcopy({"objective": obj})["objective"] is obj
    g0, g1 = obj.gamma_for(0), obj.gamma_for(1)
    assert g0.shape == (train.n_rows,) and not np.array_equal(g0, g1)
    again = LibraryObjective("xendcg", train.labels, train.offsets, "uniform", 3)
    np.testing.assert_array_equal(g0, again.gamma_for(0))
    obj(np.zeros(train.n_rows))
    obj(np.zeros(train.n_rows))
    assert obj.iteration == 2
    assert LibraryObjective("xendcg", train.labels, train.offsets, "fixed:0.2").gamma_for(5) == 0.2


def test_early_stopping_keeps_the_curve_and_the_best_trees(data, tmp_path):
    train, valid = data
    config = TrainConfig(loss="lambdamart", trees=200, early_stopping=3, threads=1, learning_rate=0.3)
    result = train_model(train, valid, config)
    curve = np.array(result.curve)
    assert len(curve) == result.trees_trained < 200
    assert result.best_iteration == int(np.nanargmax(curve)) + 1
    assert result.trees_trained - result.best_iteration == 3
    assert result.booster.num_trees() == result.best_iteration
    info = save_model(result, config, tmp_path / "m", train_path=None, feature_names=train.feature_names)
    model = load_model(tmp_path / "m")
    assert model.booster.num_trees() == result.best_iteration
    np.testing.assert_allclose(model.predict(valid), result.booster.predict(valid.features))
    from rankcli.core.metrics import Convention, evaluate
    got = evaluate(["ndcg@5"], valid.labels, model.predict(valid), valid.offsets, Convention.preset("paper"))
    assert got.means["ndcg@5"] == pytest.approx(info["best_valid_metric"], abs=1e-6)


def test_without_validation_all_trees_and_no_curve(data):
    train, _ = data
    result = train_model(train, None, TrainConfig(loss="listnet", **FAST))
    assert result.curve == [] and result.best_iteration == result.trees_trained == 8


def test_progress_callback(data):
    train, valid = data
    seen = []
    train_model(train, valid, TrainConfig(loss="pointwise", **FAST), on_iteration=lambda *a: seen.append(a))
    assert [s[0] for s in seen] == list(range(1, 9))
    assert all(s[2] >= s[1] or np.isnan(s[1]) for s in seen)


def test_integer_label_losses_refuse_real_labels_and_label_grades_maps_them(data):
    train, valid = data
    real = load_letor("train", 46)
    real.labels = real.labels * 0.07
    for loss in ("lambdamart", "xendcg-native"):
        with pytest.raises(NonIntegerLabelsError, match="--label-grades") as err:
            train_model(real, valid, TrainConfig(loss=loss, **FAST))
        assert err.value.exit_status == 3
        assert "0.07" in str(err.value) and "--loss xendcg" in str(err.value)
    result = train_model(real, valid, TrainConfig(loss="lambdamart", label_grades=True, **FAST))
    assert result.label_values == pytest.approx([0, 0.07, 0.14, 0.21, 0.28])
    for loss in ("xendcg", "listnet", "ranknet", "pointwise"):
        train_model(real, valid, TrainConfig(loss=loss, **FAST))


def test_lambdamart_with_grades_beyond_lightgbm_default_label_gain(data):
    train = load_letor("train", 46)
    train.labels = train.labels * 10  # grades up to 40; LightGBM's default label_gain stops at 30
    assert len(resolve_params(TrainConfig(loss="lambdamart"), max_grade=40)["label_gain"]) == 41
    train_model(train, None, TrainConfig(loss="lambdamart", **FAST))


def test_feature_mismatch_and_bad_options(data):
    train, valid = data
    narrow = load_letor("vali", 46)
    narrow.features, narrow.feature_names = narrow.features[:, :45], narrow.feature_names[:45]
    with pytest.raises(SchemaError, match="missing f46"):
        train_model(train, narrow, TrainConfig(**FAST))
    with pytest.raises(UsageError, match="did you mean 'lambdamart'"):
        check_loss("lambdamrt")
    with pytest.raises(UsageError):
        train_model(train, valid, TrainConfig(select_by="ndgc@5", **FAST))
    with pytest.raises(UsageError):
        train_model(train, valid, TrainConfig(gamma="fixed:3", **FAST))
    with pytest.raises(UsageError):
        train_model(train, valid, TrainConfig(preset="paper-web", **FAST))


def test_predict_refuses_other_features(data, tmp_path):
    train, valid = data
    config = TrainConfig(loss="pointwise", **FAST)
    save_model(train_model(train, None, config), config, tmp_path / "m", feature_names=train.feature_names)
    model = load_model(tmp_path / "m")
    wide = load_letor("vali", 47)
    with pytest.raises(SchemaError, match="unexpected f47"):
        model.predict(wide, what="v.parquet")


def test_presets_and_params(data, tmp_path):
    train, valid = data
    p = resolve_params(TrainConfig(loss="lambdamart", preset="paper-web30k"))
    assert (p["learning_rate"], p["num_leaves"], p["min_data_in_leaf"], p["max_bin"]) == (0.02, 400, 50, 255)
    assert p["min_sum_hessian_in_leaf"] == 0 and p["sigmoid"] == 1 and p["lambdarank_norm"] is False
    p = resolve_params(TrainConfig(loss="xendcg", preset="paper-yahoo", num_leaves=9, params={"lambda_l2": 1.5}))
    assert (p["num_leaves"], p["min_data_in_leaf"], p["lambda_l2"]) == (9, 100, 1.5) and "sigmoid" not in p
    # min_sum_hessian_in_leaf 0 with one-document queries (zero hessian) must not give NaN scores
    config = TrainConfig(loss="xendcg", preset="paper-yahoo", trees=5, threads=1, min_data_in_leaf=5)
    single = train.take_queries(np.arange(10))
    single = single.take_rows(np.concatenate([single.offsets[:5], np.arange(single.offsets[5], single.n_rows)]))
    result = train_model(single, None, config)
    assert np.all(np.isfinite(result.booster.predict(valid.features)))
    info = save_model(result, config, tmp_path / "m", feature_names=train.feature_names)
    stored = json.loads((tmp_path / "m" / "rankcli.json").read_text())
    assert stored == json.loads(json.dumps(info))
    for key in ("loss", "params", "seed", "features", "data_sha256", "best_iteration", "curve", "versions", "seconds"):
        assert key in stored
    assert stored["loss"] == {"name": "xendcg", "label_grades": False, "gamma": "uniform"}



@pytest.mark.parametrize("value", [True, "true", "TRUE", "+"])
def test_column_wise_histograms_replace_rankcli_s_row_wise_default(data, value):
    """rankcli trains with row-wise histograms (force_row_wise); --param force_col_wise=true (LightGBM then keeps no
    row-wise copy of the binned data) turns them off instead of being refused for asking for both."""
    train, valid = data
    assert resolve_params(TrainConfig())["force_row_wise"] is True
    assert resolve_params(TrainConfig(params={"force_col_wise": False}))["force_row_wise"] is True
    p = resolve_params(TrainConfig(params={"force_col_wise": value}))
    assert p["force_row_wise"] is False and p["force_col_wise"] == value
    result = train_model(train, valid, TrainConfig(trees=3, threads=1, params={"force_col_wise": value}))
    resolved = lightgbm_resolved_params(result.booster)
    assert (resolved["force_col_wise"], resolved["force_row_wise"]) == (1, 0)  # what LightGBM trained with


# ------------------------------------ --param: a name LightGBM lacks or rankcli sets is refused, naming the right one
@pytest.mark.parametrize("key, message", [
    ("num_leafs", "--param num_leafs: LightGBM has no parameter 'num_leafs'; did you mean 'num_leaves'? "
                  "(rankcli sets it: use --num-leaves)"),
    ("lamda_l2", "--param lamda_l2: LightGBM has no parameter 'lamda_l2'; did you mean 'lambda_l2'?"),
    ("objective", "--param objective: objective cannot be set with --param, it is set by --loss; use --loss"),
    ("application", "--param application: application (LightGBM's alias of objective) cannot be set with --param"),
    ("metric", "it is set by --select-by"),
    ("n_estimators", "n_estimators (LightGBM's alias of num_iterations) cannot be set with --param, it is set by "
                     "--trees"),
    ("eta", "it is set by --learning-rate"),
    ("max_leaves", "it is set by --num-leaves"),
    ("min_child_samples", "it is set by --min-data-in-leaf"),
    ("early_stopping_rounds", "it is set by --early-stopping"),
    ("nthread", "it is set by --threads"),
    ("random_state", "random_state (LightGBM's alias of seed) cannot be set with --param, it is set by --seed"),
    ("bagging_seed", "bagging_seed cannot be set with --param, rankcli derives every LightGBM seed from --seed"),
    ("bagging_fraction_seed", "rankcli derives every LightGBM seed from --seed"),
    ("objective_seed", "rankcli derives every LightGBM seed from --seed"),
])
def test_param_keys_checked_against_lightgbm(key, message):
    from rankcli.train import check_params

    with pytest.raises(UsageError) as err:
        check_params({key: 3})
    assert err.value.exit_status == 2 and str(err.value).startswith(f"--param {key}: ") and message in str(err.value)
    with pytest.raises(UsageError):  # the library path (and the Dask path, which resolves params alike) checks too
        resolve_params(TrainConfig(params={key: 3}))


def test_param_aliases_pass_through_under_the_main_name():
    from rankcli.train import check_params

    got = check_params([("label_gain", [0, 1, 3]), ("sigmoid", 2.0), ("lambdarank_truncation_level", 10),
                        ("reg_lambda", 1.5), ("min_sum_hessian", 1.0)])
    assert got == {"label_gain": [0, 1, 3], "sigmoid": 2.0, "lambdarank_truncation_level": 10, "lambda_l2": 1.5,
                   "min_sum_hessian_in_leaf": 1.0}
    # an alias overrides the preset's value under the main name (LightGBM would prefer the main name and ignore it)
    p = resolve_params(TrainConfig(preset="paper-web30k", params={"min_sum_hessian": 1.0}))
    assert p["min_sum_hessian_in_leaf"] == 1.0 and "min_sum_hessian" not in p
    with pytest.raises(UsageError, match="--param reg_lambda: sets lambda_l2 again"):
        check_params([("lambda_l2", 1), ("reg_lambda", 2)])
    with pytest.raises(UsageError, match="--losses"):
        check_params({"objective": "regression"}, {"objective": "--losses"})


@pytest.mark.parametrize("key, message", [
    # num_class 3 ended in a traceback (exit 1) inside rankcli's own losses
    ("num_class", "num_class cannot be set with --param: a ranker gives each document one score"),
    ("num_classes", "num_classes (LightGBM's alias of num_class) cannot be set with --param"),
    # LightGBM's log goes to stdout: train --json --param verbosity=1 printed invalid JSON
    ("verbosity", "writes its log to standard output"),
    ("verbose", "verbose (LightGBM's alias of verbosity) cannot be set with --param"),
    # settings of LightGBM's command-line program: silently ignored (data=... with a Python UserWarning on stderr)
    ("data", "a setting of LightGBM's command-line program"),
    ("task", "a setting of LightGBM's command-line program"),
    ("output_model", "a setting of LightGBM's command-line program"),
    ("categorical_feature", "a setting of LightGBM's command-line program"),
    ("num_machines", "rankcli trains on one machine here"),
])
def test_param_keys_that_lightgbm_would_ignore_or_that_break_rankcli_are_refused(key, message):
    from rankcli.train import check_params

    with pytest.raises(UsageError) as err:
        check_params({key: 3})
    assert str(err.value).startswith(f"--param {key}: ") and message in str(err.value), str(err.value)


def test_every_managed_param_is_a_lightgbm_main_name():
    from rankcli.runtime.compat import lightgbm_parameter_aliases
    from rankcli.train import MANAGED_PARAMS

    assert set(MANAGED_PARAMS) <= set(lightgbm_parameter_aliases())


@pytest.mark.parametrize("value", ["", "63 num_leaves=3", "63=2", "0,1 seed=5", "a\tb", ["0", "1 2"]])
def test_param_values_lightgbm_cannot_carry_are_refused(value):
    """`--param max_bin=` recorded max_bin '' and `--param "max_bin=63 num_leaves=3"` recorded a value LightGBM split
    into two parameters (the second ignored); both trained with exit 0."""
    from rankcli.train import check_params

    with pytest.raises(UsageError, match="--param max_bin: LightGBM cannot take the value"):
        check_params({"max_bin": value})


@pytest.mark.parametrize("key, value", [("max_delta_step", float("nan")), ("lambda_l2", float("inf")),
                                        ("lambda_l1", "-inf"), ("label_gain", "0,1,nan,7"),
                                        ("label_gain", [0, 1, "inf"])])
def test_param_values_that_are_not_finite_are_refused(key, value):
    """lambda_l2=inf trained a constant model; max_delta_step=nan wrote a model.txt that LightGBM could not load again
    (a JSONDecodeError traceback in predict) and a rankcli.json holding NaN (not JSON)."""
    from rankcli.train import check_params

    with pytest.raises(UsageError, match=f"--param {key}: the value must be a finite number"):
        check_params({key: value})
    assert check_params({"label_gain": "0,1,3,7", "max_delta_step": 0.5, "extra_trees": True, "boosting": "goss"})


def test_a_model_text_lightgbm_cannot_parse_back_is_exit_3_not_a_traceback(data, tmp_path):
    from rankcli.errors import InputError

    train, _ = data
    config = TrainConfig(loss="lambdamart", early_stopping=0, **FAST)
    save_model(train_model(train, None, config), config, tmp_path / "m", feature_names=train.feature_names)
    model_path, info_path = tmp_path / "m" / "model.txt", tmp_path / "m" / "rankcli.json"
    text = model_path.read_text().replace("[max_delta_step: 0]", "[max_delta_step: nan]")
    assert "[max_delta_step: nan]" in text
    model_path.write_text(text)
    info = json.loads(info_path.read_text())
    del info["model_sha256"]
    info_path.write_text(json.dumps(info))
    with pytest.raises(InputError, match="model.txt: not a LightGBM model"):
        load_model(tmp_path / "m")


@pytest.mark.parametrize("name", ["XENDCG", "LambdaMART", " listnet"])
def test_a_loss_in_the_wrong_case_suggests_the_loss(name):
    with pytest.raises(UsageError, match=f"^unknown loss {__import__('re').escape(repr(name))}; did you mean "
                                         f"'{name.strip().lower()}'\\?"):
        check_loss(name)


def test_param_key_in_the_wrong_case_suggests_the_parameter():
    from rankcli.train import check_params

    with pytest.raises(UsageError, match="did you mean 'num_leaves'\\? \\(rankcli sets it: use --num-leaves\\)"):
        check_params({"NUM_LEAVES": 3})
    with pytest.raises(UsageError, match="did you mean 'lambda_l2'\\?"):
        check_params({"Lambda_L2": 3})


def test_dart_with_early_stopping_is_refused_without_it_every_tree_is_kept(data):
    """With dart, the first best_iteration trees of the final model are not the model that scored best: the model
    kept its recorded best_valid_metric (0.8432) while scoring 0.8428 on the same validation set."""
    train, valid = data
    with pytest.raises(UsageError, match="boosting=dart does not combine with early stopping"):
        train_model(train, valid, TrainConfig(loss="lambdamart", early_stopping=3, params={"boosting": "dart"}, **FAST))
    with pytest.raises(UsageError, match="boosting=dart"):
        train_model(train, valid, TrainConfig(loss="lambdamart", early_stopping=3, params={"boosting_type": "DART"},
                                              **FAST))
    result = train_model(train, valid, TrainConfig(loss="lambdamart", early_stopping=0, params={"boosting": "dart"},
                                                   **FAST))
    assert result.best_iteration == result.trees_trained == 8


# -------------------------------------------------- the model checksum: a model loads only as training wrote it
def test_dask_model_directory_records_the_checksum_and_loads_through_the_same_check(data, tmp_path):
    import hashlib

    from rankcli.distributed import DistributedInfo, save_distributed_model
    from rankcli.errors import InputError

    train, valid = data
    config = TrainConfig(loss="pointwise", **FAST)
    result = train_model(train, None, config)
    info = save_distributed_model(result, config, DistributedInfo("local:1", 1, 1, train.n_rows, train.n_queries),
                                  tmp_path / "m", train_path=None, feature_names=train.feature_names)
    text = (tmp_path / "m" / "model.txt").read_bytes()
    assert info["model_sha256"] == hashlib.sha256(text).hexdigest() and info["dask"]["workers"] == 1
    np.testing.assert_allclose(load_model(tmp_path / "m").predict(valid), result.booster.predict(valid.features))
    (tmp_path / "m" / "model.txt").write_bytes(text[:-1])
    with pytest.raises(InputError, match="model.txt: the file was changed or truncated after training"):
        load_model(tmp_path / "m")


@pytest.mark.parametrize("change, message", [
    ({"loss": {"label_grades": True}}, "key 'loss.name' is missing"),
    ({"loss": {"name": "xendcg", "label_values": ["a"]}}, "key 'loss.label_values' must be a list of numbers"),
    ({"seed": True}, "key 'seed' must be an integer, got a boolean"),
    ({"curve": [0.5, "x"]}, "key 'curve' must be a list of numbers or nulls"),
    ({"format": "something"}, "key 'format' must be 'rankcli-model/1', got 'something'"),
    ({"data_sha256": {"train": "abc"}}, "key 'data_sha256' must be an object of SHA-256 digests or nulls"),
])
def test_model_info_types_are_validated(change, message):
    from rankcli.errors import InputError
    from rankcli.train import validate_model_info

    good = {"format": "rankcli-model/1", "loss": {"name": "xendcg", "label_grades": False}, "features": ["f1"],
            "seed": 0, "curve": [0.5, None], "best_valid_metric": None, "preset": None}
    assert validate_model_info(dict(good), "x/rankcli.json") == good
    with pytest.raises(InputError, match="^x/rankcli.json: .*" + __import__("re").escape(message)):
        validate_model_info({**good, **change}, "x/rankcli.json")


@pytest.mark.parametrize("tamper", ["swap", "rename", "duplicate"])
def test_rankcli_json_whose_feature_names_differ_from_the_model_is_refused_naming_it(data, tmp_path, tamper):
    """rankcli.json with a valid model_sha256 but its features swapped or renamed: predict blamed the data ("feature
    columns do not match the model's"), and data whose columns followed the tampered order were scored with the
    trees reading the wrong features."""
    from rankcli.errors import InputError

    train, valid = data
    config = TrainConfig(loss="lambdamart", early_stopping=0, **FAST)
    save_model(train_model(train, None, config), config, tmp_path / "m", feature_names=train.feature_names)
    info_path = tmp_path / "m" / "rankcli.json"
    info = json.loads(info_path.read_text())
    f = info["features"]
    info["features"] = {"swap": [f[1], f[0], *f[2:]], "rename": ["x1", *f[1:]], "duplicate": [f[0], *f[:-1]]}[tamper]
    info_path.write_text(json.dumps(info))
    with pytest.raises(InputError, match=f"^{__import__('re').escape(str(info_path))}: its feature names differ from "
                                         "those model.txt was trained on .*; the two files do not belong together"):
        load_model(tmp_path / "m")


def test_validation_without_any_relevant_document_is_refused_under_skip(data):
    """Under --no-relevant skip such a validation set gives NaN after every tree: training printed "validation ndcg@5
    n/a", kept every tree (early stopping blind) and exited 0."""
    from rankcli.errors import InputError

    train, valid = data
    blind = load_letor("vali", 46)
    blind.labels = np.zeros_like(blind.labels)
    with pytest.raises(InputError, match="^validation data: no validation query has a relevant document, so "
                                         "--select-by ndcg@5 under the paper convention"):
        train_model(train, blind, TrainConfig(loss="lambdamart", **FAST))
    mixed = load_letor("vali", 46)
    mixed.labels = np.where(mixed.qids == mixed.qids[0], mixed.labels, 0.0)  # one query with relevant documents
    train_model(train, mixed, TrainConfig(loss="lambdamart", **FAST))


# ------------------------------------------------------------ large labels: grades up to 10^6 and beyond float32
@pytest.fixture(scope="module")
def big_labels():
    train = load_letor("train", 46)
    train.labels = train.labels * 250_000.0  # grades 0..4 -> 0 .. 10^6
    return train


@pytest.mark.parametrize("loss", ["xendcg", "listnet", "ranknet", "pointwise"])
def test_losses_taking_any_label_train_a_useful_model_on_labels_up_to_a_million(data, big_labels, loss):
    """xendcg trained a constant model from labels of 1024 on (2^label overflowed): NDCG@5 fell to a constant's."""
    from rankcli.core.metrics import Convention, evaluate

    _, valid = data
    conv = Convention.preset("paper")
    result = train_model(big_labels, None, TrainConfig(loss=loss, **FAST))
    scores = result.booster.predict(valid.features)
    assert np.ptp(scores) > 0
    got = evaluate(["ndcg@5"], valid.labels, scores, valid.offsets, conv).means["ndcg@5"]
    constant = evaluate(["ndcg@5"], valid.labels, np.zeros(valid.n_rows), valid.offsets, conv).means["ndcg@5"]
    assert constant < 0.3 and got > 0.7, (loss, got)


@pytest.fixture(scope="module")
def float32_overflowing_labels():
    train = load_letor("train", 46)
    train.labels = train.labels * 1e300  # grades 0..4 -> 0 .. 4e300: float64, beyond float32 (3.4e38)
    return train


@pytest.mark.parametrize("loss", ["xendcg", "listnet", "ranknet"])
def test_losses_taking_any_label_train_on_labels_beyond_float32_without_a_warning(data, float32_overflowing_labels,
                                                                                 loss):
    """LightGBM keeps its copy of the labels as float32: labels beyond 3.4e38 leaked "RuntimeWarning: overflow
    encountered in cast" from lightgbm/basic.py (rankcli's losses never read that copy)."""
    import warnings

    _, valid = data
    big_valid = load_letor("vali", 46)
    big_valid.labels = big_valid.labels * 1e300
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = train_model(float32_overflowing_labels, big_valid,
                             TrainConfig(loss=loss, convention="sklearn", early_stopping=0, **FAST))
    assert np.ptp(result.booster.predict(valid.features)) > 0 and all(np.isfinite(result.curve))


@pytest.mark.parametrize("loss, message", [
    # trained on inf labels (a numpy warning, exit 0)
    ("pointwise", "--loss pointwise (LightGBM regression) keeps labels as 32-bit floats, which end at 3.403e+38, got "
                  "a label of 4e+300"),
    # named 1e+06-ish garbage after a wrapped int64 cast (and a numpy warning)
    ("lambdamart", "--loss lambdamart takes grades up to 1000"),
    ("xendcg-native", "--loss xendcg-native takes grades up to 30"),
])
def test_losses_keeping_float32_or_integer_labels_refuse_labels_beyond_them(float32_overflowing_labels, loss,
                                                                            message):
    import warnings

    from rankcli.errors import InputError

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError) as err:
            train_model(float32_overflowing_labels, None, TrainConfig(loss=loss, **FAST))
    assert str(err.value).startswith(message) and "got a label of 4e+300" in str(err.value), str(err.value)


def test_lightgbm_gets_no_labels_it_does_not_read_and_the_model_is_unchanged(data):
    """rankcli's own losses and the validation set no longer hand LightGBM their labels: the model text is the same
    as when they did (LightGBM never read them)."""
    import lightgbm

    from rankcli.core.groups import sizes

    train, valid = data
    config = TrainConfig(loss="xendcg", early_stopping=0, **FAST)
    ours = train_model(train, valid, config).booster.model_to_string()
    params = resolve_params(config)
    params["objective"] = LibraryObjective("xendcg", train.labels, train.offsets, config.gamma, config.seed)
    with_labels = lightgbm.Dataset(train.features, label=train.labels, group=sizes(train.offsets),
                                   feature_name=list(train.feature_names), params={"max_bin": 255, "verbosity": -1,
                                                                                   "seed": 0}, free_raw_data=True)
    theirs = lightgbm.train(params, with_labels, num_boost_round=8).model_to_string()
    strip = lambda t: t.split("\nparameters:")[0]  # noqa: E731
    assert strip(ours) == strip(theirs)


@pytest.mark.parametrize("loss, limit", [("lambdamart", 1000), ("xendcg-native", 30)])
def test_integer_label_losses_refuse_grades_beyond_their_range_and_offer_label_grades(data, big_labels, loss, limit):
    from rankcli.errors import InputError

    with pytest.raises(InputError) as err:  # lambdamart: an OverflowError traceback building label_gain
        train_model(big_labels, None, TrainConfig(loss=loss, **FAST))
    assert err.value.exit_status == 3
    assert str(err.value) == (f"--loss {loss} takes grades up to {limit} ({LOSSES[loss].max_grade[1]}), got a label of "
                              "1e+06; pass --label-grades to map the distinct label values to grades 0..n-1, or use "
                              "--loss xendcg, which takes any label >= 0")
    train_model(big_labels, None, TrainConfig(loss=loss, label_grades=True, **FAST))
    at_limit = load_letor("train", 46)
    at_limit.labels = np.where(at_limit.labels == 4, float(limit), at_limit.labels)
    train_model(at_limit, None, TrainConfig(loss=loss, **FAST))
    with pytest.raises(InputError, match="takes grades up to 1000"):  # the Dask path resolves parameters alike
        resolve_params(TrainConfig(loss="lambdamart"), max_grade=10**6)


# ------------------------------------------------------------ default thread count: the CPUs this process may use
def test_default_threads_follow_the_cpus_this_process_may_use(data, monkeypatch):
    """num_threads was 0 (LightGBM: every core of the node, whatever the job's affinity or quota)."""
    from rankcli.runtime import cpus

    monkeypatch.setattr(cpus, "available_cpus", lambda **kw: 3)
    assert resolve_params(TrainConfig())["num_threads"] == 3
    assert resolve_params(TrainConfig(threads=2))["num_threads"] == 2
    # predicting (predict, eval --model, simulate-clicks --ranker) uses the same count
    train, valid = data
    config = TrainConfig(loss="pointwise", **FAST)
    model = train_model(train, None, config)
    seen = []
    original = model.booster.predict
    monkeypatch.setattr(model.booster, "predict", lambda X, **kw: seen.append(kw) or original(X, **kw))
    from rankcli.train import TrainedModel
    TrainedModel(model.booster, {"features": train.feature_names}).predict(valid)
    assert seen == [{"num_threads": 3}]


@pytest.mark.parametrize("kind", ["device", "fifo", "directory", "huge-info"])
def test_model_files_that_are_not_regular_files_are_refused_before_reading(data, tmp_path, kind):
    """model.txt -> /dev/zero was read until memory ran out (a MemoryError traceback, exit 1); a FIFO blocked
    forever."""
    import os
    import shutil

    from rankcli.errors import InputError

    train, _ = data
    config = TrainConfig(loss="lambdamart", early_stopping=0, **FAST)
    save_model(train_model(train, None, config), config, tmp_path / "m", feature_names=train.feature_names)
    target = tmp_path / "m" / ("rankcli.json" if kind == "huge-info" else "model.txt")
    if kind == "huge-info":
        with open(target, "r+b") as fh:
            fh.truncate(65 << 20)   # sparse
        expected = "68,157,440 bytes, more than a model description can be"
    else:
        target.unlink()
        if kind == "device":
            target.symlink_to("/dev/zero")
        elif kind == "fifo":
            os.mkfifo(target)
        else:
            target.mkdir()
        expected = {"device": "a device", "fifo": "a FIFO", "directory": "a directory"}[kind] + ", not a file"
    with pytest.raises(InputError, match=f"^{__import__('re').escape(str(target))}: {expected}"):
        load_model(tmp_path / "m")
    shutil.rmtree(tmp_path / "m")


def test_a_model_that_scores_inf_is_refused_not_passed_through(data, tmp_path):
    """A model without model_sha256 (written before the checksum, or the key removed) whose leaf value was changed to
    1e999... in place (same length, so its structure is whole): predict wrote 112 inf scores and eval --model ranked
    by them, exit 0."""
    from rankcli.errors import InputError

    train, valid = data
    config = TrainConfig(loss="lambdamart", early_stopping=0, **FAST)
    save_model(train_model(train, None, config), config, tmp_path / "m", feature_names=train.feature_names)
    model_path, info_path = tmp_path / "m" / "model.txt", tmp_path / "m" / "rankcli.json"
    text = model_path.read_text()
    i = text.index("leaf_value=") + len("leaf_value=")
    j = text.index(" ", i)
    model_path.write_text(text[:i] + "1e" + "9" * (j - i - 2) + text[j:])
    info = json.loads(info_path.read_text())
    del info["model_sha256"]
    info_path.write_text(json.dumps(info))
    model = load_model(tmp_path / "m")
    with pytest.raises(InputError, match=r"model.txt: scores v.parquet row \d+ as inf \(\d+ rows not finite\); the "
                                         "model file holds a value that is not a number"):
        model.predict(valid, what="v.parquet")


@pytest.mark.parametrize("fields, message", [
    (dict(loss="xendgc"), "unknown loss 'xendgc'; did you mean 'xendcg'?"),
    (dict(trees=0), "--trees must be at least 1, got 0"),
    (dict(early_stopping=-1), "--early-stopping must be 0 (off) or a positive number of trees, got -1"),
    (dict(learning_rate=-1.0), "--learning-rate must be positive, got -1"),
    (dict(learning_rate=float("nan")), "--learning-rate must be positive, got nan"),
    (dict(num_leaves=1), "--num-leaves must be at least 2, got 1"),
    (dict(min_data_in_leaf=-3), "--min-data-in-leaf must be 0 or more, got -3"),
    (dict(threads=0), "--threads must be at least 1, got 0"),
    (dict(seed=-1), "--seed must be >= 0, got -1"),
    (dict(gamma="fixed:2"), "--gamma fixed:<g> needs a number g in [0, 1], got 'fixed:2'"),
    (dict(select_by="ndgc@5"), "unknown metric 'ndgc'; did you mean 'ndcg'?"),
    (dict(convention="trec"), "--convention trec is for evaluating TREC runs"),
    (dict(params={"num_leafs": 3}), "--param num_leafs: LightGBM has no parameter 'num_leafs'"),
])
def test_train_config_checks_itself_when_built(fields, message):
    """One place checks the training options: the library accepted learning_rate=-1 or num_leaves=1 (only the CLI
    refused them) and found a bad select_by only after reading the data."""
    import dataclasses

    with pytest.raises(UsageError) as err:
        TrainConfig(**fields)
    assert str(err.value).startswith(message) and err.value.exit_status == 2
    with pytest.raises(UsageError):  # dataclasses.replace builds a new one: checked as well
        dataclasses.replace(TrainConfig(), **fields)


def test_train_config_from_options_takes_the_command_defaults_and_param_texts():
    from rankcli.train import parse_params

    config = TrainConfig.from_options(validating=True, param=["reg_lambda=1.5", "extra_trees=true"], loss="lambdamart")
    assert (config.trees, config.early_stopping, config.params) == (500, 50, {"lambda_l2": 1.5, "extra_trees": True})
    assert TrainConfig.from_options(validating=False).early_stopping == 0
    with pytest.raises(UsageError, match=r"^--early-stopping 5 needs a validation set: pass --valid VALID.parquet"):
        TrainConfig.from_options(validating=False, early_stopping=5)
    with pytest.raises(UsageError, match="^--param expects key=value, got 'nokey'"):
        parse_params(["nokey"])
    assert parse_params(["max_bin=63", "boosting=goss", "min_sum_hessian=0.5"]) == {
        "max_bin": 63, "boosting": "goss", "min_sum_hessian_in_leaf": 0.5}


def test_one_record_per_loss_says_how_it_trains_and_where_it_comes_from():
    from rankcli.core import losses as core
    from rankcli.train import Loss, check_training_labels

    assert list(LOSSES) == ["lambdamart", "xendcg", "xendcg-native", "listnet", "ranknet", "listmle", "listmle-pa",
                            "approxndcg", "lambdaloss", "pointwise"]
    references = {"lambdamart": "Burges", "xendcg": "Bruch", "xendcg-native": "Bruch", "listnet": "Cao",
                  "ranknet": "Burges", "listmle": "Xia", "listmle-pa": "Lan", "approxndcg": "Qin",
                  "lambdaloss": "Wang", "pointwise": "L2"}
    for name, loss in LOSSES.items():
        assert isinstance(loss, Loss) and loss.name == name and references[name] in loss.doc
        assert loss.native == (loss.value is None) == (loss.step is None), name
        assert (loss.max_grade is not None) == (loss.labels == "grades"), name
    assert {n for n, x in LOSSES.items() if x.native} == {"lambdamart", "xendcg-native", "pointwise"}
    # a library loss's boosting step is the core's, label terms computed once
    rng = np.random.default_rng(0)
    off = np.array([0, 4, 9])
    y, s = rng.integers(0, 3, 9).astype(float), rng.normal(size=9)
    steps = [("listnet", core.listnet_grad_hess), ("ranknet", core.ranknet_grad_hess),
             ("approxndcg", core.approxndcg_grad_hess), ("lambdaloss", core.lambdaloss_grad_hess)]
    for name, f in steps:
        step = LOSSES[name].step(y, off, LOSSES[name].resolve_options())
        np.testing.assert_array_equal(step(s, 0.5, None)[0], f(y, s, off)[0])
    xendcg = LOSSES["xendcg"].step(y, off, {})
    np.testing.assert_array_equal(xendcg(s, 0.3, None)[0], core.xendcg_grad_hess(y, s, off, 0.3)[0])
    # ListMLE's order among equal labels comes from the iteration's generator
    listmle = LOSSES["listmle"].step(y, off, {})
    order = core.listmle_order(y, off, np.random.default_rng(5))
    np.testing.assert_array_equal(listmle(s, 0.5, np.random.default_rng(5))[0], core.listmle_gradient(y, s, off, order))
    with pytest.raises(UsageError, match="did you mean 'ranknet'"):
        check_training_labels("rank-net", y)
    np.testing.assert_array_equal(check_training_labels("listnet", -y), -y)


def test_loss_options_declare_their_defaults_ranges_and_search_ranges():
    """Every option's default is within its allowed values and its search range; the search entries are what a
    hyperparameter search reads."""
    for loss in LOSSES.values():
        assert loss.resolve_options() == {o.name: o.default for o in loss.options}
        for o in loss.options:
            assert o.check(o.default, loss.name) == o.default and o.doc
            entry = o.search_entry()
            if o.kind == "choice":
                assert entry == {"choices": list(o.choices), "default": o.default}
            else:
                assert entry["low"] <= o.default <= entry["high"]
                o.check(entry["low"], loss.name), o.check(entry["high"], loss.name)
    assert LOSSES["listnet"].option_search() == {"step": {"choices": ["paper", "diagonal"], "default": "paper"}}
    assert set(LOSSES["lambdaloss"].option_search()) == {"variant", "mu", "sigma"}
    assert LOSSES["approxndcg"].option_search()["temperature"] == {"low": 0.01, "high": 1.0, "log": True,
                                                                   "int": False, "default": 0.1}
    assert LOSSES["listnet"].options[0].before == "diagonal"  # what rankcli did before the option existed


def test_the_new_losses_label_requirements():
    from rankcli.errors import InputError
    from rankcli.train import check_training_labels

    y = np.array([0.0, 2.5, 1e6])
    for loss in ("approxndcg", "lambdaloss"):
        np.testing.assert_array_equal(check_training_labels(loss, y), y)  # any y >= 0, of any size
        with pytest.raises(InputError, match=rf"^--loss {loss} needs non-negative labels \(2\^label - 1\), got -1"):
            check_training_labels(loss, np.array([1.0, -1.0]))
    for loss in ("listmle", "listmle-pa"):  # only the order counts: any real
        np.testing.assert_array_equal(check_training_labels(loss, -y * 1e300), -y * 1e300)
