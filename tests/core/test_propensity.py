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
    assert np.all(f.ci_low[f.fitted] <= f.propensity[f.fitted])
    assert np.all(f.propensity[f.fitted] <= f.ci_high[f.fitted])
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


def harvest_log(n_queries, n_docs, n_policies, impressions, theta, seed):
    """PBM clicks on the top ``len(theta)`` of ``n_policies`` fixed random orders per query (each policy logs
    ``impressions`` impressions of every query): the logs of several deterministic rankers."""
    rng = np.random.default_rng(seed)
    L = len(theta)
    offsets, query, positions, document, click = [0], [], [], [], []
    for q in range(n_queries):
        rel = rng.uniform(0.1, 0.9, size=n_docs)
        orders = [rng.permutation(n_docs)[:L] for _ in range(n_policies)]
        for i in range(n_policies * impressions):
            o = orders[i % n_policies]
            click.append(rng.random(L) < theta * rel[o])
            query.append(q)
            positions.append(np.arange(1, L + 1))
            document.append(q * n_docs + o)
            offsets.append(offsets[-1] + L)
    return (np.array(offsets), np.array(query), np.concatenate(positions), np.concatenate(click).astype(np.int64),
            np.concatenate(document))


def reference_harvest(offsets, query, positions, click, document, R, min_clicks):
    """Intervention harvesting by its definition, document by document: the impressions and clicks of every
    (query, document) at every position, c(k, k') = sum over the documents shown at k and at k' of
    s(d, k) s(d, k') C(d, k) / N(d, k), the pairs with min_clicks clicks each way, then their log-ratios fitted by
    least squares (log theta_1 = 0) with lstsq."""
    n_query = {}
    for q in query:
        n_query[q] = n_query.get(q, 0) + 1
    N, C, q_of = {}, {}, {}
    for m, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        for row in range(a, b):
            d, r = int(document[row]), int(positions[row])
            if r > R:
                continue
            N.setdefault(d, np.zeros(R))[r - 1] += 1
            C.setdefault(d, np.zeros(R))[r - 1] += click[row]
            q_of[d] = query[m]
    c = np.zeros((R, R))
    k_clicks = np.zeros((R, R))
    for d in N:
        n = n_query[q_of[d]]
        for k in range(R):
            for j in range(R):
                if N[d][k] > 0 and N[d][j] > 0:
                    c[k, j] += (N[d][k] / n) * (N[d][j] / n) * C[d][k] / N[d][k]
                    k_clicks[k, j] += C[d][k]
    rows, y, w = [], [], []
    for k in range(R):
        for j in range(k + 1, R):
            if k_clicks[k, j] >= min_clicks and k_clicks[j, k] >= min_clicks:
                x = np.zeros(R)
                x[k], x[j] = 1.0, -1.0
                rows.append(x[1:])
                y.append(np.log(c[k, j] / c[j, k]))
                w.append(1.0 / (1.0 / k_clicks[k, j] + 1.0 / k_clicks[j, k]))
    X, y, sw = np.array(rows), np.array(y), np.sqrt(np.array(w))
    theta = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)[0]
    return np.concatenate(([1.0], np.exp(theta))), c


def test_harvest_equals_the_reference_loop_and_recovers_one_over_r():
    theta = 1.0 / np.arange(1, 9)
    offsets, query, positions, click, document = harvest_log(60, 14, 3, 60, theta, 21)
    e = estimate(offsets, query, positions, click, method="harvest", document=document, bootstrap=200,
                 rng=np.random.default_rng(0))
    ref, _ = reference_harvest(offsets, query, positions, click, document, 8, 20)
    assert e.method == "harvest" and e.stopped_at is None and list(e.positions) == list(range(1, 9))
    np.testing.assert_allclose(e.propensity, ref, rtol=1e-10)
    # Recovery: 1/r inside the 95% interval, or within 15%, at every position (the interval is a few % wide here).
    inside = (e.ci_low <= theta) & (theta <= e.ci_high)
    assert (inside | (np.abs(e.propensity / theta - 1) < 0.15)).all(), (e.propensity, e.ci_low, e.ci_high)
    assert inside.sum() >= 7
    # Document numbers are labels: renumbering them changes nothing.
    e2 = estimate(offsets, query, positions, click, method="harvest", document=document * 7 + 3, bootstrap=200,
                  rng=np.random.default_rng(0))
    np.testing.assert_array_equal(e2.propensity, e.propensity)
    np.testing.assert_array_equal(e2.ci_low, e.ci_low)


