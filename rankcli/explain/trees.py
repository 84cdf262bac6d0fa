"""Scores with one feature group permuted, from the trees that read the group only.

A tree whose splits never read a feature of group ``g`` gives every document the same leaf whatever ``g``'s values
are. So the model's score of a document with ``g`` permuted is ``rest_g + sub_g(x')``: ``rest_g``, the sum of the
leaf values of the trees that do not read ``g`` (the same for every permutation: computed once from the leaves
LightGBM assigns, ``pred_leaf``), and ``sub_g(x')``, the trees that do read ``g`` scored by LightGBM on the permuted
features (a model holding those trees only). Each permutation then costs the share of the trees that read ``g``
instead of the whole model.

Exactness: both parts are sums of the same leaf values the whole model adds, in another order, so the scores equal
the whole model's up to float rounding (tests/explain/test_scale.py checks it against LightGBM's predict). Two
documents that reach the same leaves in every tree get bit-identical scores both ways (``rest_g`` adds their leaf
values in the trees' order, as LightGBM adds a model's trees), so ties between equal scores,
which the metrics break by input order, stay ties and the drops are those of scoring the whole model.

What it needs (:func:`tree_scorer` returns None otherwise, and explain scores the whole model): one tree per
iteration, constant finite leaves (no ``linear_tree``), no averaged output (random forests) and an objective whose
output is the raw score (every ranking objective, ``regression``, a custom one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankcli.core.trees.ensemble import Ensemble, from_tree_arrays
from rankcli.core.trees.leaves import available as leaf_indices_available
from rankcli.core.trees.leaves import leaf_indices
from rankcli.errors import InputError
from rankcli.formats.lightgbm_text import parse_model_text
from rankcli.train.model import booster_from_text

#: Objectives whose prediction is the raw sum of the trees (an absent one: a custom objective).
IDENTITY_OBJECTIVES = ("lambdarank", "rank_xendcg", "regression", "regression_l2", "l2", "custom", "none")


def _header_value(header: list[str], key: str) -> str | None:
    for line in header:
        if line.startswith(key + "="):
            return line[len(key) + 1:]
    return None


def _tree_fields(block: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in block.splitlines()[1:] if "=" in line)


@dataclass
class TreeScorer:
    """The model's trees as LightGBM's text holds them, for scoring with a group permuted (module docstring)."""

    header: str                 # the model text before the first tree, without ``tree_sizes`` (recomputed on load)
    blocks: list[str]           # each tree's text without its ``Tree=k`` line
    tail: str                   # from ``end of trees`` on
    reads: np.ndarray           # (n_trees, n_features) bool: the tree splits on the feature
    leaf_values: np.ndarray     # all trees' leaf values, concatenated
    leaf_start: np.ndarray      # (n_trees,) where each tree's leaves start in ``leaf_values``
    threads: int
    ensemble: Ensemble | None = None  # the same trees as arrays, for the compiled leaf walk (None: LightGBM's)
    tree_arrays: list[tuple] | None = None  # each tree's arrays (from_tree_arrays' input), for submodels

    @property
    def n_trees(self) -> int:
        return len(self.blocks)

    def trees_reading(self, columns) -> np.ndarray:
        """(n_trees,) bool: the trees that split on any of ``columns``."""
        return self.reads[:, list(columns)].any(axis=1)

    def submodel(self, trees: np.ndarray, whole=None):
        """What scores the trees where ``trees`` is True as a model of those trees alone (``predict(x,
        raw_score=True, num_threads=...)``): the compiled leaf walk where it serves (:class:`WalkedTrees`), else
        ``whole`` (the model's own booster, when given) for every tree, else a ``lightgbm.Booster`` of those trees,
        in the model's order."""
        if self.tree_arrays is not None and leaf_indices_available():
            return WalkedTrees(from_tree_arrays([self.tree_arrays[t] for t in np.flatnonzero(trees)]))
        if whole is not None and trees.all():
            return whole
        body = "".join(f"Tree={k}\n{self.blocks[t]}\n\n" for k, t in enumerate(np.flatnonzero(trees)))
        return booster_from_text(self.header + body + self.tail)

    def leaf_matrix(self, booster, features: np.ndarray) -> np.ndarray:
        """(n_trees, rows) float64: each tree's leaf value for each row (LightGBM's leaf assignment: walked by
        :mod:`rankcli.core.trees.leaves`, proven equal to LightGBM's ``pred_leaf``, or ``pred_leaf`` itself)."""
        walked = None if self.ensemble is None else leaf_indices(self.ensemble, features, self.threads)
        if walked is not None:
            return self.leaf_values[walked.T]
        leaves = np.asarray(booster.predict(features, pred_leaf=True, num_threads=self.threads), dtype=np.int64)
        return self.leaf_values[leaves.reshape(features.shape[0], self.n_trees).T + self.leaf_start[:, None]]

    def rest(self, values: np.ndarray, trees: np.ndarray) -> np.ndarray:
        """(rows,) the sum of the leaf values (:meth:`leaf_matrix`) of the trees where ``trees`` is False, added in
        the trees' order, row by row alike: rows with equal leaf values get bit-equal sums."""
        out = np.zeros(values.shape[1])
        for t in np.flatnonzero(~trees):
            out += values[t]
        return out


def tree_scorer(booster, n_features: int, threads: int) -> TreeScorer | None:
    """The :class:`TreeScorer` of a ``lightgbm.Booster``, or None when its scores are not the raw sum of constant
    leaves, one tree per iteration (module docstring)."""
    text = booster.model_to_string()
    start, end = text.find("\nTree=0\n"), text.find("end of trees")
    if start < 0 or end < 0:
        return None
    header = [line for line in text[:start + 1].split("\n") if not line.startswith("tree_sizes=")]
    objective = (_header_value(header, "objective") or "custom").split()
    if _header_value(header, "num_tree_per_iteration") != "1" or "average_output" in header or \
            objective[0] not in IDENTITY_OBJECTIVES or len(objective) > 1:
        return None
    blocks = [b.split("\n", 1)[1] for b in text[start + 1:end].split("\n\n") if b.strip()]
    reads = np.zeros((len(blocks), n_features), dtype=bool)
    values, starts = [], []
    for t, block in enumerate(blocks):
        fields = _tree_fields(block)
        if fields.get("is_linear", "0") != "0":
            return None
        split = [int(j) for j in fields.get("split_feature", "").split()]
        reads[t, split] = True
        starts.append(sum(v.shape[0] for v in values))
        values.append(np.array(fields["leaf_value"].split(), dtype=np.float64))
    if not blocks or booster.num_trees() != len(blocks):
        return None
    leaves = np.concatenate(values)
    if not np.isfinite(leaves).all():  # a damaged model: the whole model's scoring names the row it breaks
        return None
    ens, arrays = _ensemble(text, leaves)
    return TreeScorer("\n".join(header), blocks, text[end:], reads, leaves, np.array(starts, dtype=np.int64),
                      threads, ens, arrays)


def _ensemble(text: str, leaf_values: np.ndarray) -> tuple[Ensemble | None, list[tuple] | None]:
    """The model's trees as arrays, and each tree's own (None where they do not read as the blocks did, or the
    model has a categorical split: LightGBM assigns the leaves and scores the submodels)."""
    try:
        trees = parse_model_text(text).trees
    except InputError:
        return None, None
    arrays = [(t.split_feature, t.threshold, t.decision_type, t.left_child, t.right_child, t.leaf_value)
              for t in trees]
    ens = from_tree_arrays(arrays)
    if not np.array_equal(ens.leaf_value, leaf_values):
        return None, None
    return ens, (None if ens.categorical.any() else arrays)


@dataclass
class WalkedTrees:
    """Some of a model's trees, scored as LightGBM scores a model holding only them: the leaf each row reaches in
    each tree (the compiled walk, equal to LightGBM's ``pred_leaf``), its leaf values added in the trees' order
    from 0, as ``GBDT::PredictRaw`` adds them, so the scores are LightGBM's bit for bit."""

    ensemble: Ensemble

    def predict(self, x: np.ndarray, raw_score: bool = True, num_threads: int = 1) -> np.ndarray:
        """The raw scores of the rows of ``x`` (``raw_score`` is accepted for ``Booster.predict``'s signature:
        the trees' sum is the raw score)."""
        leaves = leaf_indices(self.ensemble, x, num_threads)
        out = np.zeros(np.shape(x)[0])
        for t in range(self.ensemble.n_trees):
            out += self.ensemble.leaf_value[leaves[:, t]]
        return out
