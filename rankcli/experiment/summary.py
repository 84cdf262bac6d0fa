"""The paper's Table 1 per setting and the paired tests between losses, from the rows of ``trials.parquet`` (random
splits) or the pooled per-query values (folds); and the sweep tables built from it.

The paired tests and their correction are :func:`rankcli.compare.compare_values`, what ``rankcli compare`` runs. Sign
convention: every difference is ``mean(b) - mean(a)`` for a test of the pair ``(a, b)`` (``a`` the loss listed first),
labelled ``"b - a"`` (:func:`difference_label`).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from rankcli.core.stats import REASON_TOO_FEW
from rankcli.experiment.config import ExperimentConfig
from rankcli.experiment.settings import (
    Setting,
    SweepLevel,
    parse_variant,
    primary_metric,
    setting_losses,
    setting_pairs,
    trial_ids,
)
from rankcli.experiment.significance import PERMUTATIONS, corrected_ratio, describe_test
from rankcli.formats.experiment_store import check_same_queries, queries_path, read_per_query

#: The reason of a test over fewer than two trials (compare's reason speaks of queries).
TOO_FEW_TRIALS = "fewer than two trials"


def difference_label(a: str, b: str) -> str:
    """How a difference ``mean(b) - mean(a)`` is labelled everywhere: ``"b - a"``."""
    return f"{b} - {a}"


def _mean_stderr(values: np.ndarray) -> tuple[float, float, int]:
    values = values[np.isfinite(values)]
    n = int(values.shape[0])
    if n == 0:
        return float("nan"), float("nan"), 0
    mean = float(values.mean())
    stderr = float(values.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
    return mean, stderr, n


def pooled_queries(exp_dir: Path, config: ExperimentConfig, settings: list[Setting]) -> dict:
    """Folds protocol: every setting's per-query test metrics, pooled over the folds, read from ``exp_dir``.

    Returns ``{setting: {"folds": [k, ...], "values": {loss: {metric: vector}}}}``: the vectors of all losses run over
    the same queries in the same order (fold by fold, each in test-file order), taken from the per-query files of the
    folds that every loss finished. A fold whose losses were tested on different queries is an :class:`InputError`
    (the store is inconsistent).
    """
    out: dict = {}
    for s in settings:
        names = setting_losses(config, s)
        folds, parts = [], {loss: {m: [] for m in config.metrics} for loss in names}
        for k in trial_ids(config):
            paths = {loss: queries_path(exp_dir, s.name, k, loss) for loss in names}
            if not all(p.is_file() for p in paths.values()):
                continue
            read = {loss: read_per_query(p, config.metrics) for loss, p in paths.items()}
            check_same_queries(paths, {loss: q for loss, (q, _) in read.items()}, config.metrics,
                               {loss: cols for loss, (_, cols) in read.items()})
            folds.append(k)
            for loss, (_, cols) in read.items():
                for m in config.metrics:
                    parts[loss][m].append(cols[m])
        values = {loss: {m: np.concatenate(v) if v else np.zeros(0) for m, v in ms.items()}
                  for loss, ms in parts.items()}
        out[s.name] = {"folds": folds, "values": values}
    return out


def _trial_table(rows: list[dict], wanted: set[int]) -> dict:
    """``{setting: {loss: {metric: {trial: value}}}}`` of the rows of the wanted trials."""
    table: dict = {}
    for r in rows:
        if int(r["trial"]) not in wanted:
            continue
        table.setdefault(r["setting"], {}).setdefault(r["loss"], {}).setdefault(r["metric"], {})[int(r["trial"])] = \
            r["value"]
    return table


def _tests(config: ExperimentConfig, setting: Setting, units: dict, trials: int | None, test: dict) -> list[dict]:
    """The paired tests of one setting over ``units[loss][metric]`` (aligned vectors), as summary.json has them;
    ``trials`` is the number of folds behind a pooled unit (None: the units are trials); ``test`` the test
    (:func:`rankcli.experiment.significance.describe_test`).

    Every two losses, or under the position-bias sweep only each loss's naive variant against its IPS variant (over
    the units where both variants of every tested loss have a value): one call of
    :func:`rankcli.compare.compare_values`, whose correction covers every pair and metric of the setting. The
    position-bias sweep's controls (naive against IPS on the randomised log) are a family of their own, corrected
    apart, so that adding them leaves the main tests' adjusted p-values as they were.
    """
    from rankcli.compare import compare_values

    pairs = setting_pairs(config, setting)
    families = [None] if pairs is None else [
        [p for p in pairs if not parse_variant(p[0]).control], [p for p in pairs if parse_variant(p[0]).control]]
    tests = []
    for family in families:
        runs = units if family is None else {name: units[name] for pair in family for name in pair}
        if len(runs) < 2:
            continue
        tests += _test_rows(compare_values(
            runs, config.metrics, pairs=family, test=test["name"], correction=config.correction, alpha=0.05,
            seed=config.seed, permutations=PERMUTATIONS, test_train_ratio=corrected_ratio(test)).comparisons, trials)
    return tests


def _test_rows(comparisons, trials: int | None) -> list[dict]:
    """summary.json's test records of ``comparisons`` (:func:`rankcli.compare.compare_values`)."""
    tests = []
    for c in comparisons:
        r = c.result
        reason = getattr(r, "reason", None)
        if reason == REASON_TOO_FEW and trials is None:
            reason = TOO_FEW_TRIALS  # the units here are trials
        tests.append({"a": c.a, "b": c.b, "metric": c.metric, "n": int(r.n),
                      "trials": trials if trials is not None else int(r.n),
                      "mean_a": c.mean_a, "mean_b": c.mean_b, "difference": float(r.mean_diff),
                      "stderr": float(r.stderr), "test": r.test, "statistic": float(r.statistic),
                      "p_value": float(r.p_value), "p_adjusted": float(c.p_adjusted), "reason": reason})
    return tests


