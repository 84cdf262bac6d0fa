"""``rankcli trec_eval -R qrels_jg``: qrels whose second field names a judgment group (``get_qrels_jg.c``,
``form_res_rels_jg.c``).

Each (query, group) is evaluated as a query of its own against the whole ranking of the query, in the byte order of
the group names; a query's value is then the sum over its groups, in that order, divided by their number when there
are several (``m_map_avgjg.c``, ``m_P_avgjg.c``, ``m_Rprec_mult_avgjg.c``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Groups:
    """The (query, group) pairs as query codes: ``of_qrels`` for each qrels line, ``run_rows`` (run lines repeated,
    once per group of their query) with ``of_run`` their codes, and ``query`` the real query of each pair."""

    of_qrels: np.ndarray
    run_rows: np.ndarray
    of_run: np.ndarray
    query: np.ndarray


def split(qq: np.ndarray, groups: np.ndarray, rq: np.ndarray, n_queries: int) -> Groups:
    """Pairs of the qrels query codes ``qq`` and group codes ``groups``; the run's lines (query codes ``rq``) given
    to every pair of their query."""
    n_groups = int(groups.max()) + 1 if groups.shape[0] else 1
    pairs, of_qrels = np.unique(qq * n_groups + groups, return_inverse=True)
    query = pairs // n_groups
    count = np.bincount(query, minlength=n_queries)
    first = np.concatenate(([0], np.cumsum(count)))[:-1]
    per_line = count[rq]
    run_rows = np.repeat(np.arange(rq.shape[0]), per_line)
    within = np.arange(run_rows.shape[0]) - np.repeat(np.cumsum(per_line) - per_line, per_line)
    return Groups(of_qrels.astype(np.int64), run_rows, (first[rq[run_rows]] + within).astype(np.int64), query)


def combine(values: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per real query (``query``: the real query of each row, rows of one query adjacent): the rows' sum in order,
    divided by their number when above one. Returns the real queries and their values."""
    starts = np.flatnonzero(np.r_[True, query[1:] != query[:-1]]) if query.shape[0] else np.zeros(0, np.int64)
    count = np.diff(np.append(starts, query.shape[0]))
    total = np.zeros((starts.shape[0], values.shape[1]))
    for j in range(int(count.max()) if count.shape[0] else 0):
        has = count > j
        total[has] = total[has] + values[starts[has] + j]
    total = np.where((count > 1)[:, None], total / count[:, None], total)
    return query[starts], total
