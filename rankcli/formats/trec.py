"""TREC run and qrels files: a run joined with its qrels, documents named for the TREC files rankcli writes, qrels
written, results printed in trec_eval's layout.

- A run: one line per retrieved document, ``qid Q0 docid rank score tag``; qrels: ``qid iteration docid relevance``.
  Reading (any run of C whitespace between fields, gzip, blank and ``#`` lines, errors naming the line) is
  :mod:`rankcli.formats.trec_read`. The ``Q0``, ``rank`` and ``iteration`` fields are read but not used: the order comes
  from ``score`` (descending); equal scores are ordered by the evaluation's convention (trec_eval's rule, docid
  descending in byte order, under the ``trec`` convention).
- A run is scored against its qrels as trec_eval does (:func:`load_trec_run`): documents of the run missing from the
  qrels count as label 0; judged documents missing from the run count in the ideal DCG and in the number of relevant
  documents; only queries both in the run and in the qrels are evaluated.
- Documents that rankcli writes (``export --format trec-qrels``, ``predict --format trec``) are named by
  :func:`document_names`: the docid, else ``<qid>-<row>``.

Query ids are kept as strings (TREC ids need not be numbers); they are shown as integers only when every one is a
plain integer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankcli.dataset import Run, offsets_from_qids
from rankcli.errors import InputError, SchemaError
from rankcli.formats.trec_read import TrecColumns, pair_keys, read_qrels_columns, read_run_columns, same_words

# ---------------------------------------------------------------------------------------------------------------------
# A run joined with its qrels, as trec_eval joins them


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
    run_code: np.ndarray    # (run lines,) code of each run line's query
    qrel_code: np.ndarray   # (qrels lines,) code of each judgment's query
    kept: np.ndarray        # codes of the run's judged queries, in order of first appearance in the run
    position: np.ndarray    # (codes,) a kept query's place in ``kept``, else -1
    absent: np.ndarray      # codes of the judged queries absent from the run
    run_to_local: np.ndarray  # (codes,) the run's own code of a query (its TrecColumns.qcodes), else -1


def _queries(lines: TrecColumns, qrels: TrecColumns, run_path, qrels_path, complete: bool, notes: list) -> _Queries:
    names, inv = np.unique(np.concatenate([lines.qnames, qrels.qnames]), return_inverse=True)
    run_inv, qrel_inv = inv[:lines.qnames.shape[0]], inv[lines.qnames.shape[0]:]
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
    return _Queries(names, run_inv[lines.qcodes], qrel_inv[qrels.qcodes], kept, position, absent, run_to_local)


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


def _judged_only(rows, rpos, hit, qi, qrels, queries: _Queries, run_path, qrels_path):
    """trec_eval's -J: drop the documents not judged; queries left empty are renumbered out (their codes returned)."""
    keep = hit & (qrels.values[qi] >= 0)
    rows, rpos, hit, qi = rows[keep], rpos[keep], hit[keep], qi[keep]
    if not rows.shape[0]:
        raise InputError(f"{run_path}: no document of the run is judged in {qrels_path}; judged_only (-J) leaves "
                         "nothing to evaluate")
    left = np.zeros(queries.kept.shape[0], dtype=bool)
    left[rpos] = True
    emptied = np.flatnonzero(~left)
    if emptied.shape[0]:  # renumber the queries that keep documents
        rpos = (np.cumsum(left) - 1)[rpos]
        queries.position[queries.kept[emptied]] = -1
        queries.position[queries.kept[left]] = np.arange(int(left.sum()))
    return rows, rpos, hit, qi, emptied


def _no_shared_document(lines, qrels, queries: _Queries, rows, n_eval, run_path, qrels_path) -> InputError:
    c0 = queries.run_code[rows[0]]
    theirs = qrels.docids[np.flatnonzero(queries.qrel_code == c0)[0]].decode()
    return InputError(f"{run_path} and {qrels_path} share no document id: none of the {rows.shape[0]:,} documents "
                      f"the run ranks for its {n_eval:,} judged quer{_plural(n_eval, 'y', 'ies')} is in the qrels "
                      f"(query {queries.names[c0].decode()}: the run has {lines.docids[rows[0]].decode()!r}, the "
                      f"qrels {theirs!r}); were they written from the same data?")


