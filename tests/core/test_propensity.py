"""Propensity estimation: the estimators against a literal per-query loop, recovery of (1/r)^eta from simulated PBM
logs (RandTop-n, full shuffle, swap), lists long enough for each position, the too-few-clicks rule, the power fit,
and the bootstrap interval's coverage by simulation."""

from __future__ import annotations

import numpy as np
import pytest

from rankcli.core import clicks
from rankcli.core.propensity import estimate
from rankcli.errors import InputError, UsageError

PAPER = (0.05, 0.3, 0.5, 0.7, 0.95)


def corpus(n_queries, seed, low=4, high=16, grade_p=(0.5, 0.25, 0.15, 0.07, 0.03)):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(low, high, size=n_queries)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    grades = rng.choice(len(grade_p), size=int(offsets[-1]), p=grade_p)
    ranks = np.concatenate([rng.permutation(s) for s in sizes])
    return grades, offsets, ranks


def reference_click_rate(log, R):
    """The click-rate estimator by its definition, impression by impression: for each position r, the clicks at r
    over the clicks at position 1, both over the impressions that show r."""
    num = np.zeros(R)
    den = np.zeros(R)
    for a, b in zip(log.offsets[:-1], log.offsets[1:]):
        pos, c = log.positions[a:b], log.clicks[a:b]
        L = pos.max()
        for r in range(1, min(L, R) + 1):
            num[r - 1] += c[pos == r].sum()
            den[r - 1] += c[pos == 1].sum()
    return num / den


def reference_swap_ratio(log, tracked, K, R):
    cr, nr, c1, n1 = (np.zeros(R) for _ in range(4))
    for a, b in zip(log.offsets[:-1], log.offsets[1:]):
        pos, c, t = log.positions[a:b], log.clicks[a:b], tracked[a:b]
        L = pos.max()
        if L < K:
            continue
        j = pos[t][0]
        for r in range(1, min(L, R) + 1):
            if j == r:
                cr[r - 1] += c[t][0]
                nr[r - 1] += 1
            if j == 1:
                c1[r - 1] += c[t][0]
                n1[r - 1] += 1
    return (cr / nr) / (c1 / n1)


def test_click_rate_equals_the_reference_loop_and_recovers_one_over_r():
    grades, offsets, _ = corpus(60, 1)
    log = clicks.pbm(grades, offsets, PAPER, 200, np.random.default_rng(2), eta=1.0, max_rank=12,
                     keep_no_click=True)
    e = estimate(log.offsets, log.query, log.positions, log.clicks, bootstrap=200, rng=np.random.default_rng(0))
    ref = reference_click_rate(log, e.positions.shape[0])
    ref[0] = 1.0
    np.testing.assert_allclose(e.propensity, ref, rtol=1e-12)
    r = e.positions
    assert r[-1] == 12 and e.stopped_at is None and not e.fitted.any()
    inside = (e.ci_low <= 1.0 / r) & (1.0 / r <= e.ci_high)
    assert np.all(inside | (np.abs(e.propensity * r - 1) < 0.2)), (e.propensity * r, e.ci_low * r, e.ci_high * r)
    assert np.all((e.ci_low <= e.propensity) & (e.propensity <= e.ci_high))
    assert e.impressions == 60 * 200 and e.clicks == int(log.clicks.sum())


@pytest.mark.parametrize("eta", [0.5, 2.0])
def test_randtop_n_recovers_power_law_up_to_n(eta):
    grades, offsets, ranks = corpus(80, 3, low=8, high=14)
    log = clicks.pbm(grades, offsets, PAPER, 300, np.random.default_rng(4), eta=eta, display_rank=ranks,
                     keep_no_click=True, randomize=("top", 6))
    e = estimate(log.offsets, log.query, log.positions, log.clicks, max_position=6, bootstrap=200,
                 rng=np.random.default_rng(0))
    truth = (1.0 / e.positions) ** eta
    assert e.positions[-1] <= 6
    kept = e.positions.shape[0]
    assert kept >= 3
    assert np.all(np.abs(e.propensity / truth - 1) < 0.2) or np.all((e.ci_low <= truth) & (truth <= e.ci_high))


def test_swap_ratio_equals_the_reference_loop_and_recovers_one_over_r():
    grades, offsets, ranks = corpus(80, 5, low=6, high=12)
    K = 2
    log = clicks.pbm(grades, offsets, PAPER, 400, np.random.default_rng(6), eta=1.0, display_rank=ranks,
                     keep_no_click=True, randomize=("swap", K))
    tracked = ranks[log.rows] == K - 1
    e = estimate(log.offsets, log.query, log.positions, log.clicks, method="swap-ratio", tracked=tracked,
                 swap_position=K, bootstrap=200, min_clicks=1, rng=np.random.default_rng(0))
    ref = reference_swap_ratio(log, tracked, K, e.positions.shape[0])
    ref[0] = 1.0
    np.testing.assert_allclose(e.propensity, ref, rtol=1e-12)
    truth = 1.0 / e.positions
    inside = (e.ci_low <= truth) & (truth <= e.ci_high)
    assert np.all(inside | (np.abs(e.propensity / truth - 1) < 0.2)), (e.propensity, e.ci_low, e.ci_high)


