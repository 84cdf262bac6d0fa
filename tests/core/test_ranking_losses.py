"""ListMLE, Position-Aware ListMLE, ApproxNDCG, LambdaLoss and ListNet's paper step against the per-query references
of tests/reference_losses.py, central finite differences, and at the edges: ties, one-document queries, all-zero
labels, labels of any size, extreme scores and 10,000-document queries in bounded memory."""

from __future__ import annotations

import numpy as np
import pytest

from rankcli.core import losses
from rankcli.core.groups import rank_within
from tests import reference_losses as ref
from tests.core.test_losses import fd_gradient
from tests.core.test_losses import fd_hess_diag as fd_diagonal

RELATIVE = 1e-6  # the gradients against central differences: max |g - fd| <= 1e-6 max |g|


def batch(seed, n_queries=10, max_size=8, real=False, singletons=True, top=4, padded=True):
    """Random queries with ties; with ``padded``, two more of 20 and 21 documents, which share a pair block and a size
    bucket (so that padding cells are exercised)."""
    rng = np.random.default_rng(seed)
    sz = rng.integers(1 if singletons else 2, max_size + 1, size=n_queries)
    if padded:
        sz = np.concatenate((sz, [20, 21]))
    offsets = np.concatenate(([0], np.cumsum(sz))).astype(np.int64)
    n = int(offsets[-1])
    labels = rng.uniform(0, top, n) if real else rng.integers(0, top + 1, n).astype(float)
    return labels, rng.normal(0, 1.5, n), offsets


def assert_relative(got, expected, tol=RELATIVE):
    assert np.all(np.isfinite(got)) and np.all(np.isfinite(expected))
    scale = max(float(np.abs(expected).max(initial=0.0)), 1e-300)
    assert float(np.abs(got - expected).max(initial=0.0)) <= tol * scale, np.abs(got - expected).max() / scale


def order_for(labels, offsets, seed=0):
    return losses.listmle_order(labels, offsets, np.random.default_rng(seed))


# ---------------------------------------------------------------------------------------------- ListMLE, ListMLE-PA
LISTMLE = {"listmle": (losses.listmle_value, losses.listmle_grad_hess, False),
           "listmle-pa": (losses.listmle_pa_value, losses.listmle_pa_grad_hess, True)}


@pytest.mark.parametrize("name", list(LISTMLE))
@pytest.mark.parametrize("seed", range(3))
def test_listmle_value_gradient_and_hessian(name, seed):
    value, grad_hess, pa = LISTMLE[name]
    y, s, off = batch(seed, real=seed == 2)
    order = order_for(y, off, seed)
    np.testing.assert_allclose(value(y, s, off, order), ref.listmle(s, off, order, pa), rtol=1e-12, atol=1e-12)
    grad, hess = grad_hess(y, s, off, order)
    assert_relative(grad, fd_gradient(lambda x: value(y, x, off, order), s))
    assert_relative(hess, fd_diagonal(lambda x: grad_hess(y, x, off, order)[0], s))
    assert np.all(hess >= 0) and np.all(np.isfinite(hess))
    multi = np.repeat(np.diff(off) > 1, np.diff(off))
    assert np.all(hess[multi] > 0) and np.all(hess[~multi] == 0) and np.all(grad[~multi] == 0)


def test_listmle_order_ranks_by_label_and_shuffles_ties_from_the_generator():
    y = np.array([1.0, 0.0, 1.0, 1.0, 2.0, 0.0, 0.0])
    off = np.array([0, 5, 7])
    seen = set()
    for seed in range(200):
        order = order_for(y, off, seed)
        assert list(y[order[:5]]) == [2.0, 1.0, 1.0, 1.0, 0.0] and set(order[5:]) == {5, 6}
        seen.add(tuple(order[1:4]))
    assert len(seen) == 6  # every order of the three tied documents
    np.testing.assert_array_equal(order_for(y, off, 3), order_for(y, off, 3))
    with pytest.raises(ValueError, match="labels tie within a query"):
        losses.listmle_value(y, np.zeros(7), off)
    with pytest.raises(ValueError, match="by label"):
        losses.listmle_value(y, np.zeros(7), off, np.arange(7))
    with pytest.raises(ValueError, match="own range"):
        losses.listmle_value(y, np.zeros(7), off, np.array([4, 0, 2, 3, 5, 1, 6]))
    distinct = np.array([3.0, 1.0, 2.0])  # distinct labels: the order may be left out
    np.testing.assert_allclose(losses.listmle_value(distinct, np.array([0.3, 0.1, -0.2]), np.array([0, 3])),
                               ref.listmle(np.array([0.3, 0.1, -0.2]), [0, 3], [0, 2, 1]))


