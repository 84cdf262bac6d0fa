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

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from rankcli.core import harvest
from rankcli.core.positions import checked_positions, leading_positions
from rankcli.core.power_fit import PowerFit, percentiles, power_eta, power_tail, power_weights
from rankcli.core.stats import MAX_RESAMPLES
from rankcli.errors import InputError, UsageError

METHODS = ("click-rate", "swap-ratio", "harvest")
FITS = ("none", "power")
#: The fewest clicks a position's ratio may rest on (numerator and denominator).
MIN_CLICKS = 20
#: A position whose estimate rests on fewer than ``min_clicks + NEAR_SD * sqrt(min_clicks)`` clicks is marked near
#: the threshold: it is reported because its clicks reached ``min_clicks``, a selection on the estimate's own numerator
#: that biases it upward while its expected clicks are within a few Poisson standard deviations of the threshold
#: (+17% when they equal it; below 0.1% once they are 4 standard deviations above it).
NEAR_SD = 4.0
#: Bootstrap replicates computed at once (bounds the replicate-by-query weight matrix).
_BOOTSTRAP_CHUNK = 16
#: The most replicates the bootstrap keeps (``rankcli compare``'s cap), and the most memory they may take: every
#: replicate's propensities are kept for the percentile intervals, 8 bytes per position.
MAX_BOOTSTRAP = MAX_RESAMPLES
MAX_REPLICATE_BYTES = 2 * 1024 ** 3


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
    #: Estimated positions whose clicks are near ``min_clicks`` (:data:`NEAR_SD`): biased upward by the threshold.
    near_threshold: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    near_threshold_clicks: float = 0.0  # the clicks below which a position is marked


def near_threshold_clicks(min_clicks: int) -> float:
    """The clicks below which an estimated position is marked near the threshold (see :data:`NEAR_SD`)."""
    return float(min_clicks + NEAR_SD * np.sqrt(min_clicks))


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
    present: int  # positions 1..present all occur in the log: no estimate reaches past them


class _Statistics(NamedTuple):
    """One estimator's statistics per source query (the bootstrap's unit), its counts per position, its ratio."""

    stats: np.ndarray  # (Q, k): summed over (resampled) queries, then given to ratio_of
    ratio_of: Callable[[np.ndarray], np.ndarray]  # (..., k) -> (..., R)
    num_clicks: np.ndarray  # (R,) the numerator's clicks
    den_clicks: np.ndarray  # (R,) the denominator's clicks
    n_imp: np.ndarray  # (R,) impressions long enough to show each position
    enough: np.ndarray  # (R,) bool, positions whose ratio rests on enough clicks
    impressions: int  # impressions the estimate uses
    support: np.ndarray  # (R,) the clicks each position's estimate rests on (its least count)
    work: int  # W <= R: the positions ratio_of gives (the positions present)


def _statistics(stats, ratio_of, R: int, num_clicks, den_clicks, lengths: np.ndarray, enough, impressions: int,
                support=None) -> _Statistics:
    """A :class:`_Statistics` whose per-position counts cover all ``R`` positions reported, the ratios only the first
    ``len(enough)`` (the positions present; the rest have no clicks): absent positions count zero clicks and are not
    enough. ``lengths`` are the impressions' lengths (for the impressions long enough to show each position)."""
    def pad(values, fill=0):
        out = np.full(R, fill, dtype=np.asarray(values).dtype)
        out[:values.shape[0]] = values
        return out

    num, den = pad(num_clicks), pad(den_clicks)
    by_length = np.bincount(np.minimum(lengths, R), minlength=R + 1)
    n_imp = by_length[::-1].cumsum()[::-1][1:R + 1]
    return _Statistics(stats, ratio_of, num, den, n_imp, pad(enough, False), impressions,
                       np.minimum(num, den) if support is None else pad(support), int(enough.shape[0]))


