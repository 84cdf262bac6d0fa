"""A TREC run joined with its qrels, as trec_eval joins them: the input of ``rankcli eval --qrels`` and of
``rankcli compare --qrels``.

- A run: one line per retrieved document, ``qid Q0 docid rank score tag``; qrels: ``qid iteration docid relevance``.
  The ``Q0``, ``rank`` and ``iteration`` fields are read but not used: the order comes from ``score`` (descending);
  equal scores are ordered by the evaluation's convention (trec_eval's rule, docid descending in byte order, under the
  ``trec`` convention).
- Documents of the run missing from the qrels count as label 0; judged documents missing from the run count in the
  ideal DCG and in the number of relevant documents; only queries both in the run and in the qrels are evaluated.
- The files are read by the C path (:mod:`rankcli.formats.trec_fast`) when it is built and takes them, else by the
  numpy path (:mod:`rankcli.formats.trec_read`); both give the same :class:`rankcli.dataset.Run`, but for the order
  of its rows (see :func:`load_trec_run`'s ``ranked``).

Query ids are kept as strings (TREC ids need not be numbers); they are shown as integers only when every one is a
plain integer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankcli.dataset import Run, offsets_from_qids
from rankcli.errors import InputError
from rankcli.formats import trec_fast
from rankcli.formats.trec_read import (
    TrecColumns,
    pair_keys,
    read_qrels_columns,
    read_run_columns,
    read_text_array,
    same_words,
)


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


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


def _trec_top(qcodes: np.ndarray, scores: np.ndarray, docs: np.ndarray, max_docs: int) -> np.ndarray:
    """Indices of the rows (grouped by query) among the first ``max_docs`` of their query in trec_eval's order
    (score descending, then docid descending in byte order: ``docs`` as numpy bytes), in their original order."""
    doc_rank = np.empty(docs.shape[0], dtype=np.int64)
    doc_rank[np.argsort(docs, kind="stable")] = np.arange(docs.shape[0])
    order = np.lexsort((-doc_rank, -scores, qcodes))
    starts = np.flatnonzero(np.r_[True, qcodes[order][1:] != qcodes[order][:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, order.shape[0]]))
    return np.sort(order[np.arange(order.shape[0]) - first < max_docs])


@dataclass
class _Queries:
    """The queries of a run and its qrels under one numbering: codes ascend in byte order of the ids (as trec_eval
    sorts them)."""

    names: np.ndarray       # (codes,) numpy S, sorted
    run_inv: np.ndarray     # (run's queries,) code of each of the run's queries (in order of first appearance)
    qrel_code: np.ndarray   # (qrels lines,) code of each judgment's query
    kept: np.ndarray        # codes of the run's judged queries, in order of first appearance in the run
    position: np.ndarray    # (codes,) a kept query's place in ``kept``, else -1
    absent: np.ndarray      # codes of the judged queries absent from the run
    run_to_local: np.ndarray  # (codes,) the run's own code of a query (its TrecColumns.qcodes), else -1


def _queries(run_qnames: np.ndarray, qrels: TrecColumns, run_path, qrels_path, complete: bool,
             notes: list) -> _Queries:
    names, inv = np.unique(np.concatenate([run_qnames, qrels.qnames]), return_inverse=True)
    run_inv, qrel_inv = inv[:run_qnames.shape[0]], inv[run_qnames.shape[0]:]
    judged_q = np.zeros(names.shape[0], dtype=bool)
    judged_q[qrel_inv] = True
    in_run = np.zeros(names.shape[0], dtype=bool)
    in_run[run_inv] = True
    keep_query = judged_q[run_inv]  # the run's queries in order of first appearance
    dropped = int((~keep_query).sum())
    if dropped:
        notes.append(f"{dropped} quer{_plural(dropped, 'y', 'ies')} of the run {_plural(dropped, 'has', 'have')} no "
                     f"judgments in {qrels_path} and {_plural(dropped, 'was', 'were')} not evaluated")
    absent = np.flatnonzero(judged_q & ~in_run)
    if absent.shape[0]:
        n = int(absent.shape[0])
        notes.append(f"{n} judged quer{_plural(n, 'y is', 'ies are')} absent from the run and "
                     + ("scored 0 (complete: averages over every judged query, as trec_eval -c)" if complete else
                        "not evaluated (as trec_eval without -c)"))
    if not keep_query.any():
        raise InputError(f"{run_path}: no query of the run is judged in {qrels_path} (query ids differ?)")
    kept = run_inv[keep_query]
    position = np.full(names.shape[0], -1, dtype=np.int64)
    position[kept] = np.arange(kept.shape[0])
    run_to_local = np.full(names.shape[0], -1, dtype=np.int64)
    run_to_local[run_inv] = np.arange(run_inv.shape[0])
    return _Queries(names, run_inv, qrel_inv[qrels.qcodes], kept, position, absent, run_to_local)


def _join(lines: TrecColumns, qrels: TrecColumns, queries: _Queries) -> tuple[np.ndarray, np.ndarray]:
    """For each run line (file order), the qrels line of the same (query, document) and whether there is one.

    The run's pair keys were sorted by its duplicate check; the qrels' are keyed with the run's query codes and
    sorted, and a merge of the two sorted arrays (cache-friendly) finds the candidates, confirmed word for word."""
    qlocal = queries.run_to_local[queries.qrel_code]  # the run's code of each judgment's query, -1 if not in the run
    usable = np.flatnonzero(qlocal >= 0)
    qkeys = pair_keys(qlocal[usable], qrels.hashes[usable], lines.qnames.shape[0])
    by_key = np.argsort(qkeys, kind="stable")
    qorder, qsorted = usable[by_key], qkeys[by_key]  # judgments by key
    rorder, rsorted = lines.key_order, lines.keys
    qi = np.zeros(rorder.shape[0], dtype=np.int64)
    hit = np.zeros(rorder.shape[0], dtype=bool)
    n = qsorted.shape[0]
    if not n:
        return qi, hit
    at = np.searchsorted(qsorted, rsorted)  # the first judgment with an equal key, if any
    np.minimum(at, n - 1, out=at)
    cand = np.flatnonzero(qsorted[at] == rsorted)
    while cand.shape[0]:  # equal keys: the same query, very likely the same document; a collision tries the next
        r, q = rorder[cand], qorder[at[cand]]
        same = same_words(lines.words[r], qrels.words[q])
        qi[r[same]], hit[r[same]] = q[same], True
        cand = cand[~same]
        at[cand] += 1
        cand = cand[at[cand] < n]
        cand = cand[qsorted[at[cand]] == rsorted[cand]]
    return qi, hit


def _unranked(qrels: TrecColumns, queries: _Queries, qi: np.ndarray, hit: np.ndarray, n_eval: int):
    """Judged documents of the evaluated queries that the ranking lacks (the ideal DCG and R count them): their
    labels grouped by query, and the offsets."""
    matched = np.zeros(qrels.values.shape[0], dtype=bool)
    matched[qi[hit]] = True
    qpos = queries.position[queries.qrel_code]
    missing = np.flatnonzero((qpos >= 0) & ~matched)
    missing = missing[np.argsort(qpos[missing], kind="stable")]
    offsets = np.concatenate(([0], np.cumsum(np.bincount(qpos[missing], minlength=n_eval)))).astype(np.int64)
    return qrels.values[missing], offsets


def _labels_of(qrels: TrecColumns, queries: _Queries, codes: np.ndarray) -> list:
    """The judgments' labels of each query of ``codes``."""
    if not codes.shape[0]:
        return []
    by_code = np.argsort(queries.qrel_code, kind="stable")
    bounds = np.searchsorted(queries.qrel_code[by_code], np.stack([codes, codes + 1]))
    return [qrels.values[by_code[a:b]] for a, b in zip(bounds[0].tolist(), bounds[1].tolist())]


