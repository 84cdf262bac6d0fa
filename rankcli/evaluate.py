"""Evaluate runs: read a Parquet run, a TREC run with its qrels, or score a dataset with a model, then compute metrics.

Returns :class:`EvalReport` objects; never prints (rendering lives in :mod:`rankcli.report`).

- A Parquet run has columns ``qid`` (integer), ``label`` and ``score``, the rows of a query contiguous.
- A TREC run (``qid Q0 docid rank score tag``) is scored against TREC qrels (``qid iter docid rel``) as trec_eval does:
  documents of the run missing from the qrels count as label 0; judged documents missing from the run count in the
  ideal DCG and in the number of relevant documents (recall, MAP); only queries that are both in the run and in the
  qrels are evaluated (the others are counted in ``notes``). Ties between equal scores keep file order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from rankcli.core.groups import offsets_from_qids
from rankcli.core.metrics import Convention, EvalResult, MetricSpec, evaluate, parse_metrics
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

    def as_dict(self) -> dict:
        """Exactly ``{"convention": {...}, "queries": N, "skipped": K, "metrics": {"ndcg@5": ...}}``."""
        return self.result.as_dict()


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


def read_run(path: Path | str) -> Run:
    """Read a Parquet run with ``qid``, ``label`` and ``score`` (other columns are ignored)."""
    from rankcli.formats import parquet

    names = parquet.column_names(path)
    if "score" not in names and "qid" in names and "label" in names and parquet.feature_columns(names):
        raise SchemaError(f"{path}: missing column score: this looks like a dataset (it has feature columns); "
                          "score it with a model: rankcli eval DATA --model MODEL_DIR")
    parquet.require_columns(path, names, RUN_COLUMNS)
    table = parquet.read_table(path, list(RUN_COLUMNS))
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
    return run_from_arrays(arrays["qid"].astype(np.int64, copy=False), arrays["label"], arrays["score"], str(path))


def _query_ids(names: list[str]) -> np.ndarray:
    """TREC query ids as int64 when every one is a plain integer (``"301"``), otherwise as strings."""
    try:
        ints = [int(n) for n in names]
    except ValueError:
        return np.array(names, dtype=object)
    if all(str(i) == n for i, n in zip(ints, names)):
        return np.array(ints, dtype=np.int64)
    return np.array(names, dtype=object)


def load_trec_run(run_path: Path | str, qrels_path: Path | str) -> Run:
    """A TREC run joined with its qrels (see the module docstring for the rules)."""
    from rankcli.formats.trec import read_qrels, read_trec_run

    lines = read_trec_run(run_path)
    qrels = read_qrels(qrels_path)
    judged: dict[tuple[str, str], float] = dict(zip(zip(qrels.qids.tolist(), qrels.docids.tolist()),
                                                    qrels.labels.tolist()))
    judged_queries = set(qrels.qids.tolist())
    # Queries in order of first appearance in the run; rows grouped by query, file order kept within a query.
    code_of: dict[str, int] = {}
    codes = np.fromiter((code_of.setdefault(q, len(code_of)) for q in lines.qids.tolist()), dtype=np.int64,
                        count=lines.qids.shape[0])
    run_queries = list(code_of)
    keep_query = np.array([q in judged_queries for q in run_queries], dtype=bool)
    notes = []
    dropped = int((~keep_query).sum())
    if dropped:
        notes.append(f"{dropped} quer{'y' if dropped == 1 else 'ies'} of the run "
                     f"{'has' if dropped == 1 else 'have'} no judgments in {qrels_path} and "
                     f"{'was' if dropped == 1 else 'were'} not evaluated")
    absent = len(judged_queries - set(run_queries))
    if absent:
        notes.append(f"{absent} judged quer{'y is' if absent == 1 else 'ies are'} absent from the run and "
                     "not evaluated (as trec_eval without -c)")
    if not keep_query.any():
        raise InputError(f"{run_path}: no query of the run is judged in {qrels_path} (query ids differ?)")
    rows = np.flatnonzero(keep_query[codes])
    rows = rows[np.argsort(codes[rows], kind="stable")]
    qids_rows = lines.qids[rows].tolist()
    docs_rows = lines.docids[rows].tolist()
    labels = np.array([judged.get(k, 0.0) for k in zip(qids_rows, docs_rows)], dtype=np.float64)
    scores = lines.scores[rows]
    offsets = offsets_from_qids(codes[rows])
    kept = [q for q, k in zip(run_queries, keep_query) if k]
    position = {q: i for i, q in enumerate(kept)}
    in_run = set(zip(qids_rows, docs_rows))
    missing_q, missing_l = [], []
    for q, d, y in zip(qrels.qids.tolist(), qrels.docids.tolist(), qrels.labels.tolist()):
        if q in position and (q, d) not in in_run:
            missing_q.append(position[q])
            missing_l.append(y)
    missing_q = np.array(missing_q, dtype=np.int64)
    order = np.argsort(missing_q, kind="stable")
    unranked_labels = np.array(missing_l, dtype=np.float64)[order]
    unranked_offsets = np.concatenate(([0], np.cumsum(np.bincount(missing_q, minlength=len(kept))))).astype(np.int64)
    return Run(qids=_query_ids(kept), labels=labels, scores=scores, offsets=offsets,
               unranked_labels=unranked_labels, unranked_offsets=unranked_offsets, source=str(run_path), notes=notes)


def model_run(data_path: Path | str, model_dir: Path | str) -> Run:
    """Score a Parquet dataset with a model written by ``rankcli train`` (its labels are the judgments)."""
    from rankcli.formats.parquet import read_dataset
    from rankcli.train import load_model

    model = load_model(model_dir)
    ds = read_dataset(data_path)
    scores = np.asarray(model.predict(ds, what=str(data_path)), dtype=np.float64)
    run = run_from_arrays(ds.qids, ds.labels, scores, str(data_path))
    run.source = f"{data_path} scored by {model_dir}"
    return run


# ---------------------------------------------------------------------------------------------------------------------
# Evaluating


def evaluate_run(run: Run, metrics: Sequence[MetricSpec | str], convention: Convention = Convention()) -> EvalReport:
    specs = parse_metrics([str(m) for m in metrics])
    try:
        result = evaluate(specs, run.labels, run.scores, run.offsets, convention,
                          unranked_labels=run.unranked_labels, unranked_offsets=run.unranked_offsets)
    except InputError as exc:
        raise type(exc)(f"{run.source}: {exc}" if run.source else str(exc)) from None
    return EvalReport(result=result, specs=specs, qids=run.qids, source=run.source, rows=run.n_rows,
                      notes=list(run.notes))


def evaluate_path(path: Path | str, metrics: Sequence[MetricSpec | str],
                  convention: Convention = Convention()) -> EvalReport:
    return evaluate_run(read_run(path), metrics, convention)


def evaluate_trec(run_path: Path | str, qrels_path: Path | str, metrics: Sequence[MetricSpec | str],
                  convention: Convention = Convention()) -> EvalReport:
    return evaluate_run(load_trec_run(run_path, qrels_path), metrics, convention)


def evaluate_model(data_path: Path | str, model_dir: Path | str, metrics: Sequence[MetricSpec | str],
                   convention: Convention = Convention()) -> EvalReport:
    return evaluate_run(model_run(data_path, model_dir), metrics, convention)


def write_per_query(path: Path | str, report: EvalReport, *, overwrite: bool = False) -> None:
    """One row per query: ``qid`` then a float64 column per metric (NaN where skipped), written atomically.

    The footer records ``kind=per-query``, the convention (JSON) and the source, so ``rankcli compare`` can check that
    files it compares were evaluated alike.
    """
    import pyarrow as pa

    from rankcli.formats.parquet import write_table

    qids = report.qids
    qcol = pa.array(qids, pa.int64()) if np.issubdtype(np.asarray(qids).dtype, np.integer) else pa.array(
        [str(q) for q in qids], pa.string())
    columns = {"qid": qcol}
    for spec in report.specs:
        columns[str(spec)] = pa.array(report.result.per_query[str(spec)], pa.float64())
    meta = {"kind": "per-query", "convention": json.dumps(report.result.convention.as_dict()),
            "metrics": [str(s) for s in report.specs], "source": report.source}
    write_table(path, pa.table(columns), metadata=meta, overwrite=overwrite, query_aligned=False)
