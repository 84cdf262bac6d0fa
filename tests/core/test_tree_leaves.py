"""rankcli.core.trees.leaves (the compiled walk, rankcli.core.trees.leaf_walk) against LightGBM's own ``pred_leaf`` on
every (row, tree) pair: models trained by LightGBM (lambdarank and rank_xendcg; missing types None, Zero and NaN;
zero-versus-positive splits at 1e-35) on rows holding NaN, zeros, +-inf, values exactly on and beside every
threshold, in float32, float64 and integers; hand-made and random trees of every decision type; one tree, one row,
no rows, trees of one leaf; and the path without the compiled walk, which leaves the leaves to LightGBM."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankcli.core.trees import leaves as L
from rankcli.core.trees.ensemble import ZERO_THRESHOLD, Ensemble, from_tree_arrays
from rankcli.formats.lightgbm_text import parse_model_text
from tests.core.test_trees import HAND_MODEL

lightgbm = pytest.importorskip("lightgbm")
built = pytest.mark.skipif(L.leaf_walk is None, reason="the compiled walk is not built (no C compiler)")

#: Values every column is also given: zeros of both signs, LightGBM's zero threshold and its neighbours (values that
#: reach the trees as 0 and the smallest that do not), NaN, the infinities, a subnormal.
SPECIAL = np.array([0.0, -0.0, ZERO_THRESHOLD, -ZERO_THRESHOLD, np.nextafter(ZERO_THRESHOLD, 1),
                    np.nextafter(-ZERO_THRESHOLD, -1), np.nextafter(ZERO_THRESHOLD, 0), 1e-36, -1e-36, 5e-324,
                    np.nan, np.inf, -np.inf, 1.0, -1.0])


def _ensemble(booster) -> Ensemble:
    text = parse_model_text(booster.model_to_string())
    return from_tree_arrays([(t.split_feature, t.threshold, t.decision_type, t.left_child, t.right_child,
                              t.leaf_value) for t in text.trees])


def _same_as_lightgbm(booster, ens: Ensemble, x: np.ndarray, threads: int = 1) -> None:
    theirs = booster.predict(x, pred_leaf=True, num_threads=1).reshape(x.shape[0], ens.n_trees)
    mine = L.pred_leaf(ens, x, threads)
    assert mine.shape == theirs.shape
    diff = np.argwhere(mine != theirs)
    assert diff.size == 0, f"{diff.shape[0]} (row, tree) pairs differ, first {diff[:5].tolist()}"
    walked = L.leaf_indices(ens, x, threads)
    assert walked.flags.f_contiguous and walked.dtype == np.int64
    assert np.array_equal(walked, theirs + ens.leaf_offsets[:-1][None, :])


def _training_rows(rng, n: int = 2400) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.column_stack([
        rng.normal(0, 1, n),                                          # dense
        np.where(rng.random(n) < 0.7, 0.0, rng.lognormal(0, 1, n)),  # sparse positive: splits at 1e-35
        np.where(rng.random(n) < 0.2, np.nan, rng.normal(0, 1, n)),  # missing values: missing type NaN
        np.where(rng.random(n) < 0.4, 0.0, rng.normal(0, 2, n)),     # zeros among both signs
        rng.integers(0, 6, n).astype(np.float64),                     # ties: thresholds between integers
        np.where(rng.random(n) < 0.5, 0.0, -rng.lognormal(0, 1, n)),  # sparse negative
    ])
    signal = np.nan_to_num(x[:, 0] + 0.8 * x[:, 1] - 0.5 * x[:, 2] + 0.3 * x[:, 3] + 0.2 * x[:, 4] - 0.4 * x[:, 5])
    labels = np.clip(np.round(signal + rng.normal(0, 0.7, n) + 1.5), 0, 4)
    return x, labels, np.full(n // 40, 40)


def _probe_rows(rng, x: np.ndarray, ens: Ensemble) -> np.ndarray:
    """Training rows, then rows with one column set to a split's threshold or a neighbour of it (in double and in
    float32), then rows with random columns set to :data:`SPECIAL` values."""
    t = ens.threshold
    t32 = t.astype(np.float32).astype(np.float64)
    on = np.concatenate([t, np.nextafter(t, np.inf), np.nextafter(t, -np.inf), t32,
                         np.nextafter(t32.astype(np.float32), np.float32(np.inf)).astype(np.float64),
                         np.nextafter(t32.astype(np.float32), np.float32(-np.inf)).astype(np.float64)])
    feature = np.tile(ens.feature, 6)
    rows = x[rng.integers(0, x.shape[0], on.size)].copy()
    rows[np.arange(on.size), feature] = on
    special = x[rng.integers(0, x.shape[0], 3000)].copy()
    mask = rng.random(special.shape) < 0.35
    special[mask] = SPECIAL[rng.integers(0, SPECIAL.size, int(mask.sum()))]
    return np.concatenate([x, rows, special])


CONFIGS = [("lambdarank", {}), ("rank_xendcg", {}), ("lambdarank", {"zero_as_missing": True}),
           ("rank_xendcg", {"zero_as_missing": True}), ("lambdarank", {"use_missing": False}),
           ("rank_xendcg", {"use_missing": False})]


@pytest.fixture(scope="module")
def trained():
    """Each config's booster, its ensemble and the rows to walk."""
    rng = np.random.default_rng(7)
    x, labels, groups = _training_rows(rng)
    out = []
    for objective, extra in CONFIGS:
        params = {"objective": objective, "num_leaves": 31, "min_data_in_leaf": 5, "learning_rate": 0.3,
                  "num_threads": 1, "verbose": -1, "seed": 3, "deterministic": True, **extra}
        booster = lightgbm.train(params, lightgbm.Dataset(x, labels, group=groups), num_boost_round=25)
        ens = _ensemble(booster)
        out.append((objective, extra, booster, ens, _probe_rows(rng, x, ens)))
    return out