def test_harvest_pair_sums_and_weights_against_the_reference():
    """Unequal impression shares (a random log mixed with a deterministic one) exercise the weights."""
    theta = 1.0 / np.arange(1, 6)
    offsets, query, positions, click, document = harvest_log(30, 7, 2, 40, theta, 5)
    rng = np.random.default_rng(9)
    M = offsets.shape[0] - 1
    # Shuffle the rows of a third of the impressions (a randomised policy logged beside them).
    for m in rng.choice(M, size=M // 3, replace=False):
        a, b = offsets[m], offsets[m + 1]
        positions[a:b] = rng.permutation(positions[a:b])
    from rankcli.core.harvest import pair_sums

    n_query = np.bincount(query)
    q_row = np.repeat(query, np.diff(offsets))
    stats = pair_sums(q_row, document, positions, click.astype(float), n_query, n_query.shape[0], 5)[0]
    ref_p, ref_c = reference_harvest(offsets, query, positions, click, document, 5, 20)
    np.testing.assert_allclose(stats[:, :25].sum(axis=0).reshape(5, 5), ref_c, rtol=1e-12)
    e = estimate(offsets, query, positions, click, method="harvest", document=document, bootstrap=50,
                 rng=np.random.default_rng(0))
    np.testing.assert_allclose(e.propensity, ref_p, rtol=1e-10)


def test_harvest_stops_where_no_intervention_links_a_position_and_errors():
    theta = 1.0 / np.arange(1, 7)
    offsets, query, positions, click, document = harvest_log(40, 10, 2, 30, theta, 3)
    # Hide position 4's interventions: every document shown at 4 gets a number of its own per impression.
    at4 = positions == 4
    document = document.copy()
    document[at4] = document.max() + 1 + np.arange(at4.sum())
    e = estimate(offsets, query, positions, click, method="harvest", document=document, bootstrap=20,
                 rng=np.random.default_rng(0))
    assert e.stopped_at == 4 and list(e.positions) == [1, 2, 3]
    assert "position 4: no intervention pair" in e.notes[0]
    one = np.arange(positions.shape[0])  # every row its own document: no interventions at all
    with pytest.raises(InputError, match="no intervention links position 1"):
        estimate(offsets, query, positions, click, method="harvest", document=one, bootstrap=20,
                 rng=np.random.default_rng(0))
    with pytest.raises(UsageError, match="needs the document"):
        estimate(offsets, query, positions, click, method="harvest", rng=np.random.default_rng(0))


def test_a_huge_position_bounds_the_work_by_the_positions_present():
    """One row at position 100,000 (the limit) among lists of 10: the ratios are computed for the positions present
    (1..10), the power fit's tail and its interval in closed form; it took 1.2 GB and a minute when every
    per-position array was as long as the largest position."""
    import time
    import tracemalloc

    grades, offsets, _ = corpus(90, 21, low=10, high=11)
    log = clicks.pbm(grades, offsets, PAPER, 100, np.random.default_rng(22), eta=1.0, keep_no_click=True)
    far = log.positions.astype(np.int64)
    far[-1] = 100_000  # the last impression shows 1..9 and 100,000
    args = (log.offsets, log.query)
    plain = estimate(*args, log.positions, log.clicks, fit="power", rng=np.random.default_rng(0))
    tracemalloc.start()
    start = time.perf_counter()
    e = estimate(*args, far, log.clicks, fit="power", rng=np.random.default_rng(0))
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 64 << 20 and seconds < 10, (peak, seconds)
    assert e.positions.shape[0] == 100_000 and e.max_position == 100_000
    np.testing.assert_array_equal(e.propensity[:9], plain.propensity[:9])  # the same impressions show 1..9
    assert not e.fitted[:plain.stopped_at - 1 if plain.stopped_at else 10].any() and e.fitted[10:].all()
    assert list(e.impressions_by_position[[0, 9, 10, 99_999]]) == [9000, 9000, 1, 1]
    assert e.clicks_by_position[10:].sum() == log.clicks[-1]
    r = np.arange(11, 100_001)
    np.testing.assert_allclose(e.propensity[10:], r ** -e.fit["eta"])
    assert np.all(e.ci_low[10:] <= e.propensity[10:]) and np.all(e.propensity[10:] <= e.ci_high[10:])


def test_the_power_tails_interval_is_the_replicates_quantile():
    from rankcli.core.power_fit import power_quantile as _power_quantile

    rng = np.random.default_rng(5)
    r = np.arange(2, 60, dtype=np.float64)
    for n in (1, 2, 7, 200):
        etas = rng.normal(1.0, 0.3, size=n)
        etas[rng.random(n) < 0.1] = np.nan  # replicates without a fit are left out, as nanquantile leaves them
        for q in (0.025, 0.5, 0.975):
            want = np.nanquantile(r[None, :] ** -etas[:, None], q, axis=0) if np.isfinite(etas).any() \
                else np.full(r.shape[0], np.nan)
            np.testing.assert_allclose(_power_quantile(r, etas, q), want, rtol=1e-13, equal_nan=True)


def _two_position_logs(expected_clicks_at_2, impressions, reps, seed):
    """``reps`` logs of ``impressions`` two-position impressions (one query each), clicks at position 1 with
    probability 0.5 and at position 2 with ``expected_clicks_at_2 / impressions``: (propensity of 2 reported or NaN,
    marked near the threshold) per log, and the truth."""
    rng = np.random.default_rng(seed)
    p2 = expected_clicks_at_2 / impressions
    offsets = np.arange(0, 2 * impressions + 1, 2)
    positions = np.tile([1, 2], impressions)
    out = []
    for _ in range(reps):
        c = (rng.random((impressions, 2)) < [0.5, p2]).reshape(-1).astype(np.int8)
        e = estimate(offsets, np.arange(impressions), positions, c, bootstrap=1, min_clicks=20,
                     rng=np.random.default_rng(0))
        out.append((e.propensity[1], bool(e.near_threshold[1])) if e.positions.shape[0] > 1 else (np.nan, False))
    values, near = (np.array(v) for v in zip(*out))
    return values, near, p2 / 0.5


def test_positions_near_the_threshold_are_marked_and_biased_upward_by_simulation():
    """--min-clicks selects on the estimate's own numerator: where the expected clicks equal the threshold (20) the
    reported estimates average about 17% above the truth (Poisson: +16.8%), and every one of them is marked; well
    above it (60 expected clicks, 9 Poisson standard deviations) the selection does not bite and the estimates average
    the truth."""
    values, near, truth = _two_position_logs(20, 400, 400, 31)
    reported = np.isfinite(values)
    assert 0.35 < reported.mean() < 0.75  # the threshold cuts about half of the logs
    assert near[reported].all()
    bias = values[reported].mean() / truth - 1
    assert 0.10 < bias < 0.25, bias
    values, near, truth = _two_position_logs(60, 400, 300, 32)
    assert np.isfinite(values).all() and not near.any()
    se = values.std(ddof=1) / np.sqrt(values.shape[0])
    assert abs(values.mean() - truth) < 4 * se, (values.mean(), truth, se)
