"""rankcli.core.losses against finite differences, dense matrix formulas and slow reference loops."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankcli.core import losses
from rankcli.errors import UsageError
from tests import reference as ref


def random_batch(rng, n_queries=12, max_size=9, real=False, with_singletons=True):
    sz = rng.integers(1 if with_singletons else 2, max_size + 1, size=n_queries)
    offsets = np.concatenate(([0], np.cumsum(sz))).astype(np.int64)
    n = int(offsets[-1])
    labels = rng.uniform(0, 4, n) if real else rng.integers(0, 5, n).astype(float)
    scores = rng.normal(0, 1.5, n)
    return scores, labels, offsets


def fd_gradient(f, scores, eps=1e-6):
    """Central differences of sum(f(scores)) for every coordinate."""
    g = np.empty_like(scores)
    for i in range(scores.shape[0]):
        up, down = scores.copy(), scores.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up).sum() - f(down).sum()) / (2 * eps)
    return g


def fd_hess_diag(grad_f, scores, eps=1e-6):
    h = np.empty_like(scores)
    for i in range(scores.shape[0]):
        up, down = scores.copy(), scores.copy()
        up[i] += eps
        down[i] -= eps
        h[i] = (grad_f(up)[i] - grad_f(down)[i]) / (2 * eps)
    return h


GAMMAS = [0.0, 0.5, 1.0]


@pytest.mark.parametrize("real", [False, True])
@pytest.mark.parametrize("gamma", GAMMAS)
def test_xendcg_gradient_matches_finite_differences(real, gamma):
    s, y, off = random_batch(np.random.default_rng(1), real=real)
    fd = fd_gradient(lambda x: losses.xendcg_value(y, x, off, gamma), s)
    np.testing.assert_allclose(losses.xendcg_gradient(y, s, off, gamma), fd, atol=1e-6)
    h = fd_hess_diag(lambda x: losses.xendcg_gradient(y, x, off, gamma), s)
    _, hess = losses.xendcg_grad_hess(y, s, off, gamma)
    np.testing.assert_allclose(hess, h, atol=1e-6)


def test_xendcg_per_document_gamma_gradient():
    rng = np.random.default_rng(2)
    s, y, off = random_batch(rng, real=True)
    gamma = rng.random(s.shape[0])
    fd = fd_gradient(lambda x: losses.xendcg_value(y, x, off, gamma), s)
    np.testing.assert_allclose(losses.xendcg_gradient(y, s, off, gamma), fd, atol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_xendcg_value_matches_reference(seed):
    rng = np.random.default_rng(seed)
    s, y, off = random_batch(rng, real=bool(seed % 2))
    gamma = rng.random(s.shape[0])
    np.testing.assert_allclose(losses.xendcg_value(y, s, off, gamma), ref.xendcg_value(s, y, off, gamma), atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_xendcg_newton_step_equals_dense_matrix_formula(seed):
    rng = np.random.default_rng(seed)
    s, y, off = random_batch(rng, n_queries=15, max_size=12, real=bool(seed % 2))
    gamma = rng.random(s.shape[0]) if seed % 3 else 0.5
    grad, hess = losses.xendcg_grad_hess(y, s, off, gamma)
    dgrad, dhess = ref.xendcg_newton_dense(s, y, off, gamma)
    np.testing.assert_allclose(grad, dgrad, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(hess, dhess, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("n", [2, 3, 6, 12])
def test_the_paper_step_truncates_a_series_that_converges_on_the_gradient_not_as_a_matrix(n):
    """softmax.py's docstring: S is row-stochastic (spectral radius exactly 1, I - S singular like H), yet sum_k S^k
    D^-1 g converges to a Newton direction (H x = g) for n >= 3, because sum g = 0 removes the eigenvalue-1
    component; for n = 2 the eigenvalue -1 makes the truncated step twice the Newton step."""
    rng = np.random.default_rng(n)
    rho = rng.dirichlet(np.ones(n))
    g = rho - rng.dirichlet(np.ones(n))
    d = rho * (1 - rho)
    S = rho[None, :] / (1 - rho[:, None])
    np.fill_diagonal(S, 0.0)
    H = np.diag(rho) - np.outer(rho, rho)
    np.testing.assert_allclose(np.diag(d) @ (np.eye(n) - S), H, atol=1e-15)
    np.testing.assert_allclose(S.sum(axis=1), 1.0, rtol=1e-13)
    assert np.abs(np.linalg.eigvals(S)).max() == pytest.approx(1.0, abs=1e-12)
    assert d @ S == pytest.approx(d) and d @ (g / d) == pytest.approx(0.0, abs=1e-15)
    x, term = np.zeros(n), g / d
    for _ in range(3000):
        x, term = x + term, S @ term
    newton = np.linalg.pinv(H) @ g
    truncated = (np.eye(n) + S + S @ S) @ (g / d)
    if n == 2:
        np.testing.assert_allclose(truncated, 2 * newton, rtol=1e-12)
        assert np.linalg.eigvals(S).min() == pytest.approx(-1.0)
    else:
        np.testing.assert_allclose(H @ x, g, atol=1e-12)
        np.testing.assert_allclose(x - x.mean(), newton - newton.mean(), atol=1e-10)
    # the step rankcli boosts with is D (I + S + S^2) D^-1 g over rho (1 - rho)
    step, hess = losses.softmax_newton_step(rho, g, np.array([0]), np.array([n]), np.array([True]))
    np.testing.assert_allclose(step, d * truncated, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(hess, d, rtol=1e-15)


def test_listnet_gradient_hessian_and_reference():
    rng = np.random.default_rng(3)
    s, y, off = random_batch(rng, real=True)
    np.testing.assert_allclose(losses.listnet_value(y, s, off), ref.listnet_value(s, y, off), atol=1e-12)
    fd = fd_gradient(lambda x: losses.listnet_value(y, x, off), s)
    np.testing.assert_allclose(losses.listnet_gradient(y, s, off), fd, atol=1e-6)
    grad, hess = losses.listnet_grad_hess(y, s, off, step="diagonal")
    np.testing.assert_allclose(grad, fd, atol=1e-6)
    np.testing.assert_allclose(hess, fd_hess_diag(lambda x: losses.listnet_gradient(y, x, off), s), atol=1e-6)


@pytest.mark.parametrize("real", [False, True])
def test_ranknet_gradient_hessian_and_reference(real):
    rng = np.random.default_rng(4)
    s, y, off = random_batch(rng, max_size=11, real=real)
    value, rgrad, rhess = ref.ranknet(s, y, off)
    np.testing.assert_allclose(losses.ranknet_value(y, s, off), value, rtol=1e-12)
    grad, hess = losses.ranknet_grad_hess(y, s, off)
    # per-pair terms in float32 (what LightGBM consumes), summed in float64
    np.testing.assert_allclose(grad, rgrad, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hess, rhess, rtol=1e-5, atol=1e-6)
    fd = fd_gradient(lambda x: losses.ranknet_value(y, x, off), s)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-5)
    # the Hessian diagonal against finite differences of the (float64) reference gradient
    np.testing.assert_allclose(hess, fd_hess_diag(lambda x: ref.ranknet(x, y, off)[1], s), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cap", [16, 64, 1 << 20])
def test_ranknet_memory_bounded_blocks_and_tiles_agree(monkeypatch, cap):
    # cap=16: every query of width > 4 goes through the row-tiled path; cap=64: several queries per block and tiles.
    monkeypatch.setattr(losses.common, "MAX_PAIR_ELEMENTS", cap)
    rng = np.random.default_rng(5)
    s, y, off = random_batch(rng, n_queries=20, max_size=30)
    value, rgrad, rhess = ref.ranknet(s, y, off)
    np.testing.assert_allclose(losses.ranknet_value(y, s, off), value, rtol=1e-12)
    grad, hess = losses.ranknet_grad_hess(y, s, off)
    np.testing.assert_allclose(grad, rgrad, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hess, rhess, rtol=1e-5, atol=1e-6)


STEPS = {
    "xendcg": lambda s, y, o: losses.xendcg_grad_hess(y, s, o, 0.3),
    "listnet": lambda s, y, o: losses.listnet_grad_hess(y, s, o),
    "listnet-diagonal": lambda s, y, o: losses.listnet_grad_hess(y, s, o, step="diagonal"),
    "ranknet": lambda s, y, o: losses.ranknet_grad_hess(y, s, o),
}
VALUES = {
    "xendcg": lambda s, y, o: losses.xendcg_value(y, s, o, 0.3),
    "listnet": lambda s, y, o: losses.listnet_value(y, s, o),
    "listnet-diagonal": lambda s, y, o: losses.listnet_value(y, s, o),
    "ranknet": lambda s, y, o: losses.ranknet_value(y, s, o),
}


@pytest.mark.parametrize("name", list(STEPS))
def test_one_document_queries_give_zero(name):
    off = np.arange(6, dtype=np.int64)
    s = np.array([3.0, -1.0, 0.0, 2.0, 9.0])
    y = np.array([0.0, 4.0, 1.0, 2.5, 3.0])
    grad, hess = STEPS[name](s, y, off)
    assert np.all(grad == 0) and np.all(hess == 0)
    assert np.all(VALUES[name](s, y, off) == 0)


def test_xendcg_query_without_target_mass_is_ignored():
    # all labels 0 and gamma 1: 2^0 - 1 = 0 everywhere, no target distribution
    off = np.array([0, 3, 5], dtype=np.int64)
    s = np.array([0.1, 0.2, 0.3, 1.0, 0.0])
    y = np.array([0.0, 0.0, 0.0, 1.0, 0.0])
    grad, hess = losses.xendcg_grad_hess(y, s, off, 1.0)
    assert np.all(grad[:3] == 0) and np.all(hess[:3] == 0)
    assert np.all(np.isfinite(grad)) and np.any(grad[3:] != 0)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), shift=st.floats(-50, 50))
def test_invariant_to_a_constant_added_per_query(seed, shift):
    rng = np.random.default_rng(seed)
    s, y, off = random_batch(rng, n_queries=6, max_size=8, real=bool(seed % 2))
    shifts = np.repeat(rng.uniform(-1, 1, off.shape[0] - 1) * shift, np.diff(off))
    for name in STEPS:
        g1, h1 = STEPS[name](s, y, off)
        g2, h2 = STEPS[name](s + shifts, y, off)
        tol = 1e-6 if name == "ranknet" else 1e-9  # ranknet's pair terms are float32
        np.testing.assert_allclose(g1, g2, atol=tol, err_msg=name)
        np.testing.assert_allclose(h1, h2, atol=tol, err_msg=name)
        np.testing.assert_allclose(VALUES[name](s, y, off), VALUES[name](s + shifts, y, off), rtol=1e-9, atol=1e-7)


def test_gradients_sum_to_zero_per_query():
    # softmax losses: sum(rho - phi) = 0 per query; ranknet: every pair adds +p and -p
    s, y, off = random_batch(np.random.default_rng(6))
    for name in ("listnet-diagonal", "ranknet"):
        g, _ = STEPS[name](s, y, off)
        np.testing.assert_allclose(np.add.reduceat(g, off[:-1]), 0, atol=1e-12)
    np.testing.assert_allclose(np.add.reduceat(losses.xendcg_gradient(y, s, off, 0.5), off[:-1]), 0, atol=1e-12)


def test_extreme_scores_stay_finite():
    off = np.array([0, 3], dtype=np.int64)
    s = np.array([800.0, -800.0, 0.0])
    y = np.array([0.0, 4.0, 1.0])
    for name in STEPS:
        g, h = STEPS[name](s, y, off)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)), name
        assert np.all(np.isfinite(VALUES[name](s, y, off))), name


def test_parse_gamma():
    assert losses.parse_gamma("uniform").random
    assert losses.parse_gamma("mean") == losses.GammaStrategy("fixed", 0.5)
    assert losses.parse_gamma("fixed:0.25").value == 0.25
    assert str(losses.parse_gamma("fixed:1")) == "fixed:1"
    for bad in ("fixed:2", "fixed:x", "fixed:-0.1", "normal"):
        with pytest.raises(UsageError):
            losses.parse_gamma(bad)
    g = losses.parse_gamma("uniform").draw(5, np.random.default_rng(0))
    assert g.shape == (5,) and np.all((g >= 0) & (g < 1))


def test_ranknet_memory_stays_bounded_on_a_long_list():
    import tracemalloc

    rng = np.random.default_rng(7)
    m = 3000  # 9M pairs: without the block cap one float64 (m, m) array alone would take 72 MB
    off = np.array([0, m], dtype=np.int64)
    s, y = rng.normal(size=m), rng.integers(0, 5, m).astype(float)
    for f in (losses.ranknet_grad_hess, losses.ranknet_value):
        tracemalloc.start()
        try:
            f(y, s, off)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 32 * losses.common.MAX_PAIR_ELEMENTS + (1 << 20), (f.__name__, peak)


# ------------------------------------------------------------------- large labels, where 2^y overflows float64
def big_label_batch(rng, top=10**6, n_queries=10, max_size=8, real=False):
    s, y, off = random_batch(rng, n_queries=n_queries, max_size=max_size, real=real)
    # per query: labels spread from 0 to top, with ties and neighbours one grade apart (the hard cases)
    base = rng.choice([0.0, 1.0, 2.0, top - 1.0, float(top)], size=y.shape[0])
    return s, (base + y if real else base), off


@pytest.mark.parametrize("seed", range(4))
def test_xendcg_targets_of_labels_up_to_a_million_match_exact_rationals(seed):
    """2^label overflowed from label 1024 on: every target was NaN and the model constant."""
    rng = np.random.default_rng(seed)
    s, y, off = big_label_batch(rng)
    gamma = rng.random(y.shape[0]) if seed % 2 else 0.5
    phi, usable = losses.xendcg_targets(y, off, gamma)
    exact = ref.xendcg_targets_exact(y, off, gamma)
    assert np.all(np.isfinite(phi))
    np.testing.assert_allclose(phi, exact, rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(phi, ref.xendcg_targets_logspace(y, off, gamma), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("top", [30, 1023, 1024, 1100, 10**6])
def test_xendcg_targets_real_labels_match_the_log_space_reference(top):
    rng = np.random.default_rng(top)
    s, y, off = big_label_batch(rng, top=top, real=True)
    gamma = rng.random(y.shape[0])
    phi, _ = losses.xendcg_targets(y, off, gamma)
    np.testing.assert_allclose(phi, ref.xendcg_targets_logspace(y, off, gamma), rtol=1e-10, atol=1e-300)


@pytest.mark.parametrize("seed", range(3))
def test_xendcg_step_with_shifted_labels_equals_the_step_without_gamma(seed):
    """phi(y + c, gamma) = (2^y - gamma 2^-c) / sum(...) -> phi(y, 0) as c grows: with c = 10^6 the Newton step on
    labels y + c equals the step on y with gamma 0, which the dense-matrix reference checks."""
    rng = np.random.default_rng(seed)
    s, y, off = random_batch(rng, n_queries=15, max_size=12, real=bool(seed % 2))
    gamma = rng.random(s.shape[0])
    big = y + 1e6
    y = big - 1e6  # the labels big holds exactly (real labels lose their last bits to the shift)
    grad, hess = losses.xendcg_grad_hess(big, s, off, gamma)
    dgrad, dhess = ref.xendcg_newton_dense(s, y, off, 0.0)
    np.testing.assert_allclose(grad, dgrad, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(hess, dhess, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(losses.xendcg_value(big, s, off, gamma), ref.xendcg_value(s, y, off, 0.0),
                               rtol=1e-12, atol=1e-12)


def test_listnet_and_ranknet_take_large_labels():
    rng = np.random.default_rng(7)
    s, y, off = random_batch(rng, real=True)
    big = y * 1e6
    np.testing.assert_allclose(losses.listnet_value(big, s, off), ref.listnet_value(s, big, off), rtol=1e-12)
    grad, hess = losses.listnet_grad_hess(big, s, off)
    assert np.all(np.isfinite(grad)) and np.all(np.isfinite(hess))
    np.testing.assert_array_equal(losses.ranknet_grad_hess(big, s, off)[0], losses.ranknet_grad_hess(y, s, off)[0])


def test_listnet_labels_spanning_all_of_float64_give_the_exact_limit_without_a_warning():
    """Labels -1.7e308 and 1.7e308 in one query: label - max overflowed to -inf and numpy's "overflow encountered in
    subtract" leaked from rankcli train --loss listnet; the target is still the limit, all mass on the larger label."""
    import warnings

    labels = np.array([-1.7e308, 1.7e308, 0.0, 1e300, -1e300])
    offsets = np.array([0, 3, 5])
    scores = np.array([0.1, -0.2, 0.3, 0.0, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        phi = losses.listnet_target(labels, offsets)
        grad, hess = losses.listnet_grad_hess(labels, scores, offsets, step="diagonal")
        paper = losses.listnet_grad_hess(labels, scores, offsets)
        value = losses.listnet_value(labels, scores, offsets)
    np.testing.assert_array_equal(phi, [0.0, 1.0, 0.0, 1.0, 0.0])
    assert np.all(np.isfinite(grad)) and np.all(np.isfinite(hess)) and np.all(np.isfinite(value))
    assert np.all(np.isfinite(paper[0])) and np.all(np.isfinite(paper[1]))
    np.testing.assert_allclose(grad, losses.listnet_gradient(labels, scores, offsets))


def test_losses_take_labels_scores_offsets_like_the_metrics():
    """One argument order for losses and metrics: (labels, scores, offsets), as rankcli.core.metrics.evaluate."""
    import inspect

    from rankcli.core import ips

    functions = [losses.xendcg_value, losses.xendcg_gradient, losses.xendcg_grad_hess, losses.listnet_value,
                 losses.listnet_gradient, losses.listnet_grad_hess, losses.ranknet_value, losses.ranknet_grad_hess]
    for f in functions:
        assert list(inspect.signature(f).parameters)[:3] == ["labels", "scores", "offsets"], f.__name__
    for f in (ips.ranknet_ips_value, ips.ranknet_ips_grad_hess):
        assert list(inspect.signature(f).parameters)[:3] == ["gain", "scores", "offsets"], f.__name__
    y, s, off = np.array([2.0, 0.0, 1.0]), np.array([0.1, 0.5, -0.2]), np.array([0, 3])
    assert losses.listnet_value(y, s, off)[0] == pytest.approx(ref.listnet_value(s, y, off)[0])
