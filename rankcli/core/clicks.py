"""Click models for simulating click logs: cascade and position-based (PBM), with randomised logging policies. Pure
numpy.

Models
------
Cascade (Craswell, Zoeter, Taylor and Ramsey, "An experimental comparison of click position-bias models", WSDM 2008;
as Bruch 2021, Robustness 3, uses it after Joachims et al. 2017). The user scans the displayed list from the top and
clicks a document of grade ``g`` with probability ``p[g]``; the first click ends the scan, and without a click the
scan ends at the end of the list::

    P(click at rank r) = p[g_r] * prod_{s < r} (1 - p[g_s])

The impression is the list up to and including the click.

Position-based model (Richardson, Dominowska and Ragno, "Predicting clicks: estimating the click-through rate for new
ads", WWW 2007; the examination hypothesis that inverse propensity scoring corrects, Joachims, Swaminathan and
Schnabel, "Unbiased learning-to-rank with biased feedback", WSDM 2017). The document at position ``r`` is examined
with probability ``theta_r = (1/r)**eta`` and, if examined, clicked with probability ``p[g]``, independently of the
other positions::

    P(click at r) = theta_r * p[g_r]

The whole list (or its top ``max_rank``) is displayed and every click kept.

Logging policies (:mod:`rankcli.core.policies`, Joachims et al. 2017): a fresh uniformly random order per impression
(the paper's random base ranker), a deterministic ranker's order, RandTop-n (its top n shuffled per impression) or the
swap intervention (its K-th document swapped with a uniformly random displayed position).

Implementation
--------------
Every function simulates all queries and all impressions at once; nothing loops over queries in Python. The Python
loops are over scan *positions* (at most :data:`SCAN_STEPS`) and over *chunks* of equal-size lists of at most
:data:`CHUNK_ENTRIES` cells, so memory stays bounded and per-query values broadcast instead of being gathered.

The cascade runs in two phases:

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

Randomness: one 64-bit draw per decision cell. Its top :data:`CLICK_BITS` bits decide the click (the probability is
rounded to a multiple of ``2**-24``, an error below ``3e-8``); lower bits pick the document to show (scan phase), give
the shuffle key (key method; its lowest bits are replaced by the document's index so that keys are unique within an
impression, equal random parts falling back to input order) or decide the examination (PBM). Same inputs and
generator state, same result; cascade results do not even depend on :data:`CHUNK_ENTRIES` (a test checks it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from rankcli.core.click_log import ClickLog, ListCollector, ScanCollector, impression_ids
from rankcli.core.policies import randomized_orders
from rankcli.errors import InputError, UsageError

__all__ = ["CHUNK_ENTRIES", "CLICK_BITS", "MODELS", "SCAN_STEPS", "ClickLog", "cascade", "cascade_randomized",
           "check_grades", "click_thresholds", "display_orders", "groups_by_size", "pbm", "simulate"]

CLICK_BITS = 24
_CLICK_MASK = np.uint64((1 << CLICK_BITS) - 1)
_KEY_BITS = 40  # key (random part + document index) occupies the 40 bits below the impression number when sorting
_KEY_END = np.uint64(1 << _KEY_BITS)
_LOW32 = np.uint64(0xFFFFFFFF)
#: Cells per chunk: arrays of at most this many (impression, document) cells are simulated at once.
CHUNK_ENTRIES = 1 << 19
#: Positions simulated step by step before the remaining long scans switch to the key method.
SCAN_STEPS = 16

MODELS = ("cascade", "pbm")


def click_thresholds(click_probs) -> np.ndarray:
    """Probabilities as thresholds on a 64-bit draw: ``draw >= t`` has probability ``p`` rounded to ``2**-24``.

    Only the top :data:`CLICK_BITS` bits of the draw decide, so its low 40 bits stay independent of the decision (they
    serve as the shuffle key). ``p = 0`` gives ``t = 2**64 - 1``: a click with probability ``2**-64``.

    Parameters
    ----------
    click_probs : sequence of float
        ``p[g]`` for every grade ``g``, each within [0, 1] (a :class:`UsageError` otherwise).

    Returns
    -------
    (n_grades,) uint64
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
    """``grades`` as int64, each within ``0..n_probs - 1`` (an :class:`InputError` naming the top grade otherwise).

    Parameters
    ----------
    grades : (n_rows,) int
        The grade of every row.
    n_probs : int
        The number of click probabilities, one per grade.
    """
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


