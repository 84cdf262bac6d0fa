"""Preference judgments joined with a run as trec_eval joins them (``form_prefs_counts.c``,
``form_prefs_and_ranks``), for every evaluated query at once (``rankcli trec_eval -R prefs``, ``-R qrels_prefs``).

Ids come in as integer codes in the byte order of the ids. The evaluated queries are the preference file's queries,
in id order, that the run has; with ``-c`` every one, a query the run lacks ranking trec_eval's stand-in document
``ceci_nest_pas_un_docno`` (similarity 1). A query's ranking is its documents by similarity descending, ties by
document id *ascending* (the opposite of ``form_res_rels.c``'s rule for qrels), the first ``-M`` kept. ``-J``, ``-l``
and ``-N`` play no part.

Each document of a query's preferences gets a *docid rank*: the judged documents the ranking holds are numbered 0,
1, ... in rank order (``num_judged_ret`` of them), the others after them in document id order (``num_judged`` in
all). The preference lines are then put in trec_eval's order: query, judgment group, sub-group (byte order), level
descending, docid rank.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankcli.core.trec_eval.join import Duplicate, Side


@dataclass
class PrefsSide:
    """The preference lines: query, judgment group, sub-group and document codes, level (a double) and line number."""

    qcodes: np.ndarray
    groups: np.ndarray
    subgroups: np.ndarray
    dcodes: np.ndarray
    levels: np.ndarray
    lines: np.ndarray


@dataclass
class RankedPrefs:
    """The evaluated queries (``qcodes``; ``stand_in``: ranked only the stand-in document) and their preference
    lines in trec_eval's order, ``offsets`` giving each query's lines: group and sub-group codes, level, docid rank
    and line number of each; per query ``num_judged_ret`` and ``num_judged``; ``duplicate``: a document ranked twice
    among a query's kept documents (trec_eval refuses it when it computes a preference measure), or None."""

    qcodes: np.ndarray
    stand_in: np.ndarray
    offsets: np.ndarray
    groups: np.ndarray
    subgroups: np.ndarray
    levels: np.ndarray
    ranks: np.ndarray
    lines: np.ndarray
    num_judged_ret: np.ndarray
    num_judged: np.ndarray
    duplicate: Duplicate | None = None


def _starts(codes: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Where each of ``queries`` starts in the sorted ``codes``, and the end."""
    return np.searchsorted(codes, np.append(queries, np.iinfo(np.int64).max), side="left")


def _ranking(run: Side, evaluated: np.ndarray, stand_in: np.ndarray, stand_in_code: int, max_docs: int):
    """The kept ranked lines of the evaluated queries (query, document, line), sorted by query then rank."""
    keep = np.isin(run.qcodes, evaluated)
    n_stand = int(stand_in.sum())
    rq = np.concatenate([run.qcodes[keep], evaluated[stand_in]])
    rd = np.concatenate([run.dcodes[keep], np.full(n_stand, stand_in_code, dtype=np.int64)])
    rs = np.concatenate([run.values[keep], np.ones(n_stand)])
    rl = np.concatenate([run.lines[keep], np.zeros(n_stand, dtype=np.int64)])
    order = np.lexsort((rd, -rs, rq))  # comp_sim_docno: similarity descending, then strcmp ascending
    rq, rd, rl = rq[order], rd[order], rl[order]
    starts = _starts(rq, evaluated)
    position = np.arange(rq.shape[0]) - np.repeat(starts[:-1], np.diff(starts))
    top = position < max(max_docs, 0)
    return rq[top], rd[top], rl[top], position[top]


def _duplicate(rq: np.ndarray, rd: np.ndarray, rl: np.ndarray) -> Duplicate | None:
    """A document ranked twice among a query's kept lines (``form_prefs_counts.c`` refuses it)."""
    order = np.lexsort((rd, rq))
    q, d, line = rq[order], rd[order], rl[order]
    repeat = np.zeros(q.shape[0], dtype=bool)
    repeat[1:] = (q[1:] == q[:-1]) & (d[1:] == d[:-1])
    return Duplicate("run", int(line[repeat].min())) if repeat.any() else None


def rank_prefs(prefs: PrefsSide, run: Side, *, complete: bool, max_docs: int, stand_in_code: int,
               only_query: int | None = None) -> RankedPrefs:
    """Join (see the module docstring); ``only_query``: evaluate that query code alone (``-D N.qid``)."""
    queries = np.unique(prefs.qcodes)
    evaluated = queries if complete else queries[np.isin(queries, run.qcodes)]
    if only_query is not None:
        evaluated = evaluated[evaluated == only_query]
    stand_in = ~np.isin(evaluated, run.qcodes)
    rq, rd, rl, position = _ranking(run, evaluated, stand_in, stand_in_code, max_docs)
    mine = np.isin(prefs.qcodes, evaluated)
    pq, pd = prefs.qcodes[mine], prefs.dcodes[mine]
    nd = int(max(pd.max(initial=0), rd.max(initial=0))) + 1
    docs, of_line = np.unique(pq * nd + pd, return_inverse=True)
    dq, dd = docs // nd, docs % nd
    run_keys = rq * nd + rd
    by_key = np.argsort(run_keys)
    ranked = run_keys[by_key]
    at = np.minimum(np.searchsorted(ranked, docs), max(ranked.shape[0] - 1, 0))
    found = ranked[at] == docs if ranked.shape[0] else np.zeros(docs.shape[0], dtype=bool)
    rank_position = np.full(docs.shape[0], np.iinfo(np.int64).max)
    rank_position[found] = position[by_key[at[found]]]
    # docid ranks: retrieved documents in rank order, then the others in id order
    order = np.lexsort((dd, rank_position, dq))
    doc_starts = _starts(dq, evaluated)
    docid = np.empty(docs.shape[0], dtype=np.int64)
    docid[order] = np.arange(docs.shape[0]) - np.repeat(doc_starts[:-1], np.diff(doc_starts))
    qi = np.searchsorted(evaluated, pq)
    num_judged_ret = np.bincount(np.searchsorted(evaluated, dq[found]), minlength=evaluated.shape[0])
    ranks = docid[of_line]
    groups, subgroups, levels, lines = (a[mine] for a in (prefs.groups, prefs.subgroups, prefs.levels, prefs.lines))
    # comp_prefs_and_ranks_jg_rel_level: group, sub-group, level descending, docid rank (-0.0 and 0.0 tie)
    order = np.lexsort((ranks, -levels, subgroups, groups, qi))
    return RankedPrefs(evaluated, stand_in, _starts(qi[order], np.arange(evaluated.shape[0])), groups[order],
                       subgroups[order], levels[order], ranks[order], lines[order], num_judged_ret,
                       np.diff(doc_starts), _duplicate(rq, rd, rl))
