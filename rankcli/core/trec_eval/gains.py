"""``rankcli trec_eval``'s gain-based measures: ``ndcg``, ``dcg``, ``ideal_dcg`` (``m_ndcg.c``), ``ndcg_rel``,
``Rndcg``, ``G``, ``rbp``, with their gain parameters (``-m ndcg.1=3,2=9``: label 1 gains 3, label 2 gains 9; other
labels gain their value).

The gains follow ``gain_init.c``: one entry per parameter whose name is an integer, then one per label 0 .. (highest
label of the query) without a parameter; sorted by gain with trec_eval's comparison (the difference truncated to an
int, so gains less than 1 apart compare equal) by glibc's merge sort; a document's gain is that of the first entry of
its label (0 when none). The ideal ranking takes the entries from the highest down, each repeated as often as its
label occurs in the qrels, up to the first entry whose gain is not positive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rankcli.core.trec_eval.chunk import Chunk, at, divide, padded, running_sum_at
from rankcli.errors import UsageError

#: Highest label for which gain parameters are laid out level by level (as trec_eval allocates them).
MAX_LEVELS_WITH_PARAMS = 100_000


def _compare(a: float, b: float) -> int:
    """``comp_rel_gain``: (int) (a - b), as x86-64 converts (out of range or NaN: INT_MIN)."""
    d = a - b
    if math.isnan(d) or not (-2147483648.0 < d < 2147483648.0):
        return -2147483648
    return int(d)


def _msort(items: list, cmp) -> list:
    """glibc's ``qsort`` for small arrays (``msort_with_tmp``): top-down merge sort, left element first on ties."""
    if len(items) <= 1:
        return list(items)
    half = len(items) // 2
    left, right = _msort(items[:half], cmp), _msort(items[half:], cmp)
    out, i, j = [], 0, 0
    while i < len(left) and j < len(right):
        if cmp(left[i], right[j]) <= 0:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out + left[i:] + right[j:]


def _valid_int(name: str) -> bool:
    body = name[1:] if name[:1] in "+-" else name
    return body != "" and all("0" <= c <= "9" for c in body)


@dataclass(frozen=True)
class Entry:
    """One gain entry: its label, gain, and whether it counts the label's qrels documents (the first entry of its
    label before sorting)."""

    level: int
    gain: float
    counts: bool


def entries(pairs: tuple, num_levels: int) -> list[Entry]:
    """``setup_gains``: the sorted gain entries of a query whose highest label is ``num_levels - 1``."""
    out: list[Entry] = []
    seen: set[int] = set()
    for name, value in pairs:
        if _valid_int(name):
            level = int(name)
            out.append(Entry(level, float(value), level not in seen and 0 <= level < num_levels))
            seen.add(level)
    for level in range(num_levels):
        if level not in seen:
            out.append(Entry(level, float(level), True))
    return _msort(out, lambda a, b: _compare(a.gain, b.gain))


@dataclass
class Gains:
    """The gains of a chunk's rankings (``results``: (n, W), 0 past the end), the ideal rankings' gains (``ideal``:
    (n, K), 0 past ``length``), and the gain of each query's top entry (``top``: trec_eval's first ideal gain)."""

    results: np.ndarray
    ideal: np.ndarray
    length: np.ndarray
    top: np.ndarray


def _default_gains(ch: Chunk) -> Gains:
    results = np.where(ch.valid & (ch.rel > 0), ch.rel, 0).astype(np.float64)
    ideal = np.where(ch.label_valid & (ch.labels >= 1), ch.labels, 0).astype(np.float64)
    top = np.maximum(ch.num_rel_levels - 1, 0).astype(np.float64)
    length = np.where(top > 0, (ideal > 0).sum(axis=1), 0)
    return Gains(results, ideal, length, top)


