"""Examination propensity per position from randomised click logs, with bootstrap intervals. Pure numpy, no I/O.

Under the position-based model (PBM) a document at position ``r`` is clicked with probability
``theta_r * gamma(document)``: it is examined with the position's propensity ``theta_r`` and, if examined, clicked
with its relevance probability. Propensities are identified only up to a factor; they are reported relative to
position 1 (``theta_1 = 1``). Two estimators, both ratios of click counts from the same impressions:

``click-rate`` (a RandTop-n log, Joachims et al. WSDM 2017; ``--ranker random`` is RandTop-n with n the list length).
    Within a randomised top N every position shows a uniformly random document of that top N, so the expected
    relevance at position ``r`` equals that at position 1 *of the same impression*, and::

        theta_r / theta_1 = E[clicks at r] / E[clicks at 1]  over the impressions whose list shows position r

    Only the impressions long enough to show position ``r`` enter its ratio (numerator and denominator alike), so
    lists of different lengths (whose documents differ) never mix into one position's estimate.

``swap-ratio`` (a swap-intervention log: the ranker's K-th document swapped with a uniformly random displayed
position).
    The tracked document (the ranker's K-th) is the same document in every impression of a query, and lands on
    every displayed position with equal probability; its relevance cancels from the ratio of its click rates::

        theta_r / theta_1 = (clicks on it at r / times shown at r) / (clicks on it at 1 / times shown at 1)

    again over the impressions long enough to show ``r``.

``harvest`` (logs of several deterministic rankers: intervention harvesting, Agarwal, Zaitsev, Wang, Li, Najork and
Joachims, WSDM 2019).
    A document of a query that one policy showed at ``k`` and another at ``k'`` is an intervention on the pair: its
    relevance is the same at both. With ``N(d, k)``, ``C(d, k)`` its impressions and clicks at ``k`` (all policies
    pooled), ``n(q)`` its query's impressions and the impression shares ``s(d, k) = N(d, k) / n(q)``, each document
    of the intervention set ``S(k, k') = {d : N(d, k) > 0 and N(d, k') > 0}`` enters with the symmetric weight
    ``w = s(d, k) * s(d, k')``::

        c(k, k') = sum over d in S(k, k') of w * C(d, k) / N(d, k) = sum_d C(d, k) * N(d, k') / n(q)**2
        theta_k / theta_k' = c(k, k') / c(k', k)

    (``E[C(d, k)] = N(d, k) theta_k gamma(d)``, so both sums carry the same ``sum w gamma``: a ratio estimator,
    consistent as impressions grow). A pair is used when both of its sums rest on ``min_clicks`` clicks; the
    log-propensities (``log theta_1 = 0``) are the weighted least-squares fit of all used pairs' log-ratios (weight the
    inverse delta-method variance ``1 / (1/clicks(k, k') + 1/clicks(k', k))``); position ``k`` is estimated when a
    used pair links it to an estimated position before it, so the estimate stops at the first position that is not
    (:mod:`rankcli.core.harvest`).

A position whose ratio rests on fewer than ``min_clicks`` clicks (numerator or denominator) is not estimated: the
estimate stops at the first such position, or (``fit="power"``) continues with ``(1/r)**eta`` fitted by weighted least
squares on the log-propensities of the positions before it. Intervals: the percentile bootstrap over *source queries*
(impressions of one query share its documents, so they are resampled together), seeded by the caller's generator.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from rankcli.core import harvest
from rankcli.errors import InputError, UsageError

METHODS = ("click-rate", "swap-ratio", "harvest")
FITS = ("none", "power")
#: The fewest clicks a position's ratio may rest on (numerator and denominator).
MIN_CLICKS = 20
#: Bootstrap replicates computed at once (bounds the replicate-by-query weight matrix).
_BOOTSTRAP_CHUNK = 16


@dataclass
class PropensityEstimate:
    """Propensities of ``positions`` relative to position 1; ``fitted[i]`` marks a position taken from the power fit
    (its clicks were too few). Per-position counts: ``clicks_by_position`` (the numerator's clicks),
    ``reference_clicks`` (the denominator's: clicks at position 1, or on the tracked document at position 1, in the
    same impressions), ``impressions_by_position`` (impressions long enough to show the position)."""

    method: str
    positions: np.ndarray
    propensity: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    fitted: np.ndarray
    clicks_by_position: np.ndarray
    reference_clicks: np.ndarray
    impressions_by_position: np.ndarray
    impressions: int
    clicks: int
    queries: int
    bootstrap: int
    confidence: float
    min_clicks: int
    stopped_at: int | None = None  # first position with too few clicks (not estimated from data)
    max_position: int = 0  # the last position the log could show (and the policy randomised)
    fit: dict | None = None
    notes: list[str] = field(default_factory=list)


def _impression_lengths(offsets: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Positions an impression shows: its largest position (segment max via ``maximum.reduceat``)."""
    return np.maximum.reduceat(positions, offsets[:-1]) if positions.shape[0] else np.zeros(0, positions.dtype)


def _per_query_by_position(q: np.ndarray, r: np.ndarray, weights: np.ndarray | None, Q: int, R: int) -> np.ndarray:
    """``out[q, r - 1]`` = sum of ``weights`` (or the count) over entries of query ``q`` at position ``r`` <= R."""
    keep = r <= R
    idx = q[keep] * R + (r[keep] - 1)
    w = None if weights is None else weights[keep]
    return np.bincount(idx, weights=w, minlength=Q * R).reshape(Q, R)


def _at_least(q: np.ndarray, length: np.ndarray, weights: np.ndarray | None, Q: int, R: int) -> np.ndarray:
    """``out[q, r - 1]`` = sum of ``weights`` (or the count) over the impressions of query ``q`` with ``length >= r``:
    a histogram by (capped) length, summed from the longest down."""
    by_length = _per_query_by_position(q, np.minimum(length, R), weights, Q, R)
    return by_length[:, ::-1].cumsum(axis=1)[:, ::-1]


def _ratios(stats: np.ndarray, method: str, R: int) -> np.ndarray:
    """Propensity ratios from summed statistics ``stats`` (..., k * R) -> (..., R); NaN where undefined."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if method == "click-rate":
            num, den = stats[..., :R], stats[..., R:2 * R]
            return num / den
        c_r, n_r, c_1, n_1 = (stats[..., i * R:(i + 1) * R] for i in range(4))
        return (c_r / n_r) / (c_1 / n_1)


def _power_eta(ratios: np.ndarray, use: np.ndarray, weights: np.ndarray) -> np.ndarray:
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


class _Log(NamedTuple):
    """The checked click log: impressions and their rows."""

    offsets: np.ndarray  # int64 impression boundaries
    query: np.ndarray  # int64 source query of each impression
    positions: np.ndarray  # int64, 1-based, per row
    clicks: np.ndarray  # as given, per row
    click_f: np.ndarray  # float64 clicks
    q_row: np.ndarray  # source query of each row
    length: np.ndarray  # positions each impression shows
    n_impressions: int
    n_queries: int


class _Statistics(NamedTuple):
    """One estimator's statistics per source query (the bootstrap's unit), its counts per position, its ratio."""

    stats: np.ndarray  # (Q, k): summed over (resampled) queries, then given to ratio_of
    ratio_of: Callable[[np.ndarray], np.ndarray]  # (..., k) -> (..., R)
    num_clicks: np.ndarray  # (R,) the numerator's clicks
    den_clicks: np.ndarray  # (R,) the denominator's clicks
    n_imp: np.ndarray  # (R,) impressions long enough to show each position
    enough: np.ndarray  # (R,) bool, positions whose ratio rests on enough clicks
    impressions: int  # impressions the estimate uses


def _check_options(method: str, fit: str, bootstrap: int, confidence: float) -> None:
    if method not in METHODS:
        raise UsageError(f"unknown propensity method {method!r}; expected one of {', '.join(METHODS)}")
    if fit not in FITS:
        raise UsageError(f"--fit: expected one of {', '.join(FITS)}, got {fit!r}")
    if bootstrap < 1:
        raise UsageError(f"--bootstrap: must be at least 1, got {bootstrap}")
    if not (0.0 < confidence < 1.0):
        raise UsageError(f"--confidence: must be within (0, 1), got {confidence:g}")


def _checked_log(offsets, query, positions, clicks) -> _Log:
    offsets = np.asarray(offsets, dtype=np.int64)
    positions = np.asarray(positions, dtype=np.int64)
    clicks = np.asarray(clicks)
    query = np.asarray(query, dtype=np.int64)
    if offsets.shape[0] == 1:
        raise InputError("the click log holds no impressions")
    if positions.size and positions.min() < 1:
        row = int(np.argmax(positions < 1))
        raise InputError(f"column position: positions are 1-based, got {int(positions[row])} at row {row}")
    return _Log(offsets, query, positions, clicks, clicks.astype(np.float64), np.repeat(query, np.diff(offsets)),
                _impression_lengths(offsets, positions), offsets.shape[0] - 1, int(query.max()) + 1)


def _positions(log: _Log, max_position: int | None, lengths: np.ndarray) -> int:
    """R, the positions estimated: ``max_position`` (default the longest of ``lengths``), at most the longest list."""
    max_position = int(lengths.max()) if max_position is None else int(max_position)
    return max(1, min(max_position, int(log.length.max())))


def _enough(num_clicks: np.ndarray, den_clicks: np.ndarray, min_clicks: int) -> np.ndarray:
    enough = (num_clicks >= min_clicks) & (den_clicks >= min_clicks)
    enough[0] = den_clicks[0] >= min_clicks
    return enough


def _click_rate_statistics(log: _Log, max_position: int | None, min_clicks: int) -> _Statistics:
    R = _positions(log, max_position, log.length)
    M, Q = log.n_impressions, log.n_queries
    num = _per_query_by_position(log.q_row, log.positions, log.click_f, Q, R)  # clicks at r
    # Clicks at position 1 of the impressions showing r (position 1 is each impression's first row in a rankcli log;
    # found by position, not by row order, to be safe).
    c1 = np.zeros(M)
    at1 = log.positions == 1
    c1[np.repeat(np.arange(M), np.diff(log.offsets))[at1]] = log.click_f[at1]
    den = _at_least(log.query, log.length, c1, Q, R)
    num_clicks, den_clicks = num.sum(axis=0), den.sum(axis=0)
    return _Statistics(np.concatenate((num, den), axis=1), lambda summed: _ratios(summed, "click-rate", R),
                       num_clicks, den_clicks, _at_least(log.query, log.length, None, Q, R).sum(axis=0),
                       _enough(num_clicks, den_clicks, min_clicks), M)


def _swap_statistics(log: _Log, max_position: int | None, tracked, swap_position, min_clicks: int) -> _Statistics:
    if tracked is None or swap_position is None:
        raise UsageError("the swap ratio estimator needs the swapped document's rows and the swap position K")
    length_row = np.repeat(log.length, np.diff(log.offsets))
    K = int(swap_position)
    intervened = log.length >= K
    if not intervened.any():
        raise InputError(f"no impression shows position {K} (the swapped one): nothing was intervened on")
    R = _positions(log, max_position, log.length[intervened])
    Q, q_row, positions, click_f = log.n_queries, log.q_row, log.positions, log.click_f
    sel = tracked.astype(bool) & (length_row >= K)
    imp_of_row = np.repeat(np.arange(log.n_impressions), np.diff(log.offsets))
    c_r = _per_query_by_position(q_row[sel], positions[sel], click_f[sel], Q, R)
    n_r = _per_query_by_position(q_row[sel], positions[sel], None, Q, R)
    at1 = sel & (positions == 1)
    imp1 = imp_of_row[at1]
    c_1 = _at_least(log.query[imp1], log.length[imp1], click_f[at1], Q, R)
    n_1 = _at_least(log.query[imp1], log.length[imp1], None, Q, R)
    num_clicks, den_clicks = c_r.sum(axis=0), c_1.sum(axis=0)
    return _Statistics(np.concatenate((c_r, n_r, c_1, n_1), axis=1), lambda summed: _ratios(summed, "swap-ratio", R),
                       num_clicks, den_clicks,
                       _at_least(log.query[intervened], log.length[intervened], None, Q, R).sum(axis=0),
                       _enough(num_clicks, den_clicks, min_clicks), int(np.count_nonzero(intervened)))


def _harvest_statistics(log: _Log, max_position: int | None, document, min_clicks: int) -> _Statistics:
    if document is None:
        raise UsageError("intervention harvesting needs the document of every row")
    R = _positions(log, max_position, log.length)
    Q = log.n_queries
    n_query = np.bincount(log.query, minlength=Q)
    sums = harvest.pair_sums(log.q_row, np.asarray(document, dtype=np.int64), log.positions, log.click_f, n_query, Q,
                             R)
    pairs, pair_w, h_stop = harvest.used_pairs(sums.pair_sums[:, R * R:].sum(axis=0), min_clicks, R)
    if h_stop <= 1 and R > 1 and not pairs.shape[0]:
        raise InputError(
            f"no document was shown at position 1 by one policy and at another position by another with {min_clicks}"
            " clicks on each side: no intervention links position 1 to the rest; log more impressions or rankers "
            "whose orders differ more")
    return _Statistics(sums.pair_sums, lambda summed: harvest.fit(summed, pairs, pair_w, h_stop, R), sums.at_k,
                       sums.elsewhere, _at_least(log.query, log.length, None, Q, R).sum(axis=0),
                       np.arange(R) < h_stop, log.n_impressions)


def _stop_note(st: _Statistics, stop: int, method: str, fit: str, min_clicks: int) -> list[str]:
    """What the report says about the first position with too few clicks (0-based ``stop``), if any."""
    if stop >= st.enough.shape[0]:
        return []
    said = (f"position {stop + 1}: no intervention pair with an earlier position rests on {min_clicks} clicks "
            "each way; " if method == "harvest" else
            f"position {stop + 1}: {int(min(st.num_clicks[stop], st.den_clicks[stop]))} click(s), fewer than "
            f"{min_clicks}; ")
    return [said + ("positions from here on follow the fitted (1/r)^eta" if fit == "power"
                    else "the estimate stops there (--fit power extrapolates (1/r)^eta)")]


class _PowerFit(NamedTuple):
    use: np.ndarray  # (R,) bool, the positions the power fit is fitted on
    weights: np.ndarray  # (R,) their inverse delta-method variances


def _bootstrap(st: _Statistics, bootstrap: int, rng: np.random.Generator,
               power: _PowerFit | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Replicates of the propensities (bootstrap, R) over source queries (replicate weights: how often each query is
    drawn), chunk by chunk; and with ``power`` the power fit's eta of each replicate."""
    Q = st.stats.shape[0]
    reps = np.empty((bootstrap, st.enough.shape[0]))
    etas = np.empty(bootstrap) if power is not None else None
    stats_t = np.ascontiguousarray(st.stats.T)  # (k R, Q): the product below runs fast with this layout
    dtype = np.int32 if Q < 2 ** 31 else np.int64
    W = np.empty((_BOOTSTRAP_CHUNK, Q))
    for a in range(0, bootstrap, _BOOTSTRAP_CHUNK):
        b = min(bootstrap, a + _BOOTSTRAP_CHUNK)
        draws = rng.integers(0, Q, size=(b - a, Q), dtype=dtype)
        for i in range(b - a):  # a loop over replicates (not queries): one cache-sized bincount each
            W[i] = np.bincount(draws[i], minlength=Q)
        rep = st.ratio_of((stats_t @ W[:b - a].T).T)
        rep[:, 0] = 1.0
        reps[a:b] = rep
        if power is not None and power.use.any():
            etas[a:b] = _power_eta(rep, power.use[None, :], power.weights[None, :])
    return reps, etas