@pytest.mark.parametrize("name", list(LISTMLE))
def test_listmle_takes_labels_of_any_size_and_all_equal_labels(name):
    value, grad_hess, pa = LISTMLE[name]
    y, s, off = batch(4, real=True)
    big = y * 1e300                                   # only the order counts
    order = order_for(y, off)
    np.testing.assert_allclose(value(big, s, off, order), ref.listmle(s, off, order, pa), rtol=1e-12, atol=1e-12)
    zeros = np.zeros_like(y)                          # every order of a query equally the ranking by label
    order0 = order_for(zeros, off, 1)
    np.testing.assert_allclose(value(zeros, s, off, order0), ref.listmle(s, off, order0, pa), rtol=1e-12,
                               atol=1e-12)
    g, h = grad_hess(zeros, s, off, order0)
    assert np.all(np.isfinite(g)) and np.all(h >= 0)


@pytest.mark.parametrize("pa", [False, True])
def test_listmle_on_a_10000_document_query_matches_the_exact_linear_reference(pa):
    """2^(n - 1) overflows float64 from n = 1025 on; the normalised weights stay finite and exact."""
    rng = np.random.default_rng(8)
    n = 10_000
    y, s, off = rng.integers(0, 5, n).astype(float), rng.normal(0, 3, n), np.array([0, n])
    order = order_for(y, off)
    value = (losses.listmle_pa_value if pa else losses.listmle_value)(y, s, off, order)
    assert value[0] == pytest.approx(ref.listmle_linear(s, order, pa), rel=1e-10)
    grad, hess = (losses.listmle_pa_grad_hess if pa else losses.listmle_grad_hess)(y, s, off, order)
    assert np.all(np.isfinite(grad)) and np.all(np.isfinite(hess)) and np.all(hess >= 0)
    assert abs(grad.sum()) < 1e-6 * n  # d/dc of the loss with every score shifted by c is 0


# --------------------------------------------------------------------------------------------------------- ApproxNDCG
@pytest.mark.parametrize("temperature", [0.1, 1.0])
@pytest.mark.parametrize("seed", range(3))
def test_approxndcg_value_and_gradient(temperature, seed):
    y, s, off = batch(seed, real=seed == 1)
    value = losses.approxndcg_value(y, s, off, temperature)
    np.testing.assert_allclose(value, ref.approxndcg(s, y, off, temperature), rtol=1e-12, atol=1e-12)
    grad = losses.approxndcg_gradient(y, s, off, temperature)
    assert_relative(grad, fd_gradient(lambda x: losses.approxndcg_value(y, x, off, temperature), s, eps=1e-7))
    g32, h32 = losses.approxndcg_grad_hess(y, s, off, temperature)
    assert_relative(g32, grad, 1e-5)
    assert np.all(h32 >= 0) and np.all(np.isfinite(h32))


def test_approxndcg_hessian_bounds_the_curvature_with_the_rank_weights_fixed():
    """h_k >= |d^2/ds_k^2 sum_i c_i pi_i(s)| with c taken at the base scores (the step's approximation)."""
    y, s, off = batch(5, n_queries=4, singletons=False, padded=False)
    t = 0.5
    _, h = losses.approxndcg_grad_hess(y, s, off, t, dtype=np.float64)
    g_all, _ = losses.ndcg_gains(y, off)
    pi0 = -np.ones_like(s)
    for _, a, b in ref.queries(off):
        for i in range(a, b):
            pi0[i] = 1 + sum(ref.sigmoid((s[j] - s[i]) / t) for j in range(a, b) if j != i)
    c = g_all * np.log(2) / ((1 + pi0) * np.log1p(pi0) ** 2)

    def fixed(x):  # sum_i c_i pi_i(x) per query
        out = np.zeros(len(off) - 1)
        for q, a, b in ref.queries(off):
            out[q] = sum(c[i] * (1 + sum(ref.sigmoid((x[j] - x[i]) / t) for j in range(a, b) if j != i))
                         for i in range(a, b))
        return out

    curvature = fd_diagonal(lambda x: fd_gradient(fixed, x, 1e-5), s, 1e-4)
    assert np.all(h >= np.abs(curvature) - 1e-6), (h, curvature)
    usable = np.repeat(losses.ndcg_gains(y, off)[1], np.diff(off))
    assert np.all(h[usable] > 0) and np.all(h[~usable] == 0)


