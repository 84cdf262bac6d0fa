"""The fused run written through the run writers ``rankcli predict`` uses (:mod:`rankcli.formats.runs`): a TREC run
(``qid Q0 docid rank score tag``, each query best first, equal fused scores by document id descending) or a Parquet
run (``qid``, ``docid``, ``label`` when every fused document has one from the runs, ``score``; rows in rank order).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rankcli.core.fusion import Evidence, RunRows, ranking
from rankcli.errors import InputError, SchemaError, UsageError


def as_text(names: np.ndarray) -> np.ndarray:
    """Numpy ``S`` names as an object array of ``str`` (UTF-8)."""
    try:
        return names.astype("U").astype(object)  # ASCII, converted in C
    except UnicodeDecodeError:
        return np.array([n.decode("utf-8", "surrogateescape") for n in names.tolist()], dtype=object)


def candidate_labels(ev: Evidence, runs: Sequence[RunRows], query_names: np.ndarray) -> np.ndarray | None:
    """Each candidate's label from the runs that carry labels (None unless every candidate gets one); two runs
    giving one document different labels is an :class:`InputError`."""
    labels = np.full(ev.aligned.n_candidates, np.nan)
    for run, col in zip(runs, ev.aligned.columns):
        if run.labels is None:
            continue
        clash = ~np.isnan(labels[col]) & (labels[col] != run.labels)
        if clash.any():
            i = int(np.flatnonzero(clash)[0])
            q = np.searchsorted(ev.aligned.offsets, col[i], side="right") - 1
            raise InputError(f"{run.label}: document {run.names[i].decode(errors='replace')!r} of query "
                             f"{query_names[q]} has label {run.labels[i]:g}, another run gives it "
                             f"{labels[col[i]]:g}")
        labels[col] = run.labels
    return None if np.isnan(labels).any() else labels


def _integer_qids(names: np.ndarray) -> np.ndarray:
    try:
        return np.array([int(q) for q in names.tolist()], dtype=np.int64)
    except (ValueError, OverflowError):
        bad = next(q for q in names.tolist() if not q.lstrip("-").isdigit())
        raise UsageError(f"--format parquet needs integer query ids, got {bad!r}; write a TREC run (--format trec)"
                         ) from None


def _check_trec_names(docids, order: np.ndarray, al, runs: Sequence[RunRows], query_names: np.ndarray,
                      query_of: np.ndarray) -> None:
    """A document name that a TREC line cannot hold (a Parquet run's docid with a space, or empty) is an
    :class:`InputError` naming the run that lists it, its query and the name."""
    from rankcli.formats.arrow import array_from_numpy
    from rankcli.formats.trec.write import unwritable

    bad = unwritable(docids.take(array_from_numpy(order)))
    if bad is None:
        return
    c = int(order[bad[0]])
    run = runs[int(np.argmax(al.listed[:, c]))]
    raise InputError(f"{run.label}: query {query_names[query_of[c]]}: docid {docids[c].as_py()!r} cannot name a "
                     f"document in a TREC file: {bad[1]}; write a Parquet run (--format parquet)")


def write_fused(path: Path | str, fmt: str, ev: Evidence, runs: Sequence[RunRows], query_names: np.ndarray,
                fused: np.ndarray, keep: np.ndarray, *, tag: str, metadata: dict, overwrite: bool) -> int:
    """Write the fused run of the queries ``keep`` (bool per query); returns the number of rows written."""
    from rankcli.formats.runs import write_run, write_trec_run

    al = ev.aligned
    perm, ranks = ranking(ev, fused)
    keep_cand = al.per_candidate(keep)
    order = perm[keep_cand[perm]]
    query_of = np.repeat(np.arange(query_names.shape[0]), np.diff(al.offsets))
    if fmt == "trec":
        from rankcli.formats.arrow import strings_from_bytes

        qtext = np.array([q.encode("utf-8", "surrogateescape") for q in query_names.tolist()], dtype="S")
        docids = strings_from_bytes(al.names)
        try:
            write_trec_run(path, qtext[query_of], fused, order, ranks[order], docids=docids,
                           tag=tag, source="the fused run", overwrite=overwrite)
        except SchemaError:  # a name no TREC line can hold: said with the run and query that hold it
            _check_trec_names(docids, order, al, runs, query_names, query_of)
            raise
        return int(order.shape[0])
    docids = as_text(al.names)
    qids = _integer_qids(query_names)[query_of]
    labels = candidate_labels(ev, runs, query_names)
    write_run(path, qids[order], fused[order], docids=docids[order], labels=None if labels is None else labels[order],
              metadata=metadata, overwrite=overwrite)
    return int(order.shape[0])
