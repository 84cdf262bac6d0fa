"""The fast path of ``rankcli trec_eval``: the C module of ``rankcli eval`` (:mod:`rankcli.formats.trec_fast`) reads
and joins both files when they hold nothing whose meaning differs between its rules and trec_eval's; otherwise (or
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

from rankcli.core.treceval.chunk import NONPOOL, UNJUDGED
from rankcli.core.treceval.join import Joined
from rankcli.formats import trec_fast

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
    """(evaluated query ids, :class:`Joined`, run id, positive labels), or None when this input takes the other
    path (see the module docstring)."""
    if not trec_fast.available() or run_data[:3] == b"\xef\xbb\xbf" or qrels_data[:3] == b"\xef\xbb\xbf":
        return None
    if (b"#" in qrels_data and _QRELS_COMMENT.search(qrels_data)) or \
            (o.complete and b"ceci_nest_pas_un_docno" in qrels_data):
        return None
    run_id = last_run_id(run_data)
    if run_id is None:
        return None
    from rankcli.cpus import available_cpus

    joined = trec_fast.join(run_data, qrels_data, available_cpus(), scores=False)
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
    rows, ret_offsets = _ranked_rows(joined.run_first, np.where(stand_in, 0, run_code), o.max_docs)
    match = joined.match[rows] if rows.shape[0] else np.zeros(0, np.int32)
    rel = np.where(match >= 0, labels[np.maximum(match, 0)], NONPOOL)
    rel = np.where((match >= 0) & (rel < 0), UNJUDGED, rel)
    rel, ret_offsets = _stand_ins(rel, ret_offsets, stand_in, o.max_docs)
    if o.judged_only:
        keep_rows = rel >= 0
        kept = np.concatenate(([0], np.cumsum(keep_rows))).astype(np.int64)
        rel, ret_offsets = rel[keep_rows], kept[ret_offsets]
    qcodes = joined.qrels.qcodes
    by_query = np.argsort(qcodes, kind="stable")
    starts = np.searchsorted(qcodes[by_query], np.arange(qnames.shape[0] + 1))
    lab_rows, label_offsets = _ranked_rows(starts, evaluated, 1 << 62)
    out = Joined(evaluated, stand_in, rel.astype(np.int64), ret_offsets, labels[by_query[lab_rows]], label_offsets)
    return qnames[evaluated], out, run_id, int((labels > 0).sum())


def _stand_ins(rel, offsets, stand_in, max_docs):
    """The rankings with trec_eval's stand-in document (not in the pool) for the queries the run lacks (``-c``)."""
    if not stand_in.any():
        return rel, offsets
    sizes = np.diff(offsets)
    sizes[stand_in] = 1 if max_docs > 0 else 0
    parts = np.split(rel, offsets[1:-1])
    pieces = [np.full(sizes[i], NONPOOL, dtype=np.int64) if stand_in[i] else parts[i] for i in range(len(parts))]
    new = np.concatenate(pieces) if pieces else rel
    return new, np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
