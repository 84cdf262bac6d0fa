"""Evaluate runs: read a Parquet run, a TREC run with its qrels, or score a dataset with a model, then compute metrics.

Returns :class:`EvalReport` objects; never prints (rendering lives in :mod:`rankcli.evaluate.render`).

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

from rankcli.core.metrics import Convention, EvalResult, MetricSpec, parse_metrics, summarize
from rankcli.dataset import Run
from rankcli.evaluate import runs
from rankcli.evaluate.runs import is_parquet, not_parquet_error, read_run, run_from_arrays
from rankcli.formats.metric_file import write_metric_file
from rankcli.formats.trec.write import row_names

__all__ = ["EvalReport", "evaluate_input", "evaluate_model", "evaluate_path", "evaluate_run", "evaluate_trec",
           "is_parquet", "model_run", "not_parquet_error", "read_run", "run_from_arrays", "write_per_query"]


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
    qrels_positive: int | None = None  # -c: trec_eval's summary num_rel (rankcli.dataset.Run.qrels_positive)

    def as_dict(self) -> dict:
        """Exactly ``{"convention": {...}, "queries": N, "skipped": K, "queries_without_judged": J,
        "metrics": {"ndcg@5": ...}}``; ``J`` counts the evaluated queries none of whose documents is judged (TREC runs;
        every row of a Parquet run carries its label, so 0 there)."""
        d = self.result.as_dict()
        return {"convention": d["convention"], "queries": d["queries"], "skipped": d["skipped"],
                "queries_without_judged": self.queries_without_judged, "metrics": d["metrics"]}


# ---------------------------------------------------------------------------------------------------------------------
# Reading


def model_run(data_path: Path | str, model_dir: Path | str, *, docids: bool = False) -> Run:
    """Score a Parquet dataset with a model written by ``rankcli train`` (its labels are the judgments); with
    ``docids`` its rows are named as TREC files name them (the docid, else ``<qid>-<row>``)."""
    from rankcli.formats.parquet import read_dataset
    from rankcli.train import load_model  # a run's evaluation never loads the training library (~0.2 s)

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


def evaluate_run(run: Run, metrics: Sequence[MetricSpec | str], convention: Convention = Convention()) -> EvalReport:
    """Compute ``metrics`` on ``run`` under ``convention`` (the measure stage, :func:`rankcli.evaluate.runs.measure`):
    the report holds a value per query and their summary. Queries evaluated with an empty ranking (``run.empty_qids``)
    come after the others."""
    specs = parse_metrics([str(m) for m in metrics])
    computed = [s for s in specs if s.record.family != "info"]
    result = summarize(computed, runs.measure(run, computed, convention), convention)
    return EvalReport(result=result, specs=specs, qids=runs.measured_qids(run), source=run.source, rows=run.n_rows,
                      notes=list(run.notes), queries_without_judged=run.queries_without_judged, runid=run.runid,
                      qrels_positive=run.qrels_positive)


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
    """A TREC run against its qrels (:func:`rankcli.evaluate.runs.load_trec`, then :func:`evaluate_run`); the convention
    defaults to the ``trec`` preset. ``max_docs``, ``judged_only`` and ``complete`` are trec_eval's ``-M``, ``-J``
    and ``-c``."""
    if convention is None:
        convention = Convention.preset(default_convention(True))
    run = runs.load_trec(run_path, qrels_path, convention, max_docs=max_docs, judged_only=judged_only,
                         complete=complete)
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
    (:func:`rankcli.train.scoring.score_batches`), never whole; the labels and scores of every row (16 bytes a row) are
    then evaluated at once, exactly as :func:`model_run` and :func:`evaluate_run` evaluate them."""
    by_docid = convention.ties == "docid-desc"
    from rankcli.train.scoring import DEFAULT_BATCH_ROWS, open_scoring, score_batches  # as load_model above

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
    specs = [s for s in report.specs if str(s) in report.result.per_query]  # runid is printed, not a column
    write_metric_file(path, report.qids, {str(s): report.result.per_query[str(s)] for s in specs},
                      convention=report.result.convention.as_dict(), extra={"source": report.source},
                      overwrite=overwrite)