def check_bootstrap(bootstrap: int) -> None:
    """:class:`UsageError` for a ``--bootstrap`` count below 1 or above :data:`MAX_BOOTSTRAP` (checked before any
    allocation: 10^8 replicates asked for 7.45 GiB at once)."""
    if bootstrap < 1:
        raise UsageError(f"--bootstrap: must be at least 1, got {bootstrap}")
    if bootstrap > MAX_BOOTSTRAP:
        raise UsageError(f"--bootstrap: at most {MAX_BOOTSTRAP:,} replicates (as rankcli compare), got {bootstrap:,};"
                         " an interval's percentiles do not sharpen past a few thousand")


def _check_options(method: str, fit: str, bootstrap: int, confidence: float, min_clicks: int) -> None:
    if method not in METHODS:
        raise UsageError(f"unknown propensity method {method!r}; expected one of {', '.join(METHODS)}")
    if fit not in FITS:
        raise UsageError(f"--fit: expected one of {', '.join(FITS)}, got {fit!r}")
    check_bootstrap(bootstrap)
    if min_clicks < 1:  # a position without a click would otherwise be estimated as propensity 0
        raise UsageError(f"--min-clicks: must be at least 1, got {min_clicks}")
    if not (0.0 < confidence < 1.0):
        raise UsageError(f"--confidence: must be within (0, 1), got {confidence:g}")


def _checked_log(offsets, query, positions, clicks, impression_ids=None) -> _Log:
    offsets = np.asarray(offsets, dtype=np.int64)
    clicks = np.asarray(clicks)
    query = np.asarray(query, dtype=np.int64)
    if offsets.shape[0] == 1:
        raise InputError("the click log holds no impressions")
    positions = checked_positions(offsets, positions, impression_ids)
    return _Log(offsets, query, positions, clicks, clicks.astype(np.float64), np.repeat(query, np.diff(offsets)),
                _impression_lengths(offsets, positions), offsets.shape[0] - 1, int(query.max()) + 1,
                leading_positions(positions))


def _positions(log: _Log, max_position: int | None, lengths: np.ndarray) -> tuple[int, int]:
    """``(R, W)``: R, the positions reported: ``max_position`` (default the longest of ``lengths``), at most the
    longest list; W, those the ratios are computed for: at most the positions present (the first absent one has no
    clicks, so the estimate stops there), which bounds the work whatever the largest position."""
    max_position = int(lengths.max()) if max_position is None else int(max_position)
    R = max(1, min(max_position, int(log.length.max())))
    return R, max(1, min(R, log.present))


def _enough(num_clicks: np.ndarray, den_clicks: np.ndarray, min_clicks: int) -> np.ndarray:
    enough = (num_clicks >= min_clicks) & (den_clicks >= min_clicks)
    enough[0] = den_clicks[0] >= min_clicks
    return enough


def _click_rate_statistics(log: _Log, max_position: int | None, min_clicks: int) -> _Statistics:
    R_out, R = _positions(log, max_position, log.length)
    M, Q = log.n_impressions, log.n_queries
    num = _per_query_by_position(log.q_row, log.positions, log.click_f, Q, R)  # clicks at r
    # Clicks at position 1 of the impressions showing r (position 1 is each impression's first row in a rankcli log;
    # found by position, not by row order, to be safe).
    c1 = np.zeros(M)
    at1 = log.positions == 1
    c1[np.repeat(np.arange(M), np.diff(log.offsets))[at1]] = log.click_f[at1]
    den = _at_least(log.query, log.length, c1, Q, R)
    num_clicks, den_clicks = num.sum(axis=0), den.sum(axis=0)
    return _statistics(np.concatenate((num, den), axis=1), lambda summed: _ratios(summed, "click-rate", R), R_out,
                       num_clicks, den_clicks, log.length, _enough(num_clicks, den_clicks, min_clicks), M)


