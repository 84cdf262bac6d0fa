"""``rankcli trec_eval``: read, join, rank, measure, write, each stage once, the output streamed block by block.

:func:`evaluate` yields trec_eval's output as bytes, per-query lines (``-q``) as each block of queries is computed,
then the summary; the summary is trec_eval's running sum over the queries in their order, so every line is the one
trec_eval prints.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import numpy as np

from rankcli.core.trec_eval.chunk import NONPOOL, Chunk, padded, padded_at
from rankcli.core.trec_eval.join import Duplicate, Side, code_of, codes, form_res_rels
from rankcli.errors import InputError, InputFormatError, UsageError
from rankcli.formats.trec import trec_eval_parse as read
from rankcli.formats.trec.blank import remap
from rankcli.trec_eval import judgment_groups, native, prefs, reading
from rankcli.trec_eval.getopt import Options
from rankcli.trec_eval.measures import Active, select
from rankcli.trec_eval.render import Renderer

#: trec_eval's stand-in document for a judged query the run lacks (``-c``).
STAND_IN = b"ceci_nest_pas_un_docno"
#: Cells (queries x documents) of one block: bounds the memory of the padded matrices.
BLOCK_CELLS = 1 << 17
#: Queries of one block: bounds the memory of its ``-q`` lines (a block of 200,000 one-document queries was 1.3 GB of
#: lines held at once).
BLOCK_QUERIES = 4096


@dataclass
class Prepared:
    """The evaluated queries' names and rankings, and what the summary needs besides them."""

    qids: np.ndarray
    joined: object
    run_id: bytes
    positive_labels: int
    query: np.ndarray | None = None  # -R qrels_jg: the real query of each evaluated (query, group)
    rel_queries: int | None = None  # queries in the qrels (-c averages over them), when not every one is evaluated


def prepare(o: Options, data: tuple[bytes, bytes], maps: dict | None = None) -> Prepared:
    """The join and rank stage: both files' ``data`` parsed and joined, each query's documents ranked, by the C module
    when it takes them (:mod:`rankcli.trec_eval.native`), else by trec_eval's own parsing and
    :mod:`rankcli.core.trec_eval.join`; ``maps``: the files' line maps (:func:`rankcli.trec_eval.reading.
    read_files`), for the hint of swapped files."""
    qrels_path, run_path = o.files
    qrels_data, run_data = data
    del data
    if o.rel_format == "qrels" and o.debug_query is None:
        fast = native.prepare(o, qrels_data, run_data)
        if fast is not None:
            return Prepared(*fast)
    try:
        qrels = read.get_qrels(qrels_path, groups=o.rel_format == "qrels_jg", data=qrels_data)
    except InputFormatError as exc:
        remap(exc, maps or {})
        if _looks_swapped(qrels_data, run_data):
            raise InputError(f"{exc}; the files look swapped: trec_eval QRELS RUN") from None
        raise
    run = read.read_results(run_path, data=run_data)
    del qrels_data, run_data
    qnames, (qq, rq) = codes(qrels.qids, run.qids)
    rel_queries = np.unique(qq).shape[0]
    _, (qd, rd, stand_in) = codes(qrels.docnos, run.docnos, np.array([STAND_IN]))
    only = None if o.debug_query is None else code_of(qnames, o.debug_query.encode("utf-8", "surrogateescape"))
    real = None
    qrels_side, run_side = Side(qq, qd, qrels.labels, qrels.lines), Side(rq, rd, run.sims, run.lines)
    if qrels.groups is not None:  # each (query, judgment group) a query of its own
        g = judgment_groups.split(qq, codes(qrels.groups)[1][0], rq, qnames.shape[0])
        real = g.query
        qrels_side = Side(g.of_qrels, qd, qrels.labels, qrels.lines)
        run_side = Side(g.of_run, rd[g.run_rows], run.sims[g.run_rows], run.lines[g.run_rows])
        if only is not None:  # -D N.qid: that query's groups
            qrels_side, run_side = (Side(*(a[real[s.qcodes] == only] for a in (s.qcodes, s.dcodes, s.values, s.lines)))
                                    for s in (qrels_side, run_side))
            only = None
    joined = form_res_rels(qrels_side, run_side,
                  complete=o.complete, max_docs=o.max_docs, judged_only=o.judged_only,
                  stand_in_code=int(stand_in[0]), only_query=only)
    if isinstance(joined, Duplicate):
        path = qrels_path if joined.which == "qrels" else run_path
        what = "a (query, document) pair judged twice" if joined.which == "qrels" else "a document ranked twice"
        raise InputFormatError(f"{what} for one query (trec_eval refuses it too)", path, joined.line)
    if joined.qcodes.shape[0] == 0:
        raise InputError("no queries with both results and relevance info")
    positive = int((qrels.labels > 0).sum())
    query = real[joined.qcodes] if real is not None else None
    return Prepared(qnames[joined.qcodes if real is None else query], joined, run.run_id, positive, query,
                    rel_queries)


