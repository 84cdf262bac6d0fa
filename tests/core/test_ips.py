"""IPS pooling: the pooled relevance against a literal loop, unbiasedness of the pointwise IPS gradient and
consistency of the XE-NDCG / ListNet IPS gradients by Monte Carlo over simulated PBM logs, clipping, coverage errors."""

from __future__ import annotations

import numpy as np
import pytest

from rankcli.core import clicks, ips, losses
from rankcli.errors import InputError, UsageError

PAPER = (0.05, 0.3, 0.5, 0.7, 0.95)


def one_query_set():
    grades = np.array([0, 4, 1, 2, 0, 3,   1, 0, 4, 0, 2, 0, 0, 1])
    offsets = np.array([0, 6, 14])
    return grades, offsets


def pooled_log(grades, offsets, impressions, rng, eta=1.0, propensity=None, clip=ips.DEFAULT_CLIP):
    log = clicks.pbm(grades, offsets, PAPER, impressions, rng, eta=eta, keep_no_click=True)
    imp_of_row = np.repeat(np.arange(log.n_kept), np.diff(log.offsets))
    p = ips.pbm_propensities(eta, int(np.diff(offsets).max())) if propensity is None else propensity
    w = ips.inverse_weights(log.positions, p, clip)
    q_of_row = np.searchsorted(offsets, log.rows, side="right") - 1
    return ips.pool(q_of_row, log.rows, imp_of_row, log.clicks, w), log, w


def test_pool_equals_the_literal_loop():
    grades, offsets = one_query_set()
    pooled, log, w = pooled_log(grades, offsets, 30, np.random.default_rng(0))
    expected = {}
    n_imp = {}
    for k, (a, b) in enumerate(zip(log.offsets[:-1], log.offsets[1:])):
        q = int(log.query[k])
        n_imp[q] = n_imp.get(q, 0) + 1
        for row, c, wt in zip(log.rows[a:b], log.clicks[a:b], w[a:b]):
            expected[(q, int(row))] = expected.get((q, int(row)), 0.0) + c * wt
    assert list(pooled.offsets) == [0, 6, 14] and list(pooled.impressions) == [30, 30]
    src = log.rows[pooled.rows]  # pooled.rows index the log's rows
    assert list(src) == list(range(14))  # every document shown, in source order
    got = {(int(np.searchsorted(offsets, r, side="right") - 1), int(r)): g for r, g in zip(src, pooled.gain)}
    for key, total in expected.items():
        assert got[key] == pytest.approx(total / n_imp[key[0]], rel=1e-12)


def _monte_carlo(grades, offsets, logs, impressions, seed, fn):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(logs):
        pooled, log, _ = pooled_log(grades, offsets, impressions, rng)
        assert np.array_equal(log.rows[pooled.rows], np.arange(grades.shape[0]))
        out.append(fn(pooled.gain))
    return np.array(out)


def test_pointwise_ips_gradient_is_unbiased():
    """Mean over 400 logs of 5 impressions of the squared-error gradient s - g equals the full-information gradient
    s - gamma (gamma = the click probability of the grade) within 4 standard errors per document."""
    grades, offsets = one_query_set()
    scores = np.linspace(-1, 1, grades.shape[0])
    grads = _monte_carlo(grades, offsets, 400, 5, 1, lambda g: scores - g)
    full = scores - np.asarray(PAPER)[grades]
    se = grads.std(axis=0, ddof=1) / np.sqrt(grads.shape[0])
    assert np.all(np.abs(grads.mean(axis=0) - full) <= 4 * se + 1e-12), (grads.mean(axis=0) - full) / se


def test_naive_pooling_is_biased():
    """Without propensities the pooled click-through rate estimates p(r)-weighted relevance, not relevance."""
    grades, offsets = one_query_set()
    rng = np.random.default_rng(2)
    log = clicks.pbm(grades, offsets, PAPER, 400, rng, eta=1.0, keep_no_click=True)
    imp = np.repeat(np.arange(log.n_kept), np.diff(log.offsets))
    q = np.searchsorted(offsets, log.rows, side="right") - 1
    naive = ips.pool(q, log.rows, imp, log.clicks, np.ones(log.rows.shape[0])).gain
    gamma = np.asarray(PAPER)[grades]
    assert np.all(naive[gamma > 0.5] < 0.7 * gamma[gamma > 0.5])


@pytest.mark.parametrize("loss", ["xendcg", "listnet", "approxndcg", "lambdaloss"])
def test_listwise_ips_gradient_converges_to_the_full_information_gradient(loss):
    """A ratio estimator: the mean IPS gradient over logs approaches the full-information gradient as impressions
    grow (tolerance: 4 standard errors of the mean plus the O(1/n) ratio bias bound, checked to shrink)."""
    grades, offsets = one_query_set()
    scores = np.linspace(1, -1, grades.shape[0])
    gamma_mix = 0.5

    def grad(gain):
        labels = ips.training_labels(loss, gain)
        if loss == "xendcg":
            return losses.xendcg_gradient(labels, scores, offsets, gamma_mix)
        if loss == "approxndcg":
            return losses.approxndcg_gradient(labels, scores, offsets, 0.5)
        if loss == "lambdaloss":
            return losses.lambdaloss_gradient(labels, scores, offsets)
        return losses.listnet_gradient(labels, scores, offsets)

    full = grad(np.asarray(PAPER)[grades])
    errors = []
    for impressions in (4, 64):
        grads = _monte_carlo(grades, offsets, 200, impressions, 3, grad)
        se = grads.std(axis=0, ddof=1) / np.sqrt(grads.shape[0])
        err = np.abs(grads.mean(axis=0) - full)
        errors.append(err.max())
        if impressions == 64:
            assert np.all(err <= 4 * se + 0.002), err / se
    assert errors[1] < errors[0]