def test_the_walk_is_built_where_a_compiler_is():
    """An install on a machine with a C compiler (CI's) must have built the walk: without this test a failed build
    would only make export-model --check slower, silently."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}): LightGBM's pred_leaf serves alone")
    assert L.leaf_walk is not None, "setup.py did not build rankcli.core.trees.leaf_walk"
    assert L.available()


def test_the_walks_source_is_built_and_shipped():
    """setup.py builds the walk's C file and MANIFEST.in names it, so that a clean ``pip install .`` (from the sdist
    too) compiles it."""
    import fnmatch

    repo = Path(__file__).resolve().parents[2]
    sources = sorted(p.name for p in (repo / "rankcli" / "core" / "trees" / "csrc").glob("*"))
    assert sources == ["leaf_walk.c"]
    assert '"{TREES}/leaf_walk.c"' in (repo / "setup.py").read_text().replace('f"', '"')
    includes = [line.split(None, 1)[1].strip() for line in (repo / "MANIFEST.in").read_text().splitlines()
                if line.startswith("include ")]
    assert any(fnmatch.fnmatch("rankcli/core/trees/csrc/leaf_walk.c", pattern) for pattern in includes)


def test_the_trained_models_hold_every_case(trained):
    """The models below cover what the walk must get right: every missing type, both default directions, and
    LightGBM's zero-versus-positive threshold."""
    missing = set().union(*(set(e.missing_type.tolist()) for *_, e, _ in trained))
    assert missing == {0, 1, 2}
    assert set().union(*(set(e.default_left.tolist()) for *_, e, _ in trained)) == {False, True}
    assert any(np.any(e.threshold == ZERO_THRESHOLD) for *_, e, _ in trained)


@built
@pytest.mark.parametrize("case", range(len(CONFIGS)), ids=[f"{o}-{e}" for o, e in CONFIGS])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_the_walk_is_lightgbm_pred_leaf_on_trained_models(trained, case, dtype):
    _, _, booster, ens, rows = trained[case]
    if dtype == np.int32:
        x = np.nan_to_num(rows, nan=0, posinf=7, neginf=-7).round().astype(np.int32)
    else:
        x = rows.astype(dtype)
    _same_as_lightgbm(booster, ens, x)


