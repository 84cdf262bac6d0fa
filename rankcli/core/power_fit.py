"""The power fit of position propensities, ``theta_r = (1/r)**eta``: where the estimate runs out of clicks, the
positions from there on follow it (``rankcli propensity --fit power``). Pure numpy;
:func:`rankcli.core.propensity.estimate` runs it. ``eta`` is the weighted least-squares slope of ``-log(theta_r)`` on
``log(r)`` through the origin (``theta_1 = 1`` exactly) over the estimated positions, weighted by the inverse
delta-method variances of their log-ratios; its interval is the percentile interval of the bootstrap replicates'
slopes, and a fitted position's interval is that of ``r**-eta`` over the replicates.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from rankcli.errors import InputError


class PowerFit(NamedTuple):
    """The positions the power fit is fitted on and their weights."""

    use: np.ndarray  # (R,) bool, the positions the power fit is fitted on
    weights: np.ndarray  # (R,) their inverse delta-method variances


def power_eta(ratios: np.ndarray, use: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted least squares of ``-log(ratio_r) = eta * log(r)`` through the origin (``theta_1 = 1`` exactly) over
    the positions ``use``; ``ratios`` (..., R) -> eta (...). Non-finite logs (a zero in a replicate) are left out."""
    R = ratios.shape[-1]
    x = np.log(np.arange(1, R + 1, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        y = -np.log(ratios)
    ok = use & np.isfinite(y)
    w = np.where(ok, weights, 0.0)
    y = np.where(ok, y, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (w * x * y).sum(axis=-1) / (w * x * x).sum(axis=-1)


def percentiles(values: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The ``alpha`` and ``1 - alpha`` quantiles of ``values`` over replicates (axis 0), NaNs left out; NaN where no
    replicate defines the value (null in JSON)."""
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanquantile(values, alpha, axis=0), np.nanquantile(values, 1.0 - alpha, axis=0)


def power_weights(num_clicks: np.ndarray, den_clicks: np.ndarray, use: np.ndarray, stop: int,
                  min_clicks: int) -> PowerFit:
    """The power fit's positions and weights: the positions it is fitted on (``use``: ``2..stop``) and their inverse
    delta-method variances ``1 / (1/num_clicks + 1/den_clicks)``; an :class:`InputError` when there is nothing to fit
    and a position needs the fit."""
    R = use.shape[0]
    if (stop <= 1 or not use.any()) and stop < R:
        raise InputError(f"--fit power: no position after the first has {min_clicks} clicks to fit eta on; "
                         "simulate more impressions")
    weights = np.zeros(R)
    with np.errstate(divide="ignore"):
        weights[use] = 1.0 / (1.0 / num_clicks[use] + 1.0 / den_clicks[use])  # inverse delta-method variance
    return PowerFit(use, weights)


def power_tail(point, lo, hi, fitted, etas, eta_hat, use, stop, alpha) -> dict | None:
    """From 0-based position ``stop`` on, the fitted ``r**-eta`` and the replicates' percentile interval (in place,
    marked in ``fitted``); returns the power fit's record (``None`` when no position was fitted on)."""
    if stop < point.shape[0]:
        r = np.arange(stop + 1, point.shape[0] + 1, dtype=np.float64)
        fitted[stop:] = True
        point[stop:] = r ** -eta_hat
        lo[stop:] = power_quantile(r, etas, alpha)
        hi[stop:] = power_quantile(r, etas, 1.0 - alpha)
    if not use.any():
        return None
    return {"model": "power", "eta": eta_hat, "eta_ci": [float(v) for v in percentiles(etas, alpha)],
            "positions_used": [int(i + 1) for i in np.flatnonzero(use)]}


def power_quantile(r: np.ndarray, etas: np.ndarray, q: float) -> np.ndarray:
    """``nanquantile(r[None, :] ** -etas[:, None], q, axis=0)`` (linear interpolation) without the replicates-by-
    positions matrix: for ``r > 1``, ``r**-eta`` falls as ``eta`` grows, so its order statistics are those of ``etas``
    taken in descending order, and the quantile is the same interpolation between two of them. Memory and time grow
    with the positions, not with positions times replicates."""
    e = np.sort(etas[np.isfinite(etas)])[::-1]
    if e.shape[0] == 0:
        return np.full(r.shape[0], np.nan)
    h = q * (e.shape[0] - 1)
    below = int(np.floor(h))
    above = min(below + 1, e.shape[0] - 1)
    t = h - below
    a, b = r ** -e[below], r ** -e[above]
    diff = b - a  # numpy's lerp, so that the result equals nanquantile's
    return np.where(t >= 0.5, b - diff * (1.0 - t), a + diff * t)
