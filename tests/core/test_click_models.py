"""The click models of rankcli.core.click_models against independent references: likelihoods derived by hand on a
three-session log, closed-form counts by hand, EM against an enumeration of every latent variable
(tests/reference_click_models.py), and simulation against the model's own click probabilities."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rankcli.core import click_models as cm
from rankcli.core.click_models import chain
from rankcli.core.click_models.evaluation import evaluate
from rankcli.core.click_models.simulation import list_parameters
from tests.reference_click_models import L_MAX, em

# The three-session log: items per rank, clicks per rank.
ITEMS = [[0, 1, 2], [1, 0], [2, 0, 1]]
CLICKS = [[1, 0, 0], [0, 1], [0, 0, 0]]
A = np.array([0.6, 0.3, 0.2])  # attractiveness per item
SIGMA = np.array([0.5, 0.4, 0.7])  # DBN satisfaction per item
GAMMA = 0.8
EXAM = np.array([0.9, 0.5, 0.25])
TAU = (0.7, 0.6, 0.3)
LAMBDA = np.array([0.7, 0.5, 0.3])


def three_sessions() -> cm.Sessions:
    offsets = np.cumsum([0] + [len(s) for s in ITEMS])
    return cm.Sessions(offsets, np.concatenate(ITEMS), np.concatenate(CLICKS).astype(bool), 3)


def ubm_grid() -> np.ndarray:
    """gamma[rank k (0-based), previous click j (1-based, 0: none)] for R = 3."""
    g = np.zeros((3, 3))
    g[0, 0], g[1, 0], g[1, 1], g[2, 0], g[2, 1], g[2, 2] = 0.9, 0.5, 0.7, 0.3, 0.6, 0.65
    return g


def by_hand(name: str) -> list[float]:
    """Each session's probability, summed over the latent paths by hand (the book's definitions)."""
    a, s, g, (t1, t2, t3) = A, SIGMA, GAMMA, TAU
    if name == "gctr":
        rho = 0.3
        return [rho * (1 - rho) ** 2, (1 - rho) * rho, (1 - rho) ** 3]
    if name == "rctr":
        r = [0.4, 0.2, 0.1]
        return [r[0] * (1 - r[1]) * (1 - r[2]), (1 - r[0]) * r[1], (1 - r[0]) * (1 - r[1]) * (1 - r[2])]
    if name == "dctr":
        return [a[0] * (1 - a[1]) * (1 - a[2]), (1 - a[1]) * a[0], (1 - a[2]) * (1 - a[0]) * (1 - a[1])]
    if name == "pbm":
        e = EXAM
        return [a[0] * e[0] * (1 - a[1] * e[1]) * (1 - a[2] * e[2]), (1 - a[1] * e[0]) * a[0] * e[1],
                (1 - a[2] * e[0]) * (1 - a[0] * e[1]) * (1 - a[1] * e[2])]
    if name == "ubm":
        u = ubm_grid()
        return [a[0] * u[0, 0] * (1 - a[1] * u[1, 1]) * (1 - a[2] * u[2, 1]), (1 - a[1] * u[0, 0]) * a[0] * u[1, 0],
                (1 - a[2] * u[0, 0]) * (1 - a[0] * u[1, 0]) * (1 - a[1] * u[2, 0])]
    if name == "cascade":  # a click below the first one is ruled out: 1 - FLOOR for the skips after it
        f = 1e-6
        return [a[0] * (1 - f) ** 2, (1 - a[1]) * a[0], (1 - a[2]) * (1 - a[0]) * (1 - a[1])]
    if name == "dcm":  # after a click at rank k the user goes on with lambda_k; after a skip always
        lam = LAMBDA
        return [a[0] * ((1 - lam[0]) + lam[0] * (1 - a[1]) * (1 - a[2])), (1 - a[1]) * a[0],
                (1 - a[2]) * (1 - a[0]) * (1 - a[1])]
    if name in ("dbn", "sdbn"):
        g = 1.0 if name == "sdbn" else g
        after = (1 - g) + g * (1 - a[1]) * ((1 - g) + g * (1 - a[2]))  # unsatisfied at rank 1, no click below
        return [a[0] * (s[0] + (1 - s[0]) * after), (1 - a[1]) * g * a[0],
                (1 - a[2]) * ((1 - g) + g * (1 - a[0]) * ((1 - g) + g * (1 - a[1])))]
    if name == "ccm":
        go_on = a[0] * t3 + (1 - a[0]) * t2  # after a click on item 0 (satisfied with probability a[0])
        rest = (1 - go_on) + go_on * (1 - a[1]) * ((1 - t1) + t1 * (1 - a[2]))
        return [a[0] * rest, (1 - a[1]) * t1 * a[0],
                (1 - a[2]) * ((1 - t1) + t1 * (1 - a[0]) * ((1 - t1) + t1 * (1 - a[1])))]
    raise AssertionError(name)


def hand_values(name: str) -> dict:
    return {"gctr": {"ctr": np.array([0.3])}, "rctr": {"ctr": np.array([0.4, 0.2, 0.1])}, "dctr": {"ctr": A},
            "pbm": {"attr": A, "exam": EXAM}, "ubm": {"attr": A, "exam": ubm_grid().ravel()},
            "cascade": {"attr": A}, "dcm": {"attr": A, "cont": LAMBDA},
            "dbn": {"attr": A, "sat": SIGMA, "cont": np.array([GAMMA])}, "sdbn": {"attr": A, "sat": SIGMA},
            "ccm": {"attr": A, "tau1": np.array([TAU[0]]), "tau2": np.array([TAU[1]]),
                    "tau3": np.array([TAU[2]])}}[name]


@pytest.mark.parametrize("name", cm.MODELS)
def test_log_likelihood_of_three_sessions_by_hand(name):
    model = cm.get_model(name)
    ev = evaluate(model, three_sessions(), hand_values(name), cm.Layout(3, 3))
    expected = np.log(by_hand(name))
    assert np.allclose(ev.per_session, expected, rtol=0, atol=1e-12)
    assert math.isclose(ev.log_likelihood, expected.sum(), abs_tol=1e-12)
    per_result = np.mean([e / len(s) for e, s in zip(expected, ITEMS)])  # PyClick's mean per result
    assert math.isclose(ev.log_likelihood_pyclick, per_result, abs_tol=1e-12)


def test_full_click_probabilities_of_dbn_by_hand():
    """P(C_k = 1) summed over the paths, and the perplexity at rank 1 from its definition."""
    ev = evaluate(cm.DBN(), three_sessions(), hand_values("dbn"), cm.Layout(3, 3))
    a, s, g = A, SIGMA, GAMMA
    # session 3 shows items 2, 0, 1: examined at rank 2 with g ((1 - s2) a2 + 1 - a2)
    p_rank1 = [a[0], a[1], a[2]]
    observed = [p_rank1[0], 1 - p_rank1[1], 1 - p_rank1[2]]
    assert math.isclose(ev.perplexity_at_rank[0], 2 ** (-np.mean(np.log2(observed))), rel_tol=1e-12)
    exam2 = g * ((1 - s[2]) * a[2] + 1 - a[2])
    predicted_rank2 = np.mean([a[1] * g * ((1 - s[0]) * a[0] + 1 - a[0]), a[0] * g * ((1 - s[1]) * a[1] + 1 - a[1]),
                               a[0] * exam2])
    assert math.isclose(ev.predicted_click_rate_at_rank[1], predicted_rank2, rel_tol=1e-12)


def test_closed_form_counts_by_hand():
    """(1 + clicks) / (2 + impressions) over the results each model counts, on the three sessions."""
    s = three_sessions()
    fit = {n: cm.fit(cm.get_model(n), s).values for n in ("dctr", "cascade", "dcm", "sdbn", "rctr", "gctr")}
    assert np.allclose(fit["gctr"]["ctr"], [(1 + 2) / (2 + 8)])
    assert np.allclose(fit["rctr"]["ctr"], [(1 + 1) / (2 + 3), (1 + 1) / (2 + 3), (1 + 0) / (2 + 2)])
    assert np.allclose(fit["dctr"]["ctr"], [(1 + 2) / (2 + 3), (1 + 0) / (2 + 3), (1 + 0) / (2 + 2)])
    # cascade: results at or above the first click (all of session 3)
    assert np.allclose(fit["cascade"]["attr"], [(1 + 2) / (2 + 3), (1 + 0) / (2 + 2), (1 + 0) / (2 + 1)])
    # DCM and SDBN: at or above the last click (all of session 3)
    assert np.allclose(fit["dcm"]["attr"], fit["sdbn"]["attr"])
    assert np.allclose(fit["sdbn"]["attr"], [(1 + 2) / (2 + 3), (1 + 0) / (2 + 2), (1 + 0) / (2 + 1)])
    # DCM's lambda_k: clicks at rank k that are not the session's last; SDBN's sigma: last clicks over clicks
    assert np.allclose(fit["dcm"]["cont"], [(1 + 0) / (2 + 1), (1 + 0) / (2 + 1), 0.5])
    assert np.allclose(fit["sdbn"]["sat"], [(1 + 2) / (2 + 2), 0.5, 0.5])


def random_log(rng, n_sessions=25, n_items=6, max_len=4, p_click=0.35):
    lens = rng.integers(1, max_len + 1, n_sessions)
    items = [list(rng.integers(0, n_items, int(n))) for n in lens]
    clicks = [list((rng.random(int(n)) < p_click).astype(int)) for n in lens]
    offsets = np.concatenate(([0], np.cumsum(lens)))
    sessions = cm.Sessions(offsets, np.concatenate(items), np.concatenate(clicks).astype(bool), n_items)
    return sessions, list(zip(items, clicks))


@pytest.mark.parametrize("name", ["pbm", "ubm", "dbn", "ccm"])
def test_em_equals_the_enumeration_of_every_latent_variable(name, rng):
    sessions, ref_log = random_log(rng)
    ref, history = em(name, ref_log, sessions.n_items, iterations=4)
    fit = cm.fit(cm.get_model(name), sessions, iterations=4)
    R = sessions.max_rank
    for family, values in fit.values.items():
        expected = np.array(ref[family])
        if name == "ubm" and family == "exam":
            expected = expected.reshape(L_MAX, L_MAX)[:R, :R].ravel()
        elif family == "exam":
            expected = expected[:R]
        assert np.allclose(values, expected, rtol=0, atol=1e-12), family
    assert np.allclose(fit.log_likelihood, history, rtol=0, atol=1e-9)


def test_em_weights_are_multiplicities(rng):
    """A session of weight 2 counts as the session twice (what the bootstrap relies on)."""
    sessions, _ = random_log(rng, n_sessions=12)
    twice = cm.subset(sessions, np.repeat(np.arange(12), [2 if i % 3 == 0 else 1 for i in range(12)]))
    weighted = cm.Sessions(sessions.offsets, sessions.item, sessions.click, sessions.n_items,
                           weight=np.where(np.arange(12) % 3 == 0, 2.0, 1.0))
    for name in ("pbm", "dbn"):
        a = cm.fit(cm.get_model(name), twice, iterations=3).values
        b = cm.fit(cm.get_model(name), weighted, iterations=3).values
        assert all(np.allclose(a[f], b[f], atol=1e-12) for f in a)


def test_threads_and_partitions_do_not_change_the_fit(rng, monkeypatch):
    from rankcli.core.click_models import em as em_module
    from rankcli.core.click_models import sessions as sessions_module

    monkeypatch.setattr(sessions_module, "CHUNK_SESSIONS", 7)
    monkeypatch.setattr(em_module, "PARTITION_BLOCKS", 2)
    sessions, _ = random_log(rng, n_sessions=60)
    one = cm.fit(cm.DBN(), sessions, iterations=5, threads=1)
    two = cm.fit(cm.DBN(), cm.Sessions(sessions.offsets, sessions.item, sessions.click, sessions.n_items),
                 iterations=5, threads=3)
    assert all(np.array_equal(one.values[f], two.values[f]) for f in one.values)
    assert one.log_likelihood == two.log_likelihood


def test_tolerance_stops_when_the_gain_per_session_is_small(rng):
    sessions, _ = random_log(rng, n_sessions=40)
    full = cm.fit(cm.PBM(), sessions, iterations=200)
    stopped = cm.fit(cm.PBM(), sessions, iterations=200, tolerance=1e-4)
    assert stopped.converged and stopped.iterations < 200
    gains = np.diff(full.log_likelihood) / sessions.n_sessions
    assert gains[stopped.iterations - 1] < 1e-4 <= gains[stopped.iterations - 2]
    assert len(stopped.log_likelihood) == stopped.iterations + 1


def test_prior_and_cap():
    from rankcli.errors import UsageError

    for bad in ((2.0, 2.0), (0.0, 2.0), (1.0, float("nan"))):
        with pytest.raises(UsageError):
            cm.Prior(*bad)
    with pytest.raises(UsageError):
        cm.Prior(1.0, 2.0, 0.0)
    s = cm.Sessions([0, 1], [0], [True], 1)
    values = cm.fit(cm.PBM(), s, iterations=50, prior=cm.Prior(1.0, 2.0, 1e-3)).values
    assert values["attr"].max() <= 1 - 1e-3 and values["exam"].max() <= 1 - 1e-3
    unseen = cm.fit(cm.DCTR(), cm.Sessions([0, 1], [0], [True], 2), prior=cm.Prior(1.0, 3.0)).values["ctr"]
    assert np.allclose(unseen, [(1 + 1) / (3 + 1), 1 / 3])  # an item without observations keeps the prior's value


@pytest.mark.parametrize("name", cm.MODELS)
def test_simulation_follows_the_full_click_probabilities(name):
    """Lists drawn by ClickModel.simulate click at each rank as often as the model's P(C_k = 1) says."""
    rng = np.random.default_rng(7)
    model = cm.get_model(name)
    m, L = 40000, 3
    items = np.tile(np.array([[0], [1], [2]]), (1, m))
    values = hand_values(name)
    layout = cm.Layout(3, 3)
    clicks, examined = model.simulate(list_parameters(model, values, items, layout), (L, m), rng)
    assert not (clicks & ~examined).any()
    block = cm.Sessions(np.arange(0, 3 * m + 1, 3), items.T.ravel(), clicks.T.ravel(), 3).blocks()[0]
    _, full = model.probabilities(block, cm.gather(model, values, block, layout))
    se = np.sqrt(full[:, 0] * (1 - full[:, 0]) / m)
    assert np.all(np.abs(clicks.mean(axis=1) - full[:, 0]) < 4.5 * se + 1e-9)


