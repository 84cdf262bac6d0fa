"""Multiple-testing corrections and win/tie/loss counts of paired per-query values."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rankcli.errors import UsageError

CORRECTIONS = ("holm", "bonferroni", "bh", "none")


def adjust_pvalues(p_values: Sequence[float], method: str = "holm") -> np.ndarray:
    """Adjust a family of p-values for multiple testing; returns them in the input order.

    ``holm`` (Holm 1979, step-down, controls the family-wise error rate), ``bonferroni`` (``m * p``), ``bh``
    (Benjamini & Hochberg 1995, step-up, controls the false discovery rate), ``none``. Adjusted values are capped at
    1 and are monotone in the raw ones, as in ``statsmodels.stats.multitest.multipletests``. NaN p-values (tests that
    could not be run) stay NaN and are not counted in the family size ``m``.

    Parameters
    ----------
    p_values : the raw p-values of the family (NaN for tests that could not be run).
    method : one of :data:`CORRECTIONS`.

    >>> adjust_pvalues([0.01, 0.04, 0.03], "holm").round(4).tolist()
    [0.03, 0.06, 0.06]
    >>> adjust_pvalues([0.01, 0.04, 0.03], "bh").round(4).tolist()
    [0.03, 0.04, 0.04]
    """
    if method not in CORRECTIONS:
        raise UsageError(f"unknown correction {method!r}; choose one of {', '.join(CORRECTIONS)}")
    p = np.asarray(p_values, dtype=np.float64).ravel()
    out = np.full(p.shape, np.nan)
    valid = ~np.isnan(p)
    q = p[valid]
    m = q.shape[0]
    if m == 0:
        return out
    if method == "none":
        adj = q.copy()
    elif method == "bonferroni":
        adj = np.minimum(q * m, 1.0)
    else:
        order = np.argsort(q, kind="stable")
        ranked = q[order]
        i = np.arange(1, m + 1)
        if method == "holm":
            # p_(i) * (m - i + 1), made non-decreasing from the smallest upwards.
            stepped = np.maximum.accumulate(ranked * (m - i + 1))
        else:
            # p_(i) * m / i, made non-increasing from the largest downwards.
            stepped = np.minimum.accumulate((ranked * m / i)[::-1])[::-1]
        adj = np.empty(m)
        adj[order] = np.minimum(stepped, 1.0)
    out[valid] = adj
    return out


def win_tie_loss(a, b, tol: float = 0.0) -> tuple[int, int, int]:
    """Queries where ``a`` beats ``b`` by more than ``tol``, is within ``tol`` of it, and loses by more than ``tol``.

    Pairs where either value is NaN are not counted.

    >>> win_tie_loss([0.5, 0.2, 0.3], [0.4, 0.2, 0.9])
    (1, 1, 1)
    """
    d = np.asarray(a, dtype=np.float64).ravel() - np.asarray(b, dtype=np.float64).ravel()
    d = d[~np.isnan(d)]
    wins = int(np.count_nonzero(d > tol))
    losses = int(np.count_nonzero(d < -tol))
    return wins, int(d.shape[0]) - wins - losses, losses
