"""Relevance prediction (Chuklin, Markov and de Rijke 2015, section 5.5): how well a click model's predicted
relevance ranks documents, against relevance judgments.

Each query of the qrels that the log shows is ranked: its documents in the log, ordered by the model's predicted
relevance (the attractiveness; DBN and SDBN attractiveness times satisfaction; CCM attractiveness squared; the prior's
value for a pair the model never saw), ties in the order the log first shows them. The score is NDCG@k under the
paper convention (gain ``2^label - 1``; the ideal ranking counts every judged document of the query, shown or not; a
document without a judgment counts as 0; a query without a relevant document is skipped and counted), averaged
over the queries.
"""

from __future__ import annotations

import numpy as np

from rankcli.click_model.logs import session_of_row
from rankcli.core.click_models import ITEM


def _pairs(log):
    """The distinct (query, document) pairs of the log, grouped by query in order of first appearance."""
    width = np.int64(max(len(log.documents), 1))
    keys = log.query[session_of_row(log.offsets)] * width + log.document
    uniq, first = np.unique(keys, return_index=True)
    order = np.lexsort((first, uniq // width))
    uniq = uniq[order]
    return uniq // width, uniq % width


def relevance_prediction(loaded, log, qrels, cutoff: int) -> dict:
    """NDCG@``cutoff`` of the ranking by ``loaded``'s predicted relevance on ``log``'s queries in ``qrels``."""
    from rankcli.core.metrics import Convention, per_query
    from rankcli.formats.click_model_dir import match_documents, read_qrels_for

    metric = f"ndcg@{cutoff}"
    relevance = loaded.model.relevance(loaded.values)
    if loaded.by == "relevance" or relevance is None or not any(f.kind == ITEM for f in loaded.model.families):
        return {"metric": metric, "mean": None, "queries": 0, "skipped": 0,
                "note": "not defined: the model has no per-document parameters"}
    q, d, label = read_qrels_for(qrels, log.queries, log.documents)
    pair_q, pair_d = _pairs(log)
    judged = q >= 0
    shown = np.isin(pair_q, np.unique(q[judged]))
    pair_q, pair_d = pair_q[shown], pair_d[shown]
    if pair_q.shape[0] == 0:
        return {"metric": metric, "mean": None, "queries": 0, "skipped": 0,
                "note": "no query of the qrels is in the log"}
    item = match_documents(loaded.stored, log.queries, log.documents, pair_q, pair_d)
    values, _ = loaded.extended(1)
    scores = loaded.model.relevance(values)[np.where(item < 0, loaded.n_items, item)]
    width = np.int64(max(len(log.documents), 1))
    known = judged & (d >= 0)
    pair_keys = pair_q * width + pair_d
    labels = _labels_of(q[known] * width + d[known], label[known], pair_keys)
    starts = np.flatnonzero(np.r_[True, pair_q[1:] != pair_q[:-1]])
    offsets = np.append(starts, pair_q.shape[0]).astype(np.int64)
    unranked, unranked_offsets = _unranked(q[judged], d[judged], label[judged], pair_q[starts], pair_keys, width)
    pq = per_query([metric], labels, scores, offsets, Convention.preset("paper"), unranked_labels=unranked,
                   unranked_offsets=unranked_offsets)[metric]
    used = ~np.isnan(pq)
    return {"metric": metric, "mean": float(pq[used].mean()) if used.any() else None, "queries": int(used.sum()),
            "skipped": int((~used).sum()), "unseen_pairs": int((item < 0).sum()), "convention": "paper"}


def _labels_of(judged_keys: np.ndarray, judged_labels: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The judgment of each key, 0 where there is none."""
    if judged_keys.shape[0] == 0:
        return np.zeros(keys.shape[0])
    order = np.argsort(judged_keys)
    sorted_keys = judged_keys[order]
    pos = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.shape[0] - 1)
    return np.where(sorted_keys[pos] == keys, judged_labels[order][pos], 0.0)


def _unranked(q, d, label, queries, pair_keys, width):
    """The judged documents of each ranked query that the log never shows for it (they count in the ideal DCG)."""
    keys = q * width + np.where(d >= 0, d, 0)
    missing = (d < 0) | ~np.isin(keys, pair_keys)
    rows = np.flatnonzero(missing & np.isin(q, queries))
    which = np.searchsorted(queries, q[rows]) if queries.size else rows
    order = np.argsort(which, kind="stable")
    counts = np.bincount(which, minlength=queries.shape[0])
    return label[rows][order], np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
