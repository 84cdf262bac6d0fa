"""The inputs of ``rankcli compare`` reduced to per-query values, and their alignment on common queries.

An input is a Parquet run, a per-query metric file (:mod:`rankcli.formats.metric_file`) or a TREC run with qrels;
:mod:`rankcli.compare` describes each and the alignment rules.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankcli.core.metrics import Convention, parse_metric, parse_metrics
from rankcli.errors import InputError, SchemaError, UsageError
from rankcli.evaluate.runs import is_parquet, not_parquet_error, read_run
from rankcli.formats.metric_file import is_metric_file, read_metric_file

DEFAULT_METRICS = ("ndcg@5", "ndcg@10")


@dataclass
class LoadedInput:
    """One input reduced to per-query values, queries sorted by qid."""

    name: str
    path: str
    kind: str                                   # "run" | "trec" | "per-query"
    qids: np.ndarray                            # (n_queries,) int64 (or str for TREC ids), ascending, unique
    values: dict[str, np.ndarray]               # metric -> (n_queries,) float64, NaN = no value (skipped)
    label_qids: np.ndarray | None = None        # rows sorted by (qid, label), for the label check (runs only)
    label_values: np.ndarray | None = None
    convention: dict | None = None              # the convention the values were computed under, when known
    notes: list[str] = field(default_factory=list)


def _sorted_queries(qids_per_query: np.ndarray, values: dict[str, np.ndarray]) -> tuple[np.ndarray, dict]:
    qids_per_query = np.asarray(qids_per_query)
    if not np.issubdtype(qids_per_query.dtype, np.integer):
        qids_per_query = qids_per_query.astype(str)      # TREC query ids that are not plain integers
    order = np.argsort(qids_per_query, kind="stable")
    qids = qids_per_query[order]
    return qids, {k: np.asarray(v, dtype=np.float64)[order] for k, v in values.items()}


def _per_query_columns(names: Sequence[str]) -> list[str]:
    out = []
    for name in names:
        if name == "qid":
            continue
        try:
            parse_metric(name)
        except UsageError:
            continue
        out.append(name)
    return out


def load_input(path: Path | str, name: str, specs: Sequence, convention, *, qrels: Path | str | None = None
               ) -> LoadedInput:
    """Read one input and reduce it to per-query values.

    Parameters
    ----------
    path : a Parquet run, a per-query metric file, or a TREC run (with ``qrels``).
    name : the run's name in the report.
    specs : the metrics (:class:`~rankcli.core.metrics.MetricSpec`); None: :data:`DEFAULT_METRICS` for runs, every
        metric column of a per-query file.
    convention : the :class:`~rankcli.core.metrics.Convention` metrics of runs are computed under.
    qrels : the qrels of a TREC run.
    """
    from rankcli.core.metrics import per_query
    from rankcli.formats import parquet

    path = Path(path)
    if not is_parquet(path):
        if qrels is None:
            raise not_parquet_error(path)
        return _load_trec(path, name, specs, convention, Path(qrels))
    names = parquet.column_names(path)
    meta = parquet.read_metadata(path)
    if is_metric_file(names, meta):
        return _load_per_query(path, name, names, meta, specs)
    # Checks columns, NaN and contiguous queries, as eval does; names the documents for the docid tie rule.
    run = read_run(path, docids=convention.ties == "docid-desc")
    wanted = list(specs) if specs is not None else list(DEFAULT_METRICS)
    try:
        values = per_query(wanted, run.labels, run.scores, run.offsets, convention, docids=run.docids)
    except InputError as exc:
        raise type(exc)(f"{path}: {exc}") from None
    qids, values = _sorted_queries(run.qids, values)
    row_qids = np.repeat(np.asarray(run.qids), np.diff(run.offsets))   # int64 from read_run; any id type works
    row_order = np.lexsort((run.labels, row_qids))
    return LoadedInput(name, str(path), "run", qids, values, row_qids[row_order], run.labels[row_order],
                       convention.as_dict())


def _load_per_query(path: Path, name: str, names: list[str], meta: dict, specs) -> LoadedInput:
    from rankcli.formats import parquet

    parquet.require_columns(path, names, ["qid"])
    available = _per_query_columns(names)
    if specs is None:
        wanted = available
        if not wanted:
            raise SchemaError(f"{path}: a per-query metric file needs metric columns besides qid, named as rankcli "
                              f"names metrics (ndcg@10, map, ...), found none: its columns are {', '.join(names)}")
    else:
        wanted = [str(s) for s in specs]
        missing = [m for m in wanted if m not in names]
        if missing:
            raise SchemaError(f"{path}: per-query metric file has no column {missing[0]} "
                              f"(metrics in it: {', '.join(available) or 'none'}); compare it on those or "
                              f"re-run rankcli eval --per-query with --metric {missing[0]}")
    found = read_metric_file(path, wanted)
    qids, values = _sorted_queries(found.qids, found.values)
    convention = _stored_convention(path, meta["convention"]) if "convention" in meta else None
    return LoadedInput(name, str(path), "per-query", qids, values, convention=convention)


def _stored_convention(path: Path, text: str) -> dict:
    """The convention a per-query file's footer records (``rankcli eval --per-query`` writes it as JSON)."""
    try:
        conv = json.loads(text)
    except ValueError:
        conv = None
    fields = set(Convention().as_dict())
    if not isinstance(conv, dict) or not set(conv) <= fields or not conv:
        raise InputError(f"{path}: its footer's rankcli.convention is not a metric convention (expected a JSON object "
                         f"with {', '.join(sorted(fields))}), got {text[:80]!r}; re-run rankcli eval --per-query")
    return conv


