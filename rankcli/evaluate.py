"""Evaluate runs: read a Parquet run, a TREC run with its qrels, or score a dataset with a model, then compute metrics.

Returns :class:`EvalReport` objects; never prints (rendering lives in :mod:`rankcli.report`).

- A Parquet run has columns ``qid`` (integer), ``label`` and ``score``, the rows of a query contiguous.
- A TREC run (``qid Q0 docid rank score tag``) is scored against TREC qrels (``qid iter docid rel``) as trec_eval does:
  documents of the run missing from the qrels count as label 0; judged documents missing from the run count in the
  ideal DCG and in the number of relevant documents (recall, MAP); only queries that are both in the run and in the
  qrels are evaluated (the others are counted in ``notes``). Its default convention is ``trec`` (linear gain, queries
  without a relevant document score 0, equal scores ordered by docid descending in byte order, as trec_eval).
  A run that shares no (query, document) pair with its qrels is an error, since every number would be 0; evaluated
  queries none of whose retrieved documents is judged are counted (``queries_without_judged``) and noted.
- Documents of a Parquet run or dataset, which the ``docid-desc`` tie rule orders by name, are named as every TREC
  file rankcli writes names them (:func:`rankcli.formats.trec.document_names`): the ``docid`` column, else
  ``<qid>-<row>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankcli.core.metrics import Convention, EvalResult, MetricSpec, evaluate, parse_metrics
from rankcli.dataset import offsets_from_qids
from rankcli.errors import InputError, SchemaError

RUN_COLUMNS = ("qid", "label", "score")


@dataclass
class Run:
    """A ranking to evaluate: rows grouped by query (``offsets``), one ``qids`` entry per query."""

    qids: np.ndarray
    labels: np.ndarray
    scores: np.ndarray
    offsets: np.ndarray
    unranked_labels: np.ndarray | None = None
    unranked_offsets: np.ndarray | None = None
    source: str = ""
    notes: list[str] = field(default_factory=list)
    docids: np.ndarray | None = None  # (n_rows,) document names, for the docid-desc tie rule
    queries_without_judged: int = 0   # queries none of whose documents is judged (TREC runs)
    judged: np.ndarray | None = None  # (n_rows,) whether each row is in the qrels (TREC runs)
    #: queries evaluated with an empty ranking (qrels queries absent from the run under ``complete``, or left without
    #: documents by ``judged_only``): their ids and the labels of their judgments
    empty_qids: list = field(default_factory=list)
    empty_labels: list = field(default_factory=list)
    runid: str | None = None  # the run's tag (TREC runs), printed by --format trec_eval

    @property
    def n_rows(self) -> int:
        return int(self.labels.shape[0])


@dataclass
class EvalReport:
    """What ``rankcli eval`` reports: the metrics' result plus where the data came from."""

    result: EvalResult
    specs: list[MetricSpec]
    qids: np.ndarray  # one per query, aligned with result.per_query
    source: str
    rows: int
    notes: list[str] = field(default_factory=list)
    queries_without_judged: int = 0
    runid: str | None = None

    def as_dict(self) -> dict:
        """Exactly ``{"convention": {...}, "queries": N, "skipped": K, "queries_without_judged": J,
        "metrics": {"ndcg@5": ...}}``; ``J`` counts the evaluated queries none of whose documents is judged (TREC runs;
        every row of a Parquet run carries its label, so 0 there)."""
        d = self.result.as_dict()
        return {"convention": d["convention"], "queries": d["queries"], "skipped": d["skipped"],
                "queries_without_judged": self.queries_without_judged, "metrics": d["metrics"]}


# ---------------------------------------------------------------------------------------------------------------------
# Reading


