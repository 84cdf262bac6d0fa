"""The boosting step of every library loss at a within-query score gap of 40: float64 (and the float32 pair terms)
give hessians of 0 or 1e-18 beside gradients of about 1; the guard (rankcli.core.losses.guard_hessian) bounds every
document's Newton step, and so every LightGBM leaf, where LightGBM alone took steps of 1e15 and more."""

from __future__ import annotations

import numpy as np
import pytest

from rankcli.core import losses as core
from rankcli.core.losses.common import MAX_NEWTON_STEP
from rankcli.train import LOSSES, LibraryObjective

LIBRARY = [name for name, loss in LOSSES.items() if not loss.native]
# two queries of three documents, labels 2, 1, 0: the best document 40 below the others, the worst 40 above them
LABELS = np.array([2.0, 1.0, 0.0, 2.0, 1.0, 0.0])
SCORES = np.array([-40.0, 0.0, 0.0, 0.0, 0.0, 40.0])
OFFSETS = np.array([0, 3, 6])


def test_at_a_gap_of_40_float64_gives_no_curvature_for_a_gradient_of_one():
    """What the docs promised as `> 0`: ListMLE at (-40, 0, 0) has g = -1 and h = 2.1e-18 (a Newton step of 4.7e17);
    RankNet's and LambdaLoss's float32 pair terms give h = 0 exactly."""
    g, h = core.listmle_grad_hess(LABELS[:3], SCORES[:3], OFFSETS[:2])
    assert g[0] == pytest.approx(-1.0) and 0 < h[0] < 3e-18 and -g[0] / h[0] > 4e17
    for step in (core.ranknet_grad_hess(LABELS, SCORES, OFFSETS),
                 core.lambdaloss_grad_hess(LABELS, SCORES, OFFSETS, "ndcg-loss2++", 10.0, 1.0)):
        g, h = step
        assert abs(g[0]) > 1 and h[0] == 0.0


@pytest.mark.parametrize("loss", LIBRARY)
def test_every_library_step_is_guarded_at_a_gap_of_40(loss):
    objective = LibraryObjective(loss, LABELS, OFFSETS, seed=3)
    g, h = objective(SCORES.copy())
    unit = LOSSES[loss].score_unit()
    assert np.isfinite(g).all() and np.isfinite(h).all() and (h >= 0).all()
    moving = g != 0
    assert moving.any() and (h[moving] > 0).all()
    # every document's Newton step is bounded: |g| / h <= MAX_NEWTON_STEP n unit (n = 3 documents per query)
    assert (np.abs(g[moving]) / h[moving] <= MAX_NEWTON_STEP * 3 * unit * (1 + 1e-12)).all()


@pytest.mark.parametrize("loss, options, unit", [("lambdaloss", {"variant": "ndcg-loss2"}, 1.0),
                                                  ("lambdaloss", {"sigma": "4"}, 0.25),
                                                  ("approxndcg", {"temperature": "0.5"}, 0.5)])
def test_the_guard_is_measured_in_the_loss_s_unit(loss, options, unit):
    objective = LibraryObjective(loss, LABELS, OFFSETS, seed=3, options=options)
    assert objective.unit == unit
    g, h = objective(SCORES.copy())
    assert (np.abs(g) <= MAX_NEWTON_STEP * 3 * unit * h * (1 + 1e-12)).all()


def test_the_guard_leaves_normal_curvature_alone(make_ranking):
    """At ordinary scores the step is the loss's own: the floor raises only hessians that are exactly 0 (rounding)."""
    labels, scores, offsets = make_ranking(40, 30, min_size=2, tie_levels=None)
    n = np.repeat(np.diff(offsets), np.diff(offsets))
    for loss in LIBRARY:
        objective = LibraryObjective(loss, labels, offsets, seed=1)
        raw_g, raw_h = LOSSES[loss].step(objective.labels, offsets, objective.options)(
            scores, objective.gamma_for(0), objective.rng_for(0))
        g, h = objective(scores)
        np.testing.assert_array_equal(g, raw_g)
        floor = np.abs(g) / (MAX_NEWTON_STEP * n * LOSSES[loss].score_unit())
        np.testing.assert_array_equal(h, np.maximum(raw_h, floor))
        assert ((h == raw_h) | (raw_h == 0)).all(), loss


# every pair in the wrong order by 40: every document's curvature vanishes in float64 or float32
REVERSED = np.array([-40.0, 0.0, 40.0] * 4)
GROUPS = np.arange(0, 13, 3)


def _one_tree(objective) -> np.ndarray:
    """The leaf values of one LightGBM tree from the scores REVERSED (learning rate 1, leaves of one document, no
    minimum hessian: the paper presets' min_sum_hessian_in_leaf 0)."""
    import lightgbm

    features = np.arange(12, dtype=np.float64)[:, None]
    ds = lightgbm.Dataset(features, label=np.zeros(12), group=[3] * 4, init_score=REVERSED,
                          params={"min_data_in_bin": 1, "verbosity": -1})
    params = {"objective": objective, "learning_rate": 1.0, "num_leaves": 4, "min_data_in_leaf": 1,
              "min_sum_hessian_in_leaf": 0.0, "lambda_l2": 0.0, "verbosity": -1, "num_threads": 1,
              "deterministic": True, "force_row_wise": True, "seed": 1}
    return lightgbm.train(params, ds, num_boost_round=1).predict(features, raw_score=True)


@pytest.mark.parametrize("loss", LIBRARY)
def test_a_leaf_of_documents_without_curvature_takes_a_bounded_step(loss):
    """Unguarded, LightGBM's leaf -sum g / (sum h + 1e-15) was 9e13 for ListMLE (h = 2e-18), and no step at all
    where h was 0 exactly (the leaf counts as empty); guarded, every leaf is within MAX_NEWTON_STEP n unit."""
    labels = np.array([2.0, 1.0, 0.0] * 4)
    objective = LibraryObjective(loss, labels, GROUPS, seed=3)
    leaves = _one_tree(objective)
    assert np.isfinite(leaves).all()
    assert np.abs(leaves).max() <= MAX_NEWTON_STEP * 3 * LOSSES[loss].score_unit() * (1 + 1e-6)
    if loss == "listmle":
        raw_step = LOSSES[loss].step(objective.labels, GROUPS, objective.options)
        unguarded = _one_tree(lambda preds, data=None: raw_step(np.asarray(preds), 0.5, np.random.default_rng(0)))
        assert np.abs(unguarded).max() > 1e12
