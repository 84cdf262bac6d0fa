"""The join stage of reading a TREC run with its qrels (``rankcli eval --qrels/--run``, ``compare --qrels``): the
texts of the read stage (:mod:`rankcli.formats.trec.text`) parsed and each run line matched with its judgment, as
trec_eval joins them; the rank stage (:mod:`rankcli.formats.trec.rank`) comes next. (``rankcli trec_eval``'s join is
:mod:`rankcli.core.trec_eval.join`.)

Two variants behind :func:`join`, giving the same :class:`Joined`:

- **C** (:mod:`rankcli.formats.trec.join_native`): parses both files, joins them and ranks each query's lines in
  trec_eval's order, in one pass on several threads. It takes only input whose meaning is certain, and leaves the rest
  (and any error to name) to the numpy variant.
- **numpy** (:mod:`rankcli.formats.trec.parse` parses): a hash join of the run's lines with the qrels', the lines in
  the run's order, with their document ids for the rank stage.

Only queries both in the run and in the qrels are evaluated (the others are counted in the notes); a run that shares
no (query, document) pair with its qrels is an error (every number would be 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankcli.dataset import offsets_from_qids
from rankcli.errors import InputError
from rankcli.formats.trec import join_native
from rankcli.formats.trec.parse import TrecColumns, pair_keys, read_qrels_columns, read_run_columns, same_words
from rankcli.formats.trec.text import TrecTexts, in_parallel


def plural(n: int, one: str, many: str) -> str:
    """``one`` or ``many``, as ``n`` asks (the notes' words)."""
    return one if n == 1 else many


@dataclass
class Queries:
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
             notes: list) -> Queries:
    names, inv = np.unique(np.concatenate([run_qnames, qrels.qnames]), return_inverse=True)
    run_inv, qrel_inv = inv[:run_qnames.shape[0]], inv[run_qnames.shape[0]:]
    judged_q = np.zeros(names.shape[0], dtype=bool)
    judged_q[qrel_inv] = True
    in_run = np.zeros(names.shape[0], dtype=bool)
    in_run[run_inv] = True
    keep_query = judged_q[run_inv]  # the run's queries in order of first appearance
    dropped = int((~keep_query).sum())
    if dropped:
        notes.append(f"{dropped} quer{plural(dropped, 'y', 'ies')} of the run {plural(dropped, 'has', 'have')} no "
                     f"judgments in {qrels_path} and {plural(dropped, 'was', 'were')} not evaluated")
    absent = np.flatnonzero(judged_q & ~in_run)
    if absent.shape[0]:
        n = int(absent.shape[0])
        notes.append(f"{n} judged quer{plural(n, 'y is', 'ies are')} absent from the run and "
                     + ("scored 0 (complete: averages over every judged query, as trec_eval -c)" if complete else
                        "not evaluated (as trec_eval without -c)"))
    if not keep_query.any():
        raise InputError(f"{run_path}: no query of the run is judged in {qrels_path} (query ids differ?)")
    kept = run_inv[keep_query]
    position = np.full(names.shape[0], -1, dtype=np.int64)
    position[kept] = np.arange(kept.shape[0])
    run_to_local = np.full(names.shape[0], -1, dtype=np.int64)
    run_to_local[run_inv] = np.arange(run_inv.shape[0])
    return Queries(names, run_inv, qrel_inv[qrels.qcodes], kept, position, absent, run_to_local)


def _join(lines: TrecColumns, qrels: TrecColumns, queries: Queries) -> tuple[np.ndarray, np.ndarray]:
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


@dataclass
class Rows:
    """The rows to evaluate, grouped by evaluated query: score, whether the document is judged (``hit``) and its
    qrels line (``qi``, meaningful where ``hit``); each row's query as its place in ``queries.kept`` (``rpos``), or
    the queries' boundaries (``offsets``), or both. Rows in the run's order (the numpy variant) also have their
    ``docids`` and their ``lines`` (index in the run, for the input-order tie rule); ranked rows (the C variant) have
    neither."""

    scores: np.ndarray
    hit: np.ndarray
    qi: np.ndarray
    rpos: np.ndarray | None = None
    docids: np.ndarray | None = None
    offsets: np.ndarray | None = None
    lines: np.ndarray | None = None

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

    def take(self, keep: np.ndarray) -> Rows:
        return Rows(self.scores[keep], self.hit[keep], self.qi[keep], self.positions()[keep],
                    None if self.docids is None else self.docids[keep], None,
                    None if self.lines is None else self.lines[keep])