def _swap_statistics(log: _Log, max_position: int | None, tracked, swap_position, min_clicks: int) -> _Statistics:
    if tracked is None or swap_position is None:
        raise UsageError("the swap ratio estimator needs the swapped document's rows and the swap position K")
    length_row = np.repeat(log.length, np.diff(log.offsets))
    K = int(swap_position)
    intervened = log.length >= K
    if not intervened.any():
        raise InputError(f"no impression shows position {K} (the swapped one): nothing was intervened on")
    R_out, R = _positions(log, max_position, log.length[intervened])
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
    return _statistics(np.concatenate((c_r, n_r, c_1, n_1), axis=1), lambda summed: _ratios(summed, "swap-ratio", R),
                       R_out, num_clicks, den_clicks, log.length[intervened],
                       _enough(num_clicks, den_clicks, min_clicks), int(np.count_nonzero(intervened)))


def _harvest_statistics(log: _Log, max_position: int | None, document, min_clicks: int) -> _Statistics:
    if document is None:
        raise UsageError("intervention harvesting needs the document of every row")
    R_out, R = _positions(log, max_position, log.length)
    Q = log.n_queries
    n_query = np.bincount(log.query, minlength=Q)
    sums = harvest.pair_sums(log.q_row, np.asarray(document, dtype=np.int64), log.positions, log.click_f, n_query, Q,
                             R)
    pair_clicks = sums.pair_sums[:, R * R:].sum(axis=0)
    pairs, pair_w, h_stop = harvest.used_pairs(pair_clicks, min_clicks, R)
    if h_stop <= 1 and R > 1 and not pairs.shape[0]:
        raise InputError(
            f"no document was shown at position 1 by one policy and at another position by another with {min_clicks}"
            " clicks on each side: no intervention links position 1 to the rest; log more impressions or rankers "
            "whose orders differ more")
    return _statistics(sums.pair_sums, lambda summed: harvest.fit(summed, pairs, pair_w, h_stop, R), R_out,
                       sums.at_k, sums.elsewhere, log.length, np.arange(R) < h_stop, log.n_impressions,
                       harvest.pair_support(pair_clicks, pairs, R))


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