class _Inputs(NamedTuple):
    """The checked inputs of every click model."""

    thresholds: np.ndarray  # per grade, see click_thresholds
    grades: np.ndarray  # int64
    offsets: np.ndarray  # int64
    impressions: int
    small_grades: np.ndarray  # the grades as uint8 when they fit: gathered per displayed document from a cached table


def _checked_inputs(grades, offsets, click_probs, impressions, max_rank) -> _Inputs:
    """What every click model checks first: the click thresholds per grade, the grades, int64 offsets, the impression
    count and the display limit."""
    thr = click_thresholds(click_probs)
    grades = check_grades(grades, thr.shape[0])
    offsets = np.asarray(offsets, dtype=np.int64)
    if impressions < 1:
        raise UsageError(f"impressions must be at least 1, got {impressions}")
    if max_rank is not None and max_rank < 1:
        raise UsageError(f"max_rank must be at least 1, got {max_rank}")
    if _jbits(offsets) > 20:
        raise InputError(f"a query has more than {1 << 20} documents; click simulation supports up to that, "
                         f"got {int(np.diff(offsets).max())}")
    small = grades.astype(np.uint8) if thr.shape[0] <= 256 else grades
    return _Inputs(thr, grades, offsets, int(impressions), small)


def groups_by_size(n_each: np.ndarray, cells_per_entry: int = 1):
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


@dataclass
class _Scanning:
    """The impressions still scanning, compacted after every step."""

    gid: np.ndarray  # impression ids
    start: np.ndarray  # first row of the impression's query
    n: np.ndarray  # uint64, its list size
    limit: np.ndarray  # the documents it may display
    shown: np.ndarray  # (k, t) int32, the documents shown so far (random order; no columns for a deterministic one)

    def keep(self, mask: np.ndarray) -> None:
        """Keep only the impressions where ``mask`` is true."""
        self.gid, self.start, self.n, self.limit, self.shown = (
            self.gid[mask], self.start[mask], self.n[mask], self.limit[mask], self.shown[mask])


def cascade(grades: np.ndarray, offsets: np.ndarray, click_probs, impressions: int, rng: np.random.Generator, *,
            display_rank: np.ndarray | None = None, max_rank: int | None = None,
            keep_no_click: bool = False, scan_steps: int | None = None) -> ClickLog:
    """Simulate ``impressions`` cascade impressions of every query (Craswell et al. 2008; see the module docstring).

    Parameters
    ----------
    grades : (n_rows,) int
        Relevance grade of every row, ``0 <= grade < len(click_probs)``.
    offsets : (n_queries + 1,) int64
        Query boundaries.
    click_probs : sequence of float
        ``p[g]``, the probability that a user who looks at a document of grade ``g`` clicks it.
    impressions : int
        Impressions simulated per query, at least 1.
    rng : numpy.random.Generator
        The randomness; the same generator state gives the same log.
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

    Returns
    -------
    ClickLog
        The kept impressions in (query, impression) order, and counts over all simulated impressions.
    """
    inp = _checked_inputs(grades, offsets, click_probs, impressions, max_rank)
    offsets, n_imp = inp.offsets, inp.impressions
    n_queries = offsets.shape[0] - 1
    coll = ScanCollector(n_queries, n_imp, inp.thresholds.shape[0])
    if n_queries == 0:
        return coll.finish(inp.grades, keep_no_click)
    sz = np.diff(offsets)
    at_rank = None
    if display_rank is not None:
        display_rank = np.asarray(display_rank, dtype=np.int64)
        at_rank = np.empty(offsets[-1], np.int64)  # at_rank[offsets[q] + r] = row shown at rank r
        at_rank[np.repeat(offsets[:-1], sz) + display_rank] = np.arange(offsets[-1], dtype=np.int64)
    n_of = np.repeat(sz, n_imp)  # list size of every impression (gid = q * impressions + i)
    limit = n_of if max_rank is None else np.minimum(n_of, max_rank)
    steps = min(SCAN_STEPS if scan_steps is None else int(scan_steps), int(limit.max()))
    scan = _Scanning(gid=np.arange(n_queries * n_imp, dtype=np.int64), start=np.repeat(offsets[:-1], n_imp),
                     n=n_of.astype(np.uint64), limit=limit, shown=np.empty((n_queries * n_imp, 0), np.int32))
    _cascade_scan(coll, scan, steps, inp, at_rank, rng)
    if scan.gid.shape[0]:
        scan.keep(scan.limit > steps)
    if scan.gid.shape[0]:
        _cascade_rest(coll, scan.gid, steps, inp, rng, n_of, scan.shown if at_rank is None else None,
                      display_rank, max_rank, keep_no_click)
    return coll.finish(inp.small_grades, keep_no_click)


