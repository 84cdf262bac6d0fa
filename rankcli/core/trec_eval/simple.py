"""``rankcli trec_eval``'s single-valued measures over the whole ranking (each function: its ``m_<name>.c``).

Each kernel takes a :class:`~rankcli.core.trec_eval.chunk.Chunk` and the measure's parameters and returns one value
per query, computed with trec_eval's operations in trec_eval's order (sums run along the rank order).
"""

from __future__ import annotations

import numpy as np

from rankcli.core.trec_eval.chunk import NONPOOL, UNJUDGED, Chunk, at, divide, running_sum_at
from rankcli.errors import UsageError

#: ``MIN_GEO_MEAN`` and ``INFAP_EPSILON`` (trec_eval.h).
MIN_GEO_MEAN = 1e-5
INFAP_EPSILON = 1e-5


def _last(cum: np.ndarray, ch: Chunk) -> np.ndarray:
    return at(cum, ch.num_ret)


def num_q(ch: Chunk, _):
    """``m_num_q.c``: 1 per query (the summary counts them)."""
    return np.ones(ch.n)


def num_ret(ch: Chunk, _):
    """``m_num_ret.c``: documents retrieved (after ``-M`` and ``-J``)."""
    return ch.num_ret.astype(np.float64)


def num_rel(ch: Chunk, _):
    """``m_num_rel.c``: qrels labels >= ``-l``."""
    return ch.num_rel.astype(np.float64)


def num_rel_ret(ch: Chunk, _):
    """``m_num_rel_ret.c``: judged relevant documents retrieved."""
    return ch.num_rel_ret.astype(np.float64)


def num_nonrel_judged_ret(ch: Chunk, _):
    """``m_num_nonrel_judged_ret.c``: num_ret - non-pool - unjudged - relevant retrieved."""
    return (ch.num_ret - ch.num_nonpool - ch.num_unjudged - ch.num_rel_ret).astype(np.float64)


def _relevant_seen(ch: Chunk) -> np.ndarray:
    return ch.relcum[:, -1] if ch.rel.shape[1] else np.zeros(ch.n, dtype=np.int64)


def ap(ch: Chunk, _):
    """``m_map.c``: sum over relevant ranks i of (relevant so far) / i, over R (0 without a relevant retrieved)."""
    return np.where(_relevant_seen(ch) > 0, divide(_last(ch.ap_sum, ch), ch.num_rel), 0.0)


def _log_floor(x: np.ndarray) -> np.ndarray:
    return np.log(np.where(x > MIN_GEO_MEAN, x, MIN_GEO_MEAN))


def gm_map(ch: Chunk, _):
    """``m_gm_map.c``: log(max(AP, 1e-5)); the summary is exp of the mean."""
    total = _last(ch.ap_sum, ch)
    return _log_floor(np.where(_relevant_seen(ch) > 0, divide(total, ch.num_rel), total))


def yaap(ch: Chunk, _):
    """``m_yaap.c``: log((1 + S) / (1 + R - S)), S the sum AP divides by R."""
    s = _last(ch.ap_sum, ch)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(divide(1.0 + s, (1.0 + ch.num_rel.astype(np.float64)) - s))


def rprec(ch: Chunk, _):
    """``m_Rprec.c``: relevant in the top min(N, R), over R."""
    k = np.minimum(ch.num_ret, ch.num_rel)
    return np.where(k > 0, divide(at(ch.relcum, k), ch.num_rel), 0.0)


def recip_rank(ch: Chunk, _):
    """``m_recip_rank.c``: 1 / rank of the first relevant document."""
    if not ch.rel.shape[1]:
        return np.zeros(ch.n)
    first = np.argmax(ch.isrel, axis=1)
    return np.where(ch.isrel.any(axis=1), 1.0 / (first + 1.0), 0.0)


def _judged_split(ch: Chunk):
    judged = ch.valid & (ch.rel >= 0)
    nonrel = judged & (ch.rel < ch.level)
    return judged & ~nonrel, nonrel


def _bpref(ch: Chunk) -> np.ndarray:
    if "bpref" in ch.cache:  # bpref and gm_bpref share it
        return ch.cache["bpref"]
    rel, nonrel = _judged_split(ch)
    rows, cols = np.nonzero(rel)
    seen = np.cumsum(nonrel, axis=1)[rows, cols]
    R = ch.num_rel[rows]
    num_nonrel = ch.count_labels(0, ch.level)[rows]
    term = 1.0 - divide(np.minimum(seen, R), np.minimum(num_nonrel, R))
    total = running_sum_at(rel, np.where(seen > 0, term, 1.0), ch.num_ret)
    ch.cache["bpref"] = np.where(ch.num_rel > 0, divide(total, ch.num_rel), total)
    return ch.cache["bpref"]


def bpref(ch: Chunk, _):
    """``m_bpref.c``: over the judged retrieved documents, each relevant one adds 1 - min(n, R) / min(N, R), n the
    judged non-relevant ones above it and N all of them; over R."""
    return _bpref(ch)


def gm_bpref(ch: Chunk, _):
    """``m_gm_bpref.c``: log(max(bpref, 1e-5)); the summary is exp of the mean."""
    return _log_floor(_bpref(ch))


