"""``rankcli trec_eval``'s measures at document cutoffs k (``-m P.5,10``): one value per cutoff, a cutoff beyond the
documents retrieved counting the missing ones as non-relevant. Each kernel returns an (queries, cutoffs) matrix."""

from __future__ import annotations

import numpy as np

from rankcli.core.trec_eval.chunk import Chunk, at, divide
from rankcli.core.trec_eval.gains import gains_of, running_dcgs


def _top(ch: Chunk, cutoffs) -> list[np.ndarray]:
    """Per cutoff: min(k, documents retrieved) of each query."""
    return [np.minimum(k, ch.num_ret) for k in cutoffs]


def _columns(values: list[np.ndarray], n: int) -> np.ndarray:
    return np.stack(values, axis=1) if values else np.zeros((n, 0))


def P(ch: Chunk, cutoffs):  # noqa: N802 (trec_eval's name)
    """``m_P.c``: relevant in the top k, over k."""
    return _columns([divide(at(ch.relcum, t), float(k)) for k, t in zip(cutoffs, _top(ch, cutoffs))], ch.n)


def recall(ch: Chunk, cutoffs):
    """``m_recall.c``: relevant in the top k, over R (0 when R is 0)."""
    return _columns([np.where(ch.num_rel > 0, divide(at(ch.relcum, t), ch.num_rel), 0.0)
                     for t in _top(ch, cutoffs)], ch.n)


def relative_P(ch: Chunk, cutoffs):  # noqa: N802
    """``m_rel_P.c``: relevant in the top k, over min(k, R) (0 when R is 0)."""
    return _columns([np.where(ch.num_rel > 0, divide(at(ch.relcum, t), np.minimum(k, ch.num_rel)), 0.0)
                     for k, t in zip(cutoffs, _top(ch, cutoffs))], ch.n)


def success(ch: Chunk, cutoffs):
    """``m_success.c``: 1 when a relevant document is in the top k."""
    return _columns([(at(ch.relcum, t) > 0).astype(np.float64) for t in _top(ch, cutoffs)], ch.n)


def map_cut(ch: Chunk, cutoffs):
    """``m_map_cut.c``: AP's sum over the top k, over R (0 when R is 0)."""
    return _columns([np.where(ch.num_rel > 0, divide(at(ch.ap_sum, t), ch.num_rel), 0.0)
                     for t in _top(ch, cutoffs)], ch.n)


def unj(ch: Chunk, cutoffs):
    """``m_unjudged.c``: documents not judged (absent from the qrels or negative) in the top k, over k."""
    cum = np.cumsum(ch.valid & (ch.rel < 0), axis=1)
    return _columns([divide(at(cum, t), float(k)) for k, t in zip(cutoffs, _top(ch, cutoffs))], ch.n)


def ndcg_cut(ch: Chunk, cutoffs):
    """``m_ndcg_cut.c``: DCG of the top k (gain: the label, discount log2(i + 1)) over the ideal DCG of the top k
    (labels >= 1 in descending order); the DCG itself where the ideal is 0."""
    g = gains_of(ch, ())  # trec_eval's default gains: the label; shared with ndcg
    dcg, idcg = running_dcgs(ch, g)
    length = g.length
    out = []
    for k, t in zip(cutoffs, _top(ch, cutoffs)):
        value, best = at(dcg, t), at(idcg, np.minimum(k, length))
        out.append(np.where(best > 0.0, divide(value, best), value))
    return _columns(out, ch.n)
