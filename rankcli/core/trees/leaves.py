"""The leaf each row reaches in each tree of an :class:`~rankcli.core.trees.ensemble.Ensemble`: LightGBM's
``pred_leaf``, computed by the compiled walk ``rankcli.core.trees.leaf_walk`` (``rankcli/core/trees/csrc/``).

The walk follows LightGBM's decision rule exactly (:mod:`rankcli.core.trees.ensemble` states it; the C source cites
LightGBM's code), reading the rows as LightGBM's Python package hands them to its C library: float32 and float64 as
they are, any other type as float32. ``tests/core/test_tree_leaves.py`` proves it equal to ``pred_leaf`` on every
(row, tree) pair of trained models, missing values, zeros, infinities and values on the thresholds included.

It is faster than LightGBM's own walk because it goes tree by tree over blocks of rows that stay in cache, where
LightGBM takes each row through every tree and so fetches megabytes of nodes again for each row.

The module is optional: an install without a C compiler has none (``setup.py``), and ``RANKCLI_PURE_PYTHON=1`` turns
it off. :func:`leaf_indices` then returns None, and the caller asks LightGBM (core does not import it). A model with
a categorical split is left to LightGBM too.
"""

from __future__ import annotations

import os

import numpy as np

from rankcli.core.trees.ensemble import Ensemble

try:
    from rankcli.core.trees import leaf_walk
except ImportError:  # an install built without a C compiler
    leaf_walk = None


def available() -> bool:
    """Whether the compiled walk is built and not turned off (``RANKCLI_PURE_PYTHON``)."""
    return leaf_walk is not None and os.environ.get("RANKCLI_PURE_PYTHON", "") in ("", "0")


def rows_as_lightgbm_reads(x: np.ndarray) -> np.ndarray:
    """``x`` (rows, columns) as LightGBM's Python package passes it to its C library: float32 and float64 kept, any
    other type as float32; C order here (LightGBM reads either order, the values are the same)."""
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"rows must be a 2-d array (rows, columns), got shape {x.shape}")
    dtype = x.dtype if x.dtype in (np.float32, np.float64) else np.float32
    return np.ascontiguousarray(x, dtype=dtype)


def leaf_indices(ens: Ensemble, x: np.ndarray, threads: int = 1) -> np.ndarray | None:
    """The ensemble's leaf index (into ``ens.leaf_value``) that each row of ``x`` reaches in each tree, as a
    (rows, trees) int64 array in Fortran order (each tree's leaves contiguous); None when the compiled walk is
    unavailable or the model has a categorical split (ask LightGBM then).

    ``x`` holds the model's feature columns (at least one past the largest feature a split uses), as LightGBM's
    ``predict`` takes them. The walk runs on ``threads`` threads without the GIL.
    """
    if not available() or bool(ens.categorical.any()):
        return None
    x = rows_as_lightgbm_reads(x)
    if ens.n_nodes and x.shape[1] <= int(ens.feature.max()):
        raise ValueError(f"the trees split on column {int(ens.feature.max())}; the rows have {x.shape[1]} columns")
    out = np.empty((ens.n_trees, x.shape[0]), dtype=np.int64)

    def i64(a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a, dtype=np.int64)

    leaf_walk.walk(np.ascontiguousarray(ens.threshold, dtype=np.float64), i64(ens.feature), i64(ens.decision_type),
                   i64(ens.left), i64(ens.right), i64(ens.roots), i64(ens.node_offsets), i64(ens.leaf_offsets),
                   int(ens.leaf_value.shape[0]), x, x.dtype == np.float32, x.shape[0], x.shape[1], out,
                   max(1, int(threads)))
    return out.T


def pred_leaf(ens: Ensemble, x: np.ndarray, threads: int = 1) -> np.ndarray | None:
    """LightGBM's ``booster.predict(x, pred_leaf=True)``: each tree's own leaf number, (rows, trees) int32 in C
    order; None when :func:`leaf_indices` is."""
    out = leaf_indices(ens, x, threads)
    if out is None:
        return None
    return np.ascontiguousarray((out - ens.leaf_offsets[:-1][None, :]).astype(np.int32))