def _cascade_scan(coll: ScanCollector, scan: _Scanning, steps: int, inp: _Inputs, at_rank: np.ndarray | None,
                  rng: np.random.Generator) -> None:
    """The scan phase: ``steps`` positions, one step for every impression in ``scan`` at once; ``scan`` keeps the
    impressions still scanning (no click yet, more documents to show). ``at_rank`` is the row at each rank of a
    deterministic order (``None``: a random order)."""
    min_lim = int(scan.limit.min())
    for t in range(steps):
        if t >= min_lim:  # lists shown to their end stop without a click
            scan.keep(scan.limit > t)
            if scan.gid.shape[0] == 0:
                break
            min_lim = int(scan.limit.min())
        raw = _draw(rng, scan.gid.shape[0])
        if at_rank is None:
            j = _unshown_document(raw, scan, rng)
            src = scan.start + j
        else:
            src = at_rank[scan.start + t]
        c = raw >= inp.thresholds[inp.small_grades[src]]
        coll.add(scan.gid, src, t + 1, c)
        go = ~c
        scan.keep(go)
        if at_rank is None:
            scan.shown = np.concatenate((scan.shown, j[go][:, None]), axis=1)
        if scan.gid.shape[0] == 0:
            break


def _unshown_document(raw: np.ndarray, scan: _Scanning, rng: np.random.Generator) -> np.ndarray:
    """The next document of every scanning impression of a random order: uniform in ``0..n-1`` from the low 32 bits
    of ``raw``, drawn again (``raw`` too, in place, to keep the click bits independent) while already shown."""
    j = (((raw & _LOW32) * scan.n) >> np.uint64(32)).astype(np.int32)
    if scan.shown.shape[1]:
        todo = np.flatnonzero((scan.shown == j[:, None]).any(axis=1))
        while todo.shape[0]:
            redraw = _draw(rng, todo.shape[0])
            raw[todo] = redraw
            j[todo] = (((redraw & _LOW32) * scan.n[todo]) >> np.uint64(32)).astype(np.int32)
            todo = todo[(scan.shown[todo] == j[todo][:, None]).any(axis=1)]
    return j