# --------------------------------------------------------------------------------------------------------- LambdaLoss
@pytest.mark.parametrize("variant", losses.LAMBDALOSS_VARIANTS)
@pytest.mark.parametrize("seed", range(3))
def test_lambdaloss_value_gradient_and_hessian_with_the_ranks_held_fixed(variant, seed):
    y, s, off = batch(seed, n_queries=6, real=seed == 1)
    mu, sigma = (10.0, 1.0) if seed != 2 else (3.0, 2.5)
    np.testing.assert_allclose(losses.lambdaloss_value(y, s, off, variant, mu, sigma),
                               ref.lambdaloss(s, y, off, variant, mu, sigma), rtol=1e-12, atol=1e-12)
    ranks = rank_within(s, off)

    def value(x):
        return losses.lambdaloss_value(y, x, off, variant, mu, sigma, ranks=ranks)

    def gradient(x):
        return losses.lambdaloss_gradient(y, x, off, variant, mu, sigma, ranks=ranks)

    grad = gradient(s)
    assert_relative(grad, fd_gradient(value, s))
    g32, h32 = losses.lambdaloss_grad_hess(y, s, off, variant, mu, sigma)
    assert_relative(g32, grad, 1e-5)
    assert_relative(h32, fd_diagonal(gradient, s), 1e-5)
    assert np.all(h32 >= 0) and np.all(np.isfinite(h32))


def test_lambdaloss_ranks_are_the_current_scores_ranks_with_ties_in_input_order():
    y, off = np.array([2.0, 0.0, 1.0, 0.0]), np.array([0, 4])
    s = np.array([0.0, 0.0, 0.0, 0.0])  # the first boosting iteration: every score equal
    np.testing.assert_allclose(losses.lambdaloss_value(y, s, off),
                               losses.lambdaloss_value(y, s, off, ranks=np.array([1, 2, 3, 4])))
    np.testing.assert_allclose(losses.lambdaloss_value(y, s, off), ref.lambdaloss(s, y, off))


# ---------------------------------------------------------------------------------------------- all, at the edges
def listmle_step(y, s, o):
    return losses.listmle_grad_hess(y, s, o, order_for(y, o))


def listmle_pa_step(y, s, o):
    return losses.listmle_pa_grad_hess(y, s, o, order_for(y, o))


STEPS = {
    "listmle": (listmle_step, lambda y, s, o: losses.listmle_value(y, s, o, order_for(y, o))),
    "listmle-pa": (listmle_pa_step, lambda y, s, o: losses.listmle_pa_value(y, s, o, order_for(y, o))),
    "approxndcg": (losses.approxndcg_grad_hess, losses.approxndcg_value),
    "lambdaloss": (losses.lambdaloss_grad_hess, losses.lambdaloss_value),
}


@pytest.mark.parametrize("name", list(STEPS))
def test_one_document_queries_give_zero(name):
    step, value = STEPS[name]
    off = np.arange(6, dtype=np.int64)
    y, s = np.array([0.0, 4.0, 1.0, 2.5, 3.0]), np.array([3.0, -1.0, 0.0, 2.0, 9.0])
    grad, hess = step(y, s, off)
    assert np.all(grad == 0) and np.all(hess == 0) and np.all(value(y, s, off) == 0)


@pytest.mark.parametrize("name", ["approxndcg", "lambdaloss"])
def test_queries_without_gain_give_zero(name):
    step, value = STEPS[name]
    y, s, off = np.array([0.0, 0.0, 0.0, 1.0, 0.0]), np.array([0.1, 0.2, 0.3, 1.0, 0.0]), np.array([0, 3, 5])
    grad, hess = step(y, s, off)
    assert np.all(grad[:3] == 0) and np.all(hess[:3] == 0) and value(y, s, off)[0] == 0
    assert np.any(grad[3:] != 0) and np.all(hess[3:] > 0)


