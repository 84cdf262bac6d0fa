"""Every LightGBM parameter and alias has a class (rankcli.train.lightgbm_params.PARAMETERS), and --param and
--params-file follow it: applied as given, refused naming the option that replaces it, refused because rankcli sets
it or LightGBM would ignore it, or applied only with the loss or the parameter it needs."""

from __future__ import annotations

import json

import pytest

from rankcli.errors import UsageError
from rankcli.runtime.compat import lightgbm_parameter_aliases
from rankcli.runtime.startup import import_lightgbm_lean
from rankcli.train import LOSSES, PARAMETERS, TrainConfig, check_effective, check_params, resolve_params, train_model
from rankcli.train.model import lightgbm_resolved_params
from tests.conftest import REPO
from tests.letor_sample import load_letor, write_letor

import_lightgbm_lean()
TABLE = lightgbm_parameter_aliases()
ALIASES = [(main, alias) for main, aliases in sorted(TABLE.items()) for alias in aliases]
TRAIN_PAGE = (REPO / "docs" / "commands" / "train.md").read_text()
TRAINING_PAGE = (REPO / "docs" / "training.md").read_text()

#: For each parameter that takes effect only with another, what it needs (the test of every such rule).
COMPANIONS = {
    "bagging_fraction": {"bagging_freq": 1}, "bagging_freq": {"bagging_fraction": 0.5},
    "bagging_by_query": {"bagging_freq": 1, "bagging_fraction": 0.5},
    **{k: {"boosting": "dart"} for k in ("drop_rate", "max_drop", "skip_drop", "xgboost_dart_mode", "uniform_drop")},
    "top_rate": {"data_sample_strategy": "goss"}, "other_rate": {"boosting": "goss"},
    "linear_lambda": {"linear_tree": True},
    "monotone_constraints_method": {"monotone_constraints": "1,0"}, "monotone_penalty": {"monotone_constraints": "1"},
    **{k: {"use_quantized_grad": "true"} for k in ("num_grad_quant_bins", "quant_train_renew_leaf",
                                                   "stochastic_rounding")},
    "cegb_tradeoff": {"cegb_penalty_split": 0.1},
    "gpu_platform_id": {"device_type": "gpu"}, "gpu_use_dp": {"device_type": "gpu"},
    "gpu_device_id": {"device_type": "cuda"}, "num_gpu": {"device_type": "cuda"},
    "gpu_device_id_list": {"device_type": "cuda"}, "top_k": {"tree_learner": "voting"},
}
#: Companions that are not parameters: the training's shape.
SHAPES = {"tree_learner": {"distributed": True}, "top_k": {"distributed": True},
          "lambdarank_position_bias_regularization": {"positions": True}}
SAMPLE = {"tree_learner": "voting", "top_k": 10, "bagging_fraction": 0.5}


def test_every_lightgbm_parameter_has_a_class():
    """Fails when LightGBM lists a parameter nobody classified (or drops one that is still classified)."""
    assert set(PARAMETERS) == set(TABLE), (sorted(set(TABLE) - set(PARAMETERS)), sorted(set(PARAMETERS) - set(TABLE)))
    assert len(ALIASES) > len(TABLE) > 100
    for main, rule in PARAMETERS.items():
        assert rule.kind in ("applied", "option", "rankcli", "ignored"), main
        assert (rule.kind == "applied") == (not rule.why), main
        assert set(rule.losses) <= set(LOSSES), main
        if rule.kind == "option":  # an option of rankcli train, in its reference page
            assert f"| `{rule.why}` |" in TRAIN_PAGE, (main, rule.why)
        if rule.needs is not None:
            assert main in COMPANIONS or main in SHAPES, f"{main}: say in COMPANIONS what it needs"


@pytest.mark.parametrize("main, alias", ALIASES)
def test_every_alias_follows_its_parameter_s_class(main, alias):
    rule = PARAMETERS[main]
    named = alias if alias == main else f"{alias} (LightGBM's alias of {main})"
    if rule.kind == "applied":
        assert check_params({alias: 3}) == {main: 3}
        return
    with pytest.raises(UsageError) as err:
        check_params({alias: 3})
    message = str(err.value)
    assert err.value.exit_status == 2 and message.startswith(f"--param {alias}: {named} cannot be set with --param")
    if rule.kind == "option":
        assert message.endswith(f"; use {rule.why}") or message.endswith(f"; use {rule.why} ndcg@3"), message
    else:
        assert message.endswith(rule.why), message