def estimate(offsets: np.ndarray, query: np.ndarray, positions: np.ndarray, clicks: np.ndarray, *,
             method: str = "click-rate", max_position: int | None = None, tracked: np.ndarray | None = None,
             swap_position: int | None = None, document: np.ndarray | None = None, bootstrap: int = 1000,
             confidence: float = 0.95, min_clicks: int = MIN_CLICKS, fit: str = "none",
             rng: np.random.Generator) -> PropensityEstimate:
    """Estimate the examination propensity of positions ``1..max_position`` relative to position 1.

    Parameters
    ----------
    offsets : (n_impressions + 1,) int64
        Impression boundaries over the displayed rows (one impression = one displayed list).
    query : (n_impressions,) int
        Source query number of every impression, ``0..n_queries - 1`` (the bootstrap's resampling unit).
    positions : (n_rows,) int
        1-based display position of every row.
    clicks : (n_rows,) 0/1
        The click on every row. Impressions without a click must be present (their absence inflates rates).
    method : "click-rate", "swap-ratio" or "harvest"
        See the module docstring. ``swap-ratio`` needs ``tracked`` and ``swap_position``; ``harvest`` ``document``.
    max_position : int, optional
        The last position to estimate (RandTop-n: N, only the top N is randomised); default the longest list.
    tracked : (n_rows,) bool, optional
        ``swap-ratio``: the rows that show the ranker's K-th document (the swapped one).
    swap_position : int, optional
        ``swap-ratio``: K. Impressions showing fewer than K positions were not intervened on and are left out.
    document : (n_rows,) int, optional
        ``harvest``: the document every row shows, one number per (source query, document), so that the same document
        of a query has the same number in every impression (of every policy).
    bootstrap : int
        Bootstrap replicates over source queries (percentile intervals).
    confidence : float
        Interval coverage, in (0, 1).
    min_clicks : int
        The fewest clicks a position's ratio may rest on (numerator and denominator alike).
    fit : "none" or "power"
        What follows the first position with too few clicks: nothing (the estimate stops) or ``(1/r)**eta``.
    rng : numpy.random.Generator
        The bootstrap's randomness.

    Returns
    -------
    PropensityEstimate
    """
    _check_options(method, fit, bootstrap, confidence)
    log = _checked_log(offsets, query, positions, clicks)
    if method == "swap-ratio":
        st = _swap_statistics(log, max_position, tracked, swap_position, min_clicks)
    elif method == "harvest":
        st = _harvest_statistics(log, max_position, document, min_clicks)
    else:
        st = _click_rate_statistics(log, max_position, min_clicks)
    R = st.enough.shape[0]
    point = st.ratio_of(st.stats.sum(axis=0))
    point[0] = 1.0
    if not st.enough[0]:
        raise InputError(f"position 1 has {int(st.den_clicks[0])} click(s), fewer than {min_clicks}: too few to "
                         "normalise any propensity; simulate more impressions")
    short = np.flatnonzero(~st.enough)
    stop = int(short[0]) if short.shape[0] else R  # 0-based index of the first position with too few clicks
    use = np.zeros(R, bool)
    use[1:stop] = True
    power = _power_weights(st, use, stop, min_clicks) if fit == "power" else None
    eta_hat = (float(_power_eta(point, use, power.weights)) if use.any() else float("nan")) if power else None
    reps, etas = _bootstrap(st, bootstrap, rng, power)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = _percentiles(reps, alpha)
    lo[0] = hi[0] = 1.0
    fitted = np.zeros(R, bool)
    fit_info = _power_tail(point, lo, hi, fitted, etas, eta_hat, use, stop, alpha) if fit == "power" else None
    keep = R if fit == "power" else stop
    return PropensityEstimate(
        method=method, positions=np.arange(1, keep + 1), propensity=point[:keep], ci_low=lo[:keep],
        ci_high=hi[:keep], fitted=fitted[:keep], clicks_by_position=st.num_clicks[:keep].astype(np.int64),
        reference_clicks=st.den_clicks[:keep].astype(np.int64),
        impressions_by_position=st.n_imp[:keep].astype(np.int64), impressions=st.impressions,
        clicks=int(log.clicks.sum()), queries=log.n_queries, bootstrap=int(bootstrap), confidence=float(confidence),
        min_clicks=int(min_clicks), stopped_at=None if stop >= R else stop + 1, max_position=R, fit=fit_info,
        notes=_stop_note(st, stop, method, fit, min_clicks),
    )