def test_each_position_uses_only_lists_long_enough_to_show_it():
    """Short lists full of relevant documents, long lists of irrelevant ones: pooling position 1 over all lists would
    make positions 3.. look ~10x less examined than they are."""
    sizes = np.array([2] * 40 + [8] * 40)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    grades = np.where(np.repeat(sizes, sizes) == 2, 4, 1)
    log = clicks.pbm(grades, offsets, PAPER, 300, np.random.default_rng(1), eta=1.0, keep_no_click=True)
    e = estimate(log.offsets, log.query, log.positions, log.clicks, bootstrap=100, rng=np.random.default_rng(0))
    truth = 1.0 / e.positions
    assert np.all(np.abs(e.propensity / truth - 1) < 0.2), e.propensity * e.positions
    assert list(e.impressions_by_position) == [24000, 24000] + [12000] * 6


def test_too_few_clicks_stop_or_follow_the_power_fit():
    grades, offsets, _ = corpus(30, 7, low=10, high=11)
    log = clicks.pbm(grades, offsets, PAPER, 12, np.random.default_rng(8), eta=1.0, keep_no_click=True)
    args = (log.offsets, log.query, log.positions, log.clicks)
    e = estimate(*args, min_clicks=20, bootstrap=100, rng=np.random.default_rng(0))
    per_pos = np.bincount(log.positions[log.clicks == 1])[1:]
    first_short = int(np.flatnonzero(per_pos < 20)[0]) + 1
    assert e.stopped_at == first_short and e.positions[-1] == first_short - 1
    assert e.notes and f"position {first_short}:" in e.notes[0] and "stops there" in e.notes[0]
    f = estimate(*args, min_clicks=20, bootstrap=100, fit="power", rng=np.random.default_rng(0))
    assert f.positions[-1] == 10 and list(f.fitted) == [False] * (first_short - 1) + [True] * (11 - first_short)
    np.testing.assert_allclose(f.propensity[:first_short - 1], e.propensity)
    eta = f.fit["eta"]
    np.testing.assert_allclose(f.propensity[f.fitted], f.positions[f.fitted] ** -eta)
    assert 0.6 < eta < 1.4 and f.fit["eta_ci"][0] < eta < f.fit["eta_ci"][1]
    assert np.all(f.ci_low[f.fitted] <= f.propensity[f.fitted]) and np.all(f.propensity[f.fitted] <= f.ci_high[f.fitted])
    with pytest.raises(InputError, match="position 1 has .* fewer than 100000"):
        estimate(*args, min_clicks=100000, bootstrap=10, rng=np.random.default_rng(0))


def test_same_seed_same_interval():
    grades, offsets, _ = corpus(20, 9)
    log = clicks.pbm(grades, offsets, PAPER, 50, np.random.default_rng(1), keep_no_click=True, max_rank=5)
    args = (log.offsets, log.query, log.positions, log.clicks)
    a = estimate(*args, bootstrap=50, min_clicks=1, rng=np.random.default_rng(3))
    b = estimate(*args, bootstrap=50, min_clicks=1, rng=np.random.default_rng(3))
    c = estimate(*args, bootstrap=50, min_clicks=1, rng=np.random.default_rng(4))
    assert np.array_equal(a.ci_low, b.ci_low) and np.array_equal(a.ci_high, b.ci_high)
    assert not np.array_equal(a.ci_low, c.ci_low)


def test_interval_coverage_by_simulation():
    """The 90% percentile bootstrap over queries covers the true propensity of position 3 in about 90% of simulated
    logs (binomial bound over 120 logs; the percentile bootstrap with 40 queries may undercover a little)."""
    grades, offsets, _ = corpus(40, 11, low=5, high=9)
    hits = 0
    reps = 120
    rng = np.random.default_rng(12)
    for _ in range(reps):
        log = clicks.pbm(grades, offsets, PAPER, 20, rng, eta=1.0, keep_no_click=True)
        e = estimate(log.offsets, log.query, log.positions, log.clicks, bootstrap=200, confidence=0.9,
                     min_clicks=1, rng=rng)
        hits += e.ci_low[2] <= 1 / 3 <= e.ci_high[2]
    rate = hits / reps
    sd = np.sqrt(0.9 * 0.1 / reps)
    assert 0.9 - 4 * sd - 0.03 < rate <= 1.0, rate


def test_argument_errors():
    offsets = np.array([0, 2])
    args = (offsets, np.array([0]), np.array([1, 2]), np.array([1, 0]))
    with pytest.raises(UsageError, match="--fit"):
        estimate(*args, fit="spline", rng=np.random.default_rng(0))
    with pytest.raises(UsageError, match="--bootstrap"):
        estimate(*args, bootstrap=0, rng=np.random.default_rng(0))
    with pytest.raises(UsageError, match="--confidence"):
        estimate(*args, confidence=1.0, rng=np.random.default_rng(0))
    with pytest.raises(InputError, match="1-based"):
        estimate(offsets, np.array([0]), np.array([0, 1]), np.array([1, 0]), rng=np.random.default_rng(0))
    with pytest.raises(InputError, match="no impressions"):
        estimate(np.array([0]), np.zeros(0), np.zeros(0), np.zeros(0), rng=np.random.default_rng(0))
