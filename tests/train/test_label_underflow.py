"""Labels whose gain 2^y - 1 underflowed: below about 1.6e-16 it was exactly 0, so ApproxNDCG and LambdaLoss trained a
constant model and validation counted the documents as not relevant, without a word. Training gains are now exact to
rounding for any label of float64's normal range; what no float can carry is refused (exit 3)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rankcli.core import losses
from rankcli.errors import InputError
from rankcli.train import TrainConfig, train_model
from tests.letor_sample import load_letor


def _reference_gains(labels, offsets):
    """(2^y - 1) / maxDCG per row with math.expm1 (exact to rounding for small labels), one query at a time."""
    out = np.zeros(len(labels))
    for a, b in zip(offsets[:-1], offsets[1:]):
        gains = [math.expm1(y * math.log(2)) for y in labels[a:b]]
        ideal = sum(g / math.log2(k + 2) for k, g in enumerate(sorted(gains, reverse=True)))
        if b - a > 1 and ideal > 0:
            out[a:b] = [g / ideal for g in gains]
    return out


@pytest.mark.parametrize("scale", [1e-17, 1e-100, 1e-300, 0.3])
def test_small_labels_have_their_exact_gains(scale):
    labels = np.array([0.0, 1.0, 2.0, 4.0, 0.0, 3.0, 3.0, 1.0]) * scale
    offsets = np.array([0, 4, 8])
    gains, usable = losses.ndcg_gains(labels, offsets)
    assert usable.all() and (gains[labels > 0] > 0).all()
    np.testing.assert_allclose(gains, _reference_gains(labels, offsets), rtol=1e-14)


def test_integer_grades_keep_their_gains_bit_for_bit():
    labels = np.array([0.0, 1.0, 2.0, 4.0, 0.0, 3.0, 3.0, 1.0, 30.0, 1000.0])
    offsets = np.array([0, 4, 8, 10])
    top = np.repeat([4.0, 3.0, 1000.0], [4, 4, 2])
    numer = np.exp2(labels - top) - np.exp2(-top)  # the form the gains had: exact for integers
    gains, _ = losses.ndcg_gains(labels, offsets)
    assert np.array_equal(gains > 0, numer > 0)
    expected = _reference_gains(labels[:8], offsets[:3]).tolist() + [2.0 ** -970 - 2.0 ** -1000, 1.0]
    np.testing.assert_allclose(gains, expected, rtol=1e-14)


@pytest.fixture(scope="module")
def data():
    return load_letor("train", 46), load_letor("vali", 46)


@pytest.mark.parametrize("loss", ["approxndcg", "lambdaloss"])
def test_a_loss_of_normalised_gains_learns_from_labels_of_1e_17(data, loss):
    """The model is not a constant, and labels of 1e-17 and 1e-20 times the grades train the same model: for such
    labels the normalised gain is the linear one, whatever the scale."""
    train, valid = data
    models = []
    for scale in (1e-17, 1e-20):
        tiny = load_letor("train", 46)
        tiny.labels = train.labels * scale
        result = train_model(tiny, None, TrainConfig(loss=loss, trees=4, threads=1, num_leaves=7, min_data_in_leaf=5))
        models.append(result.booster.predict(valid.features.astype(np.float64)))
    assert np.ptp(models[0]) > 0
    np.testing.assert_allclose(models[0], models[1], rtol=1e-6, atol=1e-12)


def test_validation_labels_whose_gain_is_0_are_refused(data):
    train, valid = data
    tiny = load_letor("vali", 46)
    tiny.labels = valid.labels * 1e-17
    with pytest.raises(InputError, match="a label of 1e-17: --select-by ndcg@5 under the paper convention uses the "
                                         "gain 2\\^label - 1, which is 0 in float64"):
        train_model(train, tiny, TrainConfig(loss="xendcg", trees=2, threads=1))
    # the linear gain keeps them
    result = train_model(train, tiny, TrainConfig(loss="xendcg", trees=2, threads=1, convention="sklearn"))
    assert result.curve and all(np.isfinite(result.curve))


@pytest.mark.parametrize("loss, label, message", [
    ("approxndcg", 1e-310, "--loss approxndcg: a label of 1e-310 is below 2.23e-308"),
    ("lambdaloss", 5e-324, "--loss lambdaloss: a label of 4.94066e-324 is below 2.23e-308"),
    ("pointwise", -1e-40, "--loss pointwise (LightGBM regression): a label of -1e-40 is below 1.18e-38"),
])
def test_labels_no_float_of_the_loss_carries_are_refused(data, loss, label, message):
    train, _ = data
    odd = load_letor("train", 46)
    odd.labels = train.labels.copy()
    odd.labels[3] = label
    with pytest.raises(InputError) as err:
        train_model(odd, None, TrainConfig(loss=loss, trees=2, threads=1))
    assert str(err.value).startswith(message) and err.value.exit_status == 3, str(err.value)
