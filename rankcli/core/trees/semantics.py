"""How a search engine decides at a split and adds up trees, as data: the evaluator of an exported model.

Every engine rankcli exports to decides at a numerical split in the same shape, with its own parameters:

1. the feature value is held in the engine's precision (float32 for the LTR plugins, RankLib, Solr and ONNX with a
   float input; double for Elasticsearch's trained models, Vespa and ONNX with a double input);
2. a missing value (NaN; for Elasticsearch also +-inf, ``Numbers.isValidDouble``) either takes the node's missing
   branch, or is replaced by 0 first (RankLib's ``DataPoint.isUnknown``; Solr's ``defaultValue`` 0; OpenSearch's
   ``missing_as_zero``);
3. an engine normaliser, when written, maps the value in float32 (``(v - mean) / std`` or ``(v - min) / (max - min)``;
   a NaN stays NaN);
4. left when ``v <= cut`` or, for a strict engine, ``v < cut``; ``cut`` is the threshold as the engine holds it.

:class:`Splits` holds those parameters per node, read back from the exported file (not from what the writer meant
to write), and :func:`engine_left` applies them. :func:`add_trees` sums the leaves the engine's way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankcli.core.trees.ensemble import descend

NAN_RIGHT, NAN_LEFT, NAN_AS_ZERO = 0, 1, 2
NORM_NONE, NORM_STANDARD, NORM_MINMAX = 0, 1, 2

#: Summation: float32 accumulator of float32 terms (o19s NaiveAdditiveDecisionTree.score, Solr
#: MultipleAdditiveTreesModel.score); RankLib's float accumulator of a double product (Ensemble.eval:
#: ``s += tree.eval(dp) * weight``, Java's compound assignment computes in double and rounds to float); Java's
#: DoubleStream.sum (compensated) rounded to float at the end (Elasticsearch WeightedSum.aggregate, then
#: LearningToRankRescorer's ``prediction.floatValue()``); plain double in tree order (Vespa's compiled expression).
#: onnxruntime: double terms summed in double (tree order per row, or by blocks of trees across threads), the output
#: a float32 tensor.
SUM_FLOAT32, SUM_RANKLIB, SUM_KAHAN_FLOAT32, SUM_DOUBLE = "float32", "ranklib", "kahan-float32", "double"
SUM_DOUBLE_FLOAT32 = "double-float32"


@dataclass
class Splits:
    """Each node's decision as the engine makes it (arrays aligned with the ensemble's nodes)."""

    cut: np.ndarray  # (nodes,) float64 holding the engine's threshold exactly
    strict: np.ndarray  # (nodes,) bool: left when v < cut (else v <= cut)
    nan: np.ndarray  # (nodes,) int: NAN_RIGHT, NAN_LEFT or NAN_AS_ZERO
    precision: type = np.float32  # the type the engine holds feature values in
    inf_is_missing: bool = False  # +-inf takes the missing branch (Elasticsearch)
    norm: np.ndarray | None = None  # (nodes,) NORM_* of the node's feature, float32 arithmetic
    norm_center: np.ndarray | None = None  # (nodes,) float32: mean or min
    norm_scale: np.ndarray | None = None  # (nodes,) float32: std or (max - min), as the engine computes it


def engine_normalize(v: np.ndarray, kind: np.ndarray, center: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """An engine normaliser in float32: ``(v - center) / scale`` (o19s StandardFeatureNormalizer and
    MinMaxFeatureNormalizer, Solr StandardNormalizer and MinMaxNormalizer: float operations); ``NORM_NONE`` leaves
    the value."""
    v32 = v.astype(np.float32)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        out = (v32 - center.astype(np.float32)) / scale.astype(np.float32)
    return np.where(kind == NORM_NONE, v32, out)


def engine_left(splits: Splits, nodes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Whether the engine sends ``values`` (raw feature values, any float type) left at ``nodes``."""
    v = np.asarray(values).astype(splits.precision)
    missing = np.isnan(v)
    if splits.inf_is_missing:
        missing |= np.isinf(v)
    mode = splits.nan[nodes]
    as_zero = missing & (mode == NAN_AS_ZERO)
    v = np.where(as_zero, np.zeros(1, dtype=v.dtype), v)
    missing &= ~as_zero
    if splits.norm is not None:  # only the float32 engines have normalisers
        v = engine_normalize(v, splits.norm[nodes], splits.norm_center[nodes], splits.norm_scale[nodes])
    cut = splits.cut[nodes]
    with np.errstate(invalid="ignore"):
        left = np.where(splits.strict[nodes], v < cut, v <= cut)
    return np.where(missing, mode == NAN_LEFT, left)