def _judged_only(hit, qi, rpos, qrels, queries: _Queries, opts):
    """trec_eval's -J: the rows to keep (judged documents), their queries renumbered without the queries left empty,
    and the codes of those."""
    keep = hit & (qrels.values[qi] >= 0)
    rpos = rpos[keep]
    if not rpos.shape[0]:
        raise InputError(f"{opts.run_path}: no document of the run is judged in {opts.qrels_path}; judged_only (-J) "
                         "leaves nothing to evaluate")
    left = np.zeros(queries.kept.shape[0], dtype=bool)
    left[rpos] = True
    emptied = np.flatnonzero(~left)
    if emptied.shape[0]:  # renumber the queries that keep documents
        rpos = (np.cumsum(left) - 1)[rpos]
        queries.position[queries.kept[emptied]] = -1
        queries.position[queries.kept[left]] = np.arange(int(left.sum()))
    return keep, rpos, emptied


def _no_shared_document(lines, qrels, queries: _Queries, rows, n_eval, run_path, qrels_path) -> InputError:
    c0 = queries.run_inv[lines.qcodes[rows[0]]]
    theirs = qrels.docids[np.flatnonzero(queries.qrel_code == c0)[0]].decode()
    return InputError(f"{run_path} and {qrels_path} share no document id: none of the {rows.shape[0]:,} documents "
                      f"the run ranks for its {n_eval:,} judged quer{_plural(n_eval, 'y', 'ies')} is in the qrels "
                      f"(query {queries.names[c0].decode()}: the run has {lines.docids[rows[0]].decode()!r}, the "
                      f"qrels {theirs!r}); were they written from the same data?")


