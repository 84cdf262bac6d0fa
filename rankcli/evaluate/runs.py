"""The runs ``rankcli eval`` and ``rankcli compare`` evaluate, read and measured alike (both import this module).

- A Parquet run (``qid``, ``label``, ``score``; ``docid`` for the docid tie rule) is read and checked by
  :func:`read_run`.
- A TREC run with its qrels goes through the stages of :func:`load_trec`, each called once, in order:

  1. **read** (:func:`rankcli.formats.trec.text.read`): both files' bytes, checked as text;
  2. **join** (:func:`rankcli.formats.trec.join.join`): parsed, each run line matched with its judgment, by the C
     variant (:mod:`rankcli.formats.trec.join_native`) when it takes the input, else the numpy variant;
  3. **rank** (:func:`rankcli.formats.trec.rank.rank`): each query's rows in rank order, -M and -J applied, a
     :class:`rankcli.dataset.Run`;

  then, for either kind of run,

  4. **measure** (:func:`measure`): every metric's value per query;
  5. **write**: the command renders them (``rankcli eval``'s table, JSON or trec_eval layout; ``compare``'s report).
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from rankcli.core.metrics import Convention, MetricSpec
from rankcli.dataset import Run, offsets_from_qids
from rankcli.errors import InputError, InputFormatError, RankcliError, SchemaError, UsageError
from rankcli.formats.inputs import unreadable_input
from rankcli.formats.svmlight_text import looks_like_svmlight, svmlight_hint
from rankcli.formats.trec import join as trec_join
from rankcli.formats.trec import join_native as trec_fast
from rankcli.formats.trec import rank as trec_rank
from rankcli.formats.trec import text as trec_text

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
    if looks_like_svmlight(path):
        return InputError(f"{path}: not Parquet; {svmlight_hint(path)}")
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


def load_trec(run_path: Path | str, qrels_path: Path | str, convention: Convention, *, max_docs: int | None = None,
              judged_only: bool = False, complete: bool = False, threads: int | None = None) -> Run:
    """A TREC run joined with its qrels as trec_eval joins them: the stages read, join and rank (see the module
    docstring). ``max_docs``, ``judged_only`` and ``complete`` are trec_eval's -M, -J and -c; ``threads`` the C
    variant's (default: the CPUs available). The rows come in rank order under ``convention``'s tie rule; the
    ``input`` rule keeps the run's line order, which only the numpy variant knows."""
    check_trec_threshold(convention)
    if threads is None:
        from rankcli.runtime.cpus import available_cpus

        threads = available_cpus()
    c_join = convention.ties != "input" and trec_fast.available()
    texts = trec_text.read(run_path, qrels_path, as_array=c_join)
    try:
        joined = trec_join.join(texts, judged_only=judged_only, complete=complete, threads=threads)
        return trec_rank.rank(joined, ties=convention.ties, max_docs=max_docs, judged_only=judged_only,
                              complete=complete, run_path=run_path, qrels_path=qrels_path)
    except InputFormatError as exc:  # the read dropped blank lines: name the file's own line
        texts.true_lines(exc)
        raise


# ---------------------------------------------------------------------------------------------------------------------
# Measuring

#: The label a retrieved document absent from the qrels is measured with: trec_eval's ``RELVALUE_NONPOOL``, below
#: every threshold a TREC run may take (>= 0), so that such a document is never relevant (under ``-l 0`` a label of
#: 0 is, and a document without one must not be), and of gain 0 as every negative label.
NOT_IN_QRELS = -1.0


def check_trec_threshold(convention: Convention) -> None:
    """Refuse a relevance threshold below 0 for a TREC run: trec_eval then counts the documents absent from the qrels
    (judgment -1) and the pooled unjudged ones (-2) as relevant in its ranking measures but not in R (AP above 1),
    a reading rankcli eval does not give; rankcli trec_eval reproduces it."""
    thr = convention.relevance_threshold
    if thr < 0:
        raise UsageError(f"--threshold (-l) {thr:g} is below 0: with --qrels a document is relevant when the qrels "
                         "give it a label >= the threshold, and trec_eval would count documents absent from the "
                         "qrels as relevant below 0; use -l 0 or more (rankcli trec_eval reproduces trec_eval's "
                         "reading)")


def _measured_labels(run: Run) -> np.ndarray:
    """The labels the measures see: a TREC run's documents absent from the qrels take :data:`NOT_IN_QRELS`."""
    if run.judged is None:
        return run.labels
    return np.where(run.judged, run.labels, NOT_IN_QRELS)


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


def kernel_convention(run: Run, convention: Convention) -> Convention:
    """The convention to compute ``run``'s metrics under: the one given, except that rows already in trec_eval's rank
    order (``run.ranked``) need no ordering by document id: their equal scores stand in that rule's order, which
    the input-order rule keeps."""
    if run.ranked and convention.ties == "docid-desc":
        return replace(convention, ties="input")
    if run.ranked and convention.ties == "input":
        raise ValueError("a run in trec_eval's rank order has lost the order of its input (load it without ranked)")
    return convention


def measure(run: Run, specs: Sequence[MetricSpec], convention: Convention) -> dict[str, np.ndarray]:
    """The measure stage: each metric's value per query (``str(spec)`` -> array), the queries evaluated with an empty
    ranking (``run.empty_qids``) after the others, valued as trec_eval values them (0, num_rel their R); an
    :class:`InputError` is prefixed with the run's source."""
    from rankcli.core.metrics import per_query

    try:
        if run.judged is not None:
            check_trec_threshold(convention)
        values = per_query(specs, _measured_labels(run), run.scores, run.offsets, kernel_convention(run, convention),
                           unranked_labels=run.unranked_labels, unranked_offsets=run.unranked_offsets,
                           docids=run.docids, judged=run.judged)  # bpref, infAP: which documents are judged
        if run.empty_qids:
            extra = _empty_ranking_values(specs, run.empty_labels, convention)
            values = {name: np.concatenate([v, extra[name]]) for name, v in values.items()}
    except InputError as exc:
        raise type(exc)(f"{run.source}: {exc}" if run.source else str(exc)) from None
    return values


def measured_qids(run: Run) -> np.ndarray:
    """The query ids aligned with :func:`measure`'s values: the run's, then those of its empty-ranking queries."""
    if not run.empty_qids:
        return run.qids
    qids = np.concatenate([np.asarray(run.qids, dtype=object), np.asarray(run.empty_qids, dtype=object)])
    if all(isinstance(q, (int, np.integer)) for q in qids.tolist()):
        qids = qids.astype(np.int64)
    return qids
