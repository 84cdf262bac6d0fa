"""The fast path of ``rankcli trec_eval``: the C module of ``rankcli eval`` (:mod:`rankcli.formats.trec.join_native`)
reads and joins both files when they hold nothing whose meaning differs between its rules and trec_eval's; otherwise (or
without the module) :func:`rankcli.trec_eval.pipeline.prepare` reads them with trec_eval's own rules.

What sends an input to the other path: anything the C module itself leaves (extra fields, numbers that are not plain
decimals, a NUL byte, a pair on two lines), a byte-order mark (trec_eval keeps it in the first id), a qrels line
whose first field starts with ``#`` (trec_eval's comment rule for qrels is its own), a label that is not an integer
(trec_eval truncates it), the stand-in document's name in the qrels (``-c``), and ``-D``, ``-R qrels_jg`` or standard
input.
"""

from __future__ import annotations

import re

import numpy as np

from rankcli.core.trec_eval.chunk import NONPOOL, UNJUDGED
from rankcli.core.trec_eval.join import ResRels
from rankcli.formats.trec import join_native

_QRELS_COMMENT = re.compile(rb"(?:^|\n)[ \t\v\f\r]*#")
_EXACT = float(1 << 53)  # a label read as a double is the integer atol reads only below 2^53


def last_run_id(data: bytes) -> bytes | None:
    """The sixth field of the run's last data line (trec_eval's runid), None when that line has fewer fields."""
    pos = len(data)
    while pos > 0:
        newline = data.rfind(b"\n", 0, pos)
        fields = data[newline + 1:pos].split()
        if fields and not fields[0].startswith(b"#"):
            return fields[5] if len(fields) >= 6 else None
        pos = max(newline, 0)
    return None


def _ranked_rows(first: np.ndarray, codes: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of the run queries ``codes`` (in that order), each cut to its first ``limit``, and their offsets."""
    sizes = np.minimum(first[codes + 1] - first[codes], max(limit, 0))
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    rows = np.arange(offsets[-1]) - np.repeat(offsets[:-1] - first[codes], sizes)
    return rows, offsets


def prepare(o, qrels_data: bytes, run_data: bytes):
    """(evaluated query ids, :class:`ResRels`, run id, positive labels), or None when this input takes the other
    path (see the module docstring)."""
    if not join_native.available() or run_data[:3] == b"\xef\xbb\xbf" or qrels_data[:3] == b"\xef\xbb\xbf":
        return None
    if (b"#" in qrels_data and _QRELS_COMMENT.search(qrels_data)) or \
            (o.complete and b"ceci_nest_pas_un_docno" in qrels_data):
        return None
    run_id = last_run_id(run_data)
    if run_id is None:
        return None
    from rankcli.runtime.cpus import available_cpus

    joined = join_native.join_bytes(run_data, qrels_data, available_cpus(), scores=False)
    if joined is None:
        return None
    labels = joined.qrels.values
    if labels.shape[0] and not (np.all(labels == np.trunc(labels)) and np.abs(labels).max() < _EXACT):
        return None
    labels = labels.astype(np.int64)
    qnames = joined.qrels.qnames
    order = np.argsort(qnames, kind="stable")  # the qrels' queries in byte order
    run_names = joined.run_qnames
    run_sorted = np.argsort(run_names)
    at = np.searchsorted(run_names[run_sorted], qnames[order]) if run_names.shape[0] else np.zeros(0, np.int64)
    at = np.minimum(at, max(run_names.shape[0] - 1, 0))
    has_run = (run_names[run_sorted][at] == qnames[order]) if run_names.shape[0] else np.zeros(order.shape, bool)
    keep = has_run | o.complete
    evaluated = order[keep]
    run_code = np.where(has_run, run_sorted[at] if run_names.shape[0] else 0, -1)[keep]
    stand_in = run_code < 0
    rel, table, ret_starts, ret_offsets = _rankings(joined, labels, run_code, stand_in, o.max_docs)
    if o.judged_only:  # judgments laid end to end, each ranking cut to its judged documents
        rows = np.repeat(ret_starts - ret_offsets[:-1], np.diff(ret_offsets)) + np.arange(ret_offsets[-1])
        rel = table[rel[rows]]
        keep_rows = rel >= 0
        kept = np.concatenate(([0], np.cumsum(keep_rows))).astype(np.int64)
        rel, ret_offsets, ret_starts, table = rel[keep_rows], kept[ret_offsets], None, None
    qcodes = joined.qrels.qcodes
    by_query = np.argsort(qcodes, kind="stable")
    starts = np.searchsorted(qcodes[by_query], np.arange(qnames.shape[0] + 1))
    lab_rows, label_offsets = _ranked_rows(starts, evaluated, 1 << 62)
    out = ResRels(evaluated, stand_in, rel, ret_offsets, labels[by_query[lab_rows]], label_offsets, ret_starts,
                 table)
    return qnames[evaluated], out, run_id, int((labels > 0).sum())


def _rankings(joined, labels: np.ndarray, run_code: np.ndarray, stand_in: np.ndarray, max_docs: int):
    """The C module's matches in the run's order (each run line's qrels line, -1 if none) and the table turning them
    into trec_eval's judgments (the label, ``UNJUDGED`` for a negative one, and last ``NONPOOL``, which -1 takes;
    int32 when the labels fit), where each evaluated query's ranking starts among them and ends (offsets of their
    lengths, cut to ``max_docs``). A query the run lacks (``-c``) ranks trec_eval's stand-in document, not in the
    pool: a -1 added at the end. The judgments are looked up block by block, as the measures need them."""
    small = labels.shape[0] == 0 or (labels.min() >= -(1 << 31) and labels.max() < (1 << 31))
    table = np.empty(labels.shape[0] + 1, dtype=np.int32 if small else np.int64)
    np.copyto(table[:-1], np.where(labels < 0, UNJUDGED, labels), casting="unsafe")
    table[-1] = NONPOOL
    match = joined.match
    first = joined.run_first
    code = np.where(stand_in, 0, run_code)
    sizes = np.minimum(first[code + 1] - first[code], max(max_docs, 0))
    starts = first[code]
    if stand_in.any():
        match = np.append(match, np.int32(-1))
        sizes = np.where(stand_in, 1 if max_docs > 0 else 0, sizes)
        starts = np.where(stand_in, match.shape[0] - 1, starts)
    return match, table, starts, np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
