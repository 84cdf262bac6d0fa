"""A run joined with its qrels as trec_eval joins them (``trec_eval.c``'s query loop, ``form_res_rels.c``), for every
evaluated query at once, for ``rankcli trec_eval`` (``rankcli eval``'s join is :mod:`rankcli.formats.trec.join`).

Ids come in as integer codes whose order is the byte order of the ids (``strcmp``'s). The evaluated queries are the
qrels' queries, in id order, that the run has; with ``-c`` every qrels query, one missing from the run ranking
trec_eval's stand-in document ``ceci_nest_pas_un_docno`` (similarity 1) and its ``num_ret`` then read as 0. A
query's ranking is its documents by similarity descending, ties by document id descending; ``-M`` keeps the first
ones, ``-J`` then drops those not judged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankcli.core.trec_eval.chunk import NONPOOL, UNJUDGED


@dataclass
class Side:
    """One input's lines: query codes, document codes, a value (label or similarity) and 1-based line numbers."""

    qcodes: np.ndarray
    dcodes: np.ndarray
    values: np.ndarray
    lines: np.ndarray


@dataclass
class ResRels:
    """The evaluated queries (``qcodes``, in order; ``stand_in``: ranked only the stand-in document), their
    judged rankings (``rel`` by ``ret_offsets``) and their qrels labels (``labels`` by ``label_offsets``)."""

    qcodes: np.ndarray
    stand_in: np.ndarray
    rel: np.ndarray
    ret_offsets: np.ndarray
    labels: np.ndarray
    label_offsets: np.ndarray
    #: where each ranking starts in ``rel`` when the rankings are not laid end to end (their lengths still
    #: ``ret_offsets``' differences); None: at ``ret_offsets``
    ret_starts: np.ndarray | None = None
    #: when given, ``rel`` holds indices into it (negative ones from its end): a ranked document's judgment is
    #: ``rel_table[rel]``, looked up block by block
    rel_table: np.ndarray | None = None


@dataclass
class Duplicate:
    """A (query, document) pair on two lines of one input (trec_eval refuses it for an evaluated query)."""

    which: str
    line: int


def codes(*arrays: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Integer codes of the ids in ``arrays`` (numpy ``S``), in byte order, shared across them: the distinct ids
    and each array's codes."""
    both = np.concatenate(arrays) if arrays else np.zeros(0, "S1")
    names, inverse = np.unique(both, return_inverse=True)
    bounds = np.cumsum([0] + [a.shape[0] for a in arrays])
    return names, [inverse[a:b].astype(np.int64) for a, b in zip(bounds[:-1], bounds[1:])]


def code_of(names: np.ndarray, name: bytes) -> int:
    """The code of ``name`` among the distinct ids ``names`` (-1 when absent: ``-D N.qid`` of a query not there)."""
    hit = np.flatnonzero(names == name)
    return int(hit[0]) if hit.shape[0] else -1


def _offsets(codes: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Start of each of ``queries`` in the sorted ``codes`` (and the end)."""
    return np.searchsorted(codes, np.append(queries, np.iinfo(np.int64).max), side="left")


def _first_repeat(q: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Mask of the rows (sorted by q then d) that repeat the row before."""
    same = np.zeros(q.shape[0], dtype=bool)
    if q.shape[0] > 1:
        same[1:] = (q[1:] == q[:-1]) & (d[1:] == d[:-1])
    return same


def form_res_rels(qrels: Side, run: Side, *, complete: bool, max_docs: int, judged_only: bool, stand_in_code: int,
         only_query: int | None = None) -> ResRels | Duplicate:
    """Join (see the module docstring); ``stand_in_code``: the document code of ``ceci_nest_pas_un_docno``,
    ``only_query``: evaluate that query code alone (``-D N.qid``)."""
    order = np.lexsort((qrels.dcodes, qrels.qcodes))
    qq, qd, ql, qline = (a[order] for a in (qrels.qcodes, qrels.dcodes, qrels.values, qrels.lines))
    queries = np.unique(qq)
    has_run = np.isin(queries, run.qcodes)
    evaluated = queries if complete else queries[has_run]
    if only_query is not None:
        evaluated = evaluated[evaluated == only_query]
    stand_in = ~np.isin(evaluated, run.qcodes)
    # the run's lines of the evaluated queries, plus the stand-in document of those it lacks
    keep = np.isin(run.qcodes, evaluated)
    rq = np.concatenate([run.qcodes[keep], evaluated[stand_in]])
    rd = np.concatenate([run.dcodes[keep], np.full(int(stand_in.sum()), stand_in_code, dtype=np.int64)])
    rs = np.concatenate([run.values[keep], np.ones(int(stand_in.sum()))])
    rl = np.concatenate([run.lines[keep], np.zeros(int(stand_in.sum()), dtype=np.int64)])
    ranked = np.lexsort((-rd, -rs, rq))
    rq, rd, rl = rq[ranked], rd[ranked], rl[ranked]
    starts = _offsets(rq, evaluated)
    position = np.arange(rq.shape[0]) - np.repeat(starts[:-1], np.diff(starts))
    top = position < max_docs
    rq, rd, rl = rq[top], rd[top], rl[top]
    problem = _duplicates(qq, qd, qline, evaluated, rq, rd, rl)
    if problem is not None:
        return problem
    rel = _judgments(qq, qd, ql, rq, rd)
    if judged_only:
        rq, rel = rq[rel >= 0], rel[rel >= 0]
    ret_offsets = _offsets(rq, evaluated) if evaluated.shape[0] else np.zeros(1, dtype=np.int64)
    in_eval = np.isin(qq, evaluated)
    lq, labels = qq[in_eval], ql[in_eval]
    label_offsets = _offsets(lq, evaluated) if evaluated.shape[0] else np.zeros(1, dtype=np.int64)
    return ResRels(evaluated, stand_in, rel, ret_offsets, labels, label_offsets)


def _duplicates(qq, qd, qline, evaluated, rq, rd, rl) -> Duplicate | None:
    in_eval = np.isin(qq, evaluated)
    repeat = _first_repeat(qq, qd) & in_eval
    problem = None
    if repeat.any():
        problem = Duplicate("qrels", int(qline[repeat].min()))
    order = np.lexsort((rd, rq))
    repeat = _first_repeat(rq[order], rd[order])
    if repeat.any():
        line = int(rl[order][repeat].min())
        if problem is None or line < problem.line:
            problem = Duplicate("run", line)
    return problem


def _judgments(qq, qd, ql, rq, rd) -> np.ndarray:
    """Each ranked document's label: its qrels label, ``UNJUDGED`` when negative, ``NONPOOL`` when absent."""
    nd = int(max(qd.max(initial=0), rd.max(initial=0))) + 1
    qkey = qq.astype(np.int64) * nd + qd
    rkey = rq.astype(np.int64) * nd + rd
    at = np.searchsorted(qkey, rkey)
    at = np.minimum(at, max(qkey.shape[0] - 1, 0))
    found = (qkey[at] == rkey) if qkey.shape[0] else np.zeros(rkey.shape[0], dtype=bool)
    label = ql[at] if qkey.shape[0] else np.zeros(rkey.shape[0], dtype=np.int64)
    return np.where(found, np.where(label >= 0, label, UNJUDGED), NONPOOL).astype(np.int64)
