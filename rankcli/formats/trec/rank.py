"""The rank stage of reading a TREC run with its qrels (``rankcli eval --qrels/--run``, ``compare --qrels``): the joined
rows (:mod:`rankcli.formats.trec.join`) in each query's rank order, trec_eval's -M and -J applied, as the
:class:`rankcli.dataset.Run` the measures take.

- Rows from the numpy join come in the run's order: they are ranked here in trec_eval's order (score descending,
  equal scores by document id descending in byte order); the C join ranked them already.
- ``-M`` keeps the first ``max_docs`` rows of each query in that order; under the ``input`` tie rule the kept rows of
  equal score then stand in the run's line order (the C join, which loses that order, is not used then).
- ``-J`` drops the documents not judged; a query left empty is evaluated with an empty ranking.
- Judged documents of an evaluated query that the ranking lacks are kept apart (``unranked_labels``: the ideal DCG
  and R count them); with ``-c`` the judged queries absent from the run are evaluated with an empty ranking.

Query ids are kept as strings (TREC ids need not be numbers); they are shown as integers only when every one is a
plain integer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankcli.dataset import Run
from rankcli.formats.trec.join import Joined, Queries, Rows, judged_only_error, plural
from rankcli.formats.trec.parse import TrecColumns

#: A query id that reads back as the same integer (no sign but '-', no leading zero) and fits in int64 surely.
_PLAIN_INTEGER = re.compile(rb"0|-?[1-9][0-9]{0,17}")


def _query_ids(names: np.ndarray) -> np.ndarray:
    """TREC query ids (numpy ``S``) as int64 when every one is a plain integer (``"301"``), otherwise as strings."""
    items = names.tolist()
    if all(map(_PLAIN_INTEGER.fullmatch, items)):
        return names.astype(np.int64)
    text = [n.decode() for n in items]
    try:
        ints = [int(n) for n in text]
    except ValueError:
        return np.array(text, dtype=object)
    if all(str(i) == n and -2 ** 63 <= i < 2 ** 63 for i, n in zip(ints, text)):  # else strings: exact
        return np.array(ints, dtype=np.int64)
    return np.array(text, dtype=object)


def _top_ranked(rpos: np.ndarray, max_docs: int) -> np.ndarray:
    """The rows (in rank order, grouped by query ``rpos``) among the first ``max_docs`` of their query."""
    starts = np.flatnonzero(np.r_[True, rpos[1:] != rpos[:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, rpos.shape[0]]))
    return np.flatnonzero(np.arange(rpos.shape[0]) - first < max_docs)


def _trec_order(rows: Rows) -> np.ndarray:
    """The rows (grouped by query) in trec_eval's order within their query: score descending, then document id
    descending in byte order."""
    doc_rank = np.empty(rows.docids.shape[0], dtype=np.int64)
    doc_rank[np.argsort(rows.docids, kind="stable")] = np.arange(rows.docids.shape[0])
    return np.lexsort((-doc_rank, -rows.scores, rows.positions()))


def _unranked(qrels: TrecColumns, queries: Queries, qi: np.ndarray, hit: np.ndarray, n_eval: int):
    """Judged documents of the evaluated queries that the ranking lacks (the ideal DCG and R count them): their
    labels grouped by query, and the offsets."""
    matched = np.zeros(qrels.values.shape[0], dtype=bool)
    matched[qi[hit]] = True
    qpos = queries.position[queries.qrel_code]
    missing = np.flatnonzero((qpos >= 0) & ~matched)
    missing = missing[np.argsort(qpos[missing], kind="stable")]
    offsets = np.concatenate(([0], np.cumsum(np.bincount(qpos[missing], minlength=n_eval)))).astype(np.int64)
    return qrels.values[missing], offsets


def _labels_of(qrels: TrecColumns, queries: Queries, codes: np.ndarray) -> list:
    """The judgments' labels of each query of ``codes``."""
    if not codes.shape[0]:
        return []
    by_code = np.argsort(queries.qrel_code, kind="stable")
    bounds = np.searchsorted(queries.qrel_code[by_code], np.stack([codes, codes + 1]))
    return [qrels.values[by_code[a:b]] for a, b in zip(bounds[0].tolist(), bounds[1].tolist())]