def _cascade_rest(coll, gids, done, inp, rng, n_of, shown_j, display_rank, max_rank, keep_no_click):
    """Finish impressions ``gids`` that showed ``done`` documents without a click, by the key method."""
    n_imp, grades, offsets, thr = inp.impressions, inp.grades, inp.offsets, inp.thresholds
    jb = _jbits(offsets)
    jb_u = np.uint64(jb)
    random_order = display_rank is None
    excluded = np.uint64(1 << (_KEY_BITS + 1))  # beyond _KEY_END: never the first click, never shown
    # Sorting a whole no-click list is needed only when it is kept, or to find its top max_rank in a random order.
    fast_drop = not keep_no_click and not (random_order and max_rank is not None)
    for idx, n in groups_by_size(n_of[gids]):
        gids_c = gids[idx]
        m = gids_c.shape[0]
        rows = offsets[gids_c // n_imp][:, None] + np.arange(n, dtype=np.int64)[None, :]  # (m, n)
        g = grades[rows]
        j = np.arange(n, dtype=np.uint64)
        raw = _draw(rng, (m, n))
        click = raw >= thr[g]  # decided by the top CLICK_BITS bits only
        if random_order:
            # The low 40 bits, independent of the click decision, with the document index in the lowest bits.
            key = np.bitwise_and(raw, _key_mask(jb), out=raw)
            np.bitwise_or(key, j, out=key)
            key[np.arange(m)[:, None], shown_j[idx, :done]] = excluded
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
        counts = np.bincount(imp_s, minlength=m)
        first_of = np.concatenate(([0], np.cumsum(counts)[:-1]))
        pos = np.arange(imp_s.shape[0], dtype=np.int64) - first_of[imp_s] + 1 + done
        c = click.reshape(-1)[imp_s * n + j_s]  # every shown click is the first one
        if max_rank is not None and random_order:
            inside = pos <= max_rank
            imp_s, j_s, pos, c = imp_s[inside], j_s[inside], pos[inside], c[inside]
        coll.add(gids_c[imp_s], rows[imp_s, j_s], pos, c)


def _display_orders(qs: np.ndarray, n: int, shown: int, inp: _Inputs, display_rank: np.ndarray | None,
                    randomize: tuple[str, int] | None, rng: np.random.Generator) -> np.ndarray:
    """:func:`display_orders` of the checked inputs ``inp``."""
    return display_orders(qs, n, shown, inp.offsets, inp.impressions, display_rank, randomize, rng)


def display_orders(qs: np.ndarray, n: int, shown: int, offsets: np.ndarray, impressions: int,
                   display_rank: np.ndarray | None, randomize: tuple[str, int] | None,
                   rng: np.random.Generator) -> np.ndarray:
    """The documents displayed by every impression of the equal-size lists ``qs`` (``n`` documents each, rows
    ``offsets[q]:offsets[q] + n``): a ``(len(qs) * impressions, shown)`` array of 0-based indices within the list,
    position by position, each query's impressions consecutive. ``display_rank`` None: a fresh uniformly random
    order per impression; else the ranker's order (0-based rank per row), randomised per impression by
    ``randomize`` (:func:`~rankcli.core.policies.randomized_orders`) when given."""
    if display_rank is None:
        # The whole list is shown: a full shuffle of every impression (Fisher-Yates per row, in C).
        return rng.permuted(np.broadcast_to(np.arange(n, dtype=np.int64), (qs.shape[0] * impressions, n)),
                            axis=1)[:, :shown]
    rows = offsets[qs][:, None] + np.arange(n, dtype=np.int64)[None, :]
    at_pos = np.argsort(display_rank[rows], axis=1, kind="stable")  # (G, n) document at position
    if randomize is None:
        return np.repeat(at_pos[:, :shown], impressions, axis=0)
    return randomized_orders(at_pos, impressions, randomize, shown, rng)[:, :shown]


def pbm(grades: np.ndarray, offsets: np.ndarray, click_probs, impressions: int, rng: np.random.Generator, *,
        eta: float = 1.0, display_rank: np.ndarray | None = None, max_rank: int | None = None,
        keep_no_click: bool = False, randomize: tuple[str, int] | None = None) -> ClickLog:
    """Simulate ``impressions`` position-based-model impressions of every query (Richardson et al. 2007; see the
    module docstring).

    The document at display position ``r`` (1-based) is examined with probability ``(1/r)**eta`` and, if examined,
    clicked with probability ``p[grade]``; every click is kept. The displayed list is the whole query, or its top
    ``max_rank``.

    Parameters
    ----------
    grades, offsets, click_probs, impressions, rng, display_rank, max_rank, keep_no_click
        As :func:`cascade`'s.
    eta : float
        The examination exponent, non-negative: ``theta_r = (1/r)**eta`` (0: every position examined).
    randomize : ("top", N) or ("swap", K), optional
        With a ``display_rank``: a randomised logging policy applied to the ranker's order per impression, see
        :func:`~rankcli.core.policies.randomized_orders`.

    Returns
    -------
    ClickLog
        With ``examined`` (per displayed document) and ``examined_by_position`` filled in.
    """
    if not (eta >= 0):
        raise UsageError(f"eta must be non-negative, got {eta:g}")
    inp = _checked_inputs(grades, offsets, click_probs, impressions, max_rank)
    offsets, n_imp, thr = inp.offsets, inp.impressions, inp.thresholds
    n_max = int(np.diff(offsets).max()) if offsets.shape[0] > 1 else 0
    r = np.arange(1, n_max + 2, dtype=np.float64)
    exam_thr = np.round((1.0 / r) ** float(eta) * (1 << CLICK_BITS)).astype(np.uint64)  # index = position - 1
    if display_rank is not None:
        display_rank = np.asarray(display_rank, dtype=np.int64)
    width = n_max if max_rank is None else min(n_max, max_rank)
    coll = ListCollector(offsets.shape[0] - 1, n_imp, thr.shape[0], width)
    for qs, n in groups_by_size(np.diff(offsets), n_imp):
        shown = n if max_rank is None else min(n, max_rank)  # documents displayed per impression
        order = _display_orders(qs, n, shown, inp, display_rank, randomize, rng)
        src = np.repeat(offsets[qs], n_imp)[:, None] + order  # (G * impressions, shown) source row at each position
        gr = inp.small_grades[src]
        # One draw per displayed cell, indexed by position (the cells are iid, so any indexing is the same model):
        # examination from bits 16..39, the click from bits 40..63, independent decisions.
        raw = _draw(rng, src.shape)
        examined = ((raw >> np.uint64(16)) & _CLICK_MASK) < exam_thr[None, :shown]
        coll.add(qs, src, gr, examined & (raw >= thr[gr]), examined)
    return coll.finish(keep_no_click)


def cascade_randomized(grades: np.ndarray, offsets: np.ndarray, click_probs, impressions: int,
                       rng: np.random.Generator, *, display_rank: np.ndarray, randomize: tuple[str, int],
                       max_rank: int | None = None, keep_no_click: bool = False) -> ClickLog:
    """Cascade impressions (:func:`cascade`) whose display order is the ranker's order randomised per impression
    (:func:`~rankcli.core.policies.randomized_orders`).

    Dense: every impression's displayed list gets a click decision per position at once and the scan stops at the
    first click (``argmax``), chunk by chunk of equal-size lists, no loop over queries.

    Parameters
    ----------
    grades, offsets, click_probs, impressions, rng, max_rank, keep_no_click
        As :func:`cascade`'s.
    display_rank : (n_rows,) int
        The ranker's 0-based rank of every row within its query.
    randomize : ("top", N) or ("swap", K)
        The randomisation, see :func:`~rankcli.core.policies.randomized_orders`.
    """
    inp = _checked_inputs(grades, offsets, click_probs, impressions, max_rank)
    offsets, n_imp = inp.offsets, inp.impressions
    coll = ScanCollector(offsets.shape[0] - 1, n_imp, inp.thresholds.shape[0])
    display_rank = np.asarray(display_rank, dtype=np.int64)
    for qs, n in groups_by_size(np.diff(offsets), n_imp):
        shown_n = n if max_rank is None else min(n, max_rank)
        order = _display_orders(qs, n, shown_n, inp, display_rank, randomize, rng)
        src = np.repeat(offsets[qs], n_imp)[:, None] + order  # (G * impressions, shown_n)
        c = _draw(rng, src.shape) >= inp.thresholds[inp.small_grades[src]]
        has = c.any(axis=1)
        length = np.where(has, c.argmax(axis=1) + 1, shown_n)  # displayed up to and including the first click
        shown = np.arange(shown_n)[None, :] < length[:, None]
        gid = impression_ids(qs, n_imp)
        pos = np.broadcast_to(np.arange(1, shown_n + 1, dtype=np.int64)[None, :], shown.shape)
        coll.add(np.broadcast_to(gid[:, None], shown.shape)[shown], src[shown], pos[shown], c[shown])
    return coll.finish(inp.small_grades, keep_no_click)


def simulate(model: str, grades, offsets, click_probs, impressions, rng, *, eta: float = 1.0,
             display_rank=None, max_rank=None, keep_no_click=False, randomize=None) -> ClickLog:
    """Simulate a click log with ``model`` (``"cascade"`` or ``"pbm"``), dispatching to :func:`cascade`,
    :func:`cascade_randomized` or :func:`pbm`.

    Parameters
    ----------
    model : str
        One of :data:`MODELS`.
    grades, offsets, click_probs, impressions, rng, display_rank, max_rank, keep_no_click
        As :func:`cascade`'s.
    eta : float
        PBM's examination exponent (ignored by the cascade).
    randomize : ("top", N) or ("swap", K), optional
        A randomised logging policy over ``display_rank`` (which it requires), see
        :func:`~rankcli.core.policies.randomized_orders`.
    """
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