def _group_gains(ch: Chunk, rows: np.ndarray, table: list[Entry], normalise: bool):
    """Result gains, ideal gain sequences and top gain of the queries ``rows`` (all with the same gain table)."""
    gains = np.array([e.gain for e in table])
    if normalise and gains.shape[0]:
        low, high = gains.min(), gains.max()  # rbp: gains into [0, 1] (trec_eval's fixed min/max)
        if low < 0 or high > 1:
            gains = (gains - low) / (high - low)
    lookup: dict[int, float] = {}
    for e, g in zip(table, gains):
        lookup.setdefault(e.level, float(g))
    rel = ch.rel[rows]
    values = np.unique(rel)
    mapped = np.array([lookup.get(int(v), 0.0) for v in values])
    results = np.where(ch.valid[rows], mapped[np.searchsorted(values, rel)], 0.0)
    labels, valid = ch.labels[rows], ch.label_valid[rows]
    counts = np.stack([((labels == e.level) & valid).sum(axis=1) if e.counts else np.zeros(rows.shape[0], np.int64)
                       for e in table[::-1]], axis=1) if table else np.zeros((rows.shape[0], 0), np.int64)
    top = float(gains[-1]) if table else 0.0
    taken = np.zeros(counts.shape, dtype=np.int64)
    open_ = np.full(rows.shape[0], top > 0.0)
    for j, g in enumerate(gains[::-1]):
        present = counts[:, j] > 0
        if g <= 0.0:
            open_ &= ~present
        taken[:, j] = np.where(open_ & present & (g > 0.0), counts[:, j], 0)
    lengths = taken.sum(axis=1)
    flat = np.repeat(np.tile(gains[::-1], rows.shape[0]), taken.ravel())
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    return results, padded(flat, offsets, 0.0), lengths, np.full(rows.shape[0], top)


def gains_of(ch: Chunk, pairs: tuple, normalise: bool = False) -> Gains:
    """The :class:`Gains` of a chunk under the gain parameters ``pairs`` (``((name, value), ...)``)."""
    key = ("gains", pairs, normalise)
    if key in ch.cache:
        return ch.cache[key]
    if not any(_valid_int(name) for name, _ in pairs):
        out = _default_gains(ch)
        if normalise:  # rbp: labels 0 .. L-1 gain label / (L - 1) when L - 1 > 1
            top = (ch.num_rel_levels - 1).astype(np.float64)
            out.results = out.results / np.where(top > 1, top, 1.0)[:, None]
    else:
        out = _general_gains(ch, pairs, normalise)
    ch.cache[key] = out
    return out


def _general_gains(ch: Chunk, pairs: tuple, normalise: bool) -> Gains:
    levels = ch.num_rel_levels
    if ch.n and int(levels.max()) > MAX_LEVELS_WITH_PARAMS:
        raise UsageError(f"gain parameters with labels above {MAX_LEVELS_WITH_PARAMS} are not supported")
    parts = []
    for L in np.unique(levels):
        rows = np.flatnonzero(levels == L)
        parts.append((rows, _group_gains(ch, rows, entries(pairs, int(L)), normalise)))
    k = max((p[1][1].shape[1] for p in parts), default=0)
    results = np.zeros(ch.rel.shape)
    ideal = np.zeros((ch.n, k))
    length = np.zeros(ch.n, dtype=np.int64)
    top = np.zeros(ch.n)
    for rows, (r, i, n_, t) in parts:
        results[rows], length[rows], top[rows] = r, n_, t
        ideal[rows, :i.shape[1]] = i
    return Gains(results, ideal, length, top)


def _discount(width: int) -> np.ndarray:
    return np.log2(np.arange(2, width + 2, dtype=np.float64))[None, :]


def running_dcgs(ch: Chunk, g: Gains):
    """The running DCG of the results and of the ideal ranking, once per chunk and gains (ndcg, dcg, ideal_dcg,
    ndcg_rel and Rndcg read the same ones)."""
    key = ("dcgs", id(g))
    if key not in ch.cache:
        results = np.cumsum(g.results / _discount(g.results.shape[1]), axis=1)
        ideal = np.cumsum(g.ideal / _discount(g.ideal.shape[1]), axis=1)
        ch.cache[key] = (results, ideal, g)  # g kept with them: its id stays its own
    return ch.cache[key][:2]


def ndcg(ch: Chunk, pairs):
    """``m_ndcg.c`` (ndcg): DCG over the whole ranking / ideal DCG (0 when the ideal is 0)."""
    g = gains_of(ch, pairs)
    results, ideal = running_dcgs(ch, g)
    r, i = at(results, ch.num_ret), at(ideal, g.length)
    return np.where(i > 0.0, divide(r, i), 0.0)


def dcg(ch: Chunk, pairs):
    """``m_ndcg.c`` (dcg): sum of gain / log2(rank + 1)."""
    return at(running_dcgs(ch, gains_of(ch, pairs))[0], ch.num_ret)


def ideal_dcg(ch: Chunk, pairs):
    """``m_ndcg.c`` (ideal_dcg): the DCG of the ideal ranking."""
    g = gains_of(ch, pairs)
    return at(running_dcgs(ch, g)[1], g.length)


