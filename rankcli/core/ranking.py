"""Queries laid out as padded matrices and ranked by score: the layout the metric kernels start from.

One size bucket of queries (:func:`rankcli.core.groups.size_buckets`) becomes a ``(queries, width)`` matrix of row
numbers; padding cells hold ``-inf`` scores and sit after the real cells, so a stable sort by score, descending,
ranks each query with equal scores in input order and the padding last (after real ``-inf`` scores too).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankcli.core.groups import padded_rows


@dataclass
class PaddedRanking:
    """One bucket of queries, padded, and the order that ranks each of them.

    ``rows``, ``valid`` and ``scores`` are in input order (``scores`` is ``-inf`` in padding); ``order`` holds, per
    query, the columns by score descending, equal scores in input order, padding last; None when that is the input
    order (every query's rows already ranked, as TREC runs read by the C path come).
    """

    rows: np.ndarray     # (nb, width) int64 row numbers (padding repeats the query's first row)
    valid: np.ndarray    # (nb, width) bool, real cells
    scores: np.ndarray   # (nb, width) float64, -inf in padding
    order: np.ndarray | None  # (nb, width) int64 columns in rank order; None: the input order

    def ranked(self, values: np.ndarray) -> np.ndarray:
        """``values`` (a ``(nb, width)`` matrix laid out as ``rows``) in rank order."""
        return values if self.order is None else np.take_along_axis(values, self.order, axis=1)


def padded_ranking(scores: np.ndarray, offsets: np.ndarray, qs: np.ndarray, width: int) -> PaddedRanking:
    """Rank the queries ``qs`` (all at most ``width`` long) by ``scores``, descending, ties in input order.

    Parameters
    ----------
    scores : (n_rows,) float64 scores, rows of a query contiguous.
    offsets : (n_queries + 1,) int64 query boundaries.
    qs : query numbers of the bucket.
    width : the bucket's width (its longest query).
    """
    rows, valid, smat, ranked = padded_scores(scores, offsets, qs, width)
    if ranked:  # the stable sort would change nothing
        return PaddedRanking(rows, valid, smat, None)
    order = np.argsort(-smat, axis=1, kind="stable")  # padding (last columns) stays after real -inf scores
    return PaddedRanking(rows, valid, smat, order)


def padded_scores(scores: np.ndarray, offsets: np.ndarray, qs: np.ndarray,
                  width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """The queries ``qs`` as padded matrices: row numbers, real cells, scores (``-inf`` in padding), and whether
    every query is in rank order already (scores never rise along a row), as TREC runs read by the C path come: a
    stable sort would then keep every row as it is."""
    rows, valid = padded_rows(offsets, qs, width)
    smat = scores[rows]
    smat[~valid] = -np.inf
    return rows, valid, smat, bool((smat[:, 1:] <= smat[:, :-1]).all())