@dataclass
class Joined:
    """What the join stage gives the rank stage, from either variant: the queries under one numbering, the qrels,
    the rows of the evaluated queries, the run's tag (the first line's) and the notes so far."""

    queries: Queries
    qrels: TrecColumns
    rows: Rows
    tag: str
    notes: list[str]


def judged_only_error(run_path, qrels_path) -> InputError:
    """The error of -J when no document of the run is judged."""
    return InputError(f"{run_path}: no document of the run is judged in {qrels_path}; judged_only (-J) leaves nothing "
                      "to evaluate")


def _no_shared_document(lines, qrels, queries: Queries, rows, n_eval, run_path, qrels_path) -> InputError:
    c0 = queries.run_inv[lines.qcodes[rows[0]]]
    theirs = qrels.docids[np.flatnonzero(queries.qrel_code == c0)[0]].decode()
    return InputError(f"{run_path} and {qrels_path} share no document id: none of the {rows.shape[0]:,} documents "
                      f"the run ranks for its {n_eval:,} judged quer{plural(n_eval, 'y', 'ies')} is in the qrels "
                      f"(query {queries.names[c0].decode()}: the run has {lines.docids[rows[0]].decode()!r}, the "
                      f"qrels {theirs!r}); were they written from the same data?")


def join(texts: TrecTexts, *, judged_only: bool = False, complete: bool = False, threads: int = 1) -> Joined:
    """The join stage (see the module docstring): the C variant when the texts were read for it (numpy arrays) and
    it takes them, else the numpy variant. ``complete`` (-c) words the note on judged queries absent from the run;
    ``judged_only`` (-J) names its own error for a run sharing no document with its qrels, as trec_eval's reading
    meets it first."""
    if isinstance(texts.run, np.ndarray):
        native = join_native.join_bytes(texts.run, texts.qrels, threads)
        joined = _native(native, texts, complete) if native is not None else None
        if joined is not None:
            return joined
        texts = texts.as_bytes()  # the numpy variant reads bytes
    lines, qrels = in_parallel(lambda: read_run_columns(texts.run_path, texts.run),
                               lambda: read_qrels_columns(texts.qrels_path, texts.qrels))
    return _numpy(lines, qrels, texts, judged_only, complete)


def _native(native: join_native.NativeJoin, texts: TrecTexts, complete: bool) -> Joined | None:
    """The C variant's ranked rows; None when no document is shared (the numpy variant names them)."""
    notes: list[str] = []
    queries = _queries(native.run_qnames, native.qrels, texts.run_path, texts.qrels_path, complete, notes)
    sizes = np.diff(native.run_first)
    evaluated = queries.position[queries.run_inv] >= 0  # the run's queries, in order
    scores, match = native.scores, native.match
    if not evaluated.all():
        keep = np.repeat(evaluated, sizes)
        scores, match, sizes = scores[keep], match[keep], sizes[evaluated]
    hit = match >= 0
    if not hit.any():
        return None
    rows = Rows(scores, hit, match, offsets=np.concatenate(([0], np.cumsum(sizes))).astype(np.int64))
    return Joined(queries, native.qrels, rows, native.tag.decode(), notes)  # the text is checked UTF-8


def _numpy(lines: TrecColumns, qrels: TrecColumns, texts: TrecTexts, judged_only: bool, complete: bool) -> Joined:
    """The numpy variant: the evaluated queries' lines grouped by query, the run's order kept within a query."""
    notes: list[str] = []
    queries = _queries(lines.qnames, qrels, texts.run_path, texts.qrels_path, complete, notes)
    run_code = queries.run_inv[lines.qcodes]
    rows = np.flatnonzero(queries.position[run_code] >= 0)
    rpos = queries.position[run_code[rows]]
    if np.any(rpos[1:] < rpos[:-1]):  # a query's lines not together: group them, file order kept within a query
        order = np.argsort(rpos, kind="stable")
        rows, rpos = rows[order], rpos[order]
    qi_all, hit_all = _join(lines, qrels, queries)
    if not hit_all[rows].any():
        if judged_only:  # -J's own error first, as it comes first in trec_eval's reading
            raise judged_only_error(texts.run_path, texts.qrels_path)
        raise _no_shared_document(lines, qrels, queries, rows, queries.kept.shape[0], texts.run_path,
                                  texts.qrels_path)
    found = Rows(lines.values[rows], hit_all[rows], qi_all[rows], rpos, docids=lines.docids[rows], lines=rows)
    return Joined(queries, qrels, found, lines.tag, notes)