def summarize_experiment(rows: list[dict], config: ExperimentConfig, settings: list[Setting],
                         pooled: dict | None = None, sizes=None) -> dict:
    """The paper's Table 1 per setting, and paired tests between every two losses.

    Parameters
    ----------
    rows : the rows of ``trials.parquet`` (``trial, setting, loss, metric, value, ...``); trials outside the
        experiment are ignored.
    config : the experiment's configuration (losses, metrics, trials, correction).
    settings : the settings to summarise, in report order.
    pooled : the folds protocol's pooled per-query values (:func:`pooled_queries`); None for random splits.
    sizes : random splits: the (train, validation, test) query counts of every trial
        (:func:`rankcli.core.perturb.split_sizes`), which the corrected t-test needs.

    The *units* of the statistics are the trials (random splits: one value per trial, its test mean) or, with
    ``pooled``, the test queries of all folds. Returns
    ``{"test": {...}, "settings": [{"setting", "losses": {loss: {metric: {"mean", "stderr", "n", "trials"}}},
    "tests": [...]}]}`` (``test``: :func:`rankcli.experiment.significance.describe_test`, the test that ran: the
    corrected resampled t-test across random-split trials unless ``config.test`` says otherwise)
    where ``n`` counts the units a number is computed over and ``trials`` the trials (folds) behind it. A test
    ``{"a", "b", "metric", "n", "trials", "mean_a", "mean_b", "difference", "stderr", "test", "statistic",
    "p_value", "p_adjusted"}`` compares ``b`` with ``a`` (``a`` listed first in ``config.losses``) on the units where
    every loss has a value: ``difference = mean(b) - mean(a)``, as ``rankcli compare`` reports it (one
    implementation: :func:`rankcli.compare.compare_values`). p-values are corrected (``config.correction``) within
    each setting over all pairs and metrics; a test that cannot be run (fewer than two units, or no variance for the
    t-test) has ``p_value`` NaN and says why in ``reason`` (None for a test that ran).
    """
    test = describe_test(config.test_name, config.folds, sizes, config.seed)
    ids = trial_ids(config)
    table = _trial_table(rows, set(ids))
    out = []
    for s in settings:
        by_loss = table.get(s.name, {})
        names = setting_losses(config, s)
        n_folds = None
        if pooled is not None:
            p = pooled.get(s.name) or {"folds": [], "values": {}}
            units = {loss: {m: np.asarray(p["values"].get(loss, {}).get(m, np.zeros(0)), dtype=np.float64)
                            for m in config.metrics} for loss in names}
            n_folds = len(p["folds"])
        else:
            units = {loss: {m: np.array([by_loss.get(loss, {}).get(m, {}).get(t, np.nan) for t in ids],
                                        dtype=np.float64) for m in config.metrics} for loss in names}
        losses = {}
        for loss in names:
            losses[loss] = {}
            for m in config.metrics:
                mean, stderr, n = _mean_stderr(units[loss][m])
                losses[loss][m] = {"mean": mean, "stderr": stderr, "n": n,
                                   "trials": n_folds if pooled is not None else n}
        out.append({"setting": s.name, "losses": losses, "tests": _tests(config, s, units, n_folds, test)})
    return {"test": test, "settings": out}