def _in_parallel(first, second):
    """``(first(), second())``, the second run on another thread (numpy, Arrow and file reads release the GIL); an
    error of ``first`` is reported before one of ``second``, as when they run one after the other."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        later = pool.submit(second)
        try:
            result = first()
        except BaseException:
            later.cancel()
            raise
        return result, later.result()


def _read_numpy(run_path, qrels_path, data=(None, None)) -> tuple[TrecColumns, TrecColumns]:
    """Both files read by the numpy path (``data``: their bytes, when already read)."""
    return _in_parallel(lambda: read_run_columns(run_path, data[0]), lambda: read_qrels_columns(qrels_path, data[1]))


def _top_ranked(rpos: np.ndarray, max_docs: int) -> np.ndarray:
    """The rows (in rank order, grouped by query ``rpos``) among the first ``max_docs`` of their query."""
    starts = np.flatnonzero(np.r_[True, rpos[1:] != rpos[:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, rpos.shape[0]]))
    return np.flatnonzero(np.arange(rpos.shape[0]) - first < max_docs)


@dataclass
class _Options:
    """trec_eval's -M, -J and -c, and the files' names for messages."""

    run_path: Path | str
    qrels_path: Path | str
    max_docs: int | None = None
    judged_only: bool = False
    complete: bool = False


@dataclass
class _Rows:
    """The rows to evaluate, grouped by evaluated query: score, whether the document is judged (``hit``) and its
    qrels line (``qi``, meaningful where ``hit``); each row's query as its place in ``queries.kept`` (``rpos``), or
    the queries' boundaries (``offsets``), or both; ``docids`` for the tie rule when the rows are in the run's order
    rather than ranked."""

    scores: np.ndarray
    hit: np.ndarray
    qi: np.ndarray
    rpos: np.ndarray | None = None
    docids: np.ndarray | None = None
    offsets: np.ndarray | None = None

    def positions(self) -> np.ndarray:
        """``rpos``, from the offsets when only they are known (the default C path needs it for no row)."""
        if self.rpos is None:
            self.rpos = np.repeat(np.arange(self.offsets.shape[0] - 1), np.diff(self.offsets))
        return self.rpos

    def boundaries(self) -> np.ndarray:
        """``offsets``, from ``rpos`` when only it is known."""
        if self.offsets is None:
            self.offsets = offsets_from_qids(self.rpos)
        return self.offsets

    def take(self, keep: np.ndarray) -> _Rows:
        return _Rows(self.scores[keep], self.hit[keep], self.qi[keep], self.positions()[keep],
                     None if self.docids is None else self.docids[keep])


def _assemble(rows: _Rows, qrels: TrecColumns, queries: _Queries, tag: str, notes: list, opts: _Options) -> Run:
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
        notes.append(f"{unjudged} of the {n_eval} evaluated quer{_plural(n_eval, 'y', 'ies')} "
                     f"{_plural(unjudged, 'has', 'have')} no judged document among those the run ranks "
                     f"(every one counts as not relevant; do the run and {opts.qrels_path} name documents alike?)")
    unranked_labels, unranked_offsets = _unranked(qrels, queries, qi, hit, n_eval)
    empty_codes = np.concatenate([queries.kept[emptied], queries.absent if opts.complete else np.zeros(0, np.int64)])
    ids = _query_ids(queries.names[np.concatenate([evaluated, empty_codes])])
    return Run(qids=ids[:n_eval], labels=np.where(hit, qrels.values[qi], 0.0), scores=rows.scores, offsets=offsets,
               unranked_labels=unranked_labels, unranked_offsets=unranked_offsets, source=str(opts.run_path),
               notes=notes, docids=rows.docids, queries_without_judged=unjudged, judged=hit,
               empty_qids=list(ids[n_eval:]), empty_labels=_labels_of(qrels, queries, empty_codes), runid=tag,
               ranked=rows.docids is None)


def _native_run(joined: trec_fast.NativeJoin, opts: _Options) -> Run | None:
    """The run from the C path's ranked rows; None when no document is shared (the numpy path names them)."""
    notes: list[str] = []
    queries = _queries(joined.run_qnames, joined.qrels, opts.run_path, opts.qrels_path, opts.complete, notes)
    sizes = np.diff(joined.run_first)
    evaluated = queries.position[queries.run_inv] >= 0  # the run's queries, in order
    scores, match = joined.scores, joined.match
    if not evaluated.all():
        keep = np.repeat(evaluated, sizes)
        scores, match, sizes = scores[keep], match[keep], sizes[evaluated]
    hit = match >= 0
    if not hit.any():
        return None
    rows = _Rows(scores, hit, match, offsets=np.concatenate(([0], np.cumsum(sizes))).astype(np.int64))
    if opts.max_docs is not None:
        rows = rows.take(_top_ranked(rows.positions(), opts.max_docs))
        rows.offsets = np.concatenate(([0], np.cumsum(np.minimum(sizes, opts.max_docs)))).astype(np.int64)
    return _assemble(rows, joined.qrels, queries, joined.tag, notes, opts)