@pytest.mark.parametrize("main", sorted(k for k, r in PARAMETERS.items() if r.kind == "applied"))
def test_an_applied_parameter_takes_effect_only_where_lightgbm_reads_it(main):
    rule = PARAMETERS[main]
    value = SAMPLE.get(main, 3)
    readers = rule.losses or tuple(LOSSES)
    shape = SHAPES.get(main, {})
    for loss in LOSSES:
        params = {main: value, **COMPANIONS.get(main, {})}
        if loss in readers:
            check_effective(params, loss, **shape)
            assert resolve_params(TrainConfig(loss=loss, params=params))[main] == value
            if rule.needs is not None:  # without what it needs LightGBM would ignore it
                with pytest.raises(UsageError, match=f"^--param {main}: LightGBM applies {main} only with "):
                    check_effective({main: value}, loss)
        else:
            with pytest.raises(UsageError, match=f"^--param {main}: only --loss .* reads {main}; --loss {loss} "):
                check_effective(params, loss, **shape)


@pytest.fixture(scope="module")
def data():
    return load_letor("train", 46), load_letor("vali", 46)


@pytest.mark.parametrize("given", [
    {"max_depth": 4, "min_sum_hessian_in_leaf": 0.01, "feature_fraction": 0.9, "feature_fraction_bynode": 0.8,
     "extra_trees": True, "max_delta_step": 2.5, "lambda_l1": 0.25, "lambda_l2": 0.5, "min_gain_to_split": 0.01,
     "path_smooth": 0.5, "histogram_pool_size": 64.0, "cegb_penalty_split": 0.01, "cegb_tradeoff": 0.5,
     "max_bin": 63, "min_data_in_bin": 2, "bin_construct_sample_cnt": 1000, "is_enable_sparse": False,
     "enable_bundle": False, "use_missing": False, "bagging_fraction": 0.75, "bagging_freq": 2,
     "bagging_by_query": True, "use_quantized_grad": True, "num_grad_quant_bins": 8, "quant_train_renew_leaf": True,
     "stochastic_rounding": False, "linear_tree": True, "linear_lambda": 0.25, "force_col_wise": True},
    {"boosting": "dart", "drop_rate": 0.2, "max_drop": 7, "skip_drop": 0.25, "xgboost_dart_mode": True,
     "uniform_drop": True, "deterministic": False, "interaction_constraints": "[0,1,2],[2,3]",
     "monotone_constraints": ",".join(["1", "-1"] + ["0"] * 44), "monotone_constraints_method": "intermediate",
     "monotone_penalty": 0.5},
    {"data_sample_strategy": "goss", "top_rate": 0.3, "other_rate": 0.2, "zero_as_missing": True,
     "feature_contri": ",".join(["0.5"] + ["1"] * 45)},
])
def test_applied_parameters_reach_lightgbm(data, given):
    """What LightGBM trained with (the parameters of its text model) is what was given."""
    check_effective(given, "xendcg")
    train, _ = data
    result = train_model(train, None, TrainConfig(loss="xendcg", trees=2, threads=1, num_leaves=7,
                                                  min_data_in_leaf=5, params=given))
    resolved = lightgbm_resolved_params(result.booster)
    for key, value in given.items():
        assert _same(resolved[key], value), (key, resolved[key], value)


def _same(got, given) -> bool:
    """Whether LightGBM's text of a parameter says ``given`` (booleans as 0/1, lists of numbers by value)."""
    if isinstance(given, bool):
        return got == int(given)
    if isinstance(given, str) and "," in given and "[" not in given:
        return [float(x) for x in str(got).split(",")] == [float(x) for x in given.split(",")]
    return got == given or str(got).replace(" ", "") == str(given).replace(" ", "")


def test_refused_parameters_are_in_the_training_page():
    """Every parameter rankcli sets, refuses or applies only conditionally is named in docs/training.md."""
    for main, rule in PARAMETERS.items():
        if rule.kind != "applied" or rule.losses or rule.needs is not None:
            assert f"`{main}`" in TRAINING_PAGE, main


