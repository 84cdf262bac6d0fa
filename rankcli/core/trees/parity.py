"""Where an exported model decides otherwise than LightGBM: at each split, for each row, and in each ranking.

At one split both LightGBM and the engine decide by a threshold on one feature value: the finite values going left
are a half-line in each (every value up to a breakpoint), and NaN and +-inf go one way or the other. So the two
agree on every value exactly when they agree on each breakpoint, the values just below and just above it, and on
NaN, 0 and +-inf: the *probes* of a split (:func:`split_probes`), the rows "placed exactly on, just below and just
above every threshold". A probe counts only where a row can reach the split with that value: the splits above it on
the same feature confine the value to an interval (:func:`reachable`).

A data row takes another branch than LightGBM's exactly when, on its LightGBM path, some split where the two
disagree gets a value on which they disagree (:func:`diverging_pairs`); its engine leaf is then found by walking the
tree with the engine's rule from the root (:func:`rankcli.core.trees.ensemble.descend`), and everywhere else it is
LightGBM's own leaf.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rankcli.core.groups import order_within, segment_sum
from rankcli.core.trees.ensemble import Ensemble
from rankcli.core.trees.floats import largest_true, step

#: ``rule(nodes, values) -> bool array``: does a value go left at each node.
Rule = Callable[[np.ndarray, np.ndarray], np.ndarray]


def breakpoints(rule: Rule, n_nodes: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """The largest finite value of ``dtype`` that goes left at each node under ``rule``, and whether any does."""
    nodes = np.arange(n_nodes)
    return largest_true(lambda v: rule(nodes, v), n_nodes, dtype)


@dataclass
class Reach:
    """The values of its own feature that a row can bring to each node: finite ``lo < v <= hi``, NaN, +-inf."""

    lo: np.ndarray
    hi: np.ndarray
    nan: np.ndarray
    pos_inf: np.ndarray
    neg_inf: np.ndarray

    def admits(self, nodes: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Whether ``values`` can reach ``nodes``."""
        v = values.astype(np.float64)
        with np.errstate(invalid="ignore"):
            finite = (v > self.lo[nodes]) & (v <= self.hi[nodes])
        return np.where(np.isnan(v), self.nan[nodes],
                        np.where(v == np.inf, self.pos_inf[nodes],
                                 np.where(v == -np.inf, self.neg_inf[nodes], finite)))


def reachable(ens: Ensemble, cut: np.ndarray, any_left: np.ndarray, nan_left: np.ndarray) -> Reach:
    """Each node's :class:`Reach` under LightGBM's decisions above it: the ancestors that split on the same feature,
    each sending the finite values ``<= cut`` (none if not ``any_left``), -inf and, if ``nan_left``, NaN left."""
    n = ens.n_nodes
    parent, is_left, _, _ = ens.parents()
    reach = Reach(np.full(n, -np.inf), np.full(n, np.inf), np.ones(n, bool), np.ones(n, bool), np.ones(n, bool))
    anc = parent.copy()
    went_left = is_left.copy()
    while True:
        live = np.flatnonzero(anc >= 0)
        if live.size == 0:
            return reach
        a = anc[live]
        same = live[ens.feature[a] == ens.feature[live]]
        a_same = anc[same]
        left = went_left[same]
        bound = np.where(any_left[a_same], cut[a_same], -np.inf)
        reach.hi[same] = np.where(left, np.minimum(reach.hi[same], bound), reach.hi[same])
        reach.lo[same] = np.where(~left, np.maximum(reach.lo[same], bound), reach.lo[same])
        reach.nan[same] &= np.where(left, nan_left[a_same], ~nan_left[a_same])
        reach.pos_inf[same] &= ~left
        reach.neg_inf[same] &= left
        went_left[live] = is_left[a]
        anc[live] = parent[a]


@dataclass
class Probes:
    """The probe values of every split, with each side's decision."""

    nodes: np.ndarray
    values: np.ndarray
    lightgbm: np.ndarray
    engine: np.ndarray

    @property
    def disagree(self) -> np.ndarray:
        """Which probes the engine sends the other way."""
        return self.lightgbm != self.engine


def split_probes(n_nodes: int, lightgbm: Rule, engine: Rule, reach: Reach, dtype,
                 lightgbm_cut: np.ndarray, engine_cut: np.ndarray) -> Probes:
    """Each node's probes (its two breakpoints and their neighbours in ``dtype``, 0, NaN, +-inf and the extreme
    finite values) that can reach it, decided by both rules."""
    big = np.finfo(dtype).max
    columns = [lightgbm_cut, engine_cut]
    columns += [step(c, up) for c in (lightgbm_cut, engine_cut) for up in (True, False)]
    constants = (0.0, np.nan, np.inf, -np.inf, big, -big)
    columns += [np.full(n_nodes, c, dtype=dtype) for c in constants]
    values = np.stack([np.asarray(c, dtype=dtype) for c in columns], axis=1)
    nodes = np.repeat(np.arange(n_nodes), values.shape[1])
    values = values.ravel()
    keep = reach.admits(nodes, values)
    nodes, values = nodes[keep], values[keep]
    return Probes(nodes, values, lightgbm(nodes, values), engine(nodes, values))


