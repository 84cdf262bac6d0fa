"""rankcli.core.trees: float keys and searches, LightGBM's decision rule against LightGBM itself on a hand-made tree
(every missing type), the engines' decisions and sums against plain loops, and the parity analysis."""

from __future__ import annotations

import numpy as np
import pytest

from rankcli.core.trees import semantics as sem
from rankcli.core.trees.ensemble import (
    ZERO_THRESHOLD,
    finite_half_line,
    from_tree_arrays,
    lightgbm_left,
    predict,
)
from rankcli.core.trees.floats import floor32, from_keys, keys, largest_true, solr_preimage, step
from rankcli.core.trees.parity import ranking_changes

F32_MAX = float(np.finfo(np.float32).max)


def test_keys_order_every_float32_and_double(rng):
    bits = rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.sort(bits[~np.isnan(bits)])
    k = keys(x)
    assert np.all(np.diff(k) >= 0) and np.all((np.diff(k) == 0) == (np.diff(x) == 0))
    same = from_keys(k, np.float32)
    assert np.array_equal(same, x)  # -0 comes back as +0, equal as values
    d = np.sort(rng.normal(0, 1e10, 5000) * np.exp(rng.normal(0, 40, 5000)))
    assert np.all(np.diff(keys(d)) > 0) and np.array_equal(from_keys(keys(d), np.float64), d)


def test_floor32_is_the_largest_float32_not_above(rng):
    t = np.concatenate([rng.normal(0, 3, 5000), [0.0, -0.0, 1e-45, -1e-45, ZERO_THRESHOLD, 1e39, -1e39, 0.1]])
    f = floor32(t).astype(np.float64)
    assert np.all(f <= t)
    up = step(floor32(t), True).astype(np.float64)
    assert np.all(up > t)  # the next float32 is above: no float32 lies in (f, t]


def test_largest_true_finds_each_breakpoint(rng):
    cuts = rng.normal(0, 10, 300)
    for dtype in (np.float32, np.float64):
        got, any_true = largest_true(lambda v: v.astype(np.float64) <= cuts, cuts.size, dtype)
        assert any_true.all()
        assert np.all(got.astype(np.float64) <= cuts) and np.all(step(got, True).astype(np.float64) > cuts)


def test_solr_preimage_lands_exactly_or_names_the_nearest(rng):
    targets = np.concatenate([rng.normal(0, 5, 2000), rng.normal(0, 1e-7, 200), [ZERO_THRESHOLD, 0.0, 1e-6, -2e-6]])
    targets = floor32(targets)
    written, reached = solr_preimage(targets)
    assert np.array_equal(written + np.float32(1e-6), reached)  # Java's float addition
    exact = reached == targets
    assert exact[np.abs(targets) > 1e-5].all()
    # where none lands exactly, no float32 near the written one does better
    for i in np.flatnonzero(~exact)[:20]:
        around = written[i] + np.arange(-64, 65, dtype=np.float32) * np.spacing(written[i])
        best = np.abs((around + np.float32(1e-6)).astype(np.float64) - targets[i]).min()
        assert abs(float(reached[i]) - float(targets[i])) <= best
    at = np.flatnonzero(targets == floor32(np.array([ZERO_THRESHOLD]))[0])
    assert at.size and np.all(reached[at] == 0.0) and not exact[at].any()


HAND_MODEL = """tree
version=v4
num_class=1
num_tree_per_iteration=1
label_index=0
max_feature_idx=2
objective=lambdarank
feature_names=a b c
feature_infos=[-10:10] [-10:10] [-10:10]

Tree=0
num_leaves=4
num_cat=0
split_feature=0 1 2
split_gain=1 1 1
threshold=0.5 {zero_t} -1.25
decision_type={d0} {d1} {d2}
left_child=1 -1 -2
right_child=2 -3 -4
leaf_value=1 2 4 8
leaf_weight=1 1 1 1
leaf_count=1 1 1 1
internal_value=0 0 0
internal_weight=1 1 1
internal_count=4 2 2
is_linear=0
shrinkage=1


end of trees

pandas_categorical:null
"""


@pytest.mark.parametrize("d", [(2, 4, 8), (0, 6, 10), (8, 2, 0), (10, 6, 2)])
def test_lightgbm_decision_matches_lightgbm_itself(d):
    """A hand-made tree (a <= 0.5; b <= t of missing type Zero; c <= -1.25 of missing type NaN) scored by LightGBM
    and by :func:`predict` on values at, beside and around every threshold, 0, +-1e-35, NaN and +-inf."""
    import lightgbm

    zero_t = 1e-36
    booster = lightgbm.Booster(model_str=HAND_MODEL.format(zero_t=zero_t, d0=d[0], d1=d[1], d2=d[2]))
    values = np.array([0.5, np.nextafter(0.5, 1), -1.25, np.nextafter(-1.25, 0), 0.0, -0.0, ZERO_THRESHOLD,
                       -ZERO_THRESHOLD, np.nextafter(ZERO_THRESHOLD, 1), zero_t, np.nan, np.inf, -np.inf, 3.0, -3.0])
    grid = np.array(np.meshgrid(values, values, values)).reshape(3, -1).T
    thresholds = [0.5, zero_t, -1.25]
    ens = from_tree_arrays([([0, 1, 2], thresholds, list(d), [1, -1, -2], [2, -3, -4], [1.0, 2.0, 4.0, 8.0])])
    assert np.array_equal(predict(ens, grid), booster.predict(grid, raw_score=True))