def _numpy_run(lines: TrecColumns, qrels: TrecColumns, opts: _Options) -> Run:
    """The run from the numpy path's columns, its rows in the run's order (with their docids)."""
    notes: list[str] = []
    queries = _queries(lines.qnames, qrels, opts.run_path, opts.qrels_path, opts.complete, notes)
    run_code = queries.run_inv[lines.qcodes]
    rows = np.flatnonzero(queries.position[run_code] >= 0)
    rpos = queries.position[run_code[rows]]
    if np.any(rpos[1:] < rpos[:-1]):  # a query's lines not together: group them, file order kept within a query
        order = np.argsort(rpos, kind="stable")
        rows, rpos = rows[order], rpos[order]
    qi_all, hit_all = _join(lines, qrels, queries)
    shares_a_document = bool(hit_all[rows].any())  # before -M: the check below is about naming, not truncation
    if opts.max_docs is not None:
        top = _trec_top(rpos, lines.values[rows], lines.docids[rows], opts.max_docs)
        rows, rpos = rows[top], rpos[top]
    if not shares_a_document:
        if opts.judged_only:  # -J's own error first, as it comes first in trec_eval's reading
            _judged_only(hit_all[rows], qi_all[rows], rpos, qrels, queries, opts)
        n_eval = queries.kept.shape[0]
        raise _no_shared_document(lines, qrels, queries, rows, n_eval, opts.run_path, opts.qrels_path)
    return _assemble(_Rows(lines.values[rows], hit_all[rows], qi_all[rows], rpos, docids=lines.docids[rows]),
                     qrels, queries, lines.tag, notes, opts)


def load_trec_run(run_path: Path | str, qrels_path: Path | str, *, max_docs: int | None = None,
                  judged_only: bool = False, complete: bool = False, ranked: bool = False, threads: int = 1) -> Run:
    """A TREC run joined with its qrels as trec_eval joins them, vectorised (see the module docstring).

    Documents of the run missing from the qrels count as label 0; judged documents missing from the run are kept as
    ``unranked_labels`` (the ideal DCG and R count them); only queries both in the run and in the qrels are evaluated
    (the others are counted in ``notes``). A run that shares no (query, document) pair with its qrels is an
    :class:`InputError` (every number would be 0); evaluated queries none of whose documents is judged are counted
    (``queries_without_judged``) and noted. Options as trec_eval's: ``max_docs`` (``-M``) keeps the first
    ``max_docs`` documents of each query in trec_eval's order; ``judged_only`` (``-J``) then drops the documents not
    judged in the qrels (a query left empty is evaluated with an empty ranking); ``complete`` (``-c``) also evaluates
    the judged queries absent from the run, with an empty ranking (every measure 0, num_rel their R).

    Each query's rows keep the order of the run's lines, with their ``docids`` for the tie rule. With ``ranked`` they
    may come in trec_eval's rank order instead (score descending, equal scores by docid descending): the C path gives
    them so, and says so with ``Run.ranked`` (its ``docids`` are then None: the order already holds them). A tie rule
    that keeps the input's order cannot use such rows. ``threads``: how many the C path may use.
    """
    opts = _Options(run_path, qrels_path, max_docs, judged_only, complete)
    data = (None, None)
    if ranked and trec_fast.available():
        arrays = _in_parallel(lambda: read_text_array(run_path), lambda: read_text_array(qrels_path))
        joined = trec_fast.join(arrays[0], arrays[1], threads)
        run = _native_run(joined, opts) if joined is not None else None
        if run is not None:
            return run
        data = (bytes(arrays[0]), bytes(arrays[1]))  # the numpy path reads bytes
    return _numpy_run(*_read_numpy(run_path, qrels_path, data), opts)
