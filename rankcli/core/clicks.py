"""Click models for simulating click logs: cascade (Craswell et al. 2008) and position-based (PBM). Pure numpy.

Every function here simulates all queries and all impressions at once; nothing loops over queries in Python. The
Python loops are over scan *positions* (at most :data:`SCAN_STEPS`) and over *chunks* of equal-size lists of at most
:data:`CHUNK_ENTRIES` cells, so memory stays bounded and per-query values broadcast instead of being gathered.

Cascade, as Bruch (2021, Robustness 3) uses it after Joachims et al. (2017): the user scans the displayed list from
the top, clicks a document of grade ``g`` with probability ``p[g]`` and stops at the first click; without a click the
scan ends at the end of the list. The impression is the list up to and including the click. It runs in two phases:

1. The scan itself, one position per step for every still-scanning impression at once. With the random base ranker (a
   fresh shuffle per impression) the next document is a uniformly random not-yet-shown one: drawn uniformly from the
   list (multiply-shift of 32 random bits: uniform to within ``n * 2**-32``) and drawn again if already shown
   (rejection against the few shown so far). A deterministic order shows its next document. Most scans end within a
   few positions, so the work follows what is displayed, not the list length.
2. Scans still running after :data:`SCAN_STEPS` positions finish with the *key method* on their remaining documents
   (the rest of a uniformly random order is a uniformly random order of the rest): a shuffle followed by a scan is
   equivalent to giving every document an independent click decision and an independent uniform key and taking the
   clicked document with the smallest key as the click; the displayed documents are those whose key is at most the
   clicked document's, in key order, and only that prefix is sorted. (Ordering by iid uniform keys is a uniform
   shuffle; the scan stops at the first clicked document in that order whatever the later documents' decisions were,
   so drawing them all changes nothing.) For a deterministic order the key is the rank.

PBM: the document at position ``r`` is examined with probability ``(1/r)**eta`` and, if examined, clicked with
probability ``p[g]``; the whole list (or its top ``max_rank``) is displayed, every click kept.

Randomness: one 64-bit draw per decision cell. Its top :data:`CLICK_BITS` bits decide the click (the probability is
rounded to a multiple of ``2**-24``, an error below ``3e-8``); lower bits pick the document to show (scan phase), give
the shuffle key (key method; its lowest bits are replaced by the document's index so that keys are unique within an
impression, equal random parts falling back to input order) or decide the examination (PBM). Same inputs and
generator state, same result; cascade results do not even depend on :data:`CHUNK_ENTRIES` (a test checks it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rankcli.errors import InputError, UsageError

CLICK_BITS = 24
_CLICK_MASK = np.uint64((1 << CLICK_BITS) - 1)
_KEY_BITS = 40  # key (random part + document index) occupies the 40 bits below the impression number when sorting
_KEY_END = np.uint64(1 << _KEY_BITS)
#: Cells per chunk: arrays of at most this many (impression, document) cells are simulated at once.
CHUNK_ENTRIES = 1 << 19
#: Positions simulated step by step before the remaining long scans switch to the key method.
SCAN_STEPS = 16

MODELS = ("cascade", "pbm")
#: Randomised logging policies over a deterministic ranker: ``("top", N)`` RandTop-n, ``("swap", K)`` swap
#: intervention.
RANDOMIZATIONS = ("top", "swap")


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
    #: With a randomised logging policy: the 1-based rank of each displayed document in the ranker's own order.
    ranker_rank: np.ndarray | None = None

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
        raise InputError(f"labels go up to grade {top} but the {n_probs} click probabilities cover grades "
                         f"0..{n_probs - 1} only; give one probability per grade (--click-probs)")
    return grades


def _jbits(offsets: np.ndarray) -> int:
    n_max = int(np.diff(offsets).max()) if offsets.shape[0] > 1 else 1
    return max(1, int(n_max - 1).bit_length())


def _draw(rng: np.random.Generator, shape) -> np.ndarray:
    return rng.integers(0, np.iinfo(np.uint64).max, size=shape, dtype=np.uint64, endpoint=True)


class _Collector:
    """Cascade: gathers displayed documents step by step and chunk by chunk; puts them in (query, impression,
    position) order at the end."""

    def __init__(self, n_queries: int, impressions: int, n_grades: int):
        self.I = impressions
        self.n_gid = n_queries * impressions
        self.n_grades = n_grades
        self.parts: list[tuple] = []
        # Documents shown in no-click impressions that were dropped without being materialised.
        self.extra_shown_g = np.zeros(n_grades, np.int64)
        self.extra_shown_p = np.zeros(0, np.int64)

    @staticmethod
    def _add(acc: np.ndarray, values: np.ndarray) -> np.ndarray:
        if values.shape[0] > acc.shape[0]:
            acc = np.concatenate((acc, np.zeros(values.shape[0] - acc.shape[0], np.int64)))
        acc[: values.shape[0]] += values.astype(np.int64)
        return acc

    def add_unmaterialised(self, grades: np.ndarray, counts: np.ndarray, positions_from: int, lengths: np.ndarray):
        """Dropped no-click impressions: per-document show ``counts`` and list ``lengths`` after ``positions_from``."""
        self.extra_shown_g += np.bincount(grades.ravel(), weights=counts.ravel(),
                                          minlength=self.n_grades)[: self.n_grades].astype(np.int64)
        lengths = lengths[lengths > 0]
        if lengths.size:
            at_least = np.bincount(lengths)[::-1].cumsum()[::-1][1:]  # impressions showing >= k more documents
            self.extra_shown_p = self._add(self.extra_shown_p,
                                           np.concatenate((np.zeros(positions_from, np.int64), at_least)))

    def add(self, gid, rows, positions, clicks):
        self.parts.append((gid, rows, positions, clicks))

    def finish(self, grades: np.ndarray, keep_no_click: bool) -> ClickLog:
        parts = self.parts
        sizes = [np.shape(p[0])[0] for p in parts]

        def cat(i, dtype):
            arrs = [np.asarray(p[i]) for p in parts]
            if not arrs:
                return np.zeros(0, dtype)
            if all(a.ndim == 0 for a in arrs):  # one value per part (the scan phase's positions)
                return np.repeat(np.array([a.item() for a in arrs], dtype=dtype), sizes)
            return np.concatenate([np.broadcast_to(a, (k,)) for a, k in zip(arrs, sizes)]).astype(dtype, copy=False)

        gid = cat(0, np.int64)
        rows = cat(1, np.int64)
        positions = cat(2, np.int64)
        clicks = cat(3, bool)
        ng = self.n_grades
        gr = grades[rows]
        shown_g = np.bincount(gr, minlength=ng)[:ng] + self.extra_shown_g
        clicks_g = np.bincount(gr[clicks], minlength=ng)[:ng]
        shown_p = self._add(self.extra_shown_p.copy(), np.bincount(positions - 1))
        clicks_p = self._add(np.zeros(shown_p.shape[0], np.int64), np.bincount(positions[clicks] - 1))
        dropped = 0
        if not keep_no_click:
            has_click = np.zeros(self.n_gid, bool)
            has_click[gid[clicks]] = True
            dropped = self.n_gid - int(np.count_nonzero(has_click))
            if dropped:
                keep_rows = has_click[gid]
                gid, rows, positions, clicks = gid[keep_rows], rows[keep_rows], positions[keep_rows], clicks[keep_rows]
        counts = np.bincount(gid, minlength=self.n_gid)
        kept = np.flatnonzero(counts)
        starts = np.zeros(self.n_gid + 1, np.int64)
        np.cumsum(counts, out=starts[1:])
        dest = starts[gid] + positions - 1
        out_rows = np.empty_like(rows)
        out_rows[dest] = rows
        out_pos = np.empty(positions.shape[0], np.int32)
        out_pos[dest] = positions
        out_clicks = np.empty(clicks.shape[0], np.int8)
        out_clicks[dest] = clicks
        offsets = np.concatenate(([0], np.cumsum(counts[kept]))).astype(np.int64)
        return ClickLog(
            rows=out_rows, offsets=offsets, query=kept // self.I, impression=kept % self.I, clicks=out_clicks,
            positions=out_pos, examined=None, n_impressions=self.n_gid, dropped=dropped,
            shown_by_grade=shown_g, clicks_by_grade=clicks_g, shown_by_position=shown_p,
            clicks_by_position=clicks_p,
        )


def _checked_inputs(grades, offsets, click_probs, impressions, max_rank):
    """What every click model checks first: the click thresholds per grade, the grades, int64 offsets, and the
    impression count as an int."""
    thr = click_thresholds(click_probs)
    grades = check_grades(grades, thr.shape[0])
    offsets = np.asarray(offsets, dtype=np.int64)
    _check_common(offsets, impressions, max_rank)
    return thr, grades, offsets, int(impressions)


def _check_common(offsets, impressions, max_rank):
    if impressions < 1:
        raise UsageError(f"impressions must be at least 1, got {impressions}")
    if max_rank is not None and max_rank < 1:
        raise UsageError(f"max_rank must be at least 1, got {max_rank}")
    if _jbits(offsets) > 20:
        raise InputError(f"a query has more than {1 << 20} documents; click simulation supports up to that, "
                         f"got {int(np.diff(offsets).max())}")


def _groups_by_size(n_each: np.ndarray, cells_per_entry: int = 1):
    """Split items with list sizes ``n_each`` into index chunks of equal size ``n``, each of at most ~CHUNK_ENTRIES
    cells (``n * cells_per_entry`` per item); deterministic. Yields ``(item numbers, n)``."""
    order = np.argsort(n_each, kind="stable")
    n_sorted = n_each[order]
    cuts = np.flatnonzero(n_sorted[1:] != n_sorted[:-1]) + 1
    for part in np.split(order, cuts):
        if part.shape[0] == 0:
            continue
        n = int(n_each[part[0]])
        per = max(1, CHUNK_ENTRIES // max(1, n * cells_per_entry))
        for a in range(0, part.shape[0], per):
            yield part[a:a + per], n


def cascade(grades: np.ndarray, offsets: np.ndarray, click_probs, impressions: int, rng: np.random.Generator, *,
            display_rank: np.ndarray | None = None, max_rank: int | None = None,
            keep_no_click: bool = False, scan_steps: int | None = None) -> ClickLog:
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
        0-based display rank of every row within its query (a deterministic ranker; a permutation of ``0..n-1`` per
        query). ``None``: a fresh uniformly random order per impression (the paper's random base ranker).
    max_rank : int, optional
        Only the top ``max_rank`` documents are displayed; a scan that reaches the end of them stops without a click.
    keep_no_click : bool
        Keep impressions without a click (the whole displayed list, all zeros); by default they are dropped.
    scan_steps : int, optional
        Positions simulated step by step (default :data:`SCAN_STEPS`; 0 = the key method for everything). A speed
        knob only: every value gives the same distribution.

    Notes
    -----
    Two phases. First the scan itself, one step per position for all still-scanning impressions at once (a loop over
    at most :data:`SCAN_STEPS` positions, never over queries): a random ranker shows a uniformly random
    not-yet-shown document (rejection sampling against the few already shown), a deterministic one the next in its
    order; the user clicks with ``p[grade]``. Most impressions end within a few steps, so the work is proportional to
    what is displayed, not to the list length. Impressions still scanning after :data:`SCAN_STEPS` positions finish
    with the key method on their remaining documents (see the module docstring): the rest of a uniformly random order
    is a uniformly random order of the rest.
    """
    thr, grades, offsets, I = _checked_inputs(grades, offsets, click_probs, impressions, max_rank)
    Q = offsets.shape[0] - 1
    sz = np.diff(offsets)
    random_order = display_rank is None
    coll = _Collector(Q, I, thr.shape[0])
    if Q == 0:
        return coll.finish(grades, keep_no_click)
    if not random_order:
        display_rank = np.asarray(display_rank, dtype=np.int64)
        at_rank = np.empty(offsets[-1], np.int64)  # at_rank[offsets[q] + r] = row shown at rank r
        at_rank[np.repeat(offsets[:-1], sz) + display_rank] = np.arange(offsets[-1], dtype=np.int64)
    # Grades as small integers: the scan gathers one per displayed document from a table that then fits in cache.
    g_small = grades.astype(np.uint8) if thr.shape[0] <= 256 else grades
    m = Q * I
    n_of = np.repeat(sz, I)  # list size of every impression (gid = q * I + i)
    limit = n_of if max_rank is None else np.minimum(n_of, max_rank)
    steps = min(SCAN_STEPS if scan_steps is None else int(scan_steps), int(limit.max()))
    # The still-scanning impressions, compacted after every step: id, first row, list size, display limit, and (random
    # order) the documents already shown.
    active = np.arange(m, dtype=np.int64)
    start_a = np.repeat(offsets[:-1], I)
    n_a = n_of.astype(np.uint64)
    lim_a = limit
    prev = np.empty((m, 0), np.int32)
    min_lim = int(limit.min())
    low32 = np.uint64(0xFFFFFFFF)
    for t in range(steps):
        if t >= min_lim:  # lists shown to their end stop without a click
            go = lim_a > t
            active, start_a, n_a, lim_a, prev = active[go], start_a[go], n_a[go], lim_a[go], prev[go]
            if active.shape[0] == 0:
                break
            min_lim = int(lim_a.min())
        raw = _draw(rng, active.shape[0])
        if random_order:
            j = (((raw & low32) * n_a) >> np.uint64(32)).astype(np.int32)  # uniform in 0..n-1 from the low bits
            if t:
                todo = np.flatnonzero((prev == j[:, None]).any(axis=1))
                while todo.shape[0]:  # already shown: draw again (click bits too, to keep them independent)
                    redraw = _draw(rng, todo.shape[0])
                    raw[todo] = redraw
                    j[todo] = (((redraw & low32) * n_a[todo]) >> np.uint64(32)).astype(np.int32)
                    todo = todo[(prev[todo] == j[todo][:, None]).any(axis=1)]
            src = start_a + j
        else:
            src = at_rank[start_a + t]
        c = raw >= thr[g_small[src]]
        coll.add(active, src, t + 1, c)
        go = ~c
        active, start_a, n_a, lim_a = active[go], start_a[go], n_a[go], lim_a[go]
        prev = np.concatenate((prev[go], j[go][:, None]), axis=1) if random_order else prev[go]
        if active.shape[0] == 0:
            break
    if active.shape[0]:
        go = lim_a > steps
        active, prev = active[go], prev[go]
    if active.shape[0]:
        _cascade_rest(coll, active, steps, grades, offsets, thr, rng, n_of, prev if random_order else None,
                      None if random_order else display_rank, max_rank, keep_no_click)
    return coll.finish(g_small, keep_no_click)


