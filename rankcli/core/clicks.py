"""Click models for simulating click logs: cascade (Craswell et al. 2008) and position-based (PBM). Pure numpy.

Every function here simulates all queries and all impressions at once; nothing loops over queries in Python. The only
Python loop is over *chunks*: queries of equal size are processed together as a ``(queries, impressions, size)`` array
of at most :data:`CHUNK_ENTRIES` cells, so memory stays bounded and per-query values broadcast instead of being
gathered.

Cascade, as Bruch (2021, Robustness 3) uses it after Joachims et al. (2017): the user scans the displayed list from
the top, clicks a document of grade ``g`` with probability ``p[g]`` and stops at the first click; without a click the
scan ends at the end of the list. The impression is the list up to and including the click.

The random base ranker (a fresh shuffle per impression) is simulated without shuffling: a shuffle followed by a scan is
equivalent to giving every document an independent click decision and an independent uniform key, and taking the
clicked document with the smallest key as the click. The displayed documents are exactly those whose key is at most
the clicked document's key, shown in key order; only that short prefix is sorted. (Shuffling is the same as ordering
by iid uniform keys; the scan stops at the first clicked document in that order, whatever the later documents' click
decisions were, so drawing them all changes nothing.) For a deterministic display order (``display_rank``) the key is
the rank itself.

Randomness: one 64-bit draw per (impression, document) cell. Its top :data:`CLICK_BITS` bits decide the click (the
probability is rounded to a multiple of ``2**-24``, an error below ``3e-8``); its low 40 bits are the shuffle key, whose
lowest bits are replaced by the document's index in its query so that keys are unique within an impression (equal
random parts, a ``2**-33``-ish event for 100-document lists, fall back to input order).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rankcli.errors import InputError, UsageError

CLICK_BITS = 24
_CLICK_MASK = np.uint64((1 << CLICK_BITS) - 1)
_KEY_BITS = 40  # key (random part + document index) occupies the 40 bits below the impression number when sorting
_KEY_END = np.uint64(1 << _KEY_BITS)
#: Cells per chunk: ``queries x impressions x size`` arrays of at most this many cells are simulated at once.
CHUNK_ENTRIES = 1 << 19

MODELS = ("cascade", "pbm")


@dataclass
class ClickLog:
    """Simulated impressions: the displayed documents of every kept impression, in display order.

    ``rows`` index the source rows; impression ``k`` is ``rows[offsets[k]:offsets[k + 1]]``. Impressions are ordered
    by source query, then by impression number. The count arrays cover *all* simulated impressions, dropped ones
    included (so that click rates are unconditional estimates of the model's probabilities).
    """

    rows: np.ndarray  # int64, source row of each displayed document
    offsets: np.ndarray  # int64, n_kept + 1
    query: np.ndarray  # int64, source query number of each kept impression
    impression: np.ndarray  # int64, impression number (0..impressions-1) within its query
    clicks: np.ndarray  # int8, 0/1 per displayed document
    positions: np.ndarray  # int32, 1-based display position
    examined: np.ndarray | None  # bool per displayed document (pbm only)
    n_impressions: int  # simulated, before dropping
    dropped: int  # impressions without a click that were dropped
    shown_by_grade: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    clicks_by_grade: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    shown_by_position: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # index 0 = position 1
    clicks_by_position: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    examined_by_position: np.ndarray | None = None

    @property
    def n_kept(self) -> int:
        return int(self.offsets.shape[0] - 1)


def click_thresholds(click_probs) -> np.ndarray:
    """Probabilities as thresholds on a 64-bit draw: ``draw >= t`` has probability ``p`` rounded to ``2**-24``.

    Only the top :data:`CLICK_BITS` bits of the draw decide, so its low 40 bits stay independent of the decision (they
    serve as the shuffle key). ``p = 0`` gives ``t = 2**64 - 1``: a click with probability ``2**-64``.
    """
    p = np.asarray(click_probs, dtype=np.float64)
    if p.ndim != 1 or p.shape[0] == 0:
        raise UsageError("click probabilities: expected one probability per grade, got none")
    if not np.all((p >= 0) & (p <= 1)):
        bad = p[~((p >= 0) & (p <= 1))][0]
        raise UsageError(f"click probabilities must be within [0, 1], got {bad:g}")
    not_click = np.round((1.0 - p) * (1 << CLICK_BITS)).astype(np.uint64)
    return np.where(not_click >= np.uint64(1 << CLICK_BITS), np.uint64(np.iinfo(np.uint64).max),
                    not_click << np.uint64(64 - CLICK_BITS)).astype(np.uint64)


def _key_mask(jb: int) -> np.uint64:
    return np.uint64(((1 << _KEY_BITS) - 1) & ~((1 << jb) - 1))


def check_grades(grades: np.ndarray, n_probs: int) -> np.ndarray:
    grades = np.asarray(grades, dtype=np.int64)
    if grades.size and (grades.min() < 0 or grades.max() >= n_probs):
        top = int(grades.max())
        raise InputError(f"labels go up to grade {top} but {n_probs} click probabilities cover grades "
                         f"0..{n_probs - 1} only; give one probability per grade (e.g. --click-probs), got grade {top}")
    return grades


def _chunks(offsets: np.ndarray, impressions: int):
    """Yield ``(query numbers, size)``: queries of one size, at most ~CHUNK_ENTRIES cells each (deterministic)."""
    sz = np.diff(offsets)
    order = np.argsort(sz, kind="stable")
    s_sorted = sz[order]
    cuts = np.flatnonzero(s_sorted[1:] != s_sorted[:-1]) + 1
    for qs in np.split(order, cuts):
        if qs.shape[0] == 0:
            continue
        n = int(sz[qs[0]])
        per = max(1, CHUNK_ENTRIES // max(1, n * impressions))
        for a in range(0, qs.shape[0], per):
            yield qs[a:a + per], n


def _jbits(offsets: np.ndarray) -> int:
    n_max = int(np.diff(offsets).max()) if offsets.shape[0] > 1 else 1
    return max(1, int(n_max - 1).bit_length())


def _draw(rng: np.random.Generator, shape) -> np.ndarray:
    return rng.integers(0, np.iinfo(np.uint64).max, size=shape, dtype=np.uint64, endpoint=True)


class _Collector:
    """Gathers per-chunk displayed documents and puts them in (query, impression, position) order at the end."""

    def __init__(self, n_queries: int, impressions: int, n_grades: int):
        self.I = impressions
        self.n_gid = n_queries * impressions
        self.parts: list[tuple] = []
        self.shown_g = np.zeros(n_grades, np.int64)
        self.clicks_g = np.zeros(n_grades, np.int64)
        self.shown_p = np.zeros(0, np.int64)
        self.clicks_p = np.zeros(0, np.int64)
        self.exam_p = np.zeros(0, np.int64)

    @staticmethod
    def _add(acc: np.ndarray, values: np.ndarray) -> np.ndarray:
        if values.shape[0] > acc.shape[0]:
            acc = np.concatenate((acc, np.zeros(values.shape[0] - acc.shape[0], np.int64)))
        acc[: values.shape[0]] += values.astype(np.int64)
        return acc

    def stats(self, grades, clicks, positions, examined=None):
        ng = self.shown_g.shape[0]
        self.shown_g += np.bincount(grades, minlength=ng)[:ng]
        self.clicks_g += np.bincount(grades, weights=clicks, minlength=ng)[:ng].astype(np.int64)
        self.shown_p = self._add(self.shown_p, np.bincount(positions - 1))
        self.clicks_p = self._add(self.clicks_p, np.bincount(positions - 1, weights=clicks).astype(np.int64))
        if examined is not None:
            self.exam_p = self._add(self.exam_p, np.bincount(positions - 1, weights=examined).astype(np.int64))

    def stats_full_lists(self, grade_hist: np.ndarray, n: int, count: int):
        """``count`` no-click impressions that showed a whole list of ``n`` documents with grade histogram given."""
        if count:
            self.shown_g += grade_hist * count
            self.shown_p = self._add(self.shown_p, np.full(n, count, np.int64))

    def add(self, gid, rows, positions, clicks, examined=None):
        self.parts.append((gid, rows, positions, clicks, examined))

    def finish(self, keep_no_click: bool, dropped: int, has_exam: bool) -> ClickLog:
        def cat(i, dtype):
            arrs = [p[i] for p in self.parts]
            return np.concatenate(arrs).astype(dtype, copy=False) if arrs else np.zeros(0, dtype)

        gid = cat(0, np.int64)
        rows = cat(1, np.int64)
        positions = cat(2, np.int32)
        clicks = cat(3, np.int8)
        examined = cat(4, bool) if has_exam else None
        counts = np.bincount(gid, minlength=self.n_gid)
        if not keep_no_click:
            has_click = np.bincount(gid, weights=clicks, minlength=self.n_gid) > 0
            present = counts > 0
            dropped += int(np.count_nonzero(present & ~has_click))
            keep_rows = has_click[gid]
            gid, rows, positions, clicks = gid[keep_rows], rows[keep_rows], positions[keep_rows], clicks[keep_rows]
            if examined is not None:
                examined = examined[keep_rows]
            counts = np.where(has_click, counts, 0)
        kept = np.flatnonzero(counts)
        starts = np.zeros(self.n_gid + 1, np.int64)
        np.cumsum(counts, out=starts[1:])
        dest = starts[gid] + positions.astype(np.int64) - 1
        out_rows = np.empty_like(rows)
        out_rows[dest] = rows
        out_pos = np.empty_like(positions)
        out_pos[dest] = positions
        out_clicks = np.empty_like(clicks)
        out_clicks[dest] = clicks
        out_exam = None
        if examined is not None:
            out_exam = np.empty_like(examined)
            out_exam[dest] = examined
        offsets = np.concatenate(([0], np.cumsum(counts[kept]))).astype(np.int64)
        return ClickLog(
            rows=out_rows, offsets=offsets, query=kept // self.I, impression=kept % self.I, clicks=out_clicks,
            positions=out_pos, examined=out_exam, n_impressions=self.n_gid, dropped=dropped,
            shown_by_grade=self.shown_g, clicks_by_grade=self.clicks_g, shown_by_position=self.shown_p,
            clicks_by_position=self.clicks_p, examined_by_position=self.exam_p if has_exam else None,
        )


def _check_common(offsets, impressions, max_rank):
    if impressions < 1:
        raise UsageError(f"impressions must be at least 1, got {impressions}")
    if max_rank is not None and max_rank < 1:
        raise UsageError(f"max_rank must be at least 1, got {max_rank}")
    if _jbits(offsets) > 20:
        raise InputError(f"a query has more than {1 << 20} documents; click simulation supports up to that, "
                         f"got {int(np.diff(offsets).max())}")


def cascade(grades: np.ndarray, offsets: np.ndarray, click_probs, impressions: int, rng: np.random.Generator, *,
            display_rank: np.ndarray | None = None, max_rank: int | None = None,
            keep_no_click: bool = False) -> ClickLog:
    """Simulate ``impressions`` cascade impressions of every query.

    Parameters
    ----------
    grades : (n_rows,) int
        Relevance grade of every row, ``0 <= grade < len(click_probs)``.
    offsets : (n_queries + 1,) int64
        Query boundaries.
    click_probs : sequence of float
        ``p[g]``, the probability that a user who looks at a document of grade ``g`` clicks it.
    display_rank : (n_rows,) int, optional
        0-based display rank of every row within its query (a deterministic ranker). ``None``: a fresh uniformly random
        order per impression (the paper's random base ranker).
    max_rank : int, optional
        Only the top ``max_rank`` documents are displayed; a scan that reaches the end of them stops without a click.
    keep_no_click : bool
        Keep impressions without a click (the whole displayed list, all zeros); by default they are dropped.
    """
    thr = click_thresholds(click_probs)
    grades = check_grades(grades, thr.shape[0])
    offsets = np.asarray(offsets, dtype=np.int64)
    _check_common(offsets, impressions, max_rank)
    I = int(impressions)
    jb = _jbits(offsets)
    jb_u = np.uint64(jb)
    coll = _Collector(offsets.shape[0] - 1, I, thr.shape[0])
    dropped = 0
    random_order = display_rank is None
    # Sorting all of a no-click impression is only needed when it is kept, or when truncation at max_rank with a
    # random order must find which documents made it to the top.
    fast_drop = not keep_no_click and not (random_order and max_rank is not None)
    for qs, n in _chunks(offsets, I):
        G = qs.shape[0]
        rows = offsets[qs][:, None] + np.arange(n, dtype=np.int64)[None, :]  # (G, n)
        g = grades[rows]
        j = np.arange(n, dtype=np.uint64)
        raw = _draw(rng, (G, I, n))
        click = raw >= thr[g][:, None, :]  # decided by the top CLICK_BITS bits only
        if random_order:
            # The low 40 bits, independent of the click decision, with the document index in the lowest bits.
            key = np.bitwise_and(raw, _key_mask(jb), out=raw)
            np.bitwise_or(key, j, out=key)
        else:
            rank = np.asarray(display_rank)[rows].astype(np.uint64)
            key = np.broadcast_to(((rank << jb_u) | j)[:, None, :], (G, I, n))
            if max_rank is not None:
                click &= (rank < np.uint64(max_rank))[:, None, :]
            del raw
        first = np.where(click, key, _KEY_END).min(axis=2)  # (G, I): key of the first click, 2**40 if none
        has = first < _KEY_END
        shown = key <= first[:, :, None]
        if not random_order and max_rank is not None:
            shown &= (rank < np.uint64(max_rank))[:, None, :]
        if fast_drop:
            n_none = (~has).sum(axis=1)  # per query
            if np.any(n_none):
                dropped += int(n_none.sum())
                # Their whole (possibly truncated) list was shown without a click: count it, skip sorting it.
                shown_none = shown & ~has[:, :, None]
                per_doc = shown_none.sum(axis=1)  # (G, n)
                coll.shown_g += np.bincount(g.ravel(), weights=per_doc.ravel(), minlength=thr.shape[0]).astype(
                    np.int64)[: thr.shape[0]]
                lengths = shown_none.sum(axis=2).ravel()
                lengths = lengths[lengths > 0]
                by_len = np.bincount(lengths)
                coll.shown_p = coll._add(coll.shown_p, by_len[::-1].cumsum()[::-1][1:])
                shown &= has[:, :, None]
        flat = np.flatnonzero(shown)
        imp = flat // n  # local impression number g*I + i
        if random_order:
            kv = key.reshape(-1)[flat]
        else:  # key is a broadcast view: index its (G, n) base instead of copying it
            kv = key[:, 0, :].reshape(-1)[(flat // (I * n)) * n + flat % n]
        comp = np.sort((imp.astype(np.uint64) << np.uint64(_KEY_BITS)) | kv)
        imp_s = (comp >> np.uint64(_KEY_BITS)).astype(np.int64)
        j_s = (comp & np.uint64((1 << jb) - 1)).astype(np.int64)
        counts = np.bincount(imp_s, minlength=G * I)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        pos = np.arange(imp_s.shape[0], dtype=np.int64) - starts[imp_s] + 1
        q_local = imp_s // I
        c = click.reshape(-1)[imp_s * n + j_s]  # in cascade every shown click is the first one
        if max_rank is not None and random_order:
            inside = pos <= max_rank
            imp_s, j_s, pos, q_local, c = imp_s[inside], j_s[inside], pos[inside], q_local[inside], c[inside]
        src = offsets[qs][q_local] + j_s
        coll.stats(grades[src], c, pos)
        gid = qs[q_local] * I + imp_s % I
        coll.add(gid, src, pos, c)
    return coll.finish(keep_no_click, dropped, has_exam=False)


def pbm(grades: np.ndarray, offsets: np.ndarray, click_probs, impressions: int, rng: np.random.Generator, *,
        eta: float = 1.0, display_rank: np.ndarray | None = None, max_rank: int | None = None,
        keep_no_click: bool = False) -> ClickLog:
    """Simulate ``impressions`` position-based-model impressions of every query.

    The document at display position ``r`` (1-based) is examined with probability ``(1/r)**eta`` and, if examined,
    clicked with probability ``p[grade]``; every click is kept. The displayed list is the whole query, or its top
    ``max_rank``. Other parameters as :func:`cascade`.
    """
    if not (eta >= 0):
        raise UsageError(f"eta must be non-negative, got {eta:g}")
    thr = click_thresholds(click_probs)
    grades = check_grades(grades, thr.shape[0])
    offsets = np.asarray(offsets, dtype=np.int64)
    _check_common(offsets, impressions, max_rank)
    I = int(impressions)
    jb = _jbits(offsets)
    jb_u = np.uint64(jb)
    n_max = int(np.diff(offsets).max()) if offsets.shape[0] > 1 else 0
    r = np.arange(1, n_max + 2, dtype=np.float64)
    exam_thr = np.round((1.0 / r) ** float(eta) * (1 << CLICK_BITS)).astype(np.uint64)  # index = position - 1
    coll = _Collector(offsets.shape[0] - 1, I, thr.shape[0])
    limit = n_max if max_rank is None else min(max_rank, n_max)
    for qs, n in _chunks(offsets, I):
        G = qs.shape[0]
        rows = offsets[qs][:, None] + np.arange(n, dtype=np.int64)[None, :]
        g = grades[rows]
        raw = _draw(rng, (G, I, n))
        j = np.arange(n, dtype=np.uint64)
        if display_rank is None:
            key = (_draw(rng, (G, I, n)) & _key_mask(jb)) | j
            imp = np.arange(G * I, dtype=np.uint64)
            comp = np.sort(((imp << np.uint64(_KEY_BITS))[:, None] | key.reshape(G * I, n)).reshape(-1))
            del key
            imp_s = (comp >> np.uint64(_KEY_BITS)).astype(np.int64)
            j_s = (comp & np.uint64((1 << jb) - 1)).astype(np.int64)
            pos = np.tile(np.arange(1, n + 1, dtype=np.int64), G * I)
        else:
            rank = np.asarray(display_rank)[rows].astype(np.int64)  # (G, n)
            imp_s = np.repeat(np.arange(G * I, dtype=np.int64), n)
            j_s = np.tile(np.arange(n, dtype=np.int64), G * I)
            pos = np.repeat(rank, I, axis=0).reshape(-1) + 1
        if max_rank is not None:
            inside = pos <= limit
            imp_s, j_s, pos = imp_s[inside], j_s[inside], pos[inside]
        q_local = imp_s // I
        cell = raw.reshape(-1)[imp_s * n + j_s]
        src = offsets[qs][q_local] + j_s
        gr = grades[src]
        # Examination from bits 16..39, the click from bits 40..63: independent decisions from one draw.
        examined = ((cell >> np.uint64(16)) & _CLICK_MASK) < exam_thr[pos - 1]
        c = (examined & (cell >= thr[gr])).astype(np.int8)
        coll.stats(gr, c, pos, examined)
        coll.add(qs[q_local] * I + imp_s % I, src, pos, c, examined)
    return coll.finish(keep_no_click, 0, has_exam=True)


def simulate(model: str, grades, offsets, click_probs, impressions, rng, *, eta: float = 1.0,
             display_rank=None, max_rank=None, keep_no_click=False) -> ClickLog:
    if model == "cascade":
        return cascade(grades, offsets, click_probs, impressions, rng, display_rank=display_rank, max_rank=max_rank,
                       keep_no_click=keep_no_click)
    if model == "pbm":
        return pbm(grades, offsets, click_probs, impressions, rng, eta=eta, display_rank=display_rank,
                   max_rank=max_rank, keep_no_click=keep_no_click)
    raise UsageError(f"unknown click model {model!r}; expected one of {', '.join(MODELS)}")


def simulate_clicks(ds, **kwargs):
    """The dataset-level API, :func:`rankcli.simulate.simulate_clicks`, re-exported for callers that look here."""
    from rankcli.simulate import simulate_clicks as _simulate_clicks

    return _simulate_clicks(ds, **kwargs)
