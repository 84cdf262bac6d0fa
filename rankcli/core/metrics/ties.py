"""The orders of equal scores that give one ranking: input order (a stable sort) and trec_eval's docid rule.

Ties averaged over their orders (``ties="average"``) need no order: see :class:`rankcli.core.metrics.buckets.TieBucket`.
"""

from __future__ import annotations

import numpy as np

from rankcli.core.groups import size_buckets
from rankcli.core.ranking import padded_ranking


def topk_input_order(scores_mat: np.ndarray, kk: int) -> np.ndarray:
    """Column indices of the first ``kk`` cells of each row of ``scores_mat`` (``(q, w)``) in its stable descending
    order.

    Exact tie-break: among equal scores the lower column comes first, across the cut too. Padding cells must hold
    ``-inf`` and sit after the real cells, so they lose every tie.
    """
    q, w = scores_mat.shape
    if kk >= w or kk * 4 >= w:
        # Cheap enough to sort everything; a stable argsort of the negation gives exactly the order wanted.
        return np.argsort(-scores_mat, axis=1, kind="stable")[:, :kk]
    neg = -scores_mat
    cols = np.argpartition(neg, kk - 1, axis=1)[:, :kk]  # a top-kk set; arbitrary among ties at the cut
    cols.sort(axis=1)
    sel = np.take_along_axis(neg, cols, axis=1)
    t = sel.max(axis=1, keepdims=True)  # the kk-th largest score (negated)
    # The set is the exact one unless some row has a cell equal to the cut score left outside it: repair those rows
    # by taking, among the cells equal to the cut score, the lowest columns.
    ties_total = (neg == t).sum(axis=1)
    ties_taken = (sel == t).sum(axis=1)
    bad = np.flatnonzero(ties_total != ties_taken)
    if bad.shape[0]:
        nb, tb = neg[bad], t[bad]
        better = nb < tb
        equal = nb == tb
        need = kk - better.sum(axis=1)
        chosen = better | (equal & (np.cumsum(equal, axis=1) <= need[:, None]))
        cols[bad] = np.nonzero(chosen)[1].reshape(bad.shape[0], kk)
        sel[bad] = np.take_along_axis(nb, cols[bad], axis=1)
    # Columns ascend within each row, so a stable sort by score puts equal scores in input order.
    return np.take_along_axis(cols, np.argsort(sel, axis=1, kind="stable"), axis=1)


def docid_tie_order(scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray, docids) -> np.ndarray | None:
    """A permutation of the rows, within their queries, after which the stable "input" order of equal scores is the
    order of their document ids, descending in byte order (trec_eval's tie rule); None when no order changes.

    Only queries with a tie group whose labels differ are reordered: the order inside a group of equal labels cannot
    change any metric. Their document ids are compared as UTF-8 bytes (``bytes`` compare as ``strcmp`` does, unsigned;
    numpy's fixed-width bytes drop trailing NULs, where ``strcmp`` stops too), each query sorted on its own.

    Parameters
    ----------
    scores, labels : (n_rows,) float64, rows of a query contiguous. offsets : (n_queries + 1,) query boundaries.
    docids : (n_rows,) document ids: ``str`` values, or a numpy ``bytes`` array (the TREC readers' form).
    """
    perm = None
    for qs, width in size_buckets(offsets):
        if width < 2:
            continue
        ranking = padded_ranking(scores, offsets, qs, width)
        rows, valid, smat = ranking.rows, ranking.valid, ranking.scores
        s_sorted, v_sorted = ranking.ranked(smat), ranking.ranked(valid)
        l_sorted = labels[ranking.ranked(rows)]
        # A group of equal scores with different labels has two neighbours (in sorted order) that differ in label.
        mixed = (s_sorted[:, 1:] == s_sorted[:, :-1]) & v_sorted[:, 1:] & (l_sorted[:, 1:] != l_sorted[:, :-1])
        need = np.flatnonzero(mixed.any(axis=1))
        if need.shape[0] == 0:
            continue
        rows, valid, smat = rows[need], valid[need], smat[need]
        if isinstance(docids, np.ndarray) and docids.dtype.kind == "S":  # already bytes (the TREC readers' form)
            encoded = docids[rows[valid]]
        else:
            names = np.asarray(docids, dtype=object)[rows[valid]]
            encoded = np.array([str(d).encode() for d in names.tolist()], dtype=bytes)
        key = np.zeros(rows.shape, dtype=encoded.dtype)  # padding: b""
        key[valid] = encoded
        rank = np.empty(rows.shape, dtype=np.int64)
        np.put_along_axis(rank, np.argsort(key, axis=1, kind="stable"), np.arange(width)[None, :], axis=1)
        # Real cells first (padding last, whatever its key), then score descending, then docid descending.
        new = np.lexsort((-rank, -smat, ~valid), axis=1)
        if perm is None:
            perm = np.arange(scores.shape[0])
        perm[rows[valid]] = np.take_along_axis(rows, new, axis=1)[valid]
    return perm