def leaves_under(ens: Ensemble, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (leaf, node) pair with the leaf below the node, for the given ``nodes``: ``(leaves, which)`` with
    ``which`` the position in ``nodes``."""
    wanted = np.full(ens.n_nodes, -1, dtype=np.int64)
    wanted[nodes] = np.arange(nodes.shape[0])
    node_parent, _, leaf_parent, _ = ens.parents()
    leaves_out, which_out = [], []
    leaf = np.arange(ens.leaf_value.shape[0])
    anc = leaf_parent.copy()
    while leaf.size:
        hit = wanted[np.maximum(anc, 0)] >= 0
        hit &= anc >= 0
        leaves_out.append(leaf[hit])
        which_out.append(wanted[anc[hit]])
        live = anc >= 0
        leaf, anc = leaf[live], node_parent[anc[live]]
    return np.concatenate(leaves_out), np.concatenate(which_out)


def _inside_union(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Whether each value lies in some interval ``(lo_i, hi_i]``: the largest ``hi`` among the intervals opening
    below the value reaches it."""
    order = np.argsort(lo, kind="stable")
    lo, top = lo[order], np.maximum.accumulate(hi[order])
    at = np.searchsorted(lo, values, side="left") - 1  # the last interval with lo < value
    return (at >= 0) & (values <= top[np.maximum(at, 0)])


def candidate_rows(ens: Ensemble, features: np.ndarray, bad: np.ndarray, lightgbm: Rule, engine: Rule
                   ) -> np.ndarray:
    """The rows of ``features`` that may take another branch at a ``bad`` node: a non-finite value of a bad node's
    feature, or a finite one between the node's two breakpoints.

    Both rules send a half-line of the finite values left (every value up to a breakpoint), so at a node they
    decide a finite value differently exactly when it lies above one breakpoint and not above the other. The
    breakpoints are searched in the data's own precision, so the test is exact for the values the data holds; every
    other row takes LightGBM's branch at every bad node and need not be walked (most exports have a handful of bad
    nodes, but Solr's near-zero splits can be a quarter of all, and their disagreement lies between 0 and 1e-35)."""
    if bad.size == 0 or features.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    dtype = features.dtype if features.dtype in (np.float32, np.float64) else np.float64
    cut = []
    for rule in (lightgbm, engine):
        c, any_left = largest_true(lambda v, rule=rule: rule(bad, v), bad.size, dtype)
        cut.append(np.where(any_left, c.astype(np.float64), -np.inf))
    lo, hi = np.minimum(*cut), np.maximum(*cut)
    feature = ens.feature[bad]
    hit = np.zeros(features.shape[0], dtype=bool)
    for f in np.unique(feature):  # one pass per feature column, over all rows at once
        at = feature == f
        column = features[:, f].astype(np.float64)
        finite = np.isfinite(column)
        hit |= ~finite
        between = at & (hi > lo)
        if between.any():
            hit[finite] |= _inside_union(column[finite], lo[between], hi[between])
    return np.flatnonzero(hit)


def diverging_pairs(ens: Ensemble, leaves: np.ndarray, features: np.ndarray, bad: np.ndarray,
                    lightgbm: Rule, engine: Rule) -> tuple[np.ndarray, np.ndarray]:
    """The (row, tree) pairs whose LightGBM path (``leaves``: (rows, trees) leaf indices) passes a ``bad`` node with
    a value the two rules decide differently. Vectorised over all pairs at once: each pair's leaf is looked up among
    the leaves below a bad node, and only those pairs' values are decided."""
    empty = np.zeros(0, dtype=np.int64)
    if bad.size == 0:
        return empty, empty
    under_leaf, which = leaves_under(ens, bad)
    order = np.argsort(under_leaf, kind="stable")
    under_leaf, which = under_leaf[order], which[order]
    flat = leaves.ravel(order="F")  # pair p is (row p % n, tree p // n)
    lo = np.searchsorted(under_leaf, flat, side="left")
    counts = np.searchsorted(under_leaf, flat, side="right") - lo
    pairs = np.flatnonzero(counts)
    if pairs.size == 0:
        return empty, empty
    counts, lo = counts[pairs], lo[pairs]
    pair = np.repeat(pairs, counts)
    position = np.arange(pair.size) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(lo, counts)
    nodes = bad[which[position]]
    n = leaves.shape[0]
    rows = pair % n
    hit = lightgbm(nodes, features[rows, ens.feature[nodes]]) != engine(nodes, features[rows, ens.feature[nodes]])
    hit_pairs = np.unique(pair[hit])
    return hit_pairs % n, hit_pairs // n


def ranking_changes(reference: np.ndarray, engine: np.ndarray, bound: np.ndarray,
                    offsets: np.ndarray) -> dict:
    """How the engine's scores reorder each query's documents against the reference (LightGBM's).

    A query changes when its order differs (ties in input order, as rankcli ranks). Each engine score should lie
    within ``bound`` of the reference (the rounding its summation allows); if every score of a query does, any
    reordering comes from documents whose reference scores lie within the sum of their bounds — float rounding, not
    another branch. Returns ``{"changed", "beyond_bound_rows", "changed_beyond_bound"}``.
    """
    if offsets[-1] == 0:
        return {"changed": 0, "beyond_bound_rows": 0, "changed_beyond_bound": 0}
    moved = order_within(reference, offsets) != order_within(engine, offsets)
    changed = segment_sum(moved.astype(np.float64), offsets) > 0
    beyond = np.abs(engine - reference) > bound
    beyond_q = segment_sum(beyond.astype(np.float64), offsets) > 0
    return {"changed": int(changed.sum()), "beyond_bound_rows": int(beyond.sum()),
            "changed_beyond_bound": int((changed & beyond_q).sum())}