def _percentiles(values: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The ``alpha`` and ``1 - alpha`` quantiles of ``values`` over replicates (axis 0), NaNs left out; NaN where no
    replicate defines the value (null in JSON)."""
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanquantile(values, alpha, axis=0), np.nanquantile(values, 1.0 - alpha, axis=0)


def _power_weights(st: _Statistics, use: np.ndarray, stop: int, min_clicks: int) -> _PowerFit:
    """The power fit's positions and weights: the positions it is fitted on (``2..stop``) and their inverse
    delta-method variances; an :class:`InputError` when there is nothing to fit and a position needs the fit."""
    R = use.shape[0]
    if (stop <= 1 or not use.any()) and stop < R:
        raise InputError(f"--fit power: no position after the first has {min_clicks} clicks to fit eta on; "
                         "simulate more impressions")
    weights = np.zeros(R)
    with np.errstate(divide="ignore"):
        weights[use] = 1.0 / (1.0 / st.num_clicks[use] + 1.0 / st.den_clicks[use])  # inverse delta-method variance
    return _PowerFit(use, weights)


def _power_tail(point, lo, hi, fitted, etas, eta_hat, use, stop, alpha) -> dict | None:
    """From 0-based position ``stop`` on, the fitted ``r**-eta`` and the replicates' percentile interval (in place,
    marked in ``fitted``); returns the power fit's record (``None`` when no position was fitted on)."""
    if stop < point.shape[0]:
        r = np.arange(1, point.shape[0] + 1, dtype=np.float64)
        fitted[stop:] = True
        point[stop:] = r[stop:] ** -eta_hat
        curves = r[None, stop:] ** -etas[:, None]
        lo[stop:] = np.nanquantile(curves, alpha, axis=0)
        hi[stop:] = np.nanquantile(curves, 1.0 - alpha, axis=0)
    if not use.any():
        return None
    return {"model": "power", "eta": eta_hat, "eta_ci": [float(v) for v in _percentiles(etas, alpha)],
            "positions_used": [int(i + 1) for i in np.flatnonzero(use)]}