def test_training_labels_put_the_gain_linearly_into_the_targets():
    g = np.array([0.0, 0.25, 1.0, 3.0])
    np.testing.assert_allclose(2 ** ips.training_labels("xendcg", g) - 1, g)
    np.testing.assert_allclose(np.exp(ips.training_labels("listnet", g)), 1 + (np.e - 1) * g)
    np.testing.assert_array_equal(ips.training_labels("pointwise", g), g)
    # clicks {0, 1}: the listnet label is the click itself
    np.testing.assert_allclose(ips.training_labels("listnet", np.array([0.0, 1.0])), [0.0, 1.0])
    np.testing.assert_array_equal(ips.training_labels("ranknet", g), g)
    for loss in ("approxndcg", "lambdaloss"):
        np.testing.assert_allclose(2 ** ips.training_labels(loss, g) - 1, g)  # the gain 2^label - 1 is g
    with pytest.raises(UsageError, match="IPS training supports xendcg, listnet, pointwise, ranknet, approxndcg, "):
        ips.training_labels("lambdamart", g)


def test_clip_and_coverage():
    p = np.array([1.0, 0.5, 0.001])
    np.testing.assert_allclose(ips.inverse_weights(np.array([1, 2, 3]), p, 0.01), [1, 2, 100])
    with pytest.raises(InputError, match="cover positions 1..3, but the log shows position 4"):
        ips.inverse_weights(np.array([1, 4]), p)
    # relative to position 1 a propensity can exceed 1 (a weight below 1); not finite or not above 0 cannot be
    np.testing.assert_allclose(ips.inverse_weights(np.array([1, 2]), np.array([1.0, 1.5])), [1, 1 / 1.5])
    for bad in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(InputError, match="propensity of position 2 must be a finite number above 0"):
            ips.inverse_weights(np.array([1]), np.array([1.0, bad]))
    with pytest.raises(UsageError, match="--propensity-clip"):
        ips.inverse_weights(np.array([1]), p, 0.0)
    np.testing.assert_allclose(ips.pbm_propensities(0.0, 3), [1, 1, 1])


def _ranknet_loop(scores, gain, offsets):
    """The pairwise IPS loss by its definition, pair by pair."""
    out = []
    for a, b in zip(offsets[:-1], offsets[1:]):
        total = 0.0
        for k in range(a, b):
            for j in range(a, b):
                if j != k:
                    total += gain[k] * np.log1p(np.exp(-(scores[k] - scores[j])))
        out.append(total)
    return np.array(out)


def test_ranknet_ips_value_gradient_and_hessian():
    rng = np.random.default_rng(4)
    offsets = np.array([0, 1, 4, 9, 12, 20])
    scores = rng.normal(size=20)
    gain = rng.random(20) * (rng.random(20) < 0.5) * 3
    np.testing.assert_allclose(ips.ranknet_ips_value(gain, scores, offsets), _ranknet_loop(scores, gain, offsets),
                               rtol=1e-12)
    grad, hess = ips.ranknet_ips_grad_hess(gain, scores, offsets)
    eps = 1e-6
    for k in range(20):
        up, down = scores.copy(), scores.copy()
        up[k] += eps
        down[k] -= eps
        fd = (_ranknet_loop(up, gain, offsets).sum() - _ranknet_loop(down, gain, offsets).sum()) / (2 * eps)
        assert grad[k] == pytest.approx(fd, abs=1e-5)  # float32 pair terms
        h = 1e-4
        up[k], down[k] = scores[k] + h, scores[k] - h
        fd2 = (_ranknet_loop(up, gain, offsets).sum() - 2 * _ranknet_loop(scores, gain, offsets).sum()
               + _ranknet_loop(down, gain, offsets).sum()) / h ** 2
        assert hess[k] == pytest.approx(fd2, abs=1e-5)
    assert grad[0] == hess[0] == 0.0  # a query of one document


def test_ranknet_ips_gradient_is_unbiased():
    grades, offsets = one_query_set()
    scores = np.linspace(-1, 1, grades.shape[0])
    grads = _monte_carlo(grades, offsets, 400, 5, 5, lambda g: ips.ranknet_ips_grad_hess(g, scores, offsets)[0])
    full = ips.ranknet_ips_grad_hess(np.asarray(PAPER)[grades], scores, offsets)[0]
    se = grads.std(axis=0, ddof=1) / np.sqrt(grads.shape[0])
    assert np.all(np.abs(grads.mean(axis=0) - full) <= 4 * se + 1e-12), (grads.mean(axis=0) - full) / se


def test_ranknet_ips_blocks_bound_memory(monkeypatch):
    rng = np.random.default_rng(0)
    offsets = np.array([0, 30, 60, 61, 101])
    scores, gain = rng.normal(size=101), rng.random(101)
    a = ips.ranknet_ips_grad_hess(gain, scores, offsets)
    monkeypatch.setattr(ips, "PAIR_CELLS", 100)  # one query per block
    b = ips.ranknet_ips_grad_hess(gain, scores, offsets)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-12)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-12)