def ndcg_rel(ch: Chunk, pairs):
    """``m_ndcg_rel.c``: at each retrieved document of positive gain, DCG so far / ideal DCG so far; the ideal
    documents not retrieved count the final ratio; the sum over the ideal ranking's length."""
    g = gains_of(ch, pairs)
    results, ideal = running_dcgs(ch, g)
    positive = g.results > 0
    rows, cols = np.nonzero(positive)  # the terms are computed at the documents of positive gain only
    upto = np.minimum(cols, g.length[rows] - 1)
    best = np.where(upto >= 0, ideal[rows, np.clip(upto, 0, None)] if ideal.shape[1] else 0.0, 0.0)
    total = running_sum_at(positive, divide(results[rows, cols], best), ch.num_ret)
    final_r, final_i = at(results, ch.num_ret), at(ideal, g.length)
    total = total + divide((g.length - positive.sum(axis=1)) * final_r, final_i)
    return np.where(total > 0.0, divide(total, g.length), 0.0)


def Rndcg(ch: Chunk, pairs):  # noqa: N802 (trec_eval's name)
    """``m_Rndcg.c``: nDCG (DCG so far / ideal DCG so far) averaged over the ranks where the ideal gain changes
    (and, when the ideal ranking ends more than one rank before the retrieved one, over the whole ranking)."""
    g = gains_of(ch, pairs)
    results, ideal = running_dcgs(ch, g)
    k = g.ideal.shape[1]
    p = np.arange(1, k + 1)[None, :]  # event positions 1 .. k
    changes = np.zeros((ch.n, k), dtype=bool)
    if k > 1:
        changes[:, :-1] = g.ideal[:, 1:] != g.ideal[:, :-1]
    changes |= p == g.length[:, None]
    changes &= p <= g.length[:, None]
    through = np.minimum(p, ch.num_ret[:, None]) - 1  # results' DCG through this many ranks
    num = np.zeros((ch.n, k))
    if results.shape[1]:
        num = np.where(through >= 0, np.take_along_axis(results, np.clip(through, 0, None), axis=1), 0.0)
    terms = np.where(changes, divide(num, ideal), 0.0)
    total = at(np.cumsum(terms, axis=1), np.full(ch.n, k))
    count = changes.sum(axis=1)
    extra = (g.length >= 1) & (g.length + 1 < ch.num_ret)
    final = divide(at(results, ch.num_ret), at(ideal, g.length))
    total = np.where(extra, total + final, total)
    count = count + extra
    return np.where(ch.num_rel > 0, divide(total, count), 0.0)


def G(ch: Chunk, pairs):  # noqa: N802 (trec_eval's name)
    """``m_G.c``: sum of gain / log2(2 + cost so far - gain so far), the cost of a rank being the ideal gain there
    (at least 1), over the sum of the ideal gains."""
    g = gains_of(ch, pairs)
    w = g.results.shape[1]
    ideal_here = np.zeros((ch.n, w))
    m = min(w, g.ideal.shape[1])
    ideal_here[:, :m] = g.ideal[:, :m]
    inside = np.arange(w)[None, :] < g.length[:, None]
    cost = np.where(inside & (ideal_here >= 1.0), ideal_here, 1.0)
    cost = np.where(ch.valid, cost, 0.0)
    gained = g.results != 0
    rows, cols = np.nonzero(gained)  # the terms are computed where a document gains only
    sum_cost = np.cumsum(cost, axis=1)[rows, cols]
    sum_results = np.cumsum(g.results, axis=1)[rows, cols]
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = divide(g.results[rows, cols], np.log2((2 + sum_cost) - sum_results))
    total = running_sum_at(gained, terms, ch.num_ret)
    ideal_sum = at(np.cumsum(g.ideal, axis=1), g.length)
    return np.where(ideal_sum > 0.0, divide(total, ideal_sum), 0.0)


def rbp(ch: Chunk, pairs):
    """``m_rbp.c``: (1 - p) x sum of gain x p^(rank - 1), gains scaled into [0, 1] when some lie outside."""
    p = 0.9
    for name, value in pairs:
        if name == "p":
            p = value
    g = gains_of(ch, pairs, normalise=True)
    powers = np.concatenate(([1.0], np.cumprod(np.full(g.results.shape[1], p))))[None, :-1]
    gained = g.results != 0
    total = running_sum_at(gained, g.results[gained] * np.broadcast_to(powers, gained.shape)[gained], ch.num_ret)
    return (1.0 - p) * total