def _judged_only(hit, qi, rpos, qrels, queries: Queries, opts):
    """trec_eval's -J: the rows to keep (judged documents), their queries renumbered without the queries left empty,
    and the codes of those."""
    keep = hit & (qrels.values[qi] >= 0)
    rpos = rpos[keep]
    if not rpos.shape[0]:
        raise judged_only_error(opts.run_path, opts.qrels_path)
    left = np.zeros(queries.kept.shape[0], dtype=bool)
    left[rpos] = True
    emptied = np.flatnonzero(~left)
    if emptied.shape[0]:  # renumber the queries that keep documents
        rpos = (np.cumsum(left) - 1)[rpos]
        queries.position[queries.kept[emptied]] = -1
        queries.position[queries.kept[left]] = np.arange(int(left.sum()))
    return keep, rpos, emptied


@dataclass
class _Options:
    """trec_eval's -J and -c, and the files' names for messages."""

    run_path: Path | str
    qrels_path: Path | str
    judged_only: bool = False
    complete: bool = False


def _assemble(rows: Rows, qrels: TrecColumns, queries: Queries, tag: str, notes: list, opts: _Options,
              ranked: bool) -> Run:
    """The :class:`Run` of the evaluated rows (before -J), with -J applied, the unranked judgments and the notes."""
    emptied = np.zeros(0, dtype=np.int64)
    if opts.judged_only:
        keep, rpos, emptied = _judged_only(rows.hit, rows.qi, rows.positions(), qrels, queries, opts)
        rows = rows.take(keep)  # its offsets: found from rpos
        rows.rpos = rpos
    evaluated = np.delete(queries.kept, emptied)
    n_eval = evaluated.shape[0]
    offsets = rows.boundaries()
    hit, qi = rows.hit, rows.qi
    unjudged = int((np.add.reduceat(hit.view(np.int8), offsets[:-1], dtype=np.int64) == 0).sum())
    if unjudged:
        notes.append(f"{unjudged} of the {n_eval} evaluated quer{plural(n_eval, 'y', 'ies')} "
                     f"{plural(unjudged, 'has', 'have')} no judged document among those the run ranks "
                     f"(every one counts as not relevant; do the run and {opts.qrels_path} name documents alike?)")
    unranked_labels, unranked_offsets = _unranked(qrels, queries, qi, hit, n_eval)
    empty_codes = np.concatenate([queries.kept[emptied], queries.absent if opts.complete else np.zeros(0, np.int64)])
    ids = _query_ids(queries.names[np.concatenate([evaluated, empty_codes])])
    return Run(qids=ids[:n_eval], labels=np.where(hit, qrels.values[qi], 0.0), scores=rows.scores, offsets=offsets,
               unranked_labels=unranked_labels, unranked_offsets=unranked_offsets, source=str(opts.run_path),
               notes=notes, queries_without_judged=unjudged, judged=hit,
               empty_qids=list(ids[n_eval:]), empty_labels=_labels_of(qrels, queries, empty_codes), runid=tag,
               ranked=ranked, qrels_positive=_positive_lines(qrels) if opts.complete else None)


def _positive_lines(qrels: TrecColumns) -> int:
    """The qrels lines whose label trec_eval reads as above 0: it truncates a label to an integer (``atol``), so a
    label of 1 or more. Under ``-c`` trec_eval's summary ``num_rel`` is this count, whatever ``-l`` says."""
    return int((qrels.values >= 1).sum())


def rank(joined: Joined, *, ties: str, max_docs: int | None = None, judged_only: bool = False,
         complete: bool = False, run_path: Path | str = "", qrels_path: Path | str = "") -> Run:
    """The rank stage (see the module docstring). ``ties``: the convention's tie rule; rows of equal score stand in
    trec_eval's order (``Run.ranked``), or in the run's line order under ``input`` (which needs the numpy join's
    rows). ``max_docs``, ``judged_only``, ``complete``: trec_eval's -M, -J, -c; the paths name the files in notes and
    errors."""
    rows = joined.rows
    if rows.docids is not None and (ties != "input" or max_docs is not None):  # the numpy join's rows, run's order
        rows = rows.take(_trec_order(rows))
    if max_docs is not None:
        rows = rows.take(_top_ranked(rows.positions(), max_docs))
    if ties == "input":
        if rows.lines is None:
            raise ValueError("rows ranked by the C join have lost the run's order; join without it for ties=input")
        rows = rows.take(np.lexsort((rows.lines, -rows.scores, rows.positions())))
    opts = _Options(run_path, qrels_path, judged_only, complete)
    return _assemble(rows, joined.qrels, joined.queries, joined.tag, joined.notes, opts, ranked=ties != "input")
