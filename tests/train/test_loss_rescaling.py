"""ApproxNDCG's temperature, LambdaLoss's sigma and LambdaMART's sigmoid only rescale the model under Newton boosting:
the gradient scales as 1/T and the hessian as 1/T^2, so every step, leaf and score scales by T, the trees and the
rankings stay. Only parameters with an absolute scale on the sums (lambda_l2, min_sum_hessian_in_leaf, lambda_l1,
max_delta_step) and LambdaMART's query normalisation (lambdarank_norm) make them matter."""

from __future__ import annotations

import numpy as np
import pytest

from rankcli.train import LOSSES, TrainConfig, train_model
from tests.letor_sample import load_letor

#: The parameters that would make the scale matter, at the values that do not.
NEUTRAL = {"lambda_l2": 0.0, "min_sum_hessian_in_leaf": 0.0}


@pytest.fixture(scope="module")
def data():
    return load_letor("train", 46), load_letor("vali", 46)


def _train(data, loss, options=None, params=None, trees=8):
    train, valid = data
    config = TrainConfig(loss=loss, trees=trees, early_stopping=0, threads=1, loss_options=options or {},
                         params={**NEUTRAL, **(params or {})})
    result = train_model(train, valid, config)
    scores = result.booster.predict(valid.features.astype(np.float64))
    structure = [(t["tree_structure"].get("split_feature"), t["num_leaves"])
                 for t in result.booster.dump_model()["tree_info"]]
    return scores, result.curve, structure


@pytest.mark.parametrize("loss, option, low, ratio, params, rtol", [
    ("approxndcg", "temperature", 0.1, 5.0, {}, 1e-5),        # scores scale as T
    ("lambdaloss", "sigma", 1.0, 5.0, {}, 1e-5),              # as 1 / sigma
    ("lambdamart", "sigmoid", 1.0, 5.0, {"lambdarank_norm": False}, 1e-4),   # LightGBM's float32 gradients
])
def test_the_scale_option_only_rescales_the_model(data, loss, option, low, ratio, params, rtol):
    def run(value):
        if loss == "lambdamart":
            return _train(data, loss, params={**params, option: value})
        return _train(data, loss, options={option: value}, params=params)

    s1, curve1, trees1 = run(low)
    s5, curve5, trees5 = run(low * ratio)
    predicted = ratio if loss == "approxndcg" else 1.0 / ratio
    assert LOSSES[loss].native or LOSSES[loss].score_unit({option: low * ratio}) / \
        LOSSES[loss].score_unit({option: low}) == pytest.approx(predicted)
    assert trees1 == trees5
    np.testing.assert_allclose(s5, predicted * s1, rtol=rtol, atol=1e-9 * np.abs(s1).max())
    assert curve1 == curve5  # the same rankings after every tree
    assert np.ptp(s1) > 0  # a model, not a constant


@pytest.mark.parametrize("loss, option, params", [
    ("approxndcg", "temperature", {"lambda_l2": 1.0}),
    ("lambdamart", "sigmoid", {"lambdarank_norm": True}),  # LightGBM's default: log2(1 + S) / S per query
])
def test_an_absolute_scale_makes_it_matter(data, loss, option, params):
    def run(value):
        if loss == "lambdamart":
            return _train(data, loss, params={**params, option: value})
        return _train(data, loss, options={option: value}, params=params)

    s1, _, _ = run(1.0)
    s5, _, _ = run(5.0)
    predicted = 5.0 if loss == "approxndcg" else 0.2
    assert not np.allclose(s5, predicted * s1, rtol=1e-3)