def _cascade_rest(coll, gids, done, grades, offsets, thr, rng, n_of, shown_j, display_rank, max_rank, keep_no_click):
    """Finish impressions ``gids`` that showed ``done`` documents without a click, by the key method."""
    I = coll.I
    jb = _jbits(offsets)
    jb_u = np.uint64(jb)
    random_order = display_rank is None
    excluded = np.uint64(1 << (_KEY_BITS + 1))  # beyond _KEY_END: never the first click, never shown
    # Sorting a whole no-click list is needed only when it is kept, or to find its top max_rank in a random order.
    fast_drop = not keep_no_click and not (random_order and max_rank is not None)
    for idx, n in _groups_by_size(n_of[gids]):
        gids_c = gids[idx]
        M = gids_c.shape[0]
        rows = offsets[gids_c // I][:, None] + np.arange(n, dtype=np.int64)[None, :]  # (M, n)
        g = grades[rows]
        j = np.arange(n, dtype=np.uint64)
        raw = _draw(rng, (M, n))
        click = raw >= thr[g]  # decided by the top CLICK_BITS bits only
        if random_order:
            # The low 40 bits, independent of the click decision, with the document index in the lowest bits.
            key = np.bitwise_and(raw, _key_mask(jb), out=raw)
            np.bitwise_or(key, j, out=key)
            key[np.arange(M)[:, None], shown_j[idx, :done]] = excluded
        else:
            rank = display_rank[rows]
            key = (rank.astype(np.uint64) << jb_u) | j
            key[rank < done] = excluded
            if max_rank is not None:
                key[rank >= max_rank] = excluded
        first = np.where(click, key, _KEY_END).min(axis=1)  # key of the first click, 2**40 if none
        has = first < _KEY_END
        shown = key <= first[:, None]
        if fast_drop and not has.all():
            none = shown & ~has[:, None]
            coll.add_unmaterialised(g, none, done, none.sum(axis=1))
            shown &= has[:, None]
        flat = np.flatnonzero(shown)
        imp = flat // n
        comp = np.sort((imp.astype(np.uint64) << np.uint64(_KEY_BITS + 2)) | key.reshape(-1)[flat])
        imp_s = (comp >> np.uint64(_KEY_BITS + 2)).astype(np.int64)
        j_s = (comp & np.uint64((1 << jb) - 1)).astype(np.int64)
        counts = np.bincount(imp_s, minlength=M)
        first_of = np.concatenate(([0], np.cumsum(counts)[:-1]))
        pos = np.arange(imp_s.shape[0], dtype=np.int64) - first_of[imp_s] + 1 + done
        c = click.reshape(-1)[imp_s * n + j_s]  # every shown click is the first one
        if max_rank is not None and random_order:
            inside = pos <= max_rank
            imp_s, j_s, pos, c = imp_s[inside], j_s[inside], pos[inside], c[inside]
        coll.add(gids_c[imp_s], rows[imp_s, j_s], pos, c)


def pbm(grades: np.ndarray, offsets: np.ndarray, click_probs, impressions: int, rng: np.random.Generator, *,
        eta: float = 1.0, display_rank: np.ndarray | None = None, max_rank: int | None = None,
        keep_no_click: bool = False, randomize: tuple[str, int] | None = None) -> ClickLog:
    """Simulate ``impressions`` position-based-model impressions of every query.

    The document at display position ``r`` (1-based) is examined with probability ``(1/r)**eta`` and, if examined,
    clicked with probability ``p[grade]``; every click is kept. The displayed list is the whole query, or its top
    ``max_rank``. ``randomize`` (with a ``display_rank``): a randomised logging policy applied to the ranker's order
    per impression, see :func:`randomized_orders`. Other parameters as :func:`cascade`.
    """
    if not (eta >= 0):
        raise UsageError(f"eta must be non-negative, got {eta:g}")
    thr, grades, offsets, I = _checked_inputs(grades, offsets, click_probs, impressions, max_rank)
    n_max = int(np.diff(offsets).max()) if offsets.shape[0] > 1 else 0
    r = np.arange(1, n_max + 2, dtype=np.float64)
    exam_thr = np.round((1.0 / r) ** float(eta) * (1 << CLICK_BITS)).astype(np.uint64)  # index = position - 1
    n_grades = thr.shape[0]
    g_small = grades.astype(np.uint8) if n_grades <= 256 else grades
    if display_rank is not None:
        display_rank = np.asarray(display_rank, dtype=np.int64)
    Q = offsets.shape[0] - 1
    width = n_max if max_rank is None else min(n_max, max_rank)
    shown_g = np.zeros(n_grades, np.int64)
    clicks_g = np.zeros(n_grades, np.int64)
    shown_p = np.zeros(width, np.int64)
    clicks_p = np.zeros(width, np.int64)
    exam_p = np.zeros(width, np.int64)
    # Per chunk: impression ids and lengths, and the displayed cells flattened impression by impression.
    imp_gid, imp_len, imp_has, cell_src, cell_click, cell_exam = [], [], [], [], [], []
    for qs, n in _groups_by_size(np.diff(offsets), I):
        G = qs.shape[0]
        L = n if max_rank is None else min(n, max_rank)  # documents displayed per impression
        starts = np.repeat(offsets[qs], I)[:, None]  # (G*I, 1) first row of each impression's query
        if display_rank is None:
            # The whole list is shown: a full shuffle of every impression (Fisher-Yates per row, in C).
            order = rng.permuted(np.broadcast_to(np.arange(n, dtype=np.int64), (G * I, n)), axis=1)[:, :L]
        else:
            rows = offsets[qs][:, None] + np.arange(n, dtype=np.int64)[None, :]
            at_pos = np.argsort(display_rank[rows], axis=1, kind="stable")  # (G, n) document at position
            if randomize is None:
                order = np.repeat(at_pos[:, :L], I, axis=0)
            else:
                order = randomized_orders(at_pos, I, randomize, L, rng)[:, :L]
        src = starts + order  # (G*I, L) source row at each position
        gr = g_small[src]
        # One draw per displayed cell, indexed by position (the cells are iid, so any indexing is the same model):
        # examination from bits 16..39, the click from bits 40..63, independent decisions.
        raw = _draw(rng, (G * I, L))
        examined = ((raw >> np.uint64(16)) & _CLICK_MASK) < exam_thr[None, :L]
        c = examined & (raw >= thr[gr])
        shown_g += np.bincount(gr.reshape(-1), minlength=n_grades)[:n_grades]
        clicks_g += np.bincount(gr[c], minlength=n_grades)[:n_grades]
        shown_p[:L] += G * I
        clicks_p[:L] += c.sum(axis=0)
        exam_p[:L] += examined.sum(axis=0)
        imp_gid.append(np.repeat(qs * I, I) + np.tile(np.arange(I, dtype=np.int64), G))
        imp_len.append(np.full(G * I, L, np.int64))
        imp_has.append(c.any(axis=1))
        cell_src.append(src.reshape(-1))
        cell_click.append(c.reshape(-1))
        cell_exam.append(examined.reshape(-1))

    def cat(parts, dtype):
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

    gid, lengths, has = cat(imp_gid, np.int64), cat(imp_len, np.int64), cat(imp_has, bool)
    src_all, click_all, exam_all = cat(cell_src, np.int64), cat(cell_click, bool), cat(cell_exam, bool)
    first = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    chosen = np.flatnonzero(has) if not keep_no_click else np.arange(gid.shape[0])
    chosen = chosen[np.argsort(gid[chosen], kind="stable")]  # impressions in (query, impression) order
    out_len = lengths[chosen]
    offsets_out = np.concatenate(([0], np.cumsum(out_len))).astype(np.int64)
    within = np.arange(offsets_out[-1], dtype=np.int64) - np.repeat(offsets_out[:-1], out_len)
    idx = np.repeat(first[chosen], out_len) + within
    kept = gid[chosen]
    return ClickLog(
        rows=src_all[idx], offsets=offsets_out, query=kept // I, impression=kept % I,
        clicks=click_all[idx].astype(np.int8), positions=(within + 1).astype(np.int32), examined=exam_all[idx],
        n_impressions=Q * I, dropped=int(gid.shape[0] - chosen.shape[0]), shown_by_grade=shown_g,
        clicks_by_grade=clicks_g, shown_by_position=shown_p, clicks_by_position=clicks_p,
        examined_by_position=exam_p,
    )


def randomized_orders(at_pos: np.ndarray, impressions: int, randomize: tuple[str, int], shown: int,
                      rng: np.random.Generator) -> np.ndarray:
    """Display orders of ``impressions`` impressions of each of ``G`` equal-size lists under a randomised policy.

    Parameters
    ----------
    at_pos : (G, n) int
        The ranker's order of each list: ``at_pos[g, r]`` is the document (0-based index in its list) at rank ``r``.
    impressions : int
        Impressions per list; the result has ``G * impressions`` rows, list ``g``'s impressions consecutive.
    randomize : ("top", N) or ("swap", K)
        ``("top", N)``: RandTop-n (Joachims et al. 2017), the top ``min(N, n)`` documents of the ranker's order in a
        fresh uniformly random order per impression (one Fisher-Yates shuffle per row, in C), the rest in the ranker's
        order. ``("swap", K)``: the swap intervention, the document at rank ``K`` exchanged with the document at a
        position drawn uniformly from ``1..shown`` (``K`` itself included: then nothing moves), so the ranker's
        ``K``-th document appears at every displayed position with probability ``1/shown``; lists with fewer than
        ``K`` displayed documents keep the ranker's order.
    shown : int
        Documents displayed per impression (``min(n, max_rank)``).

    Returns
    -------
    (G * impressions, n) int64
        The document at each position of each impression (cut to ``shown`` by the caller).
    """
    order = np.repeat(np.asarray(at_pos, dtype=np.int64), impressions, axis=0)
    kind, k = randomize
    n = order.shape[1]
    if kind == "top":
        m = min(int(k), n)
        if m > 1:
            order[:, :m] = rng.permuted(order[:, :m], axis=1)
    elif kind == "swap":
        if int(k) <= shown:
            rows = np.arange(order.shape[0])
            j = rng.integers(0, shown, size=order.shape[0])
            moved = order[:, k - 1].copy()
            order[:, k - 1] = order[rows, j]
            order[rows, j] = moved
    else:
        raise UsageError(f"unknown randomisation {kind!r}; expected one of {', '.join(RANDOMIZATIONS)}")
    return order


def cascade_randomized(grades: np.ndarray, offsets: np.ndarray, click_probs, impressions: int,
                       rng: np.random.Generator, *, display_rank: np.ndarray, randomize: tuple[str, int],
                       max_rank: int | None = None, keep_no_click: bool = False) -> ClickLog:
    """Cascade impressions whose display order is the ranker's order randomised per impression
    (:func:`randomized_orders`). Dense: every impression's displayed list gets a click decision per position at once
    and the scan stops at the first click (``argmax``), chunk by chunk of equal-size lists, no loop over queries."""
    thr, grades, offsets, I = _checked_inputs(grades, offsets, click_probs, impressions, max_rank)
    Q = offsets.shape[0] - 1
    coll = _Collector(Q, I, thr.shape[0])
    g_small = grades.astype(np.uint8) if thr.shape[0] <= 256 else grades
    display_rank = np.asarray(display_rank, dtype=np.int64)
    for qs, n in _groups_by_size(np.diff(offsets), I):
        G = qs.shape[0]
        L = n if max_rank is None else min(n, max_rank)
        rows = offsets[qs][:, None] + np.arange(n, dtype=np.int64)[None, :]
        at_pos = np.argsort(display_rank[rows], axis=1, kind="stable")
        order = randomized_orders(at_pos, I, randomize, L, rng)[:, :L]
        src = np.repeat(offsets[qs], I)[:, None] + order  # (G*I, L)
        c = _draw(rng, (G * I, L)) >= thr[g_small[src]]
        has = c.any(axis=1)
        length = np.where(has, c.argmax(axis=1) + 1, L)  # displayed up to and including the first click
        shown = np.arange(L)[None, :] < length[:, None]
        gid = np.repeat(qs * I, I) + np.tile(np.arange(I, dtype=np.int64), G)
        pos = np.broadcast_to(np.arange(1, L + 1, dtype=np.int64)[None, :], shown.shape)
        coll.add(np.broadcast_to(gid[:, None], shown.shape)[shown], src[shown], pos[shown], c[shown])
    return coll.finish(g_small, keep_no_click)


def simulate(model: str, grades, offsets, click_probs, impressions, rng, *, eta: float = 1.0,
             display_rank=None, max_rank=None, keep_no_click=False, randomize=None) -> ClickLog:
    if randomize is not None and display_rank is None:
        raise UsageError("a randomised logging policy needs a deterministic ranker to randomise")
    if model == "cascade":
        if randomize is not None:
            return cascade_randomized(grades, offsets, click_probs, impressions, rng, display_rank=display_rank,
                                      randomize=randomize, max_rank=max_rank, keep_no_click=keep_no_click)
        return cascade(grades, offsets, click_probs, impressions, rng, display_rank=display_rank, max_rank=max_rank,
                       keep_no_click=keep_no_click)
    if model == "pbm":
        return pbm(grades, offsets, click_probs, impressions, rng, eta=eta, display_rank=display_rank,
                   max_rank=max_rank, keep_no_click=keep_no_click, randomize=randomize)
    raise UsageError(f"unknown click model {model!r}; expected one of {', '.join(MODELS)}")


def simulate_clicks(ds, **kwargs):
    """The dataset-level API, :func:`rankcli.simulate.simulate_clicks`, re-exported for callers that look here."""
    from rankcli.simulate import simulate_clicks as _simulate_clicks

    return _simulate_clicks(ds, **kwargs)
