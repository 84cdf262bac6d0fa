"""What each sweep setting does to a trial's data: the perturbations of the training (and, for clicks, validation)
queries, and the position-bias sweep's click logs and loss variants. The test queries are never touched."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from rankcli.core.ips import IPS_LOSSES, IPS_REFUSED
from rankcli.core.metrics import Convention
from rankcli.core.perturb import augment_negatives, label_noise
from rankcli.core.seeds import model_seed, perturbation_rng, unit_rng
from rankcli.dataset import Dataset
from rankcli.errors import InputError, UsageError
from rankcli.experiment.config import (
    CLICK_PROBS,
    DISPLAYED_POSITIONS,
    MIN_LOGGING_QUERIES,
    ExperimentConfig,
    train_config,
)
from rankcli.experiment.settings import Setting, ips_capable, parse_variant
from rankcli.train.ips import objective_for, pooled_training_set


def augment_dataset(ds: Dataset, fraction: float, rng: np.random.Generator) -> Dataset:
    """Every query's list of ``ds`` grown by ``fraction`` with documents of other queries drawn with ``rng``, labelled 0
    (``extra["augmented"]``)."""
    source, offsets, added = augment_negatives(ds.offsets, fraction, rng)
    out = ds.take_rows(source, offsets)
    out.qids = np.repeat(ds.qids[ds.offsets[:-1]], np.diff(offsets))
    out.labels = np.where(added, 0.0, out.labels)
    out.extra["augmented"] = added
    return out


def noisy_dataset(ds: Dataset, fraction: float, rng: np.random.Generator) -> Dataset:
    """A copy of ``ds`` with ``fraction`` of every query's labels re-drawn with ``rng`` from the paper's grade
    distribution (``extra["noisy"]``)."""
    labels, touched = label_noise(ds.labels, ds.offsets, fraction, rng)
    out = ds.take_rows(np.arange(ds.n_rows), ds.offsets)
    out.labels = labels
    out.extra["noisy"] = touched
    return out


def click_dataset(ds: Dataset, p0: float, impressions: int, rng: np.random.Generator) -> Dataset:
    """Cascade clicks on ``impressions`` random rankings per query of ``ds`` (drawn with ``rng``), click probabilities
    (p0, .3, .5, .7, .95)."""
    from rankcli.simulate import simulate_clicks

    clicks, _ = simulate_clicks(ds, model="cascade", click_probs=(p0,) + CLICK_PROBS[1:], impressions=impressions,
                                ranker="random", rng=rng)
    return clicks


def model_click_dataset(ds: Dataset, model_dir: str, impressions: int, rng: np.random.Generator) -> Dataset:
    """Clicks drawn from the fitted click model at ``model_dir`` on ``impressions`` random rankings per query of
    ``ds`` (its labels are the grades the model's parameters belong to)."""
    from rankcli.simulate import simulate_clicks

    clicks, _ = simulate_clicks(ds, model=model_dir, impressions=impressions, ranker="random", rng=rng)
    return clicks


def perturb(setting: Setting, train: Dataset, valid: Dataset | None, config: ExperimentConfig,
            rng: np.random.Generator) -> tuple[Dataset, Dataset | None]:
    """Apply ``setting`` to the training (and, for clicks, validation) data, drawing from ``rng``; ``config`` gives the
    click impressions. The test set is never touched."""
    if setting.kind == "baseline":
        return train, valid
    if setting.kind == "augment-negatives":
        return augment_dataset(train, setting.level, rng), valid
    if setting.kind == "label-noise":
        return noisy_dataset(train, setting.level, rng), valid
    if setting.kind in ("click-noise", "click-model"):
        make = (click_dataset if setting.kind == "click-noise" else
                lambda ds, _, impressions, r: model_click_dataset(ds, config.click_model["path"], impressions, r))
        train_c = make(train, setting.level, config.click_impressions, rng)
        valid_c = make(valid, setting.level, config.click_impressions, rng) if valid is not None else None
        if train_c.n_queries == 0:
            raise InputError(f"{setting.name}: the simulated users clicked nothing in the training queries")
        if valid_c is not None and valid_c.n_queries == 0:
            valid_c = None
        return train_c, valid_c
    raise UsageError(f"unknown setting {setting.name!r}")


def logging_query_count(n_train: int, fraction: float) -> int:
    """Queries the position-bias sweep's logging ranker is trained on: ``fraction`` of the ``n_train`` training
    queries (rounded up), at least :data:`MIN_LOGGING_QUERIES`."""
    return max(MIN_LOGGING_QUERIES, math.ceil(fraction * n_train))


@dataclass
class ClickLogs:
    """What one (trial, position-bias setting) trains on, shared by all its losses and variants."""

    train: Dataset                # PBM clicks on the logging ranker's top 10 of the non-logging training queries
    valid: Dataset | None         # the same on the validation queries (None: no validation part, or no click in it)
    propensity: np.ndarray        # estimated from the RandTop-10 log, position r at [r - 1]
    estimate: object              # the rankcli.core.propensity.PropensityEstimate
    randomised: Dataset           # the RandTop-10 log: the controls train on it


#: One process's latest (trial, setting) of the position-bias sweep: its units run one after another (trial-major
#: plan), so the logging ranker, the simulations and the estimate are made once per (trial, setting), not per loss.
_CLICK_LOGS: dict = {}


def _logging_ranker(train: Dataset, config: ExperimentConfig, trial: int):
    """The logging ranker (lambdamart on the graded labels of :func:`logging_query_count` training queries, all
    trees, no validation) and the other training queries it ranks."""
    from rankcli.train import train_model

    n_log = logging_query_count(train.n_queries, config.logging_fraction)
    if n_log >= train.n_queries:
        raise InputError(f"the logging ranker takes {n_log} of the {train.n_queries} training queries "
                         f"(--logging-fraction {config.logging_fraction:g}, at least {MIN_LOGGING_QUERIES}), leaving "
                         "none to log clicks on; use more training queries or a smaller --logging-fraction")
    order = unit_rng(config.seed, 3, trial).permutation(train.n_queries)
    log_ds, rest = train.take_queries(np.sort(order[:n_log])), train.take_queries(np.sort(order[n_log:]))
    cfg = dataclasses.replace(train_config(config, "lambdamart", model_seed(config.seed, trial, "logging-ranker")),
                              early_stopping=0)
    return train_model(log_ds, None, cfg).booster, rest


def _estimated_propensity(rand_c: Dataset, train_c: Dataset, n_queries: int, rng: np.random.Generator):
    """The click-rate estimate from the RandTop-10 log ``rand_c`` and its propensities (relative to position 1, taken as
    they are: an estimate above 1 by chance is a weight below 1, as ``train --propensity`` takes it)."""
    from rankcli.core.propensity import MIN_CLICKS, estimate

    _, query = np.unique(rand_c.extra["source_qid"][rand_c.offsets[:-1]], return_inverse=True)
    try:
        est = estimate(rand_c.offsets, query.reshape(-1), rand_c.extra["position"], rand_c.labels,
                       method="click-rate", max_position=DISPLAYED_POSITIONS, bootstrap=1, min_clicks=MIN_CLICKS,
                       fit="power", rng=rng)
    except InputError as exc:
        raise InputError(f"propensity estimate from the RandTop-{DISPLAYED_POSITIONS} log ({rand_c.n_queries} "
                         f"impressions of {n_queries} queries, as many as the click log): {exc}") from None
    p = np.asarray(est.propensity, dtype=np.float64)
    shown = int(train_c.extra["position"].max())
    if p.shape[0] < shown or not np.all(np.isfinite(p[:shown])):
        raise InputError(f"the RandTop-{DISPLAYED_POSITIONS} log estimated propensities for "
                         f"positions 1..{int(np.sum(np.isfinite(p)))} only, the click log shows position {shown}")
    return est, p


def position_bias_logs(train: Dataset, valid: Dataset | None, config: ExperimentConfig, setting: Setting,
                       trial: int, key: object = None) -> ClickLogs:
    """Trial ``trial``'s click logs at PBM exponent ``setting.level``.

    A logging ranker (LightGBM lambdamart on the graded labels, all ``config.train.trees`` trees, no validation) is
    trained on :func:`logging_query_count` training queries drawn with the generator ``(seed, 3, trial)`` (the same
    queries and ranker at every level); it ranks the other training queries and the validation queries. On its top
    :data:`DISPLAYED_POSITIONS`, ``config.click_impressions`` impressions per query get PBM clicks (examination
    ``(1/r)^eta``, the paper's click probabilities per grade, impressions without a click kept), and a RandTop-10 log of
    the same size (the ranker's top 10 shuffled per impression) on the same training queries gives the propensity
    estimate (click-rate estimator, positions with fewer than 20 clicks from the fitted ``(1/r)^eta``). Simulation and
    estimate draw from the setting's perturbation generator. ``key`` (anything hashable that identifies the data and the
    configuration) lets a process reuse the logs of its latest call.
    """
    from rankcli.simulate import PAPER_CLICK_PROBS, simulate_clicks

    cache_key = None if key is None else (key, trial, setting.name)
    if cache_key is not None and cache_key in _CLICK_LOGS:
        return _CLICK_LOGS[cache_key]
    booster, rest = _logging_ranker(train, config, trial)
    rng = perturbation_rng(config.seed, trial, setting.name)
    sim = dict(model="pbm", click_probs=PAPER_CLICK_PROBS, eta=float(setting.level), max_rank=DISPLAYED_POSITIONS,
               impressions=config.click_impressions, keep_no_click=True)

    def scores(ds: Dataset) -> np.ndarray:
        return np.asarray(booster.predict(ds.features), dtype=np.float64)

    rest_scores = scores(rest)
    train_c, _ = simulate_clicks(rest, ranker=rest_scores, rng=rng, **sim)
    valid_c = None
    if valid is not None:
        valid_c, _ = simulate_clicks(valid, ranker=scores(valid), rng=rng, **sim)
        if not np.any(valid_c.labels):
            valid_c = None
    rand_c, _ = simulate_clicks(rest, ranker=rest_scores, randomize=("top", DISPLAYED_POSITIONS), rng=rng, **sim)
    if not np.any(train_c.labels):
        raise InputError("the simulated users clicked nothing in the training queries")
    est, propensity = _estimated_propensity(rand_c, train_c, rest.n_queries, rng)
    logs = ClickLogs(train_c, valid_c, propensity, est, rand_c)
    if cache_key is not None:
        _CLICK_LOGS.clear()
        _CLICK_LOGS[cache_key] = logs
    return logs


def variant_data(logs: ClickLogs, name: str, config: ExperimentConfig):
    """(train, validation, objective) of the loss variant ``name`` (``loss``, ``loss+ips``, ``loss+control`` or
    ``loss+ips+control``, :func:`~rankcli.experiment.config.parse_variant`) on ``logs``, under the convention of
    ``config``.

    IPS-capable losses train on the impressions pooled per source query (:func:`rankcli.train.ips.pooled_training_set`):
    without propensities (naive) or with the estimated ones (``+ips``); the controls do the same on the randomised
    (RandTop-10) log instead of the click log. Other losses (lambdamart) train naive on the click impressions as
    logged, each impression one list. Validation is pooled like the variant (naive: click-through rates; ``+ips``: IPS
    relevances), labelled so that the convention's gain is the pooled relevance ``g`` (exponential gain:
    ``log2(1 + g)``)."""
    loss, ips, control = parse_variant(name)
    spec = ("values", logs.propensity) if ips else None
    valid = None
    if logs.valid is not None:
        as_gain = "xendcg" if Convention.preset(config.train.convention).gain == "exponential" else "pointwise"
        valid, _ = pooled_training_set(logs.valid, loss=as_gain, propensity=spec, what="validation clicks")
    if not ips_capable(loss):
        return logs.train, valid, None
    train, _ = pooled_training_set(logs.randomised if control else logs.train, loss=loss, propensity=spec,
                                   what="randomised training clicks" if control else "training clicks")
    return train, valid, objective_for(loss, train)


#: One line per sweep saying what its level does (summary.md and the terminal).
SWEEP_NOTES = {
    "augment-negatives": "Each training list grown by the level's fraction with documents of other training queries, "
                         "labelled 0; validation and test untouched.",
    "label-noise": "That fraction of each training list given random grades, p(0..4) = (.5, .2, .15, .1, .05); "
                   "validation and test untouched.",
    "click-noise": "Training and validation replaced by cascade clicks ({impressions} impressions per query, random "
                   "ranker, click probabilities (level, .3, .5, .7, .95)); impressions without a click dropped; "
                   "tested on the graded test set.",
    "position-bias": "A logging ranker (lambdamart on the graded labels of a fraction {logging} of the training "
                     "queries, at least 5) ranks the other training and the validation queries; PBM clicks at "
                     "examination (1/r)^level on its top 10 ({impressions} impressions per query, click "
                     "probabilities (.05, .3, .5, .7, .95), impressions without a click kept). Each loss trained "
                     "naive (impressions pooled per query on click-through rates, no propensities) and `+ips` "
                     "(propensities estimated from a RandTop-10 log of the same size, power fit beyond thin "
                     "positions, clip 0.01), the gains of both divided by their mean (one global target scale); "
                     "validation pooled the same way; tested on the graded test set. The controls `+control` and "
                     "`+ips+control` train the same two ways on the RandTop-10 log itself, whose random order leaves "
                     "the click-through rates unbiased up to one constant: there naive and IPS should agree within "
                     "noise.",
}


def sweep_note(config, kind: str) -> str:
    """The sweep's one-paragraph description, filled in with the configuration's numbers."""
    return SWEEP_NOTES[kind].format(impressions=config.click_impressions, logging=f"{config.logging_fraction:g}")


def naive_only_note(config) -> str:
    """The sentence saying which losses of the position-bias sweep have no IPS variant ('' when all have one)."""
    naive = [loss for loss in config.losses if loss not in IPS_LOSSES]
    if not config.position_bias or not naive:
        return ""
    why = ["LightGBM's per-document weights are not pairwise IPS"] if set(naive) - set(IPS_REFUSED) else []
    if set(naive) & set(IPS_REFUSED):
        why.append("ListMLE reads only the order of the labels, which IPS weights do not enter")
    return (f"{', '.join(naive)}: naive only, trained on the click impressions as logged (each impression one list, "
            f"the click its label); no IPS variant (IPS training takes {', '.join(IPS_LOSSES)}; {'; '.join(why)}).")