def infap(ch: Chunk, _):
    """``m_infap.c``: inferred AP (Yilmaz & Aslam 2006) with trec_eval's epsilon 1e-5."""
    rel, nonrel = _judged_split(ch)
    rows, cols = np.nonzero(rel)  # the terms are computed at the relevant documents only
    r = (np.cumsum(rel, axis=1) - 1)[rows, cols]
    nr = np.cumsum(nonrel, axis=1)[rows, cols]
    pu = np.cumsum(ch.valid & (ch.rel == UNJUDGED), axis=1)[rows, cols]
    fj = cols.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((r + nr + pu) / fj) * \
            ((r + INFAP_EPSILON) / ((r + nr) + 2 * INFAP_EPSILON))
    term = np.where(fj == 0, 1.0, term)
    total = running_sum_at(rel, term, ch.num_ret)
    return np.where(ch.num_rel > 0, divide(total, ch.num_rel), total)


def binG(ch: Chunk, _):  # noqa: N802 (trec_eval's name)
    """``m_binG.c``: sum over relevant ranks i of 1 / log2(2 + non-relevant above), over R."""
    rows, cols = np.nonzero(ch.isrel)
    total = running_sum_at(ch.isrel, 1.0 / np.log2((3 + cols - ch.relcum[rows, cols]).astype(np.float64)),
                           ch.num_ret)
    return np.where(_relevant_seen(ch) > 0, divide(total, ch.num_rel), 0.0)


def set_P(ch: Chunk, _):  # noqa: N802
    """``m_set_P.c``: relevant retrieved / retrieved."""
    return np.where(ch.num_ret > 0, divide(ch.num_rel_ret, ch.num_ret), 0.0)


def set_recall(ch: Chunk, _):
    """``m_set_recall.c``: relevant retrieved / R."""
    return np.where(ch.num_rel > 0, divide(ch.num_rel_ret, ch.num_rel), 0.0)


def set_relative_P(ch: Chunk, _):  # noqa: N802
    """``m_set_rel_P.c``: relevant retrieved / min(retrieved, R)."""
    ok = (ch.num_ret > 0) & (ch.num_rel > 0)
    return np.where(ok, divide(ch.num_rel_ret, np.minimum(ch.num_ret, ch.num_rel)), 0.0)


def set_map(ch: Chunk, _):
    """``m_set_map.c``: set_P x set_recall, as (rr x rr) / (retrieved x R)."""
    ok = (ch.num_ret > 0) & (ch.num_rel > 0)
    rr = ch.num_rel_ret.astype(np.float64)
    return np.where(ok, divide(rr * rr, ch.num_ret.astype(np.float64) * ch.num_rel.astype(np.float64)), 0.0)


def set_F(ch: Chunk, params):  # noqa: N802
    """``m_set_F.c``: (x + 1) P R / (x P + R), x the parameter (1: F1)."""
    x = params[0]
    P = divide(ch.num_rel_ret, ch.num_ret)
    R = divide(ch.num_rel_ret, ch.num_rel)
    with np.errstate(invalid="ignore"):
        value = divide((x + 1.0) * P * R, x * P + R)
    return np.where(ch.num_rel_ret > 0, value, 0.0)


def utility(ch: Chunk, params):
    """``m_utility.c``: p1 a + p2 b + p3 c + p4 d over the contingency table (d needs ``-N``)."""
    if len(params) != 4:
        raise UsageError(f"measure utility needs 4 coefficients, got {len(params)}")
    a = ch.num_rel_ret
    return (params[0] * a + params[1] * (ch.num_ret - a) + params[2] * (ch.num_rel - a)
            + params[3] * (ch.num_docs + a - ch.num_ret - ch.num_rel))


def rbp_resid(ch: Chunk, pairs):
    """``m_rbp_resid.c``: p^N + (1 - p) x the sum of p^i over the unjudged ranks i (0 when none), p = 0.9 or the
    parameter ``p``."""
    p = 0.9
    for name, value in pairs:
        if name == "p":
            p = value
    powers = np.concatenate(([1.0], np.cumprod(np.full(ch.rel.shape[1], p))))
    unj = ch.valid & (ch.rel < 0)
    total = _last(np.cumsum(np.where(unj, powers[None, :-1], 0.0), axis=1), ch)
    return np.where(unj.any(axis=1), powers[ch.num_ret] + (1 - p) * total, 0.0)


_RELSTRING = np.frombuffer(b"<.-0123456789>", dtype=np.uint8)


def relstring(ch: Chunk, params) -> list[bytes]:
    """``m_relstring.c``: the judgments of the first ``params[0]`` (10) documents as characters: digits, ``>`` above
    9, ``-`` not in the pool, ``.`` unjudged."""
    length = int(params[0]) if np.isfinite(params[0]) else 0
    k = np.clip(np.minimum(length, ch.num_ret), 0, None)
    w = int(k.max()) if ch.n else 0
    codes = np.clip(ch.rel[:, :w], -3, 10) + 3
    chars = _RELSTRING[codes]
    return [chars[i, :k[i]].tobytes() for i in range(ch.n)]


NONPOOL_AND_UNJUDGED = (NONPOOL, UNJUDGED)
