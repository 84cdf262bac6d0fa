"""An experiment's configuration and its validation. Its settings plan is :mod:`rankcli.experiment.settings`, its
resume identity :mod:`rankcli.experiment.identity`, the seeds of its units :mod:`rankcli.core.seeds`."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rankcli.errors import UsageError
from rankcli.experiment import identity as experiment_identity
from rankcli.experiment.fuse_option import fuse_method
from rankcli.experiment.significance import DEFAULT_FOLD_TEST, DEFAULT_SPLIT_TEST, check_test
from rankcli.train import LOSSES, check_boosting, check_loss, check_params
from rankcli.train.lightgbm_params import check_effective_across
from rankcli.train.loss_options import NEW
from rankcli.train.params_file import apply_params
from rankcli.tune import require_optuna
from rankcli.tune.space import check_space_effective, train_space

if TYPE_CHECKING:  # pragma: no cover
    from rankcli.train import TrainConfig

SWEEP_KINDS = ("augment-negatives", "label-noise", "click-noise", "position-bias")
#: Click probabilities for grades 0..4 in the click-noise sweep; the level replaces the grade-0 probability.
CLICK_PROBS = (0.05, 0.3, 0.5, 0.7, 0.95)
#: The suffix of a loss's IPS variant in the position-bias sweep (``xendcg+ips``).
IPS_SUFFIX = "+ips"
#: The suffix of the position-bias sweep's control variants (``xendcg+control``, ``xendcg+ips+control``): naive and IPS
#: training on the randomised log (the logging ranker's top 10 shuffled per impression), whose click-through rates are
#: unbiased up to one constant: naive and IPS agree up to noise unless something else (a target scale) parts them.
CONTROL_SUFFIX = "+control"
#: The fewest queries the position-bias sweep's logging ranker is trained on.
MIN_LOGGING_QUERIES = 5
#: Positions displayed per impression in the position-bias sweep (the click log and the randomised log: RandTop-10).
DISPLAYED_POSITIONS = 10
#: Trials of the random-split protocol when none are given.
DEFAULT_TRIALS = 100

#: The fields of :class:`rankcli.train.TrainConfig` an experiment sets: every unit trains with them. A unit's loss and
#: seed are its own (the seed drawn from the experiment's ``seed``, :func:`rankcli.core.seeds.model_seed`); ``gamma``
#: and ``label_grades`` keep TrainConfig's defaults.
HYPERPARAMETERS = ("select_by", "early_stopping", "trees", "learning_rate", "num_leaves", "min_data_in_leaf", "params",
                   "preset", "convention", "threads")


@dataclass(init=False)
class ExperimentConfig:
    """An experiment: its losses, protocol, test metrics, sweeps and the training configuration every unit shares.

    Parameters
    ----------
    losses : the losses trained side by side (any loss ``rankcli train`` knows); the first is ``a`` of every test.
    trials : random splits: the number of trials (None: :data:`DEFAULT_TRIALS`). Folds: the number of folds, set when
        the data are read (a different number given is refused).
    split : the query fractions (train, validation, test) of a random split.
    folds : the fixed-split protocol: DATA holds ``Fold1/ .. FoldK/`` (or one fold's train/vali/test files).
    metrics : the test metrics.
    train : the :class:`rankcli.train.TrainConfig` whose :data:`HYPERPARAMETERS` every unit trains with (default:
        TrainConfig's defaults with one thread). Its ``loss`` and ``seed`` are not used: each unit has its own.
    seed : the seed of every random step (splits, perturbations, LightGBM's seed per trial and setting).
    augment_negatives, label_noise, click_noise, position_bias : the sweeps' levels.
    click_impressions : impressions per query in the click sweeps (and the click-model setting).
    click_model : a fitted click model (``rankcli click-model fit --by relevance``) whose simulated clicks replace
        the training and validation labels in a setting of its own, ``{"path", "fingerprint"}``; None: no setting.
    logging_fraction : the training queries the position-bias sweep's logging ranker learns from.
    correction : the multiple-testing correction within a setting.
    test : the paired test between losses (None: the protocol's default, :attr:`test_name`): random splits
        :data:`rankcli.experiment.significance.SPLIT_TESTS`, folds a test of ``rankcli compare``
        (:func:`rankcli.experiment.significance.check_test`). Not part of the identity: it decides no unit's result
        (a rerun with another test resumes and only summarises again).
    allow_overlap : folds: accept test queries (by qid) in two folds' test sets, or in their fold's train or
        validation file, which are refused otherwise; the summary then says so. Not part of the identity.
    params_file : per loss, the parameters a parameter file gives it (``{loss: {"path", "sha256", "params"}}``,
        :meth:`rankcli.train.params_file.ParamsFile.record`), applied to every unit of that loss below the options.
    tune : tune each loss on each trial's own training and validation data with this budget first (None: no tuning).
    tune_space : with ``tune``, a ``--space`` file (:func:`rankcli.tune.space.read_space_file`: ``{"path",
        "entries"}``) that changes the search space, or ``None`` for ``rankcli tune``'s own.
    loss_options : per loss, its own options that are set (``--loss-option``, ``--step``; the others take their
        defaults, or on resume the values the experiment directory records: :meth:`adopt_loss_options`).
    fuse : a ``rankcli fuse`` method (default parameters) fusing each trial's losses into one more, ``fused-<method>``.
    hyperparameters : :data:`HYPERPARAMETERS` by name (``trees=100``), set on ``train`` (checked as it checks them).
    """

    losses: list[str]
    trials: int | None
    split: tuple[float, float, float]
    folds: bool
    metrics: list[str]
    train: TrainConfig
    seed: int
    augment_negatives: list[float]
    label_noise: list[float]
    click_noise: list[float]
    click_impressions: int
    click_model: dict | None
    position_bias: list[float]
    logging_fraction: float
    correction: str
    test: str | None
    allow_overlap: bool
    params_file: dict | None
    tune: int | None
    tune_space: dict | None
    loss_options: dict
    fuse: str | None

    def __init__(self, losses: list[str] | None = None, trials: int | None = None,
                 split: tuple[float, float, float] = (0.6, 0.2, 0.2), folds: bool = False,
                 metrics: list[str] | None = None, train: TrainConfig | None = None, seed: int = 0,
                 augment_negatives: list[float] | None = None, label_noise: list[float] | None = None,
                 click_noise: list[float] | None = None, click_impressions: int = 10,
                 position_bias: list[float] | None = None, logging_fraction: float = 0.01, correction: str = "holm",
                 test: str | None = None, allow_overlap: bool = False, params_file: dict | None = None,
                 tune: int | None = None, tune_space: dict | None = None, loss_options: dict | None = None,
                 click_model: dict | None = None, fuse: str | None = None,
                 **hyperparameters) -> None:
        from rankcli.train import TrainConfig

        unknown = sorted(set(hyperparameters) - set(HYPERPARAMETERS))
        if unknown:
            raise TypeError(f"ExperimentConfig() got an unexpected keyword argument {unknown[0]!r}")
        self.losses = ["lambdamart", "xendcg", "listnet"] if losses is None else losses
        self.trials, self.split, self.folds = trials, split, folds
        self.metrics = ["ndcg@5", "ndcg@10"] if metrics is None else metrics
        if train is None:
            train = TrainConfig(**{"threads": 1, **hyperparameters})
        elif hyperparameters:
            train = dataclasses.replace(train, **hyperparameters)
        self.train, self.seed = train, seed
        self.augment_negatives = [] if augment_negatives is None else augment_negatives
        self.label_noise = [] if label_noise is None else label_noise
        self.click_noise = [] if click_noise is None else click_noise
        self.click_impressions = click_impressions
        self.click_model = click_model
        self.position_bias = [] if position_bias is None else position_bias
        self.logging_fraction, self.correction, self.test = logging_fraction, correction, test
        self.allow_overlap = allow_overlap
        self.params_file, self.tune, self.tune_space = params_file, tune, tune_space
        self.loss_options = {loss: dict(given) for loss, given in (loss_options or {}).items()}
        self.fuse = fuse

    @property
    def test_name(self) -> str:
        """The paired test between losses: ``test``, or the protocol's default (``corrected-ttest`` across
        random-split trials, ``ttest`` over the folds' pooled test queries)."""
        if self.test is not None:
            return self.test
        return DEFAULT_FOLD_TEST if self.folds else DEFAULT_SPLIT_TEST

    def resolved_loss_options(self) -> dict[str, dict]:
        """Per loss of the experiment that has options, every option with its value (set, or the default)."""
        return {loss: LOSSES[loss].resolve_options(self.loss_options.get(loss)) for loss in self.losses
                if loss in LOSSES and LOSSES[loss].options}

    def recorded_loss_options(self) -> dict[str, dict]:
        """The options :meth:`identity` records: per loss, each option whose value differs from the one that
        reproduces rankcli before the option existed (``LossOption.before``; every option of a loss newer than
        that), so that an experiment directory written before an option existed keeps its identity."""
        out = {}
        for loss, values in self.resolved_loss_options().items():
            before = {o.name: o.before for o in LOSSES[loss].options}
            kept = {k: v for k, v in values.items() if before[k] is NEW or v != before[k]}
            if kept:
                out[loss] = kept
        return out

    def adopt_loss_options(self, stored: dict | None) -> None:
        """Take the options not set here from ``stored``, the identity an experiment directory records (``config``
        of its config.json), so that rerunning an experiment's command resumes it with the options it started with
        (an option it does not record has the value ``LossOption.before``, if the option has one). Nothing without
        ``stored``."""
        if not isinstance(stored, dict):
            return
        recorded = stored.get("loss_options") if isinstance(stored.get("loss_options"), dict) else {}
        for loss in self.losses:
            if loss not in LOSSES:
                continue
            given = self.loss_options.setdefault(loss, {})
            for o in LOSSES[loss].options:
                if o.name in given:
                    continue
                value = (recorded.get(loss) or {}).get(o.name, o.before)
                if value is not NEW:
                    given[o.name] = value
            if not given:
                del self.loss_options[loss]

    def hyperparameters(self) -> dict:
        """The :data:`HYPERPARAMETERS` every unit trains with, by name."""
        return {name: getattr(self.train, name) for name in HYPERPARAMETERS}

    def identity(self) -> dict:
        """Everything that decides a unit's result, in one flat dictionary: the resume key of an experiment directory
        (its rule and its table: :mod:`rankcli.experiment.identity`)."""
        return experiment_identity.identity(self)

    def validate(self) -> None:
        """:class:`UsageError` for an option out of its range (the message names the CLI option)."""
        if not self.losses:
            raise UsageError("--losses: give at least one loss")
        if len(set(self.losses)) != len(self.losses):
            raise UsageError(f"--losses: a loss is listed twice, got {','.join(self.losses)}")
        if self.trials is not None and self.trials < 1:
            raise UsageError(f"--trials must be >= 1, got {self.trials}")
        if self.seed < 0:
            raise UsageError(f"--seed must be >= 0, got {self.seed}")
        self.train.validate()
        unknown = sorted(set(self.loss_options) - set(self.losses))
        if unknown:
            raise UsageError(f"--loss-option {unknown[0]}:...: {unknown[0]} is not trained here (--losses "
                             f"{','.join(self.losses)})")
        self.resolved_loss_options()  # checks every option set
        if self.train.params and not self.folds:  # random splits always select on validation (folds may have none)

            check_boosting(check_params(self.train.params), self.train.early_stopping, validating=True)
        if self.train.params:
            check_effective_across(self.train.params, self.losses)
        self._validate_sweeps()
        self._validate_tuning()
        check_test(self.test_name, self.folds)
        if self.fuse is not None:
            self.fuse = fuse_method(self.fuse, len(self.losses))


    def _validate_tuning(self) -> None:
        if self.tune is not None and self.params_file is not None:
            raise UsageError("--tune and --params-file do not combine: tune each unit, or take one tune result for "
                             "all of them")
        if self.tune is not None and self.tune < 1:
            raise UsageError(f"--tune must be a budget of at least 1 training per loss and trial, got {self.tune}")
        if self.tune is not None and not self.folds and self.split[1] <= 0:
            raise UsageError("--tune scores every trial on the validation part: give --split with a validation "
                             "fraction above 0")
        if self.tune_space is not None and self.tune is None:
            raise UsageError(f"--space {self.tune_space['path']} changes the search space of --tune: give --tune N, or "
                             "drop --space")
        if self.tune is not None:
            require_optuna("experiment --tune")
            for loss in self.losses:  # a bad space is refused before any unit, with tune's messages
                check_loss(loss)
                check_space_effective(train_space(train_config(self, loss, self.seed), self.tune_space),
                                      self.train.params, loss)

    def _validate_sweeps(self) -> None:
        for lv in self.augment_negatives:
            if not (math.isfinite(lv) and lv >= 0):
                raise UsageError(f"--augment-negatives: levels must be >= 0, got {lv:g}")
        for lv in self.label_noise:
            if not (math.isfinite(lv) and 0 <= lv <= 1):
                raise UsageError(f"--label-noise: levels must be in [0, 1], got {lv:g}")
        for lv in self.click_noise:
            if not (math.isfinite(lv) and 0 <= lv <= 1):
                raise UsageError(f"--click-noise: levels must be click probabilities in [0, 1], got {lv:g}")
        for lv in self.position_bias:
            if not (math.isfinite(lv) and lv >= 0):
                raise UsageError(f"--position-bias: levels are PBM exponents eta >= 0 (examination (1/r)^eta), got "
                                 f"{lv:g}")
        if not (math.isfinite(self.logging_fraction) and 0 < self.logging_fraction < 1):
            raise UsageError(f"--logging-fraction: a fraction of the training queries in (0, 1), got "
                             f"{self.logging_fraction:g}")
        if len(set(self.position_bias)) != len(self.position_bias):
            raise UsageError("--position-bias: a level is listed twice, got "
                             + ",".join(format_level(v) for v in self.position_bias))


def format_level(level: float) -> str:
    """A sweep level as setting names and tables write it (``0.2``, ``1``)."""
    return f"{level:g}"


def iter_levels(text: str, option: str) -> list[float]:
    """The sweep levels of ``text``, a comma-separated list of numbers; ``option`` names the option in the error
    message (:class:`UsageError`)."""
    out = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            out.append(float(part))
        except ValueError:
            raise UsageError(f"{option}: expected comma-separated numbers, got {part!r}") from None
    if not out:
        raise UsageError(f"{option}: expected comma-separated numbers, got {text!r}")
    return out


def train_config(config: ExperimentConfig, loss: str, seed: int):
    """The :class:`rankcli.train.TrainConfig` of one unit: ``config.train`` with ``loss``, its options and ``seed``,
    and the parameters ``config.params_file`` gives ``loss`` below the options given (those not ``None``) and
    ``--param``."""
    train = dataclasses.replace(config.train, loss=loss, seed=seed, params=dict(config.train.params),
                                loss_options=dict(config.loss_options.get(loss, {})))
    if config.params_file and loss in config.params_file:
        entry = config.params_file[loss]
        given = [k for k in ("learning_rate", "num_leaves", "min_data_in_leaf") if getattr(train, k) is not None]
        train = apply_params(train, entry["params"], explicit=given, where=f"--params-file {entry['path']}")
    return train