def _bootstrap(st: _Statistics, bootstrap: int, rng: np.random.Generator,
               power: PowerFit | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Replicates of the propensities (bootstrap, R) over source queries (replicate weights: how often each query is
    drawn), chunk by chunk; and with ``power`` the power fit's eta of each replicate."""
    Q = st.stats.shape[0]
    if bootstrap * st.work * 8 > MAX_REPLICATE_BYTES:
        raise UsageError(f"--bootstrap {bootstrap:,}: the replicates of {st.work} positions would take "
                         f"{bootstrap * st.work * 8 / 1024 ** 3:.1f} GiB (8 bytes each, every one kept for the "
                         f"percentiles); at most {MAX_REPLICATE_BYTES / 1024 ** 3:g} GiB: ask for at most "
                         f"{MAX_REPLICATE_BYTES // (8 * st.work):,} replicates")
    reps = np.empty((bootstrap, st.work))
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
            etas[a:b] = power_eta(rep, power.use[None, :st.work], power.weights[None, :st.work])
    return reps, etas


def estimate(offsets: np.ndarray, query: np.ndarray, positions: np.ndarray, clicks: np.ndarray, *,
             method: str = "click-rate", max_position: int | None = None, tracked: np.ndarray | None = None,
             swap_position: int | None = None, document: np.ndarray | None = None, bootstrap: int = 1000,
             confidence: float = 0.95, min_clicks: int = MIN_CLICKS, fit: str = "none",
             rng: np.random.Generator, impression_ids: np.ndarray | None = None) -> PropensityEstimate:
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
    impression_ids : (n_impressions,) array, optional
        How error messages name an impression (the log's ``qid``); default its 0-based number.

    Positions are checked by :func:`rankcli.core.positions.checked_positions` (whole numbers up to
    :data:`~rankcli.core.positions.MAX_POSITION`, none twice within an impression). The ratios are computed only for
    the positions present from 1 on (an absent position has no clicks, so no estimate reaches past it); with
    ``fit="power"`` the fitted tail covers the rest up to the longest list.

    Returns
    -------
    PropensityEstimate
    """
    _check_options(method, fit, bootstrap, confidence, min_clicks)
    log = _checked_log(offsets, query, positions, clicks, impression_ids)
    if method == "swap-ratio":
        st = _swap_statistics(log, max_position, tracked, swap_position, min_clicks)
    elif method == "harvest":
        st = _harvest_statistics(log, max_position, document, min_clicks)
    else:
        st = _click_rate_statistics(log, max_position, min_clicks)
    return _estimate_from(st, log, method, bootstrap, confidence, min_clicks, fit, rng)


def _estimate_from(st: _Statistics, log: _Log, method: str, bootstrap: int, confidence: float, min_clicks: int,
                   fit: str, rng: np.random.Generator) -> PropensityEstimate:
    """:func:`estimate`'s result from one estimator's statistics: the point estimate, the stop, the power fit, the
    bootstrap intervals and the positions near the threshold."""
    R, W = st.enough.shape[0], st.work
    point = np.full(R, np.nan)
    point[:W] = st.ratio_of(st.stats.sum(axis=0))
    point[0] = 1.0
    if not st.enough[0]:
        raise InputError(f"position 1 has {int(st.den_clicks[0])} click(s), fewer than {min_clicks}: too few to "
                         "normalise any propensity; simulate more impressions")
    short = np.flatnonzero(~st.enough)
    stop = int(short[0]) if short.shape[0] else R  # 0-based index of the first position with too few clicks
    use = np.zeros(R, bool)
    use[1:stop] = True
    power = power_weights(st.num_clicks, st.den_clicks, use, stop, min_clicks) if fit == "power" else None
    eta_hat = (float(power_eta(point[:W], use[:W], power.weights[:W])) if use.any() else float("nan")) \
        if power else None
    reps, etas = _bootstrap(st, bootstrap, rng, power)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.full(R, np.nan), np.full(R, np.nan)
    lo[:W], hi[:W] = percentiles(reps, alpha)
    lo[0] = hi[0] = 1.0
    fitted = np.zeros(R, bool)
    fit_info = power_tail(point, lo, hi, fitted, etas, eta_hat, use, stop, alpha) if fit == "power" else None
    keep = R if fit == "power" else stop
    edge = near_threshold_clicks(min_clicks)
    near = (np.arange(R) >= 1) & (np.arange(R) < stop) & (st.support < edge)
    return PropensityEstimate(
        method=method, positions=np.arange(1, keep + 1), propensity=point[:keep], ci_low=lo[:keep],
        ci_high=hi[:keep], fitted=fitted[:keep], clicks_by_position=st.num_clicks[:keep].astype(np.int64),
        reference_clicks=st.den_clicks[:keep].astype(np.int64),
        impressions_by_position=st.n_imp[:keep].astype(np.int64), impressions=st.impressions,
        clicks=int(log.clicks.sum()), queries=log.n_queries, bootstrap=int(bootstrap), confidence=float(confidence),
        min_clicks=int(min_clicks), stopped_at=None if stop >= R else stop + 1, max_position=R, fit=fit_info,
        notes=_stop_note(st, stop, method, fit, min_clicks) + _near_note(near, st.support, edge, min_clicks),
        near_threshold=near[:keep], near_threshold_clicks=edge,
    )


def _near_note(near: np.ndarray, support: np.ndarray, edge: float, min_clicks: int) -> list[str]:
    """What the report says about the positions near the threshold, if any."""
    if not near.any():
        return []
    where = ", ".join(f"{i + 1} ({int(support[i])})" for i in np.flatnonzero(near))
    return [f"near the threshold: position(s) {where} rest on fewer than {edge:.0f} clicks; they are reported "
            f"because their clicks reached --min-clicks {min_clicks}, which biases them upward (by up to +17% where "
            "the expected clicks equal the threshold); more impressions shrink the bias"]
