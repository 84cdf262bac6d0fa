"""The paper's experimental protocol as a library: repeated query-level splits or fixed folds, losses side by side,
robustness sweeps.

An experiment is a set of *units* ``(setting, trial, loss)``. A unit takes trial ``t``'s split of the data, applies
the setting's perturbation to the training (and, for clicks, validation) queries, trains one loss with
:func:`rankcli.train.train_model`, and evaluates it on the untouched test queries. Two protocols give the splits:

- *random splits* (the default): trial ``t`` (``0 .. trials - 1``) splits the pooled queries at random; the paired
  tests run across trials (one unit of the test is one trial's test mean, ``n`` = trials), by default the corrected
  resampled t-test, because trials that share queries are not independent (:mod:`~rankcli.experiment.significance`);
- *folds* (``folds=True``): ``DATA`` holds ``Fold1/ .. FoldK/`` (or is one fold), each with its own train, validation
  and test files; trial ``k`` (``1 .. K``) is fold ``k``, trained once per loss and setting. The test metrics of all
  folds are pooled per query and the paired tests run over those queries (``n`` = pooled test queries), as LETOR
  results are reported.

The position-bias sweep (``position_bias``) asks whether IPS undoes the bias of clicks: it trains each loss twice
per unit key, naive (``xendcg``) and with IPS (``xendcg+ips``), on clicks that a logging ranker's rankings received
(:func:`position_bias_logs`, :func:`variant_data`); its settings test only each loss's naive model against its IPS
model, and the same two ways on the randomised log as a control (``xendcg+control``, ``xendcg+ips+control``:
:func:`parse_variant`).

Everything random in a unit is seeded from ``(seed, trial)`` (the split) and ``(seed, trial, setting)`` (the
perturbation and LightGBM's seed) with :class:`numpy.random.SeedSequence`, never from the loss, the order of execution
or the number of processes: so every loss sees the same split and the same perturbed data in a trial, and ``jobs=1``
and ``jobs=N`` give identical results. LightGBM runs with a fixed thread count per model (``threads``, default 1) for
the same reason.

Results land in ``EXP_DIR`` as each unit finishes:

- ``trials.parquet``: one row per (trial, setting, loss, metric): ``value`` (test metric), ``trees`` (trees used, the
  best iteration under early stopping), ``seconds`` (wall time of the unit); ``trial`` is the fold number under the
  folds protocol. Rewritten atomically (temporary file + rename) after every unit, so it is always complete and
  readable; a rerun of the same command skips the units already in it (resume).
- ``curves/<setting>__<trial>__<loss>.parquet``: the validation metric (``select_by``) after every tree, written
  before the unit's rows reach ``trials.parquet``. ``convergence.csv`` holds their mean per tree, every trial counted
  at every tree (a trial that stopped early carries its kept model's value forward).
- ``queries/<setting>__<fold>__<loss>.parquet`` (folds protocol only): ``qid`` and one column per test metric, the
  value of every test query of the fold (NaN where the convention skips it), written before the unit's rows reach
  ``trials.parquet``; the pooled tests are computed from these files (also on resume). They are per-query metric
  files as ``rankcli eval --per-query`` writes them.
- ``config.json``: the configuration; a rerun with a different one is refused unless the caller overwrites.
- ``summary.json``, ``summary.md``, ``sweep-<kind>.csv`` when the experiment is complete.

The package's modules, one job each: :mod:`~rankcli.experiment.config` (the configuration, settings and seeds),
:mod:`~rankcli.experiment.data` (DATA, folds and each trial's split), :mod:`~rankcli.experiment.sweeps` (what a
setting does to the training data), :mod:`~rankcli.experiment.unit` (training and testing one unit, worker
processes), :mod:`~rankcli.experiment.runner` (planning, resuming, running), :mod:`~rankcli.experiment.summary` (the
tables and paired tests), :mod:`~rankcli.experiment.significance` (which test, and its name everywhere),
:mod:`~rankcli.experiment.convergence` and :mod:`~rankcli.experiment.render` (summary.md, the terminal's tables and
the plots). The files of ``EXP_DIR`` are read and written by :mod:`rankcli.formats.experiment_store`.

Sign convention: every difference is ``mean(b) - mean(a)`` for a test of the pair ``(a, b)`` (``a`` the loss listed
first), labelled ``"b - a"`` wherever it is shown, as in ``rankcli compare``.

This module never prints; the CLI renders its results.
"""

from rankcli.core.seeds import model_seed, perturbation_rng, trial_rng
from rankcli.experiment.config import (
    CONTROL_SUFFIX,
    DEFAULT_TRIALS,
    DISPLAYED_POSITIONS,
    IPS_SUFFIX,
    SWEEP_KINDS,
    ExperimentConfig,
    format_level,
    iter_levels,
)
from rankcli.experiment.convergence import convergence
from rankcli.experiment.data import (
    ExperimentData,
    Fold,
    TrialData,
    TrialParts,
    find_folds,
    load_data,
    trial_parts,
    trial_split,
)
from rankcli.experiment.runner import ExperimentResult, UnitClaims, run_experiment
from rankcli.experiment.settings import (
    BASELINE,
    Setting,
    SweepLevel,
    all_loss_names,
    parse_variant,
    plan_settings,
    primary_metric,
    setting_for,
    setting_losses,
    setting_pairs,
    trial_ids,
)
from rankcli.experiment.summary import (
    difference_label,
    json_shape,
    pooled_queries,
    summarize_experiment,
    sweep_rows,
)
from rankcli.experiment.sweeps import (
    ClickLogs,
    click_dataset,
    logging_query_count,
    perturb,
    position_bias_logs,
    variant_data,
)
from rankcli.experiment.unit import Unit, UnitResult, run_unit

__all__ = [
    "BASELINE", "ClickLogs", "DEFAULT_TRIALS", "DISPLAYED_POSITIONS", "ExperimentConfig", "ExperimentData",
    "ExperimentResult", "Fold", "IPS_SUFFIX", "SWEEP_KINDS", "Setting", "SweepLevel", "TrialData", "TrialParts", "Unit",
    "UnitClaims", "UnitResult", "all_loss_names", "click_dataset", "convergence", "difference_label", "find_folds",
    "format_level", "iter_levels", "json_shape", "load_data", "logging_query_count", "model_seed", "perturb",
    "perturbation_rng", "plan_settings", "pooled_queries", "position_bias_logs", "primary_metric", "run_experiment",
    "run_unit", "setting_for", "setting_losses", "setting_pairs", "summarize_experiment", "sweep_rows",
    "trial_ids", "trial_parts", "trial_rng", "trial_split", "variant_data",
    "CONTROL_SUFFIX", "parse_variant",
]