def test_finite_half_line_zero_type():
    z = ZERO_THRESHOLD
    t = np.array([0.5, -0.5, 0.0, 0.5, -0.5, 0.0])
    dt = np.array([6, 6, 6, 4, 4, 4])  # Zero type; default left (6) or right (4)
    t_eff, ok = finite_half_line(t, dt)
    assert ok.tolist() == [True, False, True, False, True, True]
    assert t_eff[0] == 0.5 and t_eff[2] == z and t_eff[4] == -0.5 and t_eff[5] == np.nextafter(-z, -np.inf)
    x = np.array([-1.0, -z, 0.0, z, 0.25, 1.0])
    for i in np.flatnonzero(ok):
        got = lightgbm_left(x, np.full(x.size, t[i]), np.full(x.size, dt[i]))
        assert np.array_equal(got, x <= t_eff[i])


def test_engine_left_semantics():
    splits = sem.Splits(cut=np.array([0.5, 0.5, 0.5]), strict=np.array([False, True, False]),
                        nan=np.array([sem.NAN_LEFT, sem.NAN_RIGHT, sem.NAN_AS_ZERO]), precision=np.float32)
    nodes = np.repeat(np.arange(3), 4)
    values = np.tile(np.array([0.5, 0.25, np.nan, 0.75]), 3)
    assert sem.engine_left(splits, nodes, values).tolist() == [
        True, True, True, False,  # <=, NaN left
        False, True, False, False,  # <, NaN right
        True, True, True, False]  # <=, NaN is 0
    double = np.array([0.1])  # a double between float32s: a float32 engine holds the nearest float32
    f32 = sem.Splits(np.array([float(np.float32(0.1))]), np.array([False]), np.array([0]), np.float32)
    assert sem.engine_left(f32, np.array([0]), double)[0]
    es = sem.Splits(np.array([0.0]), np.array([False]), np.array([sem.NAN_LEFT]), np.float64, inf_is_missing=True)
    assert sem.engine_left(es, np.zeros(2, int), np.array([np.inf, -np.inf])).tolist() == [True, True]


def _java_kahan(values):
    s = c = simple = 0.0
    for v in values:
        y = v - c
        t = s + y
        c = (t - s) - y
        s = t
        simple += v
    return s - c


def test_sums_follow_each_engine(rng):
    terms = rng.normal(0, 1, (50, 40)) * np.exp(rng.normal(0, 3, (50, 40)))
    t32 = terms.astype(np.float32)
    f32 = []
    ranklib = []
    for row in t32:
        s = np.float32(0)
        r = np.float32(0)
        for v in row:
            s = np.float32(s + v)
            r = np.float32(float(r) + float(v) * 1.0)
        f32.append(float(s)), ranklib.append(float(r))
    assert np.array_equal(sem.add_trees(t32, sem.SUM_FLOAT32), f32)
    assert np.array_equal(sem.add_trees(t32.astype(np.float64), sem.SUM_RANKLIB), ranklib)
    kahan = np.array([_java_kahan(row) for row in terms])
    assert np.array_equal(sem.java_double_sum(terms), kahan)
    assert np.array_equal(sem.add_trees(terms, sem.SUM_KAHAN_FLOAT32), kahan.astype(np.float32))
    plain = [sum(row.tolist(), 0.0) for row in terms]  # left to right, as Python's sum and LightGBM add
    assert np.array_equal(sem.add_trees(terms, sem.SUM_DOUBLE), plain)
    exact = np.array([float(sum(map(__import__("fractions").Fraction, row.tolist()))) for row in terms])
    bound = sem.rounding_bound(np.abs(terms).sum(axis=1), 40, sem.SUM_FLOAT32, exact)
    assert np.all(np.abs(sem.add_trees(terms.astype(np.float32), sem.SUM_FLOAT32) - exact) <= bound)


def test_ranking_changes_against_the_bound():
    offsets = np.array([0, 3, 6])
    reference = np.array([3.0, 2.0, 1.0, 3.0, 2.0, 1.0])
    engine = np.array([3.0, 1.0, 2.0, 3.0, 2.0, 1.0])
    tight = np.full(6, 1e-9)
    assert ranking_changes(reference, engine, tight, offsets) == {"changed": 1, "beyond_bound_rows": 2,
                                                                 "changed_beyond_bound": 1}
    loose = np.full(6, 2.0)
    assert ranking_changes(reference, engine, loose, offsets)["changed_beyond_bound"] == 0
