"""A LightGBM tree ensemble as flat arrays, and LightGBM's own decision rule on them.

Every internal node of every tree is one index into the node arrays, every leaf one index into ``leaf_value``;
a child is a node index (>= 0) or ``-(leaf index) - 1``. The arrays keep LightGBM's order: tree ``t``'s nodes are
``node_offsets[t]:node_offsets[t+1]`` in the order of its ``model.txt`` arrays, its leaves likewise, so LightGBM's
``pred_leaf`` index ``l`` of tree ``t`` is leaf ``leaf_offsets[t] + l`` here.

LightGBM's decision, for a value ``x`` held in double:

- a value with ``|x| <= kZeroThreshold`` (``1e-35f``, ``include/LightGBM/meta.h``) never reaches the trees: the
  prediction input drops it and the tree sees 0.0 (``src/c_api.cpp``, ``RowPairFunctionFromDenseMatrix``: only
  ``fabs(x) > kZeroThreshold || isnan(x)`` is kept);

then at each node (``include/LightGBM/tree.h``, ``Tree::NumericalDecision``):

- a NaN becomes 0.0 unless the node's missing type is NaN;
- missing type Zero and ``|x| <= kZeroThreshold``, or missing type NaN and ``x`` NaN: the default direction
  (``default_left``);
- else left when ``x <= threshold``, the threshold a double.

Trees are summed in double, in order, from 0 (``src/boosting/gbdt_prediction.cpp``, ``GBDT::PredictRaw``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CATEGORICAL_MASK = 1
DEFAULT_LEFT_MASK = 2
MISSING_NONE, MISSING_ZERO, MISSING_NAN = 0, 1, 2
#: LightGBM's kZeroThreshold: the float 1e-35f held in a double.
ZERO_THRESHOLD = float(np.float32(1e-35))


def leaf_child(leaf: np.ndarray) -> np.ndarray:
    """The child code of leaf index ``leaf``."""
    return -np.asarray(leaf, dtype=np.int64) - 1


@dataclass
class Ensemble:
    """The trees of a model, flat (see the module docstring for the layout)."""

    feature: np.ndarray  # (nodes,) int64: the feature column each node splits on
    threshold: np.ndarray  # (nodes,) float64
    decision_type: np.ndarray  # (nodes,) int64: LightGBM's bits
    left: np.ndarray  # (nodes,) int64 child codes
    right: np.ndarray
    leaf_value: np.ndarray  # (leaves,) float64
    roots: np.ndarray  # (trees,) child code of each tree's root
    node_offsets: np.ndarray  # (trees + 1,)
    leaf_offsets: np.ndarray  # (trees + 1,)

    @property
    def n_trees(self) -> int:
        """The number of trees."""
        return int(self.roots.shape[0])

    @property
    def n_nodes(self) -> int:
        """The number of internal nodes (splits) of all trees."""
        return int(self.feature.shape[0])

    @property
    def missing_type(self) -> np.ndarray:
        """Each node's missing type (0 None, 1 Zero, 2 NaN)."""
        return (self.decision_type >> 2) & 3

    @property
    def default_left(self) -> np.ndarray:
        """Each node's default direction (the ``default_left`` bit)."""
        return (self.decision_type & DEFAULT_LEFT_MASK) > 0

    @property
    def categorical(self) -> np.ndarray:
        """Which nodes split by category."""
        return (self.decision_type & CATEGORICAL_MASK) > 0

    def node_tree(self) -> np.ndarray:
        """The tree of each node."""
        return np.repeat(np.arange(self.n_trees), np.diff(self.node_offsets))

    def local_node(self) -> np.ndarray:
        """Each node's index within its tree (its position in the tree's ``model.txt`` arrays)."""
        return np.arange(self.n_nodes) - np.repeat(self.node_offsets[:-1], np.diff(self.node_offsets))

    def parents(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(node_parent, node_is_left, leaf_parent, leaf_is_left)``: each node's and leaf's parent node (-1 for a
        root) and whether it is that parent's left child."""
        node_parent = np.full(self.n_nodes, -1, dtype=np.int64)
        node_left = np.zeros(self.n_nodes, dtype=bool)
        leaf_parent = np.full(self.leaf_value.shape[0], -1, dtype=np.int64)
        leaf_left = np.zeros(self.leaf_value.shape[0], dtype=bool)
        ids = np.arange(self.n_nodes)
        for children, is_left in ((self.left, True), (self.right, False)):
            inner = children >= 0
            node_parent[children[inner]] = ids[inner]
            node_left[children[inner]] = is_left
            leaf_parent[-children[~inner] - 1] = ids[~inner]
            leaf_left[-children[~inner] - 1] = is_left
        return node_parent, node_left, leaf_parent, leaf_left


def from_tree_arrays(trees: list[tuple]) -> Ensemble:
    """An :class:`Ensemble` from each tree's ``(split_feature, threshold, decision_type, left_child, right_child,
    leaf_value)`` in LightGBM's per-tree layout (children: a node index, or ``~leaf``)."""
    n_nodes = np.array([len(t[0]) for t in trees], dtype=np.int64)
    n_leaves = np.array([len(t[5]) for t in trees], dtype=np.int64)
    node_offsets = np.concatenate([[0], np.cumsum(n_nodes)]).astype(np.int64)
    leaf_offsets = np.concatenate([[0], np.cumsum(n_leaves)]).astype(np.int64)

    def cat(i: int, dtype) -> np.ndarray:
        parts = [np.asarray(t[i], dtype=dtype) for t in trees]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    def recode(i: int) -> np.ndarray:
        codes = cat(i, np.int64)
        node_base = np.repeat(node_offsets[:-1], n_nodes)
        leaf_base = np.repeat(leaf_offsets[:-1], n_nodes)
        return np.where(codes >= 0, codes + node_base, leaf_child(leaf_base + ~codes))

    roots = np.where(n_nodes > 0, node_offsets[:-1], leaf_child(leaf_offsets[:-1]))
    return Ensemble(feature=cat(0, np.int64), threshold=cat(1, np.float64), decision_type=cat(2, np.int64),
                    left=recode(3), right=recode(4), leaf_value=cat(5, np.float64), roots=roots.astype(np.int64),
                    node_offsets=node_offsets, leaf_offsets=leaf_offsets)


def lightgbm_left(x: np.ndarray, threshold: np.ndarray, decision_type: np.ndarray) -> np.ndarray:
    """Whether LightGBM sends each value ``x`` (double) left at a numerical node of ``threshold`` and
    ``decision_type`` (arrays aligned with ``x``): ``Tree::NumericalDecision``."""
    x = np.asarray(x, dtype=np.float64)
    missing = (decision_type >> 2) & 3
    default = (decision_type & DEFAULT_LEFT_MASK) > 0
    nan = np.isnan(x)
    x = np.where(nan & (missing != MISSING_NAN), 0.0, x)
    x = np.where(np.abs(x) <= ZERO_THRESHOLD, 0.0, x)  # the prediction input drops values this small
    use_default = ((missing == MISSING_ZERO) & (np.abs(x) <= ZERO_THRESHOLD)) | ((missing == MISSING_NAN) & nan)
    with np.errstate(invalid="ignore"):
        compared = x <= threshold
    return np.where(use_default, default, compared)


def nan_left(ens: Ensemble) -> np.ndarray:
    """Where LightGBM sends a NaN at each node: the default direction for missing types Zero and NaN, else where
    0.0 goes."""
    return lightgbm_left(np.full(ens.n_nodes, np.nan), ens.threshold, ens.decision_type)


def finite_half_line(threshold: np.ndarray, decision_type: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LightGBM's left set over the finite values as a half-line ``x <= t_eff``, per node.

    Values within ``1e-35`` of zero reach the tree as 0, so a threshold in ``[0, 1e-35)`` sends every value up to
    1e-35 left (``t_eff = 1e-35``) and one in ``[-1e-35, 0)`` those below -1e-35 only. Missing type Zero also sends
    that interval the default way, which keeps a half-line only when it lies on the default side of the threshold;
    elsewhere the left set is two pieces, which no single threshold states. Returns ``(t_eff, ok)``, ``ok`` False
    where the left set is not a half-line.
    """
    threshold = np.asarray(threshold, dtype=np.float64)
    missing = (decision_type >> 2) & 3
    default = (decision_type & DEFAULT_LEFT_MASK) > 0
    z = ZERO_THRESHOLD
    below_zero = np.nextafter(-z, -np.inf)
    zero_left = np.where(missing == MISSING_ZERO, default, threshold >= 0)  # where [-z, z] goes (it is all 0)
    inside = (threshold >= -z) & (threshold < z)
    # (-inf, t] outside [-z, z], plus [-z, z] when it goes left: (-inf, max(t, z)] if t >= below(-z), else two
    # pieces; without it: (-inf, t] when t < -z, (-inf, below(-z)] when t lies inside
    t_eff = np.where(zero_left, np.maximum(threshold, z), np.where(inside, below_zero, threshold))
    ok = np.where(zero_left, threshold >= below_zero, threshold < z)
    return t_eff, ok


def descend(ens: Ensemble, goes_left, rows: np.ndarray, trees: np.ndarray) -> np.ndarray:
    """The leaf each (row, tree) pair reaches when every node decides by ``goes_left(nodes, rows)`` (booleans per
    pair: does the pair's row go left at the pair's node). Vectorised over the pairs, one step per tree level."""
    code = ens.roots[trees].copy()
    active = np.flatnonzero(code >= 0)
    while active.size:
        nodes = code[active]
        left = goes_left(nodes, rows[active])
        code[active] = np.where(left, ens.left[nodes], ens.right[nodes])
        active = active[code[active] >= 0]
    return -code - 1


def predict(ens: Ensemble, features: np.ndarray) -> np.ndarray:
    """LightGBM's raw score of each row of ``features`` (rows, columns), by :func:`descend` with
    :func:`lightgbm_left`: the slow, obviously correct reference the tests compare the fast paths with."""
    n = features.shape[0]
    rows = np.repeat(np.arange(n), ens.n_trees)
    trees = np.tile(np.arange(ens.n_trees), n)

    def goes_left(nodes, r):
        return lightgbm_left(features[r, ens.feature[nodes]], ens.threshold[nodes], ens.decision_type[nodes])

    leaves = descend(ens, goes_left, rows, trees).reshape(n, ens.n_trees)
    total = np.zeros(n)
    for t in range(ens.n_trees):  # in tree order, in double: GBDT::PredictRaw
        total += ens.leaf_value[leaves[:, t]]
    return total
