"""rankcli.train.ips: the pooled training set of a click log. Naive and IPS training differ only in the propensities:
one global target scale for both, checked by simulation on randomised logs (the control), for every loss that takes
IPS."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankcli.core import ips as core
from rankcli.core import losses
from rankcli.dataset import Dataset
from rankcli.simulate import simulate_clicks
from rankcli.train.ips import pooled_training_set

# Three queries of eight documents (grades 0..4): every impression shows every document, in a random order.
GRADES = np.array([0, 4, 1, 2, 0, 3, 1, 0,   1, 0, 4, 0, 2, 0, 0, 1,   2, 2, 0, 0, 3, 1, 0, 0], dtype=np.float64)
OFFSETS = np.array([0, 8, 16, 24])
SCORES = np.tile(np.linspace(1, -1, 8), 3)

#: The gradient each IPS loss trains on, as a function of its labels (a new IPS loss must add its own here).
GRADIENTS = {
    "xendcg": lambda y: losses.xendcg_gradient(y, SCORES, OFFSETS, 0.5),
    "listnet": lambda y: losses.listnet_gradient(y, SCORES, OFFSETS),
    "pointwise": lambda y: SCORES - y,
    "ranknet": lambda y: core.ranknet_ips_grad_hess(y, SCORES, OFFSETS)[0],
    "approxndcg": lambda y: losses.approxndcg_gradient(y, SCORES, OFFSETS),
    "lambdaloss": lambda y: losses.lambdaloss_gradient(y, SCORES, OFFSETS),
}


def source():
    return Dataset(qids=np.repeat([1, 2, 3], 8), labels=GRADES, features=np.zeros((24, 1), np.float32),
                   feature_names=["f1"], docids=None, offsets=OFFSETS, metadata={})


def randomised_log(impressions, rng):
    log, _ = simulate_clicks(source(), model="pbm", eta=1.0, impressions=impressions, ranker="random",
                             keep_no_click=True, rng=rng)
    return log


def test_one_global_target_scale_for_naive_and_ips():
    """The pooled gains are divided by their mean over every pooled document (one factor for the whole training set,
    not one per query), naive and IPS alike, and rankcli.json records the factor."""
    log = randomised_log(40, np.random.default_rng(0))
    for spec in (None, ("pbm", 1.0)):
        raw, _ = pooled_training_set(log, loss="pointwise", propensity=spec)
        g = raw.labels  # pointwise: the label is the scaled gain itself
        assert g.mean() == pytest.approx(1.0)
        weights = 1.0 if spec is None else core.inverse_weights(log.extra["position"], core.pbm_propensities(1, 8))
        clicks = log.labels * weights
        per_doc = np.bincount(log.extra["source_row"], weights=clicks, minlength=24) / 40  # 40 impressions a query
        np.testing.assert_allclose(g, per_doc / per_doc.mean(), rtol=1e-12)
        _, info = pooled_training_set(log, loss="xendcg", propensity=spec)
        assert info["target_scale"] == {"rule": "g / mean(g over the pooled documents)",
                                        "divisor": pytest.approx(per_doc.mean(), rel=1e-12)}


def test_naive_and_ips_agree_on_a_randomised_log_for_every_loss():
    """The control, by Monte Carlo: on logs whose display order is uniformly random (PBM clicks, eta 1), the
    click-through rate is already unbiased up to one constant, so naive pooling and IPS must train on the same
    gradient in expectation, for every loss that takes IPS. Paired over 150 logs of 200 impressions per query, the mean
    difference of the two gradients is within 4 standard errors at every document. (ApproxNDCG and LambdaLoss are
    ratio estimators whose bias depends on the labels' noise, which IPS raises: at 50 impressions LambdaLoss's
    |G_i - G_j| over pairs that noise orders gave a mean difference of 6% of its gradient, 4.0 standard errors; at
    200 impressions 2.0.) Without the common target scale
    the naive XE-NDCG and ListNet targets were flatter (click rates near 0.1 against IPS gains near 0.4) and pointwise
    and RankNet gradients differed by the scale itself: the naive models scored 0.47-0.54 NDCG@5 against IPS's
    0.72-0.76 with xendcg on such a log (docs/clicks.md)."""
    assert set(GRADIENTS) == set(core.IPS_LABELS)
    rng = np.random.default_rng(1)
    diffs = {loss: [] for loss in GRADIENTS}
    for _ in range(150):
        log = randomised_log(200, rng)
        for loss, gradient in GRADIENTS.items():
            naive, _ = pooled_training_set(log, loss=loss, propensity=None)
            ips, _ = pooled_training_set(log, loss=loss, propensity=("pbm", 1.0))
            assert np.array_equal(naive.qids, ips.qids) and naive.n_rows == 24  # the same documents, in one order
            diffs[loss].append(gradient(naive.labels) - gradient(ips.labels))
    for loss, d in diffs.items():
        d = np.array(d)
        mean, se = d.mean(axis=0), d.std(axis=0, ddof=1) / np.sqrt(d.shape[0])
        assert np.all(np.abs(mean) <= 4 * se), (loss, mean / se)


def test_ips_still_debiases_a_log_in_a_rankers_order():
    """The scale does not make naive and IPS alike where position and relevance are confounded: a log in the label
    order (the best documents on top), naive pooling over-rates the top documents relative to IPS."""
    log, _ = simulate_clicks(source(), model="pbm", eta=1.0, impressions=400, ranker="label", keep_no_click=True,
                             rng=np.random.default_rng(2))
    naive, _ = pooled_training_set(log, loss="pointwise", propensity=None)
    ips, _ = pooled_training_set(log, loss="pointwise", propensity=("pbm", 1.0))
    gamma = np.asarray((0.05, 0.3, 0.5, 0.7, 0.95))[GRADES.astype(int)]
    best = GRADES == 4
    # IPS recovers gamma / mean(gamma); naive inflates the top-ranked documents' share
    np.testing.assert_allclose(ips.labels[best], (gamma / gamma.mean())[best], rtol=0.15)
    assert np.all(naive.labels[best] > 1.3 * ips.labels[best])


def test_an_in_memory_log_carries_its_own_click_model():
    """A log simulated in memory (experiment --position-bias) says how it was made, as the file's footer does, so IPS
    training checks it (a cascade log is refused) and never reads the source's footer for it."""
    from rankcli.errors import InputError

    src = source()
    src.metadata = {"clicks": json.dumps({"model": "cascade", "keep_no_click": False})}  # a click log as the source
    pbm, _ = simulate_clicks(src, model="pbm", impressions=5, ranker="random", keep_no_click=True,
                             rng=np.random.default_rng(3))
    assert json.loads(pbm.metadata["clicks"])["model"] == "pbm"
    pooled_training_set(pbm, loss="xendcg", propensity=("pbm", 1.0))
    cascade, _ = simulate_clicks(source(), model="cascade", impressions=5, ranker="random", keep_no_click=True,
                                 rng=np.random.default_rng(3))
    with pytest.raises(InputError, match="made with the cascade click model"):
        pooled_training_set(cascade, loss="xendcg", propensity=("pbm", 1.0))
