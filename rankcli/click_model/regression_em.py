"""``rankcli propensity CLICKS --model pbm --regression-em``: the position-based model's examination curve with
relevance a gradient-boosted function of the documents' features (regression EM: Wang, Golbandi, Bendersky, Metzler
and Najork, "Position Bias Estimation for Unbiased Learning to Rank in Personal Search", WSDM 2018).

``P(click at position r) = theta_r gamma(x)``. Each iteration's E-step gives every result the posteriors
``P(E = 1 | C)`` and ``P(R = 1 | C)`` of the examination hypothesis (a click: both 1; a skip:
``theta (1 - gamma) / (1 - theta gamma)`` and ``gamma (1 - theta) / (1 - theta gamma)``); its M-step takes ``theta_r``
as the mean of ``P(E = 1 | C)`` at position ``r`` and fits ``gamma`` by LightGBM with the cross-entropy objective on
the soft labels ``P(R = 1 | C)`` (the expectation of the objective that Wang et al. optimise on labels sampled from
them). Relevance shared across documents through their features identifies ``theta`` even on a fixed ranker's log,
where a per-document model cannot.
"""

from __future__ import annotations

import numpy as np

from rankcli.click_model.propensity import record
from rankcli.core.click_models.base import skip_posterior
from rankcli.errors import InputError, UsageError
from rankcli.propensity import check_debiasable
from rankcli.runtime.cpus import default_threads

#: Trees of each M-step's relevance model.
TREES = 30
#: Examination updates, with the relevance model held, between two fits of it.
INNER = 5
#: The relevance model's probabilities are kept within [CLIP, 1 - CLIP] (the posteriors divide by 1 - theta gamma).
CLIP = 1e-6


class _Relevance:
    """LightGBM's cross-entropy fit of soft labels in [0, 1], the features binned once for every M-step."""

    def __init__(self, features: np.ndarray, seed: int, threads: int):
        from rankcli.runtime.startup import import_lightgbm_lean

        self.lgb = import_lightgbm_lean()
        self.features = features
        self.params = {"objective": "cross_entropy", "learning_rate": 0.1, "num_leaves": 15, "min_data_in_leaf": 20,
                       "seed": seed, "deterministic": True, "force_row_wise": True, "num_threads": threads,
                       "verbose": -1}
        self.data = self.lgb.Dataset(features, label=np.full(features.shape[0], 0.5), free_raw_data=False,
                                     params={"verbose": -1, "num_threads": threads})

    def fit(self, soft: np.ndarray) -> np.ndarray:
        """The model of ``soft``; its predictions on the features."""
        self.data.set_label(soft)
        booster = self.lgb.train(self.params, self.data, num_boost_round=TREES)
        return np.clip(booster.predict(self.features), CLIP, 1.0 - CLIP)


def regression_em(path, *, iterations: int = 20, seed: int = 0, threads: int | None = None) -> dict:
    """The propensity record of regression EM on the click log at ``path`` (its features, positions and clicks);
    ``threads``: LightGBM's (default: rankcli's rule for a training set of the log's size, one per 20,000 rows)."""
    from rankcli.formats.parquet import read_dataset

    ds = read_dataset(path, extra_columns=["position"])
    check_debiasable(path, ds.metadata)
    if "position" not in ds.extra:
        raise InputError(f"{path}: missing column position (a click log of rankcli simulate-clicks has it)")
    if not ds.feature_names:
        raise InputError(f"{path}: no feature columns (f1 .. fN): regression EM models relevance from the features")
    clicks = ds.labels
    if not np.all((clicks == 0) | (clicks == 1)):
        raise InputError(f"{path}: column label: expected clicks (0 or 1)")
    rank = np.asarray(ds.extra["position"], dtype=np.int64) - 1
    R = int(rank.max()) + 1
    shown = np.bincount(rank, minlength=R)
    theta, gamma = np.full(R, 0.5), np.full(ds.n_rows, 0.5)
    c = clicks.astype(bool)
    if iterations < 1:
        raise UsageError(f"--iterations: must be at least 1, got {iterations}")
    relevance = _Relevance(ds.features, seed, default_threads(threads, rows=ds.n_rows))
    for _ in range(iterations):
        for _ in range(INNER):
            exam = np.where(c, 1.0, skip_posterior(theta[rank], gamma))
            theta = np.bincount(rank, weights=exam, minlength=R) / np.maximum(shown, 1)
        gamma = relevance.fit(np.where(c, 1.0, skip_posterior(gamma, theta[rank])))
    nothing = np.full(R, np.nan)
    return record("regression-em", theta / theta[0], nothing, nothing, shown,
                  np.bincount(rank, weights=clicks, minlength=R).astype(np.int64), ds, source=str(path),
                  extra={"iterations": iterations, "trees_per_iteration": TREES,
                         "examination_updates_per_iteration": INNER, "seed": seed, "click_model": "pbm",
                         "interval": "none: each bootstrap replicate would refit the relevance model every iteration",
                         "examination": [float(v) for v in theta]})