@pytest.mark.parametrize("name", list(STEPS))
def test_extreme_scores_and_a_constant_per_query_change_nothing(name):
    step, value = STEPS[name]
    y, s, off = batch(9, max_size=9)
    shift = np.repeat(np.random.default_rng(1).uniform(-40, 40, len(off) - 1), np.diff(off))
    g1, h1 = step(y, s, off)
    g2, h2 = step(y, s + shift, off)
    np.testing.assert_allclose(g1, g2, atol=1e-5)
    np.testing.assert_allclose(h1, h2, atol=1e-5)
    np.testing.assert_allclose(value(y, s, off), value(y, s + shift, off), rtol=1e-9, atol=1e-8)
    off3, s3, y3 = np.array([0, 3]), np.array([800.0, -800.0, 0.0]), np.array([0.0, 4.0, 1.0])
    g, h = step(y3, s3, off3)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
    assert np.all(np.isfinite(value(y3, s3, off3)))


@pytest.mark.parametrize("seed", range(3))
def test_gains_of_labels_up_to_a_million_match_exact_rationals(seed):
    """2^label overflows float64 from label 1024 on: every exponential gain is computed scaled by the query's top."""
    rng = np.random.default_rng(seed)
    y, s, off = batch(seed)
    y = rng.choice([0.0, 1.0, 2.0, 999_999.0, 1e6], size=y.shape[0])
    gains, _ = losses.ndcg_gains(y, off)
    exact = ref.exact_gains(y, off)
    np.testing.assert_allclose(gains, exact, rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(losses.approxndcg_value(y, s, off), ref.approxndcg(s, y, off, 0.1, exact),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(losses.lambdaloss_value(y, s, off), ref.lambdaloss(s, y, off, gains=exact),
                               rtol=1e-12, atol=1e-12)
    for step in (losses.approxndcg_grad_hess, losses.lambdaloss_grad_hess):
        g, h = step(y, s, off)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)


@pytest.mark.parametrize("cap", [16, 64, 1 << 20])
@pytest.mark.parametrize("name", ["approxndcg", "lambdaloss"])
def test_pair_blocks_and_row_tiles_agree(monkeypatch, cap, name):
    step, value = STEPS[name]
    y, s, off = batch(10, n_queries=12, max_size=30)
    expected_value, (expected_g, expected_h) = value(y, s, off), step(y, s, off)
    monkeypatch.setattr(losses.common, "MAX_PAIR_ELEMENTS", cap)
    np.testing.assert_allclose(value(y, s, off), expected_value, rtol=1e-12, atol=1e-12)
    g, h = step(y, s, off)
    np.testing.assert_allclose(g, expected_g, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(h, expected_h, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["approxndcg", "lambdaloss"])
def test_a_10000_document_query_runs_in_bounded_memory(name):
    """The boosting step on 10,000 documents (10^8 pairs: one float32 (n, n) array alone would take 400 MB); the
    float64 value on 10,000 (ApproxNDCG) or 3,000 documents (LambdaLoss's logaddexp per pair takes ~10 s on 10^8),
    both longer than one block, so in row tiles."""
    import tracemalloc

    step, value = STEPS[name]
    rng = np.random.default_rng(11)
    for f, n in ((step, 10_000), (value, 10_000 if name == "approxndcg" else 3_000)):
        y, s, off = rng.integers(0, 5, n).astype(float), rng.normal(size=n), np.array([0, n])
        tracemalloc.start()
        try:
            out = f(y, s, off)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 40 * losses.common.MAX_PAIR_ELEMENTS, (f.__name__, peak)  # bytes: a few arrays of a block
        assert all(np.all(np.isfinite(a)) for a in (out if isinstance(out, tuple) else (out,)))


# -------------------------------------------------------------------------------------------------- ListNet's step
@pytest.mark.parametrize("seed", range(4))
def test_listnet_paper_step_equals_the_dense_matrix_formula(seed):
    y, s, off = batch(seed, n_queries=12, max_size=10, real=True)
    grad, hess = losses.listnet_grad_hess(y, s, off)
    dgrad, dhess = ref.softmax_newton_dense(s, losses.listnet_target(y, off), off)
    np.testing.assert_allclose(grad, dgrad, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(hess, dhess, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="paper, diagonal"):
        losses.listnet_grad_hess(y, s, off, step="newton")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spread", [5.0, 79.0, 81.0, 650.0, 800.0])
def test_wrong_order_probabilities_from_products_or_differences_agree_with_the_formula(dtype, spread):
    """Within PRODUCT_SPREAD, exp(x_i - x_j) is a product of per-document exponentials; beyond, the exponential of
    each difference: both equal 1 / (1 + exp(x_i - x_j)) to the dtype's rounding, padding columns at -1e30 give 0."""
    rng = np.random.default_rng(int(spread))
    x = rng.uniform(-spread / 2, spread / 2, (3, 7))
    x[:, 0], x[:, 1] = spread / 2, -spread / 2
    valid = np.ones((3, 7), dtype=bool)
    valid[2, 5:] = False
    xd = np.where(valid, x, -1e30).astype(dtype)
    got = losses.common.wrong_order_probabilities(xd, valid)
    d = xd.astype(np.float64)[:, :, None] - xd.astype(np.float64)[:, None, :]
    with np.errstate(over="ignore"):
        expected = 1.0 / (1.0 + np.exp(d))
    real = valid[:, :, None] & valid[:, None, :]
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got[real], expected[real], rtol=tol, atol=tol * 1e-3)
    assert np.all(got[2, :5, 5:] == 0)
    np.testing.assert_allclose(losses.common.wrong_order_probabilities(xd, valid, slice(2, 4)), got[:, 2:4])


def test_the_option_ranges_give_finite_steps():
    """The ends of the declared ranges (temperature 1e-4, sigma 1e4, mu 1e6) on scores spread over +-50."""
    y, s, off = batch(12)
    s = s * 30
    for g, h in (losses.approxndcg_grad_hess(y, s, off, 1e-4), losses.approxndcg_grad_hess(y, s, off, 1e4),
                 losses.lambdaloss_grad_hess(y, s, off, "ndcg-loss2++", 1e6, 1e4),
                 losses.lambdaloss_grad_hess(y, s, off, "ndcg-loss2", 0.0, 1e-4)):
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)


def test_listmle_pa_weighs_each_query_by_its_own_length_not_by_one_list_size():
    """The weighting across lengths that docs/commands/train.md states, on its example: a 3- and a 7-document query.
    rankcli weighs position p of n by (2^(n-p) - 1) / (2^(n-1) - 1) (1, 1/3, 0 and 1, 31/63, ..., 1/63, 0); TF-Ranking
    pads a batch to one list size L and weighs position p by 2^(L-p) - 1 whatever the query's length (L = 7: the
    3-document query's positions weigh 63, 31, 15, not in the ratio 3 : 1 : 0)."""
    from math import log

    y = np.array([2.0, 1.0, 0.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.0])
    off = np.array([0, 3, 10])
    zero = np.zeros(10)  # every order equally likely: log Z_p = log(n - p + 1)
    weights = {n: [(2.0 ** (n - p) - 1) / (2.0 ** (n - 1) - 1) for p in range(1, n + 1)] for n in (3, 7)}
    assert weights[3] == [1.0, 1 / 3, 0.0] and sum(weights[3]) == pytest.approx(4 / 3)
    assert sum(weights[7]) == pytest.approx(120 / 63)
    value = losses.listmle_pa_value(y, zero, off)
    expected = [sum(w * log(len(ws) - p) for p, w in enumerate(ws)) for ws in (weights[3], weights[7])]
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    # TF-Ranking with one list size of 7 for both, in the same scale (divided by its first weight, 63)
    tf = [sum((2.0 ** (7 - p) - 1) / 63 * log(n - p + 1) for p in range(1, n + 1)) for n in (3, 7)]
    assert tf[1] == pytest.approx(value[1], rel=1e-12)            # the 7-document query: the same weights
    assert value[0] == pytest.approx(1.3297, abs=1e-4) and tf[0] == pytest.approx(1.4397, abs=1e-4)
    assert value[0] / value[1] == pytest.approx(0.3879, abs=1e-4)  # rankcli: 3 against 7 documents
    assert tf[0] / tf[1] == pytest.approx(0.4200, abs=1e-4)        # TF-Ranking, list size 7
    # the step weighs the queries as the loss does: the 3-document query's hessian mass against the 7-document one's
    _, h = losses.listmle_pa_grad_hess(y, zero, off)
    assert h[:3].sum() / h[3:].sum() == pytest.approx(0.8333 / 1.5807, abs=1e-4)
