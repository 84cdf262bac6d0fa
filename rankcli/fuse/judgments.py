"""TREC qrels joined with the candidates of a fusion: each candidate's label, and the judged documents no run
retrieved (they count in the ideal DCG and in R, as trec_eval counts them).

The qrels are read as ``rankcli eval`` reads them (:func:`rankcli.formats.trec.parse.read_qrels_columns`); their
queries are matched with the runs' by id as text, their documents by name. Judgments of queries no run lists are
ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankcli.core.fusion import Aligned
from rankcli.errors import InputError
from rankcli.formats.trec.parse import doc_hash, pair_keys, read_qrels_columns, words_of


@dataclass
class Judgments:
    """Per candidate: ``labels`` (0 where not judged) and ``judged``; per query: ``has`` (the qrels judge it) and the
    labels of its judged documents that are not candidates, ``unranked`` grouped by ``unranked_offsets``."""

    labels: np.ndarray
    judged: np.ndarray
    has: np.ndarray
    unranked: np.ndarray
    unranked_offsets: np.ndarray
    path: str

    def n_relevant(self, offsets: np.ndarray, threshold: float) -> np.ndarray:
        """Each query's judged documents with a label at or above ``threshold`` (retrieved or not)."""
        n_q = offsets.shape[0] - 1
        ranked = np.repeat(np.arange(n_q), np.diff(offsets))[self.judged & (self.labels >= threshold)]
        extra = np.repeat(np.arange(n_q), np.diff(self.unranked_offsets))[self.unranked >= threshold]
        return (np.bincount(ranked, minlength=n_q) + np.bincount(extra, minlength=n_q)).astype(np.float64)


def _match(cand_keys, cand_names, qrel_keys, qrel_names) -> np.ndarray:
    """The qrels row of each candidate (-1: not judged), by key, checked by name; None when two judged names share
    a key (then matched by name)."""
    order = np.argsort(qrel_keys, kind="stable")
    sk = qrel_keys[order]
    if sk.shape[0] > 1 and (sk[1:] == sk[:-1]).any():
        return None
    pos = np.minimum(np.searchsorted(sk, cand_keys), max(sk.shape[0] - 1, 0))
    if sk.shape[0] == 0:
        return np.full(cand_keys.shape[0], -1, dtype=np.int64)
    row = order[pos]
    hit = (sk[pos] == cand_keys) & (qrel_names[row] == cand_names)
    return np.where(hit, row, -1)


def _match_by_name(cand_query, cand_names, qrel_query, qrel_names) -> np.ndarray:
    where = {(int(q), n): i for i, (q, n) in enumerate(zip(qrel_query.tolist(), qrel_names.tolist()))}
    return np.array([where.get((int(q), n), -1) for q, n in zip(cand_query.tolist(), cand_names.tolist())],
                    dtype=np.int64)


def read_judgments(path: Path | str, aligned: Aligned, query_names: np.ndarray) -> Judgments:
    """The qrels at ``path`` joined with ``aligned``'s candidates (queries named by ``query_names``)."""
    cols = read_qrels_columns(path)
    number = {q: i for i, q in enumerate(query_names.tolist())}
    qmap = np.array([number.get(q.decode("utf-8", "surrogateescape"), -1) for q in cols.qnames.tolist()],
                    dtype=np.int64)
    qrel_query = qmap[cols.qcodes]
    keep = qrel_query >= 0
    qrel_query, qrel_names, values = qrel_query[keep], cols.docids[keep], cols.values[keep]
    n_q = query_names.shape[0]
    has = np.zeros(n_q, dtype=bool)
    has[qrel_query] = True
    if not has.any():
        raise InputError(f"{path}: judges none of the runs' queries (query ids are compared as text)")
    sizes = np.diff(aligned.offsets)
    cand_query = np.repeat(np.arange(n_q), sizes)
    cand_names = aligned.names
    qbits = n_q
    cand_keys = pair_keys(cand_query, doc_hash(words_of(cand_names)), qbits)
    qrel_keys = pair_keys(qrel_query, doc_hash(words_of(qrel_names)), qbits)
    row = _match(cand_keys, cand_names, qrel_keys, qrel_names)
    if row is None:
        row = _match_by_name(cand_query, cand_names, qrel_query, qrel_names)
    labels = np.where(row >= 0, values[np.maximum(row, 0)] if values.shape[0] else 0.0, 0.0)
    used = np.zeros(values.shape[0], dtype=bool)
    used[row[row >= 0]] = True
    rest = np.flatnonzero(~used)
    rest = rest[np.argsort(qrel_query[rest], kind="stable")]
    counts = np.bincount(qrel_query[rest], minlength=n_q)
    return Judgments(labels, row >= 0, has, values[rest], np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
                     str(path))