def _load_trec(path: Path, name: str, specs, convention, qrels: Path) -> LoadedInput:
    """A TREC run with its qrels through the stages eval uses (:mod:`rankcli.evaluate.runs`): read, join, rank,
    measure."""
    from rankcli.evaluate.runs import load_trec, measure

    run = load_trec(path, qrels, convention)
    wanted = parse_metrics([str(s) for s in (specs if specs is not None else DEFAULT_METRICS)])
    qids, values = _sorted_queries(run.qids, measure(run, wanted, convention))
    return LoadedInput(name, str(path), "trec", qids, values, convention=convention.as_dict(),
                       notes=[f"{name}: {n}" for n in run.notes])


# ---------------------------------------------------------------------------------------------------------------------
# Alignment


def _label_mismatches(ref: LoadedInput, other: LoadedInput, common: np.ndarray) -> np.ndarray:
    """Queries of ``common`` whose multiset of labels differs between two runs."""
    rows_a = np.isin(ref.label_qids, common)
    rows_b = np.isin(other.label_qids, common)
    qa, la = ref.label_qids[rows_a], ref.label_values[rows_a]
    qb, lb = other.label_qids[rows_b], other.label_values[rows_b]
    # Both are sorted by (qid, label) over the same query set: per-query sizes first.
    _, size_a = np.unique(qa, return_counts=True)
    _, size_b = np.unique(qb, return_counts=True)
    bad = common[size_a != size_b]
    same = common[size_a == size_b]
    keep_a, keep_b = np.isin(qa, same), np.isin(qb, same)
    differ = la[keep_a] != lb[keep_b]
    bad_rows = qa[keep_a][differ]
    return np.union1d(bad, bad_rows)


def align(inputs: Sequence[LoadedInput], *, intersect: bool = False) -> tuple[np.ndarray, int]:
    """The qids to compare (ascending) and how many queries were dropped; raises on a mismatch without intersect.

    Parameters
    ----------
    inputs : the loaded inputs (integer ids are turned into strings, in place, when other inputs have string ids).
    intersect : keep the queries every input has with identical labels instead of refusing a difference.
    """
    if len({i.qids.dtype.kind == "i" for i in inputs}) > 1:
        # Integer ids in some inputs, string ids in others: compare them as strings.
        for i in inputs:
            if i.qids.dtype.kind == "i":
                i.qids, i.values = _sorted_queries(i.qids.astype(str), i.values)
                if i.label_qids is not None:
                    order = np.lexsort((i.label_values, i.label_qids.astype(str)))
                    i.label_qids, i.label_values = i.label_qids.astype(str)[order], i.label_values[order]
    all_qids = inputs[0].qids
    common = inputs[0].qids
    for inp in inputs[1:]:
        all_qids = np.union1d(all_qids, inp.qids)
        common = np.intersect1d(common, inp.qids, assume_unique=True)
    if not intersect and all_qids.shape[0] != common.shape[0]:
        q = all_qids[~np.isin(all_qids, common)][0]
        has = [i for i in inputs if np.isin(q, i.qids)]
        lacks = [i for i in inputs if not np.isin(q, i.qids)]
        raise InputError(f"runs cover different queries: query {q} is in {has[0].path} but not in "
                         f"{lacks[0].path}; pass --intersect to compare on the queries every run has")
    labelled = [i for i in inputs if i.label_qids is not None]
    bad = np.empty(0, dtype=np.int64)
    for other in labelled[1:]:
        mismatch = _label_mismatches(labelled[0], other, common)
        if mismatch.shape[0] and not intersect:
            raise InputError(f"runs have different labels: query {mismatch[0]} differs between "
                             f"{labelled[0].path} and {other.path}; compare runs of the same data, or pass "
                             "--intersect to drop such queries")
        bad = np.union1d(bad, mismatch)
    if bad.shape[0]:
        common = np.setdiff1d(common, bad, assume_unique=True)
    if common.shape[0] == 0:
        raise InputError("the runs have no query in common (with identical labels); nothing to compare")
    return common, int(all_qids.shape[0] - common.shape[0])


#: Each input kind as the report and the messages name it.
KIND_NAMES = {"run": "Parquet run", "trec": "TREC run", "per-query": "per-query file"}


def check_kinds(inputs: Sequence[LoadedInput]) -> None:
    """Refuse per-query files together with runs: the files hold values rankcli eval computed earlier, the runs are
    evaluated now, and nothing says the two were computed from the same judgments."""
    files = [i for i in inputs if i.kind == "per-query"]
    runs = [i for i in inputs if i.kind != "per-query"]
    if files and runs:
        raise UsageError(f"cannot compare per-query files with runs: {files[0].path} is a per-query file (values from "
                         f"rankcli eval --per-query), {runs[0].path} a {KIND_NAMES[runs[0].kind]} (evaluated now); "
                         "give runs only, or per-query files only (rankcli eval RUN --per-query FILE for each run)")


def check_conventions(inputs: Sequence[LoadedInput], requested: dict | None = None) -> None:
    """Refuse inputs evaluated under different conventions, or a per-query file evaluated under another convention
    than the one ``requested`` (a :meth:`Convention.as_dict`; None when the convention options were not given)."""
    known = [i for i in inputs if i.convention is not None]
    if requested is not None:
        # a convention asked for cannot change values already computed: refuse rather than ignore it
        other = next((i for i in known if i.kind == "per-query" and i.convention != requested), None)
        if other is not None:
            raise InputError(f"{other.path} was evaluated under another convention ({other.convention}) than the one "
                             f"asked for ({requested}); a per-query file keeps the convention it was computed under: "
                             "leave out the convention options, or re-run rankcli eval --per-query with them")
    for other in known[1:]:
        if other.convention != known[0].convention:
            raise InputError(f"{other.path} was evaluated under a different convention than {known[0].path} "
                             f"({other.convention} vs {known[0].convention}); compare values computed alike")