def test_chain_tail_is_the_probability_of_the_observed_clicks_below(rng):
    """B_k (chain.tail) equals the forward pass started at rank k with the examination certain."""
    sessions, _ = random_log(rng, n_sessions=30, max_len=5)
    for b in sessions.blocks():
        ch = chain.Chain.of((b.L, b.m), rng.uniform(0.1, 0.9, (b.L, b.m)), rng.uniform(0.1, 0.9, (b.L, b.m)),
                            0.7, 0.6, 0.2)
        tails = chain.tail(b, ch)
        for k in range(b.L):
            sub = cm.Sessions(np.arange(b.m + 1) * (b.L - k), b.item[k:].T.ravel(), b.click[k:].T.ravel(), 10)
            sb = sub.blocks()[0]
            part = chain.Chain.of((b.L - k, b.m), ch.a[k:], ch.q[k:], 0.7, 0.6, 0.2)
            assert np.allclose(np.exp(np.log(chain.forward(sb, part)[1]).sum(axis=0)), tails[k], atol=1e-12)


@pytest.mark.parametrize("name", ["dbn", "ccm"])
def test_sessions_whose_clicks_underflow_are_refused_not_fitted_to_nan(name, rng):
    """The chain models' E-step multiplies the probabilities of every click below a rank: in a session of 1,500
    results and ~750 clicks that product is below the smallest float, and the posteriors were 0/0 (NaN parameters,
    numpy warnings, then a traceback writing them). Such a log is refused (exit 3) naming the longest session."""
    import warnings

    from rankcli.errors import InputError

    L, n = 1500, 4
    clicks = rng.random(n * L) < 0.5
    sessions = cm.Sessions(np.arange(n + 1) * L, rng.integers(0, 3000, n * L), clicks, 3000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError, match="underflow"):
            cm.fit(cm.get_model(name), sessions, iterations=2)
    short = cm.Sessions(np.arange(n + 1) * 10, rng.integers(0, 30, n * 10), rng.random(n * 10) < 0.5, 30)
    fitted = cm.fit(cm.get_model(name), short, iterations=2)  # a usual log: finite, no warning
    assert all(np.isfinite(v).all() for v in fitted.values.values())


@pytest.mark.parametrize("name", ["pbm", "ubm", "dbn", "ccm"])
def test_a_prior_so_near_0_that_clicks_underflow_is_refused(name, rng):
    """--prior 1e-300/1 passes 0 < a < b, but attractiveness times examination (1e-600) is 0 in floating point: the
    starting log-likelihood was -inf, which model.json could not hold (a traceback). It is a usage error now; a small
    prior that floating point holds still fits."""
    import warnings

    from rankcli.errors import UsageError

    sessions = cm.Sessions(np.arange(21) * 10, rng.integers(0, 30, 200), rng.random(200) < 0.4, 30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UsageError, match="prior: the log-likelihood under the starting value 1e-300 is -inf"):
            cm.fit(cm.get_model(name), sessions, iterations=2, prior=cm.Prior(1e-300, 1.0))
    fitted = cm.fit(cm.get_model(name), sessions, iterations=2, prior=cm.Prior(1e-4, 1.0))
    assert np.isfinite(fitted.log_likelihood).all()
