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

import errno
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from rankcli.core.groups import order_within
from rankcli.core.metrics import Convention, EvalResult, MetricSpec, evaluate, parse_metrics
from rankcli.dataset import Run, offsets_from_qids
from rankcli.errors import InputError, RankcliError, SchemaError, UsageError
from rankcli.formats.inputs import unreadable_input
from rankcli.formats.trec import row_names
from rankcli.formats.trec_join import load_trec_run


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


def not_parquet_error(path: Path | str, example: str = "") -> RankcliError:
    """The error for a run that is not Parquet: SVMlight text is told to convert it (exit 3), anything else how a TREC
    run is given (exit 2, ``example`` the command line to show)."""
    from rankcli.formats.svmlight_text import SVMLIGHT_HINT, looks_like_svmlight

    if looks_like_svmlight(path):
        return InputError(f"{path}: not Parquet; {SVMLIGHT_HINT}")
    return UsageError(f"{path}: not a Parquet file; a TREC run needs --qrels QRELS{example}")


def is_parquet(path: Path | str) -> bool:
    """Whether ``path`` starts with Parquet's magic bytes; a missing or unreadable path is an :class:`InputError`."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"PAR1"
    except FileNotFoundError:
        raise unreadable_input(path) from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a run file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise unreadable_input(path) from None
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None


def read_run(path: Path | str, *, docids: bool = False) -> Run:
    """Read a Parquet run with ``qid``, ``label`` and ``score`` (other columns are ignored;
    :func:`rankcli.formats.runs.read_run_columns` checks them).

    With ``docids``, the rows are also named (``Run.docids``), as TREC files name them: the ``docid`` column, else
    ``<qid>-<row>`` with the ``row`` column that ``rankcli predict`` writes, else the row number in the file.
    """
    from rankcli.formats.runs import read_run_columns

    cols = read_run_columns(path, docids=docids)
    run = run_from_arrays(cols.qids, cols.labels, cols.scores, str(path))
    if docids:
        run.docids = cols.names()
    return run


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
        run.docids = row_names(ds.qids, ds.docids, None, data_path)
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


def _in_rank_order(run: Run) -> Run:
    """The run with each query's rows in rank order (score descending, equal scores in their order, so that no tie
    rule changes): every metric kernel then sorts rows that are already sorted, which costs next to nothing, instead
    of sorting each query again. Only for TREC runs joined with their qrels, whose rows are not the lines of a file
    (a Parquet run keeps its rows, which its error messages name)."""
    if run.judged is None or run.ranked:
        return run
    s, o = run.scores, run.offsets
    rising = s[1:] > s[:-1]
    rising[o[1:-1] - 1] = False  # across two queries
    if not rising.any():
        return run
    perm = order_within(s, o)
    return replace(run, labels=run.labels[perm], scores=s[perm],
                   docids=None if run.docids is None else run.docids[perm],
                   judged=None if run.judged is None else run.judged[perm])


def kernel_convention(run: Run, convention: Convention) -> Convention:
    """The convention to compute ``run``'s metrics under: the one given, except that rows already in trec_eval's rank
    order (``run.ranked``) need no ordering by document id: their equal scores stand in that rule's order, which
    the input-order rule keeps."""
    if run.ranked and convention.ties == "docid-desc":
        return replace(convention, ties="input")
    if run.ranked and convention.ties == "input":
        raise ValueError("a run in trec_eval's rank order has lost the order of its input (load it without ranked)")
    return convention


def evaluate_run(run: Run, metrics: Sequence[MetricSpec | str], convention: Convention = Convention()) -> EvalReport:
    """Compute ``metrics`` on ``run`` under ``convention``: the report holds a value per query and their summary.

    Queries evaluated with an empty ranking (``run.empty_qids``) come after the others, valued as trec_eval values
    them (0, num_rel their R); an :class:`InputError` is prefixed with the run's source."""
    from rankcli.core.metrics import per_query, summarize

    specs = parse_metrics([str(m) for m in metrics])
    computed = [s for s in specs if s.record.family != "info"]
    run = _in_rank_order(run)
    kernel = kernel_convention(run, convention)
    try:
        if not run.empty_qids:
            result = evaluate(computed, run.labels, run.scores, run.offsets, kernel,
                              unranked_labels=run.unranked_labels, unranked_offsets=run.unranked_offsets,
                              docids=run.docids, judged=run.judged)
            result = replace(result, convention=convention)
            qids = run.qids
        else:
            pq = per_query(computed, run.labels, run.scores, run.offsets, kernel,
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
    """Evaluate a Parquet run (``qid``, ``label``, ``score``; ``docid`` for the trec tie rule) read from ``path``.

    metrics : metric names (``ndcg@10``, ``P_5``, ...) or parsed specs.
    convention : gain, tie rule and the score of a query without a relevant document."""
    return evaluate_run(read_run(path, docids=convention.ties == "docid-desc"), metrics, convention)


def evaluate_trec(run_path: Path | str, qrels_path: Path | str, metrics: Sequence[MetricSpec | str],
                  convention: Convention | None = None, *, max_docs: int | None = None, judged_only: bool = False,
                  complete: bool = False) -> EvalReport:
    """A TREC run against its qrels; the convention defaults to the ``trec`` preset. ``max_docs``, ``judged_only``
    and ``complete`` are trec_eval's ``-M``, ``-J`` and ``-c`` (see :func:`rankcli.formats.trec_join.load_trec_run`)."""
    if convention is None:
        convention = Convention.preset(default_convention(True))
    from rankcli.cpus import available_cpus

    run = load_trec_run(run_path, qrels_path, max_docs=max_docs, judged_only=judged_only, complete=complete,
                        ranked=convention.ties != "input", threads=available_cpus())
    return evaluate_run(run, metrics, convention)


def evaluate_input(path: Path | str, metrics: Sequence[MetricSpec | str], convention: Convention, *,
                   qrels: Path | str | None = None, model: Path | str | None = None, max_docs: int | None = None,
                   judged_only: bool = False, complete: bool = False) -> EvalReport:
    """Evaluate what ``rankcli eval`` is given: a TREC run ``path`` against ``qrels`` (:func:`evaluate_trec`, with
    trec_eval's ``-M``, ``-J``, ``-c``), a Parquet dataset ``path`` scored by the model directory ``model``
    (:func:`evaluate_model`), or a Parquet run ``path`` (:func:`evaluate_path`)."""
    if qrels is not None:
        return evaluate_trec(path, qrels, metrics, convention, max_docs=max_docs, judged_only=judged_only,
                             complete=complete)
    if model is not None:
        return evaluate_model(path, model, metrics, convention)
    return evaluate_path(path, metrics, convention)


def evaluate_model(data_path: Path | str, model_dir: Path | str, metrics: Sequence[MetricSpec | str],
                   convention: Convention = Convention(), *, batch_rows: int | None = None) -> EvalReport:
    """Score the dataset at ``data_path`` with the model directory ``model_dir`` and evaluate the scores against
    the dataset's labels (``rankcli eval DATA --model MODEL``); ``metrics`` and ``convention`` as in
    :func:`evaluate_path`.

    The features are read and scored in batches of whole queries of at most ``batch_rows`` rows
    (:func:`rankcli.scoring.score_batches`), never whole; the labels and scores of every row (16 bytes a row) are
    then evaluated at once, exactly as :func:`model_run` and :func:`evaluate_run` evaluate them."""
    from rankcli.scoring import DEFAULT_BATCH_ROWS, open_scoring, score_batches

    by_docid = convention.ties == "docid-desc"
    source = open_scoring(model_dir, data_path, label_required=True, docids=by_docid)
    ds = source.index
    scores = np.empty(ds.n_rows, dtype=np.float64)
    for b in score_batches(source, DEFAULT_BATCH_ROWS if batch_rows is None else batch_rows):
        scores[b.start:b.stop] = b.scores
    run = run_from_arrays(ds.qids, ds.labels, scores, str(data_path))
    run.source = f"{data_path} scored by {model_dir}"
    if by_docid:
        run.docids = row_names(ds.qids, ds.docids, None, data_path)
    return evaluate_run(run, metrics, convention)


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