def _first_fields(data: bytes) -> int:
    """The number of fields of the first line that is neither blank nor a comment (0 when there is none)."""
    for line in data[:1 << 20].split(b"\n"):
        fields = line.split()
        if fields and not fields[0].startswith(b"#"):
            return len(fields)
    return 0


def _looks_swapped(qrels_data: bytes, run_data: bytes) -> bool:
    """Whether the relevance file reads as a run (six fields or more) and the run as qrels (four): the two files given
    in the other order, the usual reason a qrels file's first line is malformed."""
    return _first_fields(qrels_data) >= 6 and _first_fields(run_data) == 4


def _blocks(ret_offsets: np.ndarray, label_offsets: np.ndarray) -> Iterator[tuple[int, int]]:
    """Consecutive query ranges whose padded matrices stay within :data:`BLOCK_CELLS` cells (one query at least) and
    of at most :data:`BLOCK_QUERIES` queries."""
    n = ret_offsets.shape[0] - 1
    width = np.maximum(np.diff(ret_offsets), np.diff(label_offsets))
    start = 0
    while start < n:
        stop, widest = start, 0
        while stop < n:
            w = max(widest, int(width[stop]), 1)
            if stop > start and (w * (stop - start + 1) > BLOCK_CELLS or stop - start >= BLOCK_QUERIES):
                break
            widest, stop = w, stop + 1
        yield start, stop
        start = stop


def _chunk(p: Prepared, start: int, stop: int, o: Options) -> Chunk:
    j = p.joined
    ro, lo = j.ret_offsets[start:stop + 1], j.label_offsets[start:stop + 1]
    rel = padded(j.rel, ro, NONPOOL) if j.ret_starts is None else \
        padded_at(j.rel, j.ret_starts[start:stop], np.diff(ro), NONPOOL)
    if j.rel_table is not None:  # indices into the table, the padding (-1) its last entry, NONPOOL
        rel = j.rel_table[rel]
    labels = padded(j.labels, lo, -1)
    # descending, labels >= 0 first: reversed rather than negated, since -LONG_MIN is LONG_MIN again in int64 (a
    # label atol saturates would sort first and hide every label behind it)
    labels = np.ascontiguousarray(np.sort(labels, axis=1)[:, ::-1])
    num_labels = (labels >= 0).sum(axis=1)
    return Chunk(rel, np.diff(ro), labels, num_labels, o.level, o.num_docs)


def _values(measures: list[Active], ch: Chunk, stand_in: np.ndarray) -> tuple[np.ndarray, list]:
    """The (queries, values) matrix of every numeric value, and the relstrings (or None)."""
    columns, strings = [], None
    for m in measures:
        kernel = m.record.kernel
        if m.record.kind == "runid":
            continue
        # trec_eval's clean-up after its stand-in ranking matches the value names num_ret, utility, relstring and
        # rbp_resid exactly (not utility_1,-1,0,0), and unj* by prefix
        cleared = m.names[0] in ("num_ret", "utility", "relstring", "rbp_resid") or m.record.name == "unj"
        if m.record.kind == "relstring":
            strings = kernel(ch, m.params)
            strings = [b"" if s and cleared else v for v, s in zip(strings, stand_in)]
            continue
        v = np.asarray(kernel(ch, m.params), dtype=np.float64).reshape(ch.n, -1)
        if cleared:
            v = np.where(stand_in[:, None], 0.0, v)
        columns.append(v)
    matrix = np.concatenate(columns, axis=1) if columns else np.zeros((ch.n, 0))
    return matrix, strings


def _block_values(p: Prepared, measures: list[Active], o: Options, block: tuple[int, int]) -> tuple:
    start, stop = block
    return _values(measures, _chunk(p, start, stop, o), p.joined.stand_in[start:stop])


def _in_order(work, blocks: list, threads: int) -> Iterator:
    """``work(block)`` of every block, in order, on up to ``threads`` threads (numpy releases the GIL in its loops),
    at most two blocks a thread computed ahead of the one awaited."""
    if threads <= 1 or len(blocks) <= 1:
        yield from map(work, blocks)
        return

    pool = ThreadPoolExecutor(threads, thread_name_prefix="rankcli-measures")
    try:
        pending: deque = deque()
        for block in blocks:
            pending.append(pool.submit(work, block))
            if len(pending) > 2 * threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def measure(p: Prepared, measures: list[Active], o: Options) -> Iterator[tuple]:
    """The measure stage: blocks of (query ids, values, relstrings) in query order, the blocks' kernels run on as
    many threads as the process may use, a few blocks ahead of the one asked for; under -R qrels_jg one block of the
    groups' averages."""
    from rankcli.runtime.cpus import available_cpus

    j = p.joined
    blocks = list(_blocks(j.ret_offsets, j.label_offsets))
    parts = []
    work = partial(_block_values, p, measures, o)
    for (start, stop), (values, strings) in zip(blocks, _in_order(work, blocks, available_cpus())):
        if p.query is None:
            yield p.qids[start:stop], values, strings
        else:
            parts.append(values)
    if p.query is not None:
        queries, values = judgment_groups.combine(np.concatenate(parts), p.query)
        keep = np.r_[True, p.query[1:] != p.query[:-1]]
        yield p.qids[keep], values, None