def _first_bad_row(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def run_from_arrays(qids: np.ndarray, labels: np.ndarray, scores: np.ndarray, source: str = "") -> Run:
    """Check and group arrays of a run whose rows of a query are contiguous; errors name the row and qid."""
    prefix = f"{source}: " if source else ""
    labels = np.asarray(labels, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    bad = np.isnan(scores)
    if bad.any():
        r = _first_bad_row(bad)
        raise InputError(f"{prefix}column score: NaN at row {r} (qid {qids[r]}); every document needs a score")
    bad = np.isnan(labels)
    if bad.any():
        r = _first_bad_row(bad)
        raise InputError(f"{prefix}column label: NaN or missing at row {r} (qid {qids[r]})")
    try:
        offsets = offsets_from_qids(qids)
    except InputError as exc:
        raise SchemaError(f"{prefix}column qid: {exc}") from None
    return Run(qids=np.asarray(qids)[offsets[:-1]], labels=labels, scores=scores, offsets=offsets, source=source)


def is_parquet(path: Path | str) -> bool:
    """Whether ``path`` starts with Parquet's magic bytes; a missing or unreadable path is an :class:`InputError`."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"PAR1"
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a run file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None


def _names(qids, docid_column, row_column, path) -> np.ndarray:
    """Document names (object array of str) of a run's or dataset's rows, as TREC files name them."""
    from rankcli.formats.trec import document_names

    rows = None
    if row_column is not None:
        import pyarrow as pa

        from rankcli.formats import parquet

        if row_column.null_count or not pa.types.is_integer(row_column.type):
            raise SchemaError(f"{path}: column row must be integer without missing values (the row number in the "
                              f"dataset), got {row_column.type}")
        rows = parquet.column_to_numpy(row_column)
    return np.array(document_names(qids, docid_column, rows, check=False).to_pylist(), dtype=object)


def read_run(path: Path | str, *, docids: bool = False) -> Run:
    """Read a Parquet run with ``qid``, ``label`` and ``score`` (other columns are ignored).

    With ``docids``, the rows are also named (``Run.docids``), as TREC files name them: the ``docid`` column, else
    ``<qid>-<row>`` with the ``row`` column that ``rankcli predict`` writes, else the row number in the file.
    """
    from rankcli.formats import parquet

    names = parquet.column_names(path)
    if "score" not in names and "qid" in names and "label" in names and parquet.feature_columns(names):
        raise SchemaError(f"{path}: missing column score: this looks like a dataset (it has feature columns); "
                          "score it with a model: rankcli eval DATA --model MODEL_DIR")
    parquet.require_columns(path, names, RUN_COLUMNS)
    name_column = ("docid" if "docid" in names else "row" if "row" in names else None) if docids else None
    table = parquet.read_table(path, list(RUN_COLUMNS) + ([name_column] if name_column else []))
    arrays = {}
    for name in RUN_COLUMNS:
        col = table.column(name)
        if col.null_count:
            row = _first_bad_row(np.asarray(col.is_null().to_numpy(zero_copy_only=False)))
            raise InputError(f"{path}: column {name}: missing value at row {row}")
        values = parquet.column_to_numpy(col)  # not col.to_numpy(): that imports pandas (~1 s at start-up)
        if name == "qid" and not np.issubdtype(values.dtype, np.integer):
            raise SchemaError(f"{path}: column qid must be integer, got {col.type}")
        if name != "qid" and not (np.issubdtype(values.dtype, np.floating) or np.issubdtype(values.dtype, np.integer)):
            raise SchemaError(f"{path}: column {name} must be numeric, got {col.type}")
        arrays[name] = values
    if arrays["qid"].shape[0] == 0:
        raise InputError(f"{path}: the run has no rows")
    qids = parquet.qids_as_int64(path, table.column("qid"))  # a uint64 id beyond int64 is refused, never wrapped
    run = run_from_arrays(qids, arrays["label"], arrays["score"], str(path))
    if docids:
        run.docids = _names(arrays["qid"], table.column("docid") if name_column == "docid" else None,
                            table.column("row") if name_column == "row" else None, path)
    return run


def _query_ids(names: list[str]) -> np.ndarray:
    """TREC query ids as int64 when every one is a plain integer (``"301"``), otherwise as strings."""
    try:
        ints = [int(n) for n in names]
    except ValueError:
        return np.array(names, dtype=object)
    if all(str(i) == n and -2 ** 63 <= i < 2 ** 63 for i, n in zip(ints, names)):  # else strings: exact
        return np.array(ints, dtype=np.int64)
    return np.array(names, dtype=object)


def _trec_top(qcodes: np.ndarray, scores: np.ndarray, docs: np.ndarray, max_docs: int) -> np.ndarray:
    """Indices of the rows (grouped by query) among the first ``max_docs`` of their query in trec_eval's order
    (score descending, then docid descending in byte order: ``docs`` as numpy bytes), in their original order."""
    doc_rank = np.empty(docs.shape[0], dtype=np.int64)
    doc_rank[np.argsort(docs, kind="stable")] = np.arange(docs.shape[0])
    order = np.lexsort((-doc_rank, -scores, qcodes))
    starts = np.flatnonzero(np.r_[True, qcodes[order][1:] != qcodes[order][:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, order.shape[0]]))
    return np.sort(order[np.arange(order.shape[0]) - first < max_docs])


def _run_heads(q: np.ndarray) -> np.ndarray:
    """Where each run of equal values starts (TREC files list a query's lines together: few runs)."""
    return np.flatnonzero(np.r_[True, q[1:] != q[:-1]])


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def load_trec_run(run_path: Path | str, qrels_path: Path | str, *, max_docs: int | None = None,
                  judged_only: bool = False, complete: bool = False) -> Run:
    """A TREC run joined with its qrels (see the module docstring for the rules), vectorised: the files are
    tokenised with numpy and joined on hashed (query, document) pairs, checked byte for byte.

    As trec_eval's options: ``max_docs`` (``-M``) keeps the first ``max_docs`` documents of each query in trec_eval's
    order; ``judged_only`` (``-J``) then drops the documents not judged in the qrels (a query left empty is evaluated
    with an empty ranking); ``complete`` (``-c``) also evaluates the judged queries absent from the run, with an empty
    ranking (every measure 0, num_rel their R), so that averages run over every query of the qrels.
    """
    from rankcli.formats.trec import read_qrels_columns, read_run_columns

    lines = read_run_columns(run_path)
    qrels = read_qrels_columns(qrels_path)
    # Query codes over both files: codes ascend in byte order of the ids (np.unique sorts), as trec_eval sorts them.
    rh, qh = _run_heads(lines.qids), _run_heads(qrels.qids)
    uniq, inv = np.unique(np.concatenate([lines.qids[rh], qrels.qids[qh]]), return_inverse=True)
    n_codes = uniq.shape[0]
    run_code = np.repeat(inv[:rh.shape[0]], np.diff(np.r_[rh, lines.qids.shape[0]]))
    qrel_code = np.repeat(inv[rh.shape[0]:], np.diff(np.r_[qh, qrels.qids.shape[0]]))
    judged_q = np.zeros(n_codes, dtype=bool)
    judged_q[qrel_code] = True
    in_run = np.zeros(n_codes, dtype=bool)
    in_run[run_code] = True
    seen, first_row = np.unique(run_code, return_index=True)
    run_order = seen[np.argsort(first_row)]  # the run's queries in order of first appearance
    keep_query = judged_q[run_order]
    notes = []
    dropped = int((~keep_query).sum())
    if dropped:
        notes.append(f"{dropped} quer{_plural(dropped, 'y', 'ies')} of the run {_plural(dropped, 'has', 'have')} no "
                     f"judgments in {qrels_path} and {_plural(dropped, 'was', 'were')} not evaluated")
    absent_codes = np.flatnonzero(judged_q & ~in_run)
    absent = int(absent_codes.shape[0])
    if absent:
        notes.append(f"{absent} judged quer{_plural(absent, 'y is', 'ies are')} absent from the run and "
                     + ("scored 0 (complete: averages over every judged query, as trec_eval -c)" if complete else
                        "not evaluated (as trec_eval without -c)"))
    if not keep_query.any():
        raise InputError(f"{run_path}: no query of the run is judged in {qrels_path} (query ids differ?)")
    kept_codes = run_order[keep_query]
    position = np.full(n_codes, -1, dtype=np.int64)
    position[kept_codes] = np.arange(kept_codes.shape[0])
    rows = np.flatnonzero(judged_q[run_code])
    rpos = position[run_code[rows]]
    if np.any(rpos[1:] < rpos[:-1]):  # a query's lines not together: group them, file order kept within a query
        order = np.argsort(rpos, kind="stable")
        rows, rpos = rows[order], rpos[order]
    shares_a_document = None  # whether the untruncated run names a judged document (the check below, without -M)
    # Join on the hashed (query, document) pairs, then confirm each match byte for byte. Both files' keys were sorted
    # by the duplicate checks: a merge of sorted keys (cache-friendly), scattered back to file order.
    qorder = qrels.key_order
    qsorted = qrels.keys[qorder]
    rorder = lines.key_order
    at_all = np.empty(rorder.shape[0], dtype=np.int64)
    at_all[rorder] = np.minimum(np.searchsorted(qsorted, lines.keys[rorder]), qsorted.shape[0] - 1)

    def join(r):
        at = at_all[r]
        qi = qorder[at]
        hit = qsorted[at] == lines.keys[r]
        hit &= run_code[r] == qrel_code[qi]  # the same query (codes compare faster than the ids)
        sure = np.flatnonzero(hit)
        hit[sure] = lines.docids[r[sure]] == qrels.docids[qi[sure]]  # and the same document, byte for byte
        return hit, qi

    if max_docs is not None:
        shares_a_document = bool(join(rows)[0].any())
        top = _trec_top(rpos, lines.values[rows], lines.docids[rows], max_docs)
        rows, rpos = rows[top], rpos[top]
    hit, qi = join(rows)
    emptied = np.zeros(0, dtype=np.int64)
    if judged_only:
        keep = hit & (qrels.values[qi] >= 0)
        rows, rpos, hit, qi = rows[keep], rpos[keep], hit[keep], qi[keep]
        if not rows.shape[0]:
            raise InputError(f"{run_path}: no document of the run is judged in {qrels_path}; judged_only (-J) leaves "
                             "nothing to evaluate")
        left = np.zeros(kept_codes.shape[0], dtype=bool)
        left[rpos] = True
        emptied = np.flatnonzero(~left)
        if emptied.shape[0]:  # renumber the queries that keep documents
            new_pos = np.cumsum(left) - 1
            rpos = new_pos[rpos]
            position[kept_codes[emptied]] = -1
            position[kept_codes[left]] = np.arange(int(left.sum()))
    evaluated_codes = np.delete(kept_codes, emptied)
    labels = np.where(hit, qrels.values[qi], 0.0)
    scores = lines.values[rows]
    offsets = offsets_from_qids(rpos)
    n_eval = evaluated_codes.shape[0]
    if not hit.any() and not shares_a_document:
        # Every number would be 0 (or skipped): the run and the qrels name documents differently.
        c0 = run_code[rows[0]]
        theirs = qrels.docids[np.flatnonzero(qrel_code == c0)[0]].decode()
        raise InputError(f"{run_path} and {qrels_path} share no document id: none of the {rows.shape[0]:,} documents "
                         f"the run ranks for its {n_eval:,} judged quer{_plural(n_eval, 'y', 'ies')} is in the qrels "
                         f"(query {uniq[c0].decode()}: the run has {lines.docids[rows[0]].decode()!r}, the qrels "
                         f"{theirs!r}); were they written from the same data?")
    unjudged = int((np.add.reduceat(hit.view(np.int8), offsets[:-1], dtype=np.int64) == 0).sum())
    if unjudged:
        notes.append(f"{unjudged} of the {n_eval} evaluated quer{_plural(n_eval, 'y', 'ies')} "
                     f"{_plural(unjudged, 'has', 'have')} no judged document among those the run ranks "
                     f"(every one counts as not relevant; do the run and {qrels_path} name documents alike?)")
    # Judged documents of the evaluated queries that the ranking lacks: the ideal DCG and R count them.
    matched = np.zeros(qrels.values.shape[0], dtype=bool)
    matched[qi[hit]] = True
    qpos = position[qrel_code]
    missing = np.flatnonzero((qpos >= 0) & ~matched)
    missing = missing[np.argsort(qpos[missing], kind="stable")]
    unranked_labels = qrels.values[missing]
    unranked_offsets = np.concatenate(([0], np.cumsum(np.bincount(qpos[missing], minlength=n_eval)))).astype(np.int64)
    empty_codes = np.concatenate([kept_codes[emptied], absent_codes if complete else np.zeros(0, np.int64)])
    empty_labels = []
    if empty_codes.shape[0]:
        by_code = np.argsort(qrel_code, kind="stable")
        bounds = np.searchsorted(qrel_code[by_code], np.stack([empty_codes, empty_codes + 1]))
        empty_labels = [qrels.values[by_code[a:b]] for a, b in zip(bounds[0].tolist(), bounds[1].tolist())]
    names = [q.decode() for q in uniq[np.concatenate([evaluated_codes, empty_codes])].tolist()]
    ids = _query_ids(names)
    return Run(qids=ids[:n_eval], labels=labels, scores=scores, offsets=offsets,
               unranked_labels=unranked_labels, unranked_offsets=unranked_offsets, source=str(run_path), notes=notes,
               docids=lines.docids[rows], queries_without_judged=unjudged, judged=hit,
               empty_qids=list(ids[n_eval:]), empty_labels=empty_labels, runid=lines.tag)


def model_run(data_path: Path | str, model_dir: Path | str, *, docids: bool = False) -> Run:
    """Score a Parquet dataset with a model written by ``rankcli train`` (its labels are the judgments); with
    ``docids`` its rows are named as TREC files name them (the docid, else ``<qid>-<row>``)."""
    from rankcli.formats.parquet import read_dataset
    from rankcli.train import load_model

    model = load_model(model_dir)
    ds = read_dataset(data_path)
    scores = np.asarray(model.predict(ds, what=str(data_path)), dtype=np.float64)
    run = run_from_arrays(ds.qids, ds.labels, scores, str(data_path))
    run.source = f"{data_path} scored by {model_dir}"
    if docids:
        run.docids = _names(ds.qids, ds.docids, None, data_path)
    return run


# ---------------------------------------------------------------------------------------------------------------------
# Evaluating


def _empty_ranking_values(specs: Sequence[MetricSpec], labels: list, convention: Convention) -> dict:
    """Per-query values of queries evaluated with an empty ranking: num_q 1, num_rel their R, every other measure 0
    (NaN under ``no_relevant=skip`` for a query without a relevant document, as for any other query)."""
    thr = convention.relevance_threshold
    n_rel = np.array([float((y >= thr).sum()) for y in labels])
    has_graded = np.array([bool((y > 0).any()) for y in labels])
    out = {}
    for spec in specs:
        v = np.zeros(len(labels))
        if spec.name == "num_q":
            v[:] = 1.0
        elif spec.name == "num_rel":
            v = n_rel.copy()
        elif spec.record.aggregate == "mean" or spec.record.aggregate == "gmean":
            has = has_graded if spec.graded else n_rel > 0
            if convention.no_relevant == "skip":
                v[~has] = np.nan
            elif convention.no_relevant == "one" and spec.record.normalised:
                v[~has] = 1.0
        out[str(spec)] = v
    return out


def evaluate_run(run: Run, metrics: Sequence[MetricSpec | str], convention: Convention = Convention()) -> EvalReport:
    from rankcli.core.metrics import per_query, summarize

    specs = parse_metrics([str(m) for m in metrics])
    computed = [s for s in specs if s.record.family != "info"]
    try:
        if not run.empty_qids:
            result = evaluate(computed, run.labels, run.scores, run.offsets, convention,
                              unranked_labels=run.unranked_labels, unranked_offsets=run.unranked_offsets,
                              docids=run.docids, judged=run.judged)
            qids = run.qids
        else:
            pq = per_query(computed, run.labels, run.scores, run.offsets, convention,
                           unranked_labels=run.unranked_labels, unranked_offsets=run.unranked_offsets,
                           docids=run.docids, judged=run.judged)
            extra = _empty_ranking_values(computed, run.empty_labels, convention)
            pq = {name: np.concatenate([v, extra[name]]) for name, v in pq.items()}
            result = summarize(computed, pq, convention)
            qids = np.concatenate([np.asarray(run.qids, dtype=object), np.asarray(run.empty_qids, dtype=object)])
            if all(isinstance(q, (int, np.integer)) for q in qids.tolist()):
                qids = qids.astype(np.int64)
    except InputError as exc:
        raise type(exc)(f"{run.source}: {exc}" if run.source else str(exc)) from None
    return EvalReport(result=result, specs=specs, qids=qids, source=run.source, rows=run.n_rows,
                      notes=list(run.notes), queries_without_judged=run.queries_without_judged, runid=run.runid)


def default_convention(trec_input: bool) -> str:
    """The preset used when none is given: ``trec`` for TREC runs (read as trec_eval reads them), else ``paper``."""
    return "trec" if trec_input else "paper"


def evaluate_path(path: Path | str, metrics: Sequence[MetricSpec | str],
                  convention: Convention = Convention()) -> EvalReport:
    return evaluate_run(read_run(path, docids=convention.ties == "docid-desc"), metrics, convention)


def evaluate_trec(run_path: Path | str, qrels_path: Path | str, metrics: Sequence[MetricSpec | str],
                  convention: Convention | None = None, *, max_docs: int | None = None, judged_only: bool = False,
                  complete: bool = False) -> EvalReport:
    """A TREC run against its qrels; the convention defaults to the ``trec`` preset. ``max_docs``, ``judged_only``
    and ``complete`` are trec_eval's ``-M``, ``-J`` and ``-c`` (see :func:`load_trec_run`)."""
    if convention is None:
        convention = Convention.preset(default_convention(True))
    run = load_trec_run(run_path, qrels_path, max_docs=max_docs, judged_only=judged_only, complete=complete)
    return evaluate_run(run, metrics, convention)


def evaluate_model(data_path: Path | str, model_dir: Path | str, metrics: Sequence[MetricSpec | str],
                   convention: Convention = Convention()) -> EvalReport:
    return evaluate_run(model_run(data_path, model_dir, docids=convention.ties == "docid-desc"), metrics, convention)


def write_per_query(path: Path | str, report: EvalReport, *, overwrite: bool = False) -> None:
    """One row per query: ``qid`` then a float64 column per metric (NaN where skipped), written atomically.

    The footer records ``kind=per-query``, the convention (JSON) and the source, so ``rankcli compare`` can check that
    files it compares were evaluated alike (:mod:`rankcli.formats.metric_file`).
    """
    from rankcli.formats.metric_file import write_metric_file

    specs = [s for s in report.specs if str(s) in report.result.per_query]  # runid is printed, not a column
    write_metric_file(path, report.qids, {str(s): report.result.per_query[str(s)] for s in specs},
                      convention=report.result.convention.as_dict(), extra={"source": report.source},
                      overwrite=overwrite)