def _read_both(run_path, qrels_path) -> tuple[TrecColumns, TrecColumns]:
    """The run and the qrels, read at the same time (numpy and Arrow release the GIL for most of the work); an
    error in the run is reported first, as when they are read one after the other."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        qrels = pool.submit(read_qrels_columns, qrels_path)
        try:
            lines = read_run_columns(run_path)
        except BaseException:
            qrels.cancel()
            raise
        return lines, qrels.result()


def load_trec_run(run_path: Path | str, qrels_path: Path | str, *, max_docs: int | None = None,
                  judged_only: bool = False, complete: bool = False) -> Run:
    """A TREC run joined with its qrels as trec_eval joins them, vectorised (see the module docstring).

    Documents of the run missing from the qrels count as label 0; judged documents missing from the run are kept as
    ``unranked_labels`` (the ideal DCG and R count them); only queries both in the run and in the qrels are evaluated
    (the others are counted in ``notes``). A run that shares no (query, document) pair with its qrels is an
    :class:`InputError` (every number would be 0); evaluated queries none of whose documents is judged are counted
    (``queries_without_judged``) and noted. Options as trec_eval's: ``max_docs`` (``-M``) keeps the first
    ``max_docs`` documents of each query in trec_eval's order; ``judged_only`` (``-J``) then drops the documents not
    judged in the qrels (a query left empty is evaluated with an empty ranking); ``complete`` (``-c``) also evaluates
    the judged queries absent from the run, with an empty ranking (every measure 0, num_rel their R).
    """
    lines, qrels = _read_both(run_path, qrels_path)
    notes: list[str] = []
    queries = _queries(lines, qrels, run_path, qrels_path, complete, notes)
    rows = np.flatnonzero(queries.position[queries.run_code] >= 0)
    rpos = queries.position[queries.run_code[rows]]
    if np.any(rpos[1:] < rpos[:-1]):  # a query's lines not together: group them, file order kept within a query
        order = np.argsort(rpos, kind="stable")
        rows, rpos = rows[order], rpos[order]
    qi_all, hit_all = _join(lines, qrels, queries)
    shares_a_document = bool(hit_all[rows].any())  # before -M: the check below is about naming, not truncation
    if max_docs is not None:
        top = _trec_top(rpos, lines.values[rows], lines.docids[rows], max_docs)
        rows, rpos = rows[top], rpos[top]
    hit, qi = hit_all[rows], qi_all[rows]
    emptied = np.zeros(0, dtype=np.int64)
    if judged_only:
        rows, rpos, hit, qi, emptied = _judged_only(rows, rpos, hit, qi, qrels, queries, run_path, qrels_path)
    evaluated = np.delete(queries.kept, emptied)
    n_eval = evaluated.shape[0]
    if not shares_a_document:
        raise _no_shared_document(lines, qrels, queries, rows, n_eval, run_path, qrels_path)
    offsets = offsets_from_qids(rpos)
    unjudged = int((np.add.reduceat(hit.view(np.int8), offsets[:-1], dtype=np.int64) == 0).sum())
    if unjudged:
        notes.append(f"{unjudged} of the {n_eval} evaluated quer{_plural(n_eval, 'y', 'ies')} "
                     f"{_plural(unjudged, 'has', 'have')} no judged document among those the run ranks "
                     f"(every one counts as not relevant; do the run and {qrels_path} name documents alike?)")
    unranked_labels, unranked_offsets = _unranked(qrels, queries, qi, hit, n_eval)
    empty_codes = np.concatenate([queries.kept[emptied], queries.absent if complete else np.zeros(0, np.int64)])
    ids = _query_ids(queries.names[np.concatenate([evaluated, empty_codes])])
    return Run(qids=ids[:n_eval], labels=np.where(hit, qrels.values[qi], 0.0), scores=lines.values[rows],
               offsets=offsets, unranked_labels=unranked_labels, unranked_offsets=unranked_offsets,
               source=str(run_path), notes=notes, docids=lines.docids[rows], queries_without_judged=unjudged,
               judged=hit, empty_qids=list(ids[n_eval:]), empty_labels=_labels_of(qrels, queries, empty_codes),
               runid=lines.tag)


#: What cannot be part of a document name in a TREC file: the empty name, whitespace (Python's ``str.split`` set, a
#: superset of the C whitespace the readers split on) and NUL (trec_eval's C strings end there). RE2 syntax, for
#: ``pyarrow.compute``.
_UNWRITABLE = (r"^$|[\x00\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}"
               r"\x{205f}\x{3000}]")


def _arrow_strings(values):
    """An Arrow string array from an Arrow array or a numpy/list of ``str`` (``None`` = null), without pandas."""
    import pyarrow as pa

    from rankcli.formats.arrow import array_from_numpy, strings_array

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values if pa.types.is_string(values.type) else values.cast(pa.string())
    values = np.asarray(values)
    if values.dtype.kind in "iuf":
        return array_from_numpy(values).cast(pa.string())
    return strings_array([None if v is None else str(v).encode() for v in values.tolist()])


def document_names(qids, docids=None, rows=None, *, source: str = "", check: bool = True):
    """The name of each document in every TREC file rankcli writes or reads against a dataset: an Arrow string array.

    A document is named by its ``docid`` when it has one; otherwise (no docid column, or a null in it) by
    ``<qid>-<row>``, with ``row`` its 0-based row number in the dataset (``rows``; default ``0..n-1``). ``export
    --format trec-qrels``, ``predict --format trec`` and the evaluation of a Parquet run under the ``trec`` tie rule
    all name documents with this function, so a run and the qrels exported from the same dataset always match.

    ``qids``, ``docids`` and ``rows`` may be numpy arrays, lists or Arrow arrays. With ``check``, a name that a TREC
    line cannot hold (empty, with whitespace or a NUL byte) is a :class:`SchemaError` naming the row (and ``source``).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from rankcli.formats.arrow import array_from_numpy, scalar

    qid_text = _arrow_strings(qids)
    n = len(qid_text)
    rows = np.arange(n, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    if rows.shape[0] != n:
        raise ValueError(f"document_names: {rows.shape[0]} row numbers for {n} query ids")
    names = pc.binary_join_element_wise(qid_text, array_from_numpy(rows).cast(pa.string()), scalar("-"))
    if docids is not None:
        given = _arrow_strings(docids)
        if len(given) != n:
            raise ValueError(f"document_names: {len(given)} docids for {n} query ids")
        names = pc.coalesce(given, names)  # a row without a docid is named <qid>-<row>
    if check and n:
        bad = pc.match_substring_regex(names, _UNWRITABLE)
        if pc.any(bad).as_py():
            i = bad.to_pylist().index(True)
            name = names[i].as_py()
            why = ("it is empty" if name == "" else "it contains a NUL byte, where trec_eval's strings end"
                   if "\x00" in name else "it contains whitespace, which separates the fields of a TREC line")
            where = f"{source}: " if source else ""
            raise SchemaError(f"{where}row {int(rows[i])} (qid {qid_text[i].as_py()}): docid {name!r} cannot name a "
                              f"document in a TREC file: {why}")
        _refuse_repeated_names(qid_text, names, rows, source)
    return names


def row_names(qids, docid_column, row_column, path) -> np.ndarray:
    """Document names (object array of ``str``) of a Parquet run's or dataset's rows, as TREC files name them
    (:func:`document_names`): ``docid_column`` (Arrow) when given, else ``<qid>-<row>`` with ``row_column`` (Arrow
    integers: the row in the dataset, as ``rankcli predict`` writes it) or the row number. ``path`` names the file in
    errors."""
    import pyarrow as pa

    from rankcli.formats import parquet

    rows = None
    if row_column is not None:
        if row_column.null_count or not pa.types.is_integer(row_column.type):
            raise SchemaError(f"{path}: column row must be integer without missing values (the row number in the "
                              f"dataset), got {row_column.type}")
        rows = parquet.column_to_numpy(row_column)
    return np.array(document_names(qids, docid_column, rows, check=False).to_pylist(), dtype=object)


def _refuse_repeated_names(qid_text, names, rows, source: str) -> None:
    """A document named twice in one query would be written, and then refused by every TREC reader (rankcli's and
    trec_eval's): refuse it when writing, naming both rows."""
    import pyarrow.compute as pc

    from rankcli.formats.arrow import column_to_numpy  # to_numpy would import pandas

    q = column_to_numpy(pc.dictionary_encode(qid_text).indices).astype(np.int64)
    d = column_to_numpy(pc.dictionary_encode(names).indices).astype(np.int64)
    key = q * (int(d.max()) + 1) + d  # < n^2: exact in int64 for any dataset that fits in memory
    order = np.argsort(key, kind="stable")
    repeated = np.flatnonzero(key[order][1:] == key[order][:-1])
    if repeated.shape[0] == 0:
        return
    second = order[repeated + 1]  # stable sort: the later row of each equal pair
    k = int(np.argmin(second))  # the repeat that comes first in file order
    first, again = int(order[repeated[k]]), int(second[k])
    where = f"{source}: " if source else ""
    raise SchemaError(f"{where}rows {int(rows[first])} and {int(rows[again])} (qid {qid_text[first].as_py()}): docid "
                      f"{names[first].as_py()!r} names two documents of one query; a TREC file names each document of "
                      "a query once")


def qrels_lines(qids, docids, labels, rows=None, *, source: str = ""):
    """TREC qrels lines ``qid 0 docid label\\n`` as an Arrow string array, built in C.

    Documents are named by :func:`document_names` (the docid, or ``<qid>-<row>`` where there is none). Labels print
    as integers when they are (``2``), else as given (``0.07``).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from rankcli.formats.arrow import array_from_numpy, scalar

    # array_from_numpy / scalar: no pandas import (pa.array, pa.scalar and Python literals in pc calls import it)
    qid_text = _arrow_strings(qids)
    doc_text = document_names(qid_text, docids, rows, source=source)
    if isinstance(labels, (pa.Array, pa.ChunkedArray)):
        label_text = labels.cast(pa.float64()).cast(pa.string())
    else:
        label_text = array_from_numpy(np.asarray(labels, dtype=np.float64)).cast(pa.string())
    return pc.binary_join_element_wise(qid_text, scalar("0"), doc_text,
                                       pc.binary_join_element_wise(label_text, scalar("\n"), scalar("")), scalar(" "))


def write_qrels(path: Path | str, dataset_path: Path | str, *, overwrite: bool = False) -> int:
    """Export a Parquet dataset's judgments as TREC qrels (``qid 0 docid label``, :func:`qrels_lines`), atomically,
    streaming row group by row group; returns the number of lines.

    Parameters
    ----------
    path : path
        The qrels file to write (``-``: standard output).
    dataset_path : path
        A Parquet dataset with ``qid`` and ``label`` (and ``docid``: rows without one are named ``<qid>-<row>``, with
        ``row`` the 0-based row number in the dataset; a name a TREC line cannot hold is exit 3 naming the dataset).
    overwrite : bool
        Replace an existing file that rankcli wrote.
    """
    from rankcli.formats.atomic import atomic_path
    from rankcli.formats.parquet import column_names, iter_row_groups, require_columns
    from rankcli.formats.svmlight_writer import write_lines

    names = column_names(dataset_path)
    require_columns(dataset_path, names, ["qid", "label"])
    wanted = ["qid", "label"] + (["docid"] if "docid" in names else [])
    rows = 0
    with atomic_path(path, overwrite) as tmp, open(tmp, "wb") as out:
        for table in iter_row_groups(dataset_path, wanted):
            n = table.num_rows
            docids = table.column("docid").combine_chunks() if "docid" in names else None
            write_lines(out, qrels_lines(table.column("qid").combine_chunks(), docids,
                                         table.column("label").combine_chunks(),
                                         rows=np.arange(rows, rows + n), source=str(dataset_path)))
            rows += n
    return rows


def _qid_key(qid) -> bytes:
    return str(qid).encode()


def trec_eval_text(ordered, per_query: dict, means: dict, qids, *, runid: str | None = None,
                   queries: bool = False) -> str:
    """Results in trec_eval's layout: ``%-22s\t%s\t%6.4f`` lines (measure, query id or ``all``, value; counts as
    integers ``%ld``; ``runid`` with the run's tag), with ``queries`` (``-q``) each query's lines first, queries in
    byte order of their ids (trec_eval sorts its qrels), then the summary ``all`` lines. Measures that trec_eval does
    not print per query (num_q, gm_map, gm_bpref, runid) appear only in the summary, as in trec_eval.

    ``ordered``: the metric specs in trec_eval's order (:func:`rankcli.core.measures.trec_order`); each gives its
    printed name (``output_name()``) and its record (``integer``, ``per_query_line``, ``family``). ``per_query`` and
    ``means`` are keyed by ``str(spec)``; ``qids`` are the query ids as text, aligned with the per-query values.
    """

    def texts(spec, values) -> list[str]:
        if spec.record.integer:
            return [f"{int(v)}\n" if v == v else "nan\n" for v in values]
        return [f"{v:6.4f}\n" for v in values]

    def line(spec, where, value) -> str:
        return f"{spec.output_name():<22}\t{where}\t{texts(spec, [value])[0]}"

    out = []
    if queries:
        # one formatting pass per measure, then the lines query by query (2M lines for all_trec on 30k queries)
        cols = [(f"{spec.output_name():<22}\t", texts(spec, per_query[str(spec)].tolist())) for spec in ordered
                if spec.record.per_query_line and str(spec) in per_query]
        qid_tab = [f"{q}\t" for q in qids]
        for i in sorted(range(len(qids)), key=lambda i: _qid_key(qids[i])):
            q = qid_tab[i]
            out.extend([p + q + t[i] for p, t in cols])
    for spec in ordered:
        if spec.record.family == "info":
            out.append(f"{'runid':<22}\tall\t{runid if runid is not None else 'rankcli'}\n")
        elif str(spec) in means:
            out.append(line(spec, "all", means[str(spec)]))
    return "".join(out)
