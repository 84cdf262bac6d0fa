"""The C variant of the join stage (:func:`rankcli.formats.trec.join.join`) of ``rankcli eval`` and ``compare
--qrels``, and the fast path of ``rankcli trec_eval`` (:mod:`rankcli.trec_eval.native`): the C module
``rankcli.formats.trec_native`` (its source in ``rankcli/formats/csrc/``) parses both files, joins them and ranks each
query's lines in one pass. The numpy variant (:mod:`rankcli.formats.trec.parse`'s parser and the hash join) stays the
reference.

The C module takes only input whose meaning is certain: every data line with its number of fields, values that are
plain decimal numbers (a subset of what Arrow reads as numbers), no NUL byte, no (query, document) pair on two lines,
no infinite relevance. For anything else :func:`join_bytes` returns None, and the join stage hands the same bytes to the
numpy variant, which gives the same result or names the line at fault. Both read what the read stage gives
(:mod:`rankcli.formats.trec.text`: gzip, byte-order mark and UTF-8 handled there) and give the same values;
``tests/formats/trec/test_trec_fast.py`` checks that they agree.

The module is optional: an install without a C compiler has none (``setup.py``), and ``RANKCLI_PURE_PYTHON=1`` in
the environment turns it off, to compare the two paths or to rule the C code out when something looks wrong.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from rankcli.formats.trec.parse import TrecColumns

try:
    from rankcli.formats import trec_native
except ImportError:  # an install built without a C compiler
    trec_native = None


@dataclass
class NativeJoin:
    """A run and its qrels read by the C path. The run's lines come ranked: query by query in order of first
    appearance (``run_qnames``; query ``c`` is lines ``run_first[c]:run_first[c + 1]``), each query's in trec_eval's
    rank order (score descending, equal scores by docid descending in byte order), with their ``scores`` and
    ``match``, the qrels line of the same (query, document) or -1. The qrels are columns (query codes, query ids,
    relevance); ``words`` and ``numbers`` are None: the checks that need them are done. ``tag`` is the run tag's
    bytes, as the file holds them: trec_eval prints a tag that is not UTF-8 as it is, and ``eval`` decodes it (its
    reading has checked the text)."""

    run_qnames: np.ndarray
    run_first: np.ndarray
    scores: np.ndarray | None
    match: np.ndarray
    tag: bytes
    qrels: TrecColumns


def available() -> bool:
    """Whether the C path is built and not turned off (``RANKCLI_PURE_PYTHON``)."""
    return trec_native is not None and os.environ.get("RANKCLI_PURE_PYTHON", "") in ("", "0")


def join_bytes(run_data, qrels_data, threads: int = 1, scores: bool = True) -> NativeJoin | None:
    """The run and qrels files' bytes (``bytes`` or a numpy uint8 array, as :func:`rankcli.formats.trec.text.
    read_text_array` gives them) read and joined in C on up to ``threads`` threads; None when the C path is
    unavailable or leaves this input to the numpy path. Without ``scores`` the ranked lines' scores are not listed
    (``NativeJoin.scores`` is None)."""
    if not available():
        return None
    out = trec_native.join(run_data, qrels_data, max(1, int(threads)), scores)
    if out is None:
        return None
    run_qids, run_first, ranked_scores, match, tag, qrels_qids, qrels_codes, relevance = out
    relevance = np.frombuffer(relevance, dtype=np.float64)
    if not np.isfinite(relevance).all():
        return None  # an infinite relevance (1e999): the numpy path names its line
    qrels = TrecColumns(np.frombuffer(qrels_codes, dtype=np.int32), np.array(qrels_qids, dtype=bytes), None,
                        relevance, None)
    return NativeJoin(np.array(run_qids, dtype=bytes), np.frombuffer(run_first, dtype=np.int64),
                      None if ranked_scores is None else np.frombuffer(ranked_scores, dtype=np.float64),
                      np.frombuffer(match, dtype=np.int32), bytes(tag),
                      qrels)