def add_trees(terms: np.ndarray, mode: str) -> np.ndarray:
    """The engine's sum over the trees of ``terms`` (rows, trees): each row's leaf value per tree, already in the
    engine's precision and multiplied by the tree weight as the engine multiplies it. Returns float64."""
    if mode == SUM_DOUBLE_FLOAT32:
        return add_trees(terms, SUM_DOUBLE).astype(np.float32).astype(np.float64)
    if mode == SUM_KAHAN_FLOAT32:
        return java_double_sum(terms.astype(np.float64)).astype(np.float32).astype(np.float64)
    n, k = terms.shape
    if mode == SUM_DOUBLE:
        columns = np.asfortranarray(terms, dtype=np.float64)  # one tree's terms contiguous
        total = np.zeros(n)
        for t in range(k):
            total += columns[:, t]
        return total
    columns = np.asfortranarray(terms, dtype=np.float64 if mode == SUM_RANKLIB else np.float32)
    total = np.zeros(n, dtype=np.float32)
    for t in range(k):
        if mode == SUM_RANKLIB:  # the product in double, the sum rounded to float at each step
            total = (total + columns[:, t]).astype(np.float32)
        else:
            total += columns[:, t]
    return total.astype(np.float64)


def java_double_sum(values: np.ndarray) -> np.ndarray:
    """``DoubleStream.sum()`` of each row of ``values``, sequentially: Kahan summation (``Collectors.
    sumWithCompensation``) with the simple sum kept beside it, finished as ``computeFinalSum`` does (JDK 18 and later:
    ``sum - compensation``; the simple sum when that is NaN and the simple sum infinite)."""
    n, k = values.shape
    values = np.asfortranarray(values)
    total = np.zeros(n)
    comp = np.zeros(n)
    simple = np.zeros(n)
    for t in range(k):
        v = values[:, t]
        tmp = v - comp
        velvel = total + tmp
        comp = (velvel - total) - tmp
        total = velvel
        simple = simple + v
    with np.errstate(invalid="ignore"):
        out = total - comp
    return np.where(np.isnan(out) & np.isinf(simple), simple, out)


def rounding_bound(abs_terms_sum: np.ndarray, n_terms: int, mode: str, reference: np.ndarray) -> np.ndarray:
    """An upper bound on ``|engine sum - exact double sum|`` per row, from the sum of the terms' magnitudes: each
    leaf rounded to the engine's precision (``u |v|``) and each of the ``n`` additions (``u`` times at most the sum
    of magnitudes), with ``u = 2^-24`` for float32 and ``2^-53`` for double; a final rounding to float32 adds
    ``2^-24 |s|``. LightGBM's own double sum is inside the same bound."""
    u32, u64 = 2.0 ** -24, 2.0 ** -53
    per_term = {SUM_FLOAT32: 2 * u32, SUM_RANKLIB: 2 * u32 + u64, SUM_KAHAN_FLOAT32: 2 * u64, SUM_DOUBLE: 2 * u64,
                SUM_DOUBLE_FLOAT32: 2 * u64}
    out_round = u32 if mode in (SUM_KAHAN_FLOAT32, SUM_DOUBLE_FLOAT32) else 0.0
    return (n_terms + 1) * per_term[mode] * abs_terms_sum + out_round * np.abs(reference) * 2


def engine_scores(ens, splits: Splits, feature: np.ndarray, leaf: np.ndarray, weight: np.ndarray, summation: str,
                  features: np.ndarray) -> np.ndarray:
    """Every row of ``features`` scored by the engine, from the root of every tree: each (row, tree) walked with
    :func:`engine_left` (``feature`` the column of each node), the leaves weighted and summed the engine's way. The
    slow, complete evaluator (``--check`` walks only the pairs that leave LightGBM's path)."""
    n = features.shape[0]
    rows = np.repeat(np.arange(n), ens.n_trees)
    trees = np.tile(np.arange(ens.n_trees), n)
    leaves = descend(ens, lambda nodes, r: engine_left(splits, nodes, features[r, feature[nodes]]), rows, trees)
    leaves = leaves.reshape(n, ens.n_trees)
    if summation == SUM_FLOAT32:
        terms = leaf.astype(np.float32)[leaves] * weight.astype(np.float32)[None, :]
    else:
        terms = leaf[leaves] * weight[None, :]
    return add_trees(terms, summation)
