"""What rankcli does with each of LightGBM's parameters: the one table (:data:`PARAMETERS`) behind ``--param`` and
``--params-file``.

Every parameter of LightGBM's own list (``LGBM_DumpParamAliases``: 141 main names in LightGBM 4.7, each with its
aliases) is in exactly one class; a test fails when LightGBM lists one that is not here:

- ``applied``: passed to LightGBM under its main name, and LightGBM applies it. Some apply only with the losses whose
  LightGBM objective reads them (``losses``: ``sigmoid`` only in ``lambdarank``) or only together with another
  parameter (``needs``: ``bagging_fraction`` only with ``bagging_freq > 0``); ``rankcli train``, which knows the
  whole training, refuses them otherwise (:func:`check_effective`), since LightGBM would ignore them without a word.
- ``option``: a rankcli option sets it (``num_iterations`` is ``--trees``, ``eval_at`` and ``metric`` are
  ``--select-by``): refused, naming the option.
- ``rankcli``: rankcli sets it itself and a different value would break what rankcli promises (``verbosity``,
  ``feature_pre_filter``, the network of distributed training): refused, saying why.
- ``ignored``: LightGBM ignores it in every training rankcli runs (its command-line program's settings, the
  parameters of objectives and metrics no rankcli loss uses, categorical features, which rankcli's datasets never
  have): refused, saying why.

The semantics are LightGBM's parameter documentation (``docs/Parameters.rst``: "used only in ...") and its
``Config::CheckParamConflict`` (``src/io/config.cpp``), read for LightGBM 4.6 and 4.7.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rankcli.errors import UsageError
from rankcli.train.losses import LOSSES

#: What a parameter needs besides itself to take effect: ``f(context) -> None`` (it does) or the missing condition.
Needs = Callable[["Context"], "str | None"]


@dataclass(frozen=True)
class Context:
    """One training as :func:`check_effective` sees it: the LightGBM parameters given (main names), the loss, whether
    it runs on a Dask cluster, whether the training rows carry display positions (``--propensity learn``)."""

    params: Mapping[str, Any]
    loss: str
    distributed: bool = False
    positions: bool = False

    def value(self, key: str, default: Any = None) -> Any:
        """The value of ``key`` as LightGBM reads it (``true``/``false`` texts as booleans, case ignored)."""
        value = self.params.get(key, default)
        if isinstance(value, str) and value.strip().lower() in ("true", "+", "false", "-"):
            return value.strip().lower() in ("true", "+")
        return value

    def word(self, key: str, default: str) -> str:
        """The value of ``key`` as a lower-case word (LightGBM's enumerations ignore case)."""
        return str(self.params.get(key, default)).strip().lower()

    def number(self, key: str, default: float) -> float | None:
        """The value of ``key`` as a number, ``None`` when it is not one (LightGBM then refuses it itself)."""
        try:
            return float(self.params.get(key, default))
        except (TypeError, ValueError):
            return None


@dataclass(frozen=True)
class Rule:
    """What rankcli does with one LightGBM parameter (see the module's documentation).

    Attributes
    ----------
    kind : ``applied``, ``option``, ``rankcli`` or ``ignored``.
    why : for ``option`` the rankcli option that sets it; for ``rankcli`` and ``ignored`` the reason it is refused.
    losses : for ``applied``, the losses whose LightGBM objective reads it (empty: every loss).
    needs : for ``applied``, what else it needs to take effect (:data:`Needs`), or ``None``.
    """

    kind: str
    why: str = ""
    losses: tuple[str, ...] = ()
    needs: Needs | None = None


def _applied(losses: tuple[str, ...] = (), needs: Needs | None = None) -> Rule:
    return Rule("applied", losses=losses, needs=needs)


# --------------------------------------------------------------------------------------------- the conditions
def _freq_on(c: Context) -> bool:
    freq = c.number("bagging_freq", 0)
    return freq is None or freq > 0


def _fraction_on(c: Context) -> bool:
    fraction = c.number("bagging_fraction", 1.0)
    return fraction is None or fraction < 1.0


def _goss(c: Context) -> bool:
    return c.word("data_sample_strategy", "bagging") == "goss" or c.word("boosting", "gbdt") == "goss"


def _bagging_fraction(c: Context) -> str | None:
    if not _fraction_on(c):  # 1, LightGBM's default: nothing to apply
        return None
    if _goss(c):
        return "bagging, which data_sample_strategy=goss replaces"
    return None if _freq_on(c) else "bagging_freq > 0 (its default 0 turns bagging off)"


def _bagging_freq(c: Context) -> str | None:
    if not _freq_on(c):  # 0 turns bagging off, as LightGBM's default does
        return None
    if _goss(c):
        return "bagging, which data_sample_strategy=goss replaces"
    return None if _fraction_on(c) else "bagging_fraction < 1 (its default 1 keeps every row)"


def _bagging(c: Context) -> str | None:
    return None if _freq_on(c) and _fraction_on(c) and not _goss(c) else \
        "bagging: bagging_freq > 0 and bagging_fraction < 1"


def _boosting_is(kind: str) -> Needs:
    return lambda c: None if c.word("boosting", "gbdt") == kind else f"boosting={kind}"


def _needs_goss(c: Context) -> str | None:
    return None if _goss(c) else "data_sample_strategy=goss"


def _true(key: str) -> Needs:
    return lambda c: None if c.value(key) is True else f"{key}=true"


def _given(*keys: str) -> Needs:
    return lambda c: None if any(k in c.params for k in keys) else " or ".join(keys)


def _device(*kinds: str) -> Needs:
    return lambda c: None if c.word("device_type", "cpu") in kinds else " or ".join(f"device_type={k}" for k in kinds)


def _distributed(c: Context) -> str | None:
    if c.distributed or c.word("tree_learner", "serial") == "serial":
        return None
    return "distributed training (--dask): on one machine LightGBM trains serially"


def _voting(c: Context) -> str | None:
    return _distributed(c) or (None if c.word("tree_learner", "data") == "voting" else "tree_learner=voting")


def _positions(c: Context) -> str | None:
    return None if c.positions else "--propensity learn (LightGBM's position-bias model)"


# ---------------------------------------------------------------------------------------------- the reasons
_CLI = ("it is a setting of LightGBM's command-line program, which rankcli does not run (rankcli reads and writes "
        "every file itself, and LightGBM's Python API ignores it)")
_NETWORK = "rankcli trains on one machine here; --dask runs LightGBM's distributed training and sets up its network"
_METRIC = "--select-by"  # LightGBM computes no metric in a rankcli training (metric "None"): rankcli does
_CATEGORICAL = ("it applies to categorical features only, and rankcli's features are numbers (categorical_feature is "
                "refused too)")
_OTHER_OBJECTIVE = "it is a parameter of LightGBM objectives no rankcli loss uses ({}), so LightGBM ignores it"

#: Every LightGBM parameter by main name -> :class:`Rule` (the module's documentation).
PARAMETERS: dict[str, Rule] = {
    # core: what the options set
    "objective": Rule("option", "--loss"),
    "num_iterations": Rule("option", "--trees"),
    "learning_rate": Rule("option", "--learning-rate"),
    "num_leaves": Rule("option", "--num-leaves"),
    "min_data_in_leaf": Rule("option", "--min-data-in-leaf"),
    "early_stopping_round": Rule("option", "--early-stopping"),
    "early_stopping_min_delta": Rule("option", "--early-stopping"),
    "num_threads": Rule("option", "--threads"),
    **{k: Rule("option", "--seed") for k in ("seed", "data_random_seed", "bagging_seed", "feature_fraction_seed",
                                            "drop_seed", "extra_seed", "objective_seed")},
    **{k: Rule("option", _METRIC) for k in ("metric", "eval_at", "metric_freq", "is_provide_training_metric",
                                           "first_metric_only", "multi_error_top_k", "auc_mu_weights")},
    # what rankcli sets itself
    "verbosity": Rule("rankcli", "rankcli keeps LightGBM quiet (verbosity -1): LightGBM writes its log to standard "
                                 "output, which carries rankcli's results and --json"),
    "num_class": Rule("rankcli", "a ranker gives each document one score (num_class 1; more classes broke rankcli's "
                                 "losses)"),
    "feature_pre_filter": Rule("rankcli", "rankcli builds every LightGBM Dataset with feature_pre_filter=false, so "
                                          "that one Dataset serves every min_data_in_leaf (it would be overridden)"),
    **{k: Rule("rankcli", _NETWORK) for k in ("num_machines", "machines", "machine_list_filename",
                                             "local_listen_port", "time_out", "pre_partition")},
    # what LightGBM ignores in every rankcli training
    **{k: Rule("ignored", _CLI) for k in (
        "task", "config", "data", "valid", "input_model", "output_model", "output_result", "snapshot_freq",
        "save_binary", "convert_model", "convert_model_language", "header", "label_column", "weight_column",
        "group_column", "ignore_column", "categorical_feature", "parser_config_file", "two_round",
        "precise_float_parser", "saved_feature_importance_type", "predict_raw_score", "predict_leaf_index",
        "predict_contrib", "predict_disable_shape_check", "start_iteration_predict", "num_iteration_predict",
        "pred_early_stop", "pred_early_stop_freq", "pred_early_stop_margin")},
    **{k: Rule("ignored", _CATEGORICAL) for k in ("cat_l2", "cat_smooth", "max_cat_threshold", "max_cat_to_onehot",
                                                 "min_data_per_group")},
    "alpha": Rule("ignored", _OTHER_OBJECTIVE.format("huber, quantile")),
    "fair_c": Rule("ignored", _OTHER_OBJECTIVE.format("fair")),
    "poisson_max_delta_step": Rule("ignored", _OTHER_OBJECTIVE.format("poisson")),
    "tweedie_variance_power": Rule("ignored", _OTHER_OBJECTIVE.format("tweedie")),
    **{k: Rule("ignored", _OTHER_OBJECTIVE.format("binary, multiclassova")) for k in (
        "is_unbalance", "scale_pos_weight", "pos_bagging_fraction", "neg_bagging_fraction")},
    "refit_decay_rate": Rule("ignored", "it is used only when refitting a model's leaves (LightGBM's refit task), "
                                        "which rankcli never does"),
    # applied in every training
    **{k: _applied() for k in (
        "boosting", "data_sample_strategy", "device_type", "deterministic", "force_col_wise", "force_row_wise",
        "histogram_pool_size", "max_depth", "min_sum_hessian_in_leaf", "feature_fraction", "feature_fraction_bynode",
        "extra_trees", "max_delta_step", "lambda_l1", "lambda_l2", "min_gain_to_split", "monotone_constraints",
        "feature_contri", "forcedsplits_filename", "cegb_penalty_split", "cegb_penalty_feature_lazy",
        "cegb_penalty_feature_coupled", "path_smooth", "interaction_constraints", "use_quantized_grad",
        "linear_tree", "max_bin", "max_bin_by_feature", "min_data_in_bin", "bin_construct_sample_cnt",
        "is_enable_sparse", "enable_bundle", "use_missing", "zero_as_missing", "forcedbins_filename")},
    # applied only with another parameter
    "bagging_fraction": _applied(needs=_bagging_fraction),
    "bagging_freq": _applied(needs=_bagging_freq),
    "bagging_by_query": _applied(needs=_bagging),
    **{k: _applied(needs=_boosting_is("dart")) for k in ("drop_rate", "max_drop", "skip_drop", "xgboost_dart_mode",
                                                         "uniform_drop")},
    **{k: _applied(needs=_needs_goss) for k in ("top_rate", "other_rate")},
    "linear_lambda": _applied(needs=_true("linear_tree")),
    **{k: _applied(needs=_given("monotone_constraints")) for k in ("monotone_constraints_method",
                                                                   "monotone_penalty")},
    **{k: _applied(needs=_true("use_quantized_grad")) for k in ("num_grad_quant_bins", "quant_train_renew_leaf",
                                                                "stochastic_rounding")},
    "cegb_tradeoff": _applied(needs=_given("cegb_penalty_split", "cegb_penalty_feature_lazy",
                                           "cegb_penalty_feature_coupled")),
    "gpu_platform_id": _applied(needs=_device("gpu")),
    "gpu_use_dp": _applied(needs=_device("gpu")),
    "gpu_device_id": _applied(needs=_device("gpu", "cuda")),
    "num_gpu": _applied(needs=_device("cuda")),
    "gpu_device_id_list": _applied(needs=_device("cuda")),
    "tree_learner": _applied(needs=_distributed),
    "top_k": _applied(needs=_voting),
    # applied only with the losses whose LightGBM objective reads them
    **{k: _applied(losses=("lambdamart",)) for k in ("sigmoid", "label_gain", "lambdarank_truncation_level",
                                                     "lambdarank_norm")},
    "lambdarank_position_bias_regularization": _applied(losses=("lambdamart",), needs=_positions),
    **{k: _applied(losses=("pointwise",)) for k in ("reg_sqrt", "boost_from_average")},
}

#: Main name -> the rankcli option that sets it (the ``option`` class).
OPTION_PARAMS: dict[str, str] = {k: r.why for k, r in PARAMETERS.items() if r.kind == "option"}
#: Main name -> why ``--param`` may not set it (the ``rankcli`` and ``ignored`` classes).
MANAGED_PARAMS: dict[str, str] = {k: r.why for k, r in PARAMETERS.items() if r.kind in ("rankcli", "ignored")}


def check_effective(params: Mapping[str, Any], loss: str, *, distributed: bool = False, positions: bool = False,
                    where: Callable[[str], str] = lambda key: f"--param {key}") -> None:
    """:class:`UsageError` for a parameter of ``params`` (main names, as :func:`rankcli.train.check_params` returns
    them) that LightGBM would ignore in this training: one whose objective no ``loss`` reads, or one without the
    parameter it needs (:data:`PARAMETERS`).

    Parameters
    ----------
    params : the LightGBM parameters given (``--param`` and ``--params-file``), under main names.
    loss : the loss trained.
    distributed : whether it trains on a Dask cluster (``--dask``).
    positions : whether the training rows carry the positions of LightGBM's position-bias model.
    where : how a message names a key and its source (``--param KEY``, ``--params-file FILE: KEY``).
    """
    context = Context(params, loss, distributed, positions)
    for key in params:
        rule = PARAMETERS.get(key)
        if rule is None or rule.kind != "applied":
            continue
        if rule.losses and loss not in rule.losses:
            readers = " or ".join(LOSSES[x].consumer for x in rule.losses)
            raise UsageError(f"{where(key)}: only {readers} reads {key}; --loss {loss} would train as if it "
                             "were not given")
        missing = rule.needs(context) if rule.needs is not None else None
        if missing:
            raise UsageError(f"{where(key)}: LightGBM applies {key} only with {missing}, so it would train as "
                             "if it were not given; set what it needs too, or leave it out")


#: What :func:`check_effective_across` is given for a parameter a search draws: a value that is not a number, which
#: every condition reads as "set" (a drawn ``bagging_fraction`` is below 1 in some trial).
SEARCHED = object()


def check_effective_across(params: Mapping[str, Any], losses: list[str], *,
                           where: Callable[[str], str] = lambda key: f"--param {key}") -> None:
    """:func:`check_effective` for parameters every loss of ``losses`` trains with (``tune``'s and ``experiment``'s
    ``--param``, a tune space's fixed and searched dimensions): a key none of the losses reads, or one that lacks what
    it needs in a loss that reads it, is a :class:`UsageError`. A key only some of the losses read is accepted: the
    others train as without it, which is what comparing losses under one ``--param`` means.

    Parameters
    ----------
    params : main names -> values; :data:`SEARCHED` for a dimension a search draws.
    losses : the losses trained. where : how a message names a key and its source.
    """
    for key in params:
        if not any(reads(key, loss) for loss in losses):
            readers = " or ".join(LOSSES[x].consumer for x in PARAMETERS[key].losses)
            raise UsageError(f"{where(key)}: only {readers} reads {key}, and none of the losses here trains with it "
                             f"({', '.join(losses)})")
    for loss in losses:
        check_effective({k: v for k, v in params.items() if reads(k, loss)}, loss, where=where)


def reads(key: str, loss: str) -> bool:
    """Whether a training with ``loss`` reads the parameter ``key`` (a main name; a key that is not an applied
    LightGBM parameter is not LightGBM's to ignore, and counts as read)."""
    rule = PARAMETERS.get(key)
    return rule is None or rule.kind != "applied" or not rule.losses or loss in rule.losses
