"""``rankcli trec_eval -R prefs`` and ``-R qrels_prefs``: the read and join stages for preference judgments
(:func:`prepare`), and the blocks of queries the measure stage takes (:func:`blocks`); the measures are
:mod:`rankcli.core.trec_eval.prefs_measures`, computed block by block by :mod:`rankcli.trec_eval.pipeline`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from rankcli.core.trec_eval.join import Side, code_of, codes
from rankcli.core.trec_eval.prefs_counts import PrefsBlock
from rankcli.core.trec_eval.prefs_join import PrefsSide, RankedPrefs, rank_prefs
from rankcli.errors import InputError, InputFormatError
from rankcli.formats.trec import trec_eval_parse as read
from rankcli.trec_eval.getopt import Options

FORMATS = ("prefs", "qrels_prefs")
#: Squared lines per block of queries: bounds the document pairs (and preference arrays) a block holds.
BLOCK_PAIRS = 1 << 22


@dataclass
class PreparedPrefs:
    """The evaluated queries' names and ranked preferences, the run's id, and the number of queries in the
    preference file (what ``-c`` averages over)."""

    qids: np.ndarray
    ranked: RankedPrefs
    run_id: bytes
    rel_queries: int


def prepare(o: Options, stand_in: bytes, counted: bool, data: tuple[bytes, bytes] | None = None) -> PreparedPrefs:
    """Read the preference file and the run (unless ``data`` holds their bytes), and join them
    (:mod:`rankcli.core.trec_eval.prefs_join`); ``counted``: some preference measure is asked for (trec_eval checks
    the run's duplicates only then)."""
    prefs_path, run_path = o.files
    prefs_data, run_data = data if data is not None else (None, None)
    prefs = read.read_prefs(prefs_path, qrels_style=o.rel_format == "qrels_prefs", data=prefs_data)
    run = read.read_results(run_path, data=run_data)
    del data, prefs_data, run_data
    qnames, (pq, rq) = codes(prefs.qids, run.qids)
    _, (pd, rd, stand) = codes(prefs.docnos, run.docnos, np.array([stand_in]))
    only = None if o.debug_query is None else code_of(qnames, o.debug_query.encode("utf-8", "surrogateescape"))
    side = PrefsSide(pq, codes(prefs.groups)[1][0], codes(prefs.subgroups)[1][0], pd, prefs.levels, prefs.lines)
    ranked = rank_prefs(side, Side(rq, rd, run.sims, run.lines), complete=o.complete, max_docs=o.max_docs,
                        stand_in_code=int(stand[0]), only_query=only)
    if ranked.duplicate is not None and counted:
        raise InputFormatError("a document ranked twice for one query (trec_eval refuses it too)", run_path,
                               ranked.duplicate.line)
    if ranked.qcodes.shape[0] == 0:
        raise InputError("no queries with both results and relevance info")
    return PreparedPrefs(qnames[ranked.qcodes], ranked, run.run_id, np.unique(pq).shape[0])


def blocks(p: PreparedPrefs, prefs_path: str, check: bool = True) -> Iterator[tuple[int, int, PrefsBlock]]:
    """Consecutive query ranges whose squared line counts stay within :data:`BLOCK_PAIRS` (one query at least),
    each with its counts; with ``check`` (trec_eval computes a preference measure), what trec_eval refuses in them
    is an :class:`~rankcli.errors.InputFormatError`."""
    sizes = np.diff(p.ranked.offsets) ** 2
    n, start = sizes.shape[0], 0
    while start < n:
        ends = np.searchsorted(np.cumsum(sizes[start:]), BLOCK_PAIRS, side="right")
        stop = start + max(int(ends), 1)
        block = PrefsBlock(p.ranked, start, stop)
        conflict = block.conflict() if check else None
        if conflict is not None:
            raise InputFormatError(conflict.what, prefs_path, conflict.line)
        yield start, stop, block
        start = stop