@built
@pytest.mark.parametrize("threads", [2, 3, 7])
def test_threads_split_the_rows_alike(trained, threads):
    _, _, booster, ens, rows = trained[0]
    _same_as_lightgbm(booster, ens, rows, threads)
    one = L.leaf_indices(ens, rows[:300], 1)
    assert np.array_equal(L.leaf_indices(ens, rows[:300], threads), one)


@built
def test_one_tree_one_row_no_rows_and_trees_of_one_leaf():
    rng = np.random.default_rng(11)
    x, labels, groups = _training_rows(rng, 800)
    base = {"objective": "lambdarank", "num_threads": 1, "verbose": -1, "seed": 1, "min_data_in_leaf": 5}
    one = lightgbm.train(base, lightgbm.Dataset(x, labels, group=groups), num_boost_round=1)
    ens = _ensemble(one)
    assert ens.n_trees == 1
    _same_as_lightgbm(one, ens, x)
    _same_as_lightgbm(one, ens, x[3:4])
    empty = L.leaf_indices(ens, x[:0], 2)
    assert empty.shape == (0, 1) and L.pred_leaf(ens, x[:0]).shape == (0, 1)
    # no split is possible with leaves of at least 1,000 rows: trees of one leaf, pred_leaf 0
    stump = lightgbm.train({**base, "min_data_in_leaf": 1000}, lightgbm.Dataset(x, labels, group=groups),
                           num_boost_round=3)
    ens = _ensemble(stump)
    assert ens.n_nodes == 0
    _same_as_lightgbm(stump, ens, x)


@built
@pytest.mark.parametrize("d", [(2, 4, 8), (0, 6, 10), (8, 2, 0), (10, 6, 2), (4, 10, 6)])
def test_the_hand_made_tree_of_every_decision_type(d):
    """test_trees's hand-made tree (missing types None, Zero and NaN, a threshold of 1e-36 between 0 and LightGBM's
    zero threshold) on a grid of every value at, beside and around its thresholds."""
    zero_t = 1e-36
    booster = lightgbm.Booster(model_str=HAND_MODEL.format(zero_t=zero_t, d0=d[0], d1=d[1], d2=d[2]))
    values = np.concatenate([SPECIAL, [0.5, np.nextafter(0.5, 1), -1.25, np.nextafter(-1.25, 0), zero_t, 3.0, -3.0]])
    grid = np.array(np.meshgrid(values, values, values)).reshape(3, -1).T
    ens = from_tree_arrays([([0, 1, 2], [0.5, zero_t, -1.25], list(d), [1, -1, -2], [2, -3, -4], [1.0, 2.0, 4.0, 8.0])])
    _same_as_lightgbm(booster, ens, grid)
    _same_as_lightgbm(booster, ens, grid.astype(np.float32))


# ------------------------------------------------------------------------------------------------ random trees
POOL = [0.0, ZERO_THRESHOLD, -ZERO_THRESHOLD, 1e-36, -1e-36, 0.5, -1.25, 1.0, 0.1, float(np.float32(0.1)), 1e300]
DECISION_TYPES = [0, 2, 4, 6, 8, 10]  # default left or not, times missing type None, Zero, NaN


def _model_text(trees: list[tuple], n_features: int) -> str:
    def line(key, values):
        return f"{key}=" + " ".join(repr(float(v)) if key in ("threshold", "leaf_value") else str(int(v))
                                    for v in values)

    head = ["tree", "version=v4", "num_class=1", "num_tree_per_iteration=1", "label_index=0",
            f"max_feature_idx={n_features - 1}", "objective=lambdarank",
            "feature_names=" + " ".join(f"f{i}" for i in range(n_features)),
            "feature_infos=" + " ".join("[-10:10]" for _ in range(n_features)), ""]
    body = []
    for i, (feature, threshold, dtype, left, right, values) in enumerate(trees):
        k = len(feature)
        body += [f"Tree={i}", f"num_leaves={k + 1}", "num_cat=0", line("split_feature", feature),
                 line("split_gain", [1] * k), line("threshold", threshold), line("decision_type", dtype),
                 line("left_child", left), line("right_child", right), line("leaf_value", values),
                 line("leaf_weight", [1] * (k + 1)), line("leaf_count", [1] * (k + 1)),
                 line("internal_value", [0] * k), line("internal_weight", [1] * k), line("internal_count", [2] * k),
                 "is_linear=0", "shrinkage=1", "", ""]
    return "\n".join(head + body) + "end of trees\n\npandas_categorical:null\n"