# ------------------------------------------------------------------------------------ the command line
@pytest.fixture(scope="module")
def letor(tmp_path_factory):
    return write_letor(tmp_path_factory.mktemp("letor"), n_features=46)


FAST = ["--trees", "2", "--threads", "1", "--num-leaves", "7", "--min-data-in-leaf", "5"]


@pytest.mark.parametrize("param, message", [
    ("eval_at=10", "Error: --param eval_at: eval_at cannot be set with --param, it is set by --select-by "),
    ("ndcg_eval_at=10", "Error: --param ndcg_eval_at: ndcg_eval_at (LightGBM's alias of eval_at) cannot be set with "
                        "--param, it is set by --select-by "),
    ("num_boost_round=9", "Error: --param num_boost_round: num_boost_round (LightGBM's alias of num_iterations) "
                          "cannot be set with --param, it is set by --trees; use --trees\n"),
    ("shrinkage_rate=0.1", "it is set by --learning-rate; use --learning-rate\n"),
    ("early_stopping_round=5", "it is set by --early-stopping; use --early-stopping\n"),
    ("sigmoid=2", "Error: --param sigmoid: only --loss lambdamart (LightGBM lambdarank) reads sigmoid; --loss xendcg "
                  "would train as if it were not given\n"),
    ("bagging_fraction=0.5", "Error: --param bagging_fraction: LightGBM applies bagging_fraction only with "
                             "bagging_freq > 0"),
    ("alpha=0.5", "Error: --param alpha: alpha cannot be set with --param: it is a parameter of LightGBM objectives "
                  "no rankcli loss uses"),
    ("feature_pre_filter=true", "Error: --param feature_pre_filter: feature_pre_filter cannot be set with --param: "
                                "rankcli builds every LightGBM Dataset with feature_pre_filter=false"),
])
def test_train_refuses_with_exit_2_naming_what_to_use(run, letor, tmp_path, param, message):
    """`train --param eval_at=10` trained and selected on ndcg@5, exit 0."""
    status, _, err = run("train", letor["train"], "--valid", letor["vali"], "-o", tmp_path / "m", *FAST,
                         "--param", param)
    assert status == 2 and (err.startswith(message) or err.endswith(message)), err
    assert not (tmp_path / "m").exists()
    if param == "eval_at=10":
        assert err.rstrip().endswith("use --select-by ndcg@10")


@pytest.mark.parametrize("params, message", [
    ({"ndcg_eval_at": 10}, "ndcg_eval_at (LightGBM's alias of eval_at) cannot be set with --param, it is set by "
                           "--select-by"),
    ({"n_estimators": 10}, "it is set by --trees; use --trees"),
    ({"objective": "lambdarank"}, "it is set by --loss; use --loss"),
    ({"label_gain": "0,1,3"}, "label_gain: only --loss lambdamart (LightGBM lambdarank) reads label_gain; --loss "
                              "xendcg would train"),
    ({"drop_rate": 0.3}, "drop_rate: LightGBM applies drop_rate only with boosting=dart"),
])
def test_params_file_follows_the_same_rules(run, letor, tmp_path, params, message):
    pf = tmp_path / "p.json"
    pf.write_text(json.dumps({"params": params}))
    status, _, err = run("train", letor["train"], "-o", tmp_path / "m", *FAST, "--params-file", pf)
    assert status == 2 and err.startswith(f"Error: --params-file {pf}: "), err
    assert message in err, err


def test_a_parameter_with_what_it_needs_trains(run, letor, tmp_path):
    pf = tmp_path / "p.json"
    pf.write_text(json.dumps({"params": {"bagging_freq": 1}}))
    status, out, err = run("train", letor["train"], "-o", tmp_path / "m", *FAST, "--loss", "lambdamart", "--json",
                           "--param", "bagging_fraction=0.5", "--param", "sigmoid=2", "--params-file", pf)
    assert status == 0, err
    params = json.loads(out)["params"]
    assert (params["bagging_fraction"], params["bagging_freq"], params["sigmoid"]) == (0.5, 1, 2)