def hyperparameters(config: ExperimentConfig, tuned: dict[tuple[str, int, str], dict]) -> dict:
    """Which hyperparameters the units trained with: ``{"source": "tuned" | "params-file" | "options", ...}``; with
    ``--tune`` the budget and, per unit, the parameters chosen (``tuned``, the records of
    :func:`rankcli.formats.experiment_store.load_tuned`); with ``--params-file`` the file and its parameters per
    loss."""
    if config.tune:
        units = [{"setting": k[0], "trial": k[1], "loss": k[2],
                  **{f: r.get(f) for f in ("params", "validation", "default_validation", "trials")}}
                 for k, r in sorted(tuned.items())]
        return {"source": "tuned", "budget": config.tune, "space": config.tune_space, "units": units}
    if config.params_file:
        return {"source": "params-file", "params_file": config.params_file}
    return {"source": "options"}


def json_shape(summary: dict) -> dict:
    """The ``--json`` document: the test that ran (``test``: its name, label and, for the corrected test, its query
    counts), then per setting the means and each test with its name, ``n`` and ``difference`` = mean(b) - mean(a)
    (the other fields live in ``summary.json``), and ``overlap`` when overlapping folds were allowed."""
    settings = [{"setting": s["setting"],
                 "losses": {loss: {m: {"mean": v["mean"], "stderr": v["stderr"]} for m, v in ms.items()}
                            for loss, ms in s["losses"].items()},
                 "tests": [{k: t[k] for k in ("a", "b", "metric", "test", "n", "difference", "p_value", "p_adjusted")}
                           for t in s["tests"]]}
                for s in summary["settings"]]
    return {**({"overlap": summary["overlap"]} if summary.get("overlap") else {}), "test": summary["test"],
            "settings": settings,
            # which hyperparameters the units used, when they are not the options alone
            **({"hyperparameters": summary["hyperparameters"]}
               if summary.get("hyperparameters", {}).get("source", "options") != "options" else {})}


def sweep_rows(summary: dict, config: ExperimentConfig, sweeps: dict[str, list[SweepLevel]]) -> dict[str, list[dict]]:
    """Per sweep of ``sweeps``, one row per level of ``summary`` (of the experiment ``config``): mean (and stderr) of
    the primary metric per loss, and for every other loss its
    difference to the first loss, ``"<loss> - <first>"`` = mean(loss) - mean(first), with the adjusted p-value of that
    test (``"<loss> - <first> p_adjusted"``) and the number of units it ran over (``"<loss> - <first> n"``); last,
    the test's name (``test``)."""
    metric = primary_metric(config)
    by_name = {s["setting"]: s for s in summary["settings"]}
    first = config.losses[0]
    out: dict[str, list[dict]] = {}
    for kind, levels in sweeps.items():
        rows = []
        for level, setting in levels:
            s = by_name[setting.name]
            row = {"level": level, "setting": setting.name}
            pairs = setting_pairs(config, setting)
            if pairs is None:  # every other loss against the first
                losses, pairs = config.losses, [(first, loss) for loss in config.losses[1:]]
            else:  # position-bias: every variant's mean, and per loss the IPS variant against the naive one
                losses = setting_losses(config, setting)
            for loss in losses:
                row[loss] = s["losses"][loss][metric]["mean"]
                row[f"{loss} stderr"] = s["losses"][loss][metric]["stderr"]
            for a, b in pairs:
                label = difference_label(a, b)
                row[label] = row[b] - row[a]
                test = next((t for t in s["tests"] if t["a"] == a and t["b"] == b and t["metric"] == metric), None)
                row[f"{label} p_adjusted"] = test["p_adjusted"] if test else float("nan")
                row[f"{label} n"] = test["n"] if test else 0
            row["test"] = summary["test"]["name"]  # last: the columns before it are where they always were
            rows.append(row)
        out[kind] = rows
    return out