@st.composite
def random_tree(draw, n_features: int):
    """A tree grown leaf-wise as LightGBM grows one (a random leaf split at each step), of random splits."""
    k = draw(st.integers(1, 9))
    left, right, parent = [0] * k, [0] * k, {0: (-1, True)}
    for node in range(k):
        leaf = draw(st.integers(0, node))
        p, is_left = parent[leaf]
        if p >= 0:
            (left if is_left else right)[p] = node
        left[node], right[node] = ~leaf, ~(node + 1)
        parent[leaf], parent[node + 1] = (node, True), (node, False)
    feature = draw(st.lists(st.integers(0, n_features - 1), min_size=k, max_size=k))
    threshold = draw(st.lists(st.sampled_from(POOL), min_size=k, max_size=k))
    dtype = draw(st.lists(st.sampled_from(DECISION_TYPES), min_size=k, max_size=k))
    return feature, threshold, dtype, left, right, [float(2 ** i) for i in range(k + 1)]


@built
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees=st.lists(random_tree(3), min_size=1, max_size=4), seed=st.integers(0, 2 ** 32 - 1),
       float32=st.booleans())
def test_random_trees_walk_as_lightgbm(trees, seed, float32):
    booster = lightgbm.Booster(model_str=_model_text(trees, 3))
    ens = from_tree_arrays(trees)
    values = np.concatenate([SPECIAL, POOL, np.nextafter(POOL, np.inf), np.nextafter(POOL, -np.inf)])
    x = np.random.default_rng(seed).choice(values, size=(64, 3))
    if float32:
        with np.errstate(over="ignore"):  # 1e300 is inf in float32: one more value to walk
            x = x.astype(np.float32)
    _same_as_lightgbm(booster, ens, x)


# ------------------------------------------------------------------------------------------------ refusals, fallback
@built
def test_arrays_that_are_not_trees_are_refused():
    ens = from_tree_arrays([([0, 0], [0.5, 1.5], [2, 2], [1, -1], [-2, -3], [1.0, 2.0, 3.0])])
    x = np.zeros((4, 1))
    cycle = Ensemble(**{**vars(ens), "left": np.array([1, 0])})  # node 1's left child is node 0 again
    with pytest.raises(ValueError, match="cycle"):
        L.leaf_indices(cycle, x)
    outside = Ensemble(**{**vars(ens), "right": np.array([-2, -9])})
    with pytest.raises(ValueError, match="outside its tree"):
        L.leaf_indices(outside, x)
    with pytest.raises(ValueError, match="columns"):
        L.leaf_indices(from_tree_arrays([([3], [0.5], [2], [-1], [-2], [1.0, 2.0])]), x)
    categorical = Ensemble(**{**vars(ens), "decision_type": np.array([3, 2])})
    assert L.leaf_indices(categorical, x) is None  # left to LightGBM


def test_without_the_compiled_walk_the_leaves_are_lightgbms(trained, monkeypatch):
    """RANKCLI_PURE_PYTHON (or an install without a compiler) leaves the leaves to LightGBM: export-model --check
    takes the same leaves either way."""
    from rankcli.export_model import check

    _, _, booster, ens, rows = trained[2]

    class Source:
        ensemble = ens
        model = type("Model", (), {"booster": booster})()

    walked = check._leaves(Source, rows)
    monkeypatch.setenv("RANKCLI_PURE_PYTHON", "1")
    assert L.leaf_indices(ens, rows) is None and L.pred_leaf(ens, rows) is None
    fallback = check._leaves(Source, rows)
    assert fallback.flags.f_contiguous and np.array_equal(walked, fallback)
    assert np.array_equal(fallback, booster.predict(rows, pred_leaf=True) + ens.leaf_offsets[:-1][None, :])
