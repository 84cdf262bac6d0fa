"""What several loss families share: the log-softmax per query, the masks of degenerate queries, NDCG's gains for
labels of any size, and the memory-bounded pair blocks of the ``O(n^2)`` losses (RankNet, ApproxNDCG, LambdaLoss).

Pair blocks
-----------
All pairs of a query are formed in padded ``(q, m, m)`` blocks: queries are grouped by size on a geometric grid of
ratio 1.125 (at most ~27% padding cells), ``m`` is the group's width, and a block holds at most
:data:`MAX_PAIR_ELEMENTS` cells (``q = MAX_PAIR_ELEMENTS // m^2`` queries). A query longer than
``sqrt(MAX_PAIR_ELEMENTS)`` is taken alone and cut into row tiles of ``MAX_PAIR_ELEMENTS // m`` documents against
all ``m``. Each loss keeps a few arrays of one block's cells, so its working memory is a small multiple of
``MAX_PAIR_ELEMENTS`` whatever the list lengths (the tests measure it).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from rankcli.core.groups import broadcast, order_within, segment_max, segment_sum, sizes

#: Cells of one padded pair block (bounds the working memory of the pairwise losses; see the module docstring).
#: The pairwise losses read it from this module when they run, so that a test can lower it.
MAX_PAIR_ELEMENTS = 1 << 20
#: ``ln 2``: ``log2 x = ln x / LN2``.
LN2 = float(np.log(2.0))
#: The largest Newton step ``|g| / h`` of one document, per document of its query and in the loss's score unit
#: (:func:`guard_hessian`).
MAX_NEWTON_STEP = 1e4


def guard_hessian(grad: np.ndarray, hess: np.ndarray, offsets: np.ndarray, unit: float = 1.0) -> np.ndarray:
    """The boosting step's hessian floored at ``|g| / (MAX_NEWTON_STEP n unit)`` per document (``n`` the documents of
    its query, ``unit`` the loss's score unit: ApproxNDCG's ``T``, LambdaLoss's ``1 / sigma``, else 1).

    Why: a document whose curvature has all but vanished while its gradient has not (ListMLE at the scores
    ``(-40, 0, 0)``: ``g = -1``, ``h = 2.1e-18`` in float64; 0 exactly from gaps of about 745 on) has a Newton step
    ``-g / h`` of 4.7e17, and a LightGBM leaf of such documents takes it (``-sum g / (sum h + 1e-15)``) unless
    ``min_sum_hessian_in_leaf`` forbids the leaf, which the paper presets set to 0. With the floor every document's
    ``|g| / h`` is at most ``MAX_NEWTON_STEP n unit``, hence so is every leaf's ``|sum g| / sum h``, and every split
    gain ``(sum g)^2 / sum h`` is finite, whatever LightGBM's parameters. A document's ``|g| / h`` is about ``n``
    for the listwise losses and 2 for the pairwise ones at equal scores, and grows as ``e^gap`` as it falls behind its
    query: the floor binds only beyond gaps of about ``ln MAX_NEWTON_STEP = 9.2`` units past that, and it scales with
    the gradient and the unit, so that a loss whose temperature only rescales the model keeps doing only that. The
    result is ``>= 0`` and ``> 0`` wherever the gradient is not 0; where it is 0 the document asks for no step.
    """
    grad = np.asarray(grad, dtype=np.float64)
    hess = np.asarray(hess, dtype=np.float64)
    if grad.shape[0] == 0:
        return hess
    per_row = np.repeat(sizes(offsets).astype(np.float64), sizes(offsets))
    return np.maximum(hess, np.abs(grad) / (MAX_NEWTON_STEP * unit * per_row))


def log_softmax(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``log softmax(scores)`` within each query (``offsets`` the query boundaries), the query's maximum subtracted
    first."""
    s = np.asarray(scores, dtype=np.float64)
    shifted = s - broadcast(segment_max(s, offsets), offsets)
    return shifted - broadcast(np.log(segment_sum(np.exp(shifted), offsets)), offsets)


