"""rankcli.compare.compare_values: pairs, NaN handling, corrections and decisions on hand-made vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from rankcli.compare import compare_values, pairs_for


def test_pairs():
    assert pairs_for(["a", "b", "c"], None) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert pairs_for(["a", "b", "c"], "b") == [("b", "a"), ("b", "c")]


def test_compare_values_nan_queries_and_decisions():
    rng = np.random.default_rng(0)
    base = rng.random(40)
    better = base + 0.2 + rng.normal(0, 0.05, 40)
    same = base.copy()
    base[3] = np.nan                                    # a query the baseline has no value for
    values = {"base": {"m": base}, "better": {"m": better}, "same": {"m": same}}
    means, used, comps, correction = compare_values(values, ["m"], baseline="base")
    assert used == {"m": 39} and correction == "holm"
    keep = ~np.isnan(base)
    assert means["better"]["m"] == pytest.approx(better[keep].mean())
    c_better, c_same = comps
    assert (c_better.a, c_better.b) == ("base", "better")
    assert c_better.result.p_value == pytest.approx(sps.ttest_rel(better[keep], base[keep]).pvalue)
    assert c_better.p_adjusted == pytest.approx(min(1.0, 2 * c_better.result.p_value))   # Holm, m = 2, smallest
    assert c_better.decision == "better" and c_better.wins == 39
    assert c_same.decision == "not significant" and c_same.result.p_value == 1.0 and c_same.ties == 39
    assert c_same.p_adjusted == 1.0


def test_compare_values_not_testable():
    values = {"a": {"m": np.array([0.5, np.nan])}, "b": {"m": np.array([0.7, 0.1])}}
    means, used, comps, correction = compare_values(values, ["m"])
    assert used == {"m": 1} and correction == "none"
    assert comps[0].decision == "not testable" and math.isnan(comps[0].p_adjusted) and not comps[0].significant