#: trec_eval's value for a query or measure the z-score file lacks (``MISSING_ZSCORE_VALUE``).
MISSING_ZSCORE = -1000000.0


def z_scores(values: np.ndarray, qids: np.ndarray, names: list[bytes], table: dict) -> np.ndarray:
    """``convert_zscores.c``: each value as (value - mean) / stddev of its query and measure; a zero stddev gives 0
    when the value is the mean; a pair the file lacks gives -1000000."""
    out = np.full(values.shape, MISSING_ZSCORE)
    for i, qid in enumerate(qids.tolist()):
        for c, name in enumerate(names):
            entry = table.get((qid, name))
            if entry is None:
                continue
            mean, stddev = entry
            v = float(values[i, c])
            if stddev:
                out[i, c] = (v - mean) / stddev
            elif v == mean:
                out[i, c] = 0.0
    return out


@dataclass
class _Source:
    """The evaluated queries' values, block by block, and what the summary needs besides them: the number of
    queries it averages over (``-c``: every query of the relevance file), the run's id, the qrels' positive labels."""

    blocks: Iterator[tuple]
    num_q: int
    run_id: bytes
    positive_labels: int = 0


def _qrels_source(o: Options, measures: list[Active], data: tuple[bytes, bytes], maps: dict) -> _Source:
    """Qrels (``-R qrels``, ``qrels_jg``): the stages join and rank (of the files' ``data``; ``maps``: their line
    maps), and measure (streamed)."""
    p = prepare(o, data, maps)
    n = p.joined.qcodes.shape[0] if p.query is None else np.unique(p.query).shape[0]
    if o.complete and p.rel_queries is not None:
        n = p.rel_queries
    return _Source(measure(p, measures, o), n, p.run_id, p.positive_labels)


def _prefs_source(o: Options, measures: list[Active], data: tuple[bytes, bytes], maps: dict) -> _Source:
    counted = any(m.record.needs == "prefs" for m in measures)
    p = prefs.prepare(o, STAND_IN, counted, data)
    blocks = ((p.qids[a:b], *_values(measures, block, p.ranked.stand_in[a:b]))
              for a, b, block in prefs.blocks(p, o.files[0], check=counted))
    return _Source(blocks, p.rel_queries if o.complete else p.ranked.qcodes.shape[0], p.run_id)


def write(source: _Source, measures: list[Active], o: Options) -> Iterator[bytes]:
    """The write stage: each block's ``-q`` lines as soon as it is measured (``-Z``: as z-scores), then the summary
    from the running sums, in trec_eval's order of additions."""
    zscores = read.read_zscores(o.zscores) if o.zscores is not None else None
    render = Renderer(measures, o)
    total = None
    for qids, values, strings in source.blocks:
        if zscores is not None:
            values = z_scores(values, qids, render.column_names, zscores)
        running = values if total is None else np.vstack([total[None, :], values])
        total = np.cumsum(running, axis=0)[-1] if running.shape[0] else total
        if o.query:
            yield render.queries(qids, values, strings)
    if o.summary:
        yield render.summary(total, source.num_q, source.run_id, source.positive_labels)


def evaluate(o: Options, started: reading.Reading | None = None) -> Iterator[bytes]:
    """trec_eval's output for the options ``o``, block by block: the stages read (:func:`rankcli.trec_eval.reading.
    read_files`), join and rank, measure, write, each called once (measure and write stream the queries block by
    block); ``started``: the read stage, started already (its errors come after the usage errors found here)."""
    if o.rel_format not in ("qrels", "qrels_jg", *prefs.FORMATS):
        raise UsageError(f"trec_eval: Illegal rel_format '{o.rel_format}'")
    if o.results_format != "trec_results":
        raise UsageError(f"trec_eval: Illegal retrieval results format '{o.results_format}'")
    measures = select(o.measures, o.rel_format)
    maps: dict = {}
    data = started.result() if started is not None else reading.read_files(o, maps)
    maps = started.lines if started is not None else maps
    try:
        source = (_prefs_source if o.rel_format in prefs.FORMATS else _qrels_source)(o, measures, data, maps)
        del data
        yield from write(source, measures, o)
    except InputFormatError as exc:  # a line of the kept text: the file's line (blank lines were dropped)
        remap(exc, maps)
        raise