def single_rows(offsets: np.ndarray) -> np.ndarray:
    """Per-row mask of the documents alone in their query (``offsets`` the query boundaries)."""
    return broadcast(sizes(offsets) <= 1, offsets)


def ndcg_gains(labels: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``G_i = (2^y_i - 1) / maxDCG_q`` per row and the per-query mask of usable queries, for labels ``y >= 0`` of
    any size (grouped by query, ``offsets`` the query boundaries).

    ``maxDCG_q = sum_k (2^y_(k) - 1) / log2(1 + k)`` over the query's labels in decreasing order. Numerator and
    denominator are both divided by ``2^m_q``, ``m_q`` the query's largest label, so no term exceeds 1 and labels
    of any size give finite gains (as XE-NDCG's targets, :func:`rankcli.core.losses.xendcg_label_terms`); when
    ``2^-m_q`` underflows the ``- 1`` is below float64's resolution of the result and dropping it is exact to
    rounding. Below a label of 1 the numerator is ``2^(y - m) (1 - 2^-y)`` with ``1 - 2^-y = -expm1(-y ln 2)``, exact
    to rounding where ``2^(y - m) - 2^-m`` cancels: a label below about 1.6e-16 gave a gain of exactly 0 (``2^y``
    rounds to 1), so that queries of such labels trained nothing and the model stayed constant; a gain is now 0
    only for a label of 0 (a positive label below float64's normal range, 2.2e-308, is refused by ``train``). A
    query is unusable when it has one document or no gain (all labels 0): its gains are 0.
    """
    y = np.asarray(labels, dtype=np.float64)
    if y.shape[0] == 0:
        return np.zeros(0), np.zeros(0, dtype=bool)
    top_q = segment_max(y, offsets)
    top = broadcast(top_q, offsets)
    with np.errstate(under="ignore"):
        numer = np.where(y >= 1.0, np.exp2(y - top) - np.exp2(-top), np.exp2(y - top) * -np.expm1(-LN2 * y))
    ideal = order_within(y, offsets)                       # each query's rows by label, decreasing
    position = np.arange(y.shape[0]) - broadcast(offsets[:-1], offsets) + 1
    ideal_dcg = segment_sum(numer[ideal] / np.log2(1.0 + position), offsets)
    usable_q = (ideal_dcg > 0) & (sizes(offsets) > 1)
    denom = broadcast(np.where(usable_q, ideal_dcg, 1.0), offsets)
    return np.where(broadcast(usable_q, offsets), numer / denom, 0.0), usable_q


def size_groups(offsets: np.ndarray, ratio: float = 1.125) -> Iterator[tuple[np.ndarray, int]]:
    """``(query numbers, width)`` for queries grouped by size on a geometric grid of ``ratio`` (``offsets`` the
    query boundaries); ``width`` is the group's longest query.

    Like :func:`rankcli.core.groups.size_buckets` on a finer grid: pair blocks cost ``width^2`` cells per query, so
    power-of-two buckets could waste up to 4x; here at most ~27%.
    """
    sz = sizes(offsets)
    if sz.shape[0] == 0:
        return
    bucket = np.ceil(np.log(np.maximum(sz, 1)) / np.log(ratio)).astype(np.int64)
    order = np.argsort(bucket, kind="stable")
    b_sorted = bucket[order]
    cuts = np.flatnonzero(b_sorted[1:] != b_sorted[:-1]) + 1
    for qs in np.split(order, cuts):
        yield qs, int(sz[qs].max())


def pair_blocks(offsets: np.ndarray) -> Iterator[tuple[np.ndarray, int]]:
    """``(query numbers, width)`` of the blocks of the pairwise losses: queries of at least two documents, at most
    :data:`MAX_PAIR_ELEMENTS` cells per block (``offsets`` the query boundaries). A query wider than
    ``sqrt(MAX_PAIR_ELEMENTS)`` comes alone, for the caller to cut into row tiles (:func:`row_tile`)."""
    cap = MAX_PAIR_ELEMENTS
    for qs, width in size_groups(offsets):
        if width <= 1:
            continue
        per_block = cap // (width * width)
        if per_block >= 1:
            for start in range(0, qs.shape[0], per_block):
                yield qs[start:start + per_block], width
        else:
            for q in qs:
                yield np.array([q]), int(offsets[q + 1] - offsets[q])


def row_tile(width: int) -> int:
    """Rows per tile of a query of ``width`` documents too long for one block (each tile against all columns)."""
    return max(1, MAX_PAIR_ELEMENTS // width)


#: Within this spread of the scores of a query (in the units the pair terms see), ``exp(x_i - x_j)`` is the product
#: of two per-document exponentials that stay finite and normal in the dtype (float32 ends near ``e^88``).
PRODUCT_SPREAD = {np.dtype(np.float32): 80.0, np.dtype(np.float64): 700.0}


def wrong_order_probabilities(x: np.ndarray, valid: np.ndarray, rows: slice = slice(None)) -> np.ndarray:
    """``S[b, i, j] = 1 / (1 + exp(x[b, i] - x[b, j]))`` for the rows ``i`` of ``rows`` against every column ``j`` of
    each query ``b`` of a block (``x`` a ``(q, m)`` matrix, ``valid`` its real cells): a ``(q, r, m)`` array.

    ``exp(x_i - x_j) = exp(x_i - top) exp(top - x_j)`` with ``top`` the query's largest score, so a block whose
    queries spread less than :data:`PRODUCT_SPREAD` takes two exponentials per document and one product per pair,
    instead of an exponential per pair (the cost of every pairwise loss); a wider block takes the exponential of each
    difference. Padding cells may hold any value; their rows and columns are the caller's to ignore (a padding
    column far below every score, ``-1e30``, gets ``S = 0`` in every real row).
    """
    dtype = x.dtype
    real = np.where(valid, x, -np.inf).max(axis=1, keepdims=True)
    low = np.where(valid, x, np.inf).min(axis=1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        if float((real - low).max(initial=0.0)) <= PRODUCT_SPREAD[np.dtype(dtype)]:
            shifted = x.astype(np.float64) - real
            e = np.exp(shifted[:, rows]).astype(dtype)
            r = np.exp(-shifted).astype(dtype)
            s = np.multiply(e[:, :, None], r[:, None, :])
        else:
            s = np.subtract(x[:, rows, None], x[:, None, :])
            np.exp(s, out=s)
        s += 1.0
        np.reciprocal(s, out=s)
    return s


def gain_pairs(labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray, gains: tuple | None, scale: float,
               dtype: type) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What ApproxNDCG and LambdaLoss start from: NDCG's gains per row (``gains``, or :func:`ndcg_gains` of the
    labels), the mask of usable queries, and ``scale (s - the query's largest score)`` in ``dtype``: only differences
    within a query matter, and centring first keeps float32 exact to its rounding whatever the scores' offset."""
    g_all, usable_q = gains if gains is not None else ndcg_gains(labels, offsets)
    s = np.asarray(scores, dtype=np.float64)
    if s.shape[0] == 0:
        return g_all, usable_q, s.astype(dtype)
    x = scale * (s - broadcast(segment_max(s, offsets), offsets))
    return g_all, usable_q, np.maximum(x, -1e30).astype(dtype)  # finite in float32 too (-1e30: "far below")


def usable_blocks(offsets: np.ndarray, usable_q: np.ndarray) -> Iterator[tuple[np.ndarray, int]]:
    """:func:`pair_blocks` of the queries ``usable_q`` marks (the others train nothing)."""
    for qs, width in pair_blocks(offsets):
        qs = qs[usable_q[qs]]
        if qs.shape[0]:
            yield qs, width
