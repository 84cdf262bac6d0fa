"""Convergence curves: the mean validation metric per tree over all trials, a stopped trial carried forward."""

from __future__ import annotations

import numpy as np

from rankcli.experiment.config import ExperimentConfig
from rankcli.experiment.settings import Setting, trained_losses, trial_ids


def _curve_stats(series: list[tuple[np.ndarray, int | None]]) -> dict:
    """Mean, standard error, count and running trials per tree of ``(values, kept trees)`` curves."""
    length = max((v.shape[0] for v, _ in series), default=0)
    grid = np.full((len(series), length), np.nan)
    running = np.zeros(length, dtype=np.int64)
    for i, (vals, keep) in enumerate(series):
        n = vals.shape[0]
        grid[i, :n] = vals
        running[:n] += 1
        at = n if keep is None or not 1 <= keep <= n else keep
        grid[i, n:] = vals[at - 1]
    ok = np.isfinite(grid)
    count = ok.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.where(ok, grid, 0.0).sum(axis=0)
        mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        dev = np.where(ok, grid - mean, 0.0)
        var = (dev ** 2).sum(axis=0) / np.maximum(count - 1, 1)
        stderr = np.where(count > 1, np.sqrt(var / np.maximum(count, 1)), np.nan)
    return {"mean": mean.tolist(), "stderr": stderr.tolist(), "trials": count.tolist(), "running": running.tolist()}


def convergence(curves, config: ExperimentConfig, settings: list[Setting],
                kept: dict[tuple[str, int, str], int] | None = None) -> dict:
    """Mean validation metric per tree per loss and setting, every trial counted at every tree.

    Parameters
    ----------
    curves : ``(setting, trial, loss, values per tree)`` of every unit
        (:func:`rankcli.formats.experiment_store.load_curves`).
    config : the experiment's configuration (its trials and losses).
    settings : the settings to report.
    kept : the trees each finished unit ``(setting, trial, loss)`` keeps (``trials.parquet``'s ``trees``).

    A trial that stopped before the longest curve (early stopping) carries forward the value of the model it keeps:
    its curve at ``kept[(setting, trial, loss)]`` trees (the best iteration, the ``trees`` of ``trials.parquet``), or
    its last value when ``kept`` does not say. So every point averages the same trials, and a curve never becomes the
    mean of the few trials that trained longest. Curves of trials outside the experiment, or (with ``kept``) of units
    not finished, are left out.

    Returns ``{setting: {loss: {"mean": [...], "stderr": [...], "trials": [...], "running": [...]}}}`` per tree:
    ``trials`` counts the values averaged (every trial with a curve, unless a value is NaN), ``running`` the trials
    that actually trained that tree (the rest carry forward), ``stderr`` the standard error of the mean over trials.
    """
    wanted = set(trial_ids(config))
    grouped: dict = {}
    for setting, trial, loss, values in curves:
        if trial not in wanted or values.shape[0] == 0:
            continue
        keep = None
        if kept is not None:
            keep = kept.get((setting, trial, loss))
            if keep is None:
                continue  # the unit did not finish; its curve is rewritten when it runs again
        grouped.setdefault((setting, loss), []).append((values, keep))
    return {s.name: {loss: _curve_stats(grouped.get((s.name, loss), [])) for loss in trained_losses(config, s)}
            for s in settings}
