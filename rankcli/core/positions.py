"""The display positions of a click log, checked once for every reader (``rankcli propensity``, ``train
--propensity``, ``--pool-impressions``, ``--propensity learn``). Pure numpy.

A position is a whole number from 1 to :data:`MAX_POSITION`, and each position appears at most once within an
impression (one displayed list: one document per slot). A position repeated within an impression would count one slot's
clicks twice (a propensity of 0.885 where the truth was 0.44, measured), and a position beyond the limit would make
every per-position array as long as it (2^40 positions: 8 TiB). The work of the estimators is bounded by the positions
present (:func:`leading_positions`), the limit bounds what a propensity file may have to cover.
"""

from __future__ import annotations

import numpy as np

from rankcli.errors import InputError

#: The largest display position rankcli reads (docs/input-limits.md). A propensity file extrapolated to it (``--fit
#: power``) takes about 20 MB, within what IPS training reads (64 MiB); no real result list is this long.
MAX_POSITION = 100_000


def _impression_name(k: int, impression_ids: np.ndarray | None) -> str:
    return f"impression {k}" if impression_ids is None else f"impression qid {impression_ids[k]}"


def _row_note(row: int, offsets: np.ndarray, impression_ids: np.ndarray | None) -> str:
    k = int(np.searchsorted(offsets, row, side="right") - 1)
    return f"row {row}, {_impression_name(k, impression_ids)}"


def _as_whole_numbers(positions: np.ndarray, offsets: np.ndarray, impression_ids: np.ndarray | None) -> np.ndarray:
    """``positions`` checked to be whole numbers in ``1..MAX_POSITION`` (compared in their own type, so that a uint64
    beyond int64 is reported as written, never wrapped), as int64."""
    kind = positions.dtype.kind
    if kind not in "iuf":
        raise InputError(f"column position: expected whole numbers 1, 2, ..., got {positions.dtype} values")
    if kind == "f":
        bad = np.flatnonzero(~np.isfinite(positions) | (positions != np.floor(positions)))
        if bad.shape[0]:
            row = int(bad[0])
            where = _row_note(row, offsets, impression_ids)
            value = float(positions[row])
            raise InputError(f"column position: a missing value at {where}; positions are 1, 2, ..." if value != value
                             else f"column position: {value!r} at {where} is not a whole number; positions are 1, 2, "
                             "...")
    if positions.shape[0] == 0:
        return positions.astype(np.int64)
    low, high = positions.min(), positions.max()  # reductions: the rows are looked for only when one is out of range
    bad = np.flatnonzero(positions < 1) if low < 1 else np.zeros(0, np.int64)
    if bad.shape[0]:
        row = int(bad[0])
        raise InputError(f"column position: positions are 1-based, got {positions[row]} at "
                         f"{_row_note(row, offsets, impression_ids)}")
    bad = np.flatnonzero(positions > MAX_POSITION) if high > MAX_POSITION else np.zeros(0, np.int64)
    if bad.shape[0]:
        row = int(bad[0])
        value = int(positions[row]) if kind in "iu" else positions[row]
        raise InputError(f"column position: {value} at {_row_note(row, offsets, impression_ids)} is beyond the "
                         f"largest position rankcli reads ({MAX_POSITION:,}; docs/input-limits.md)")
    return positions.astype(np.int64)


def checked_positions(offsets: np.ndarray, positions: np.ndarray,
                      impression_ids: np.ndarray | None = None) -> np.ndarray:
    """The display positions of a click log's rows as int64, checked: whole numbers from 1 to :data:`MAX_POSITION`,
    none twice within one impression. Anything else is an :class:`InputError` naming the row and the impression.

    Parameters
    ----------
    offsets : (n_impressions + 1,) int
        Impression boundaries over the rows (one impression = one displayed list).
    positions : (n_rows,) array
        The ``position`` column as read (any numeric type; a uint64 beyond int64 is reported as written).
    impression_ids : (n_impressions,) array, optional
        How messages name each impression (the log's ``qid``); default its 0-based number.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    positions = _as_whole_numbers(np.asarray(positions), offsets, impression_ids)
    sizes = np.diff(offsets)
    if _in_display_order(offsets, sizes, positions):
        return positions
    impression = np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)
    order = np.lexsort((np.arange(positions.shape[0]), positions, impression))
    same = (impression[order[1:]] == impression[order[:-1]]) & (positions[order[1:]] == positions[order[:-1]])
    twice = np.flatnonzero(same)
    if twice.shape[0]:
        a, b = int(order[twice[0]]), int(order[twice[0] + 1])
        k = int(impression[a])
        raise InputError(f"{_impression_name(k, impression_ids)} shows position {int(positions[a])} twice (rows {a} "
                         f"and {b}); each displayed position holds one document, so a log must not repeat one "
                         "within an impression")
    return positions


def _in_display_order(offsets: np.ndarray, sizes: np.ndarray, positions: np.ndarray) -> bool:
    """Whether every impression shows 1, 2, ..., n in row order (rankcli's logs): then nothing repeats, and no sort is
    needed. One difference array, no per-row index arrays."""
    if positions.shape[0] == 0:
        return True
    if np.any(positions[offsets[:-1][sizes > 0]] != 1):
        return False
    step = np.diff(positions)
    bounds = offsets[1:-1]
    step[bounds[(bounds > 0) & (bounds < positions.shape[0])] - 1] = 1  # across an impression boundary anything goes
    return bool(np.all(step == 1))


def leading_positions(positions: np.ndarray) -> int:
    """How many positions ``1, 2, ..., E`` all occur in ``positions`` (checked, 1..MAX_POSITION): no estimate reaches
    past the first position that no row shows (it has no clicks), so the estimators' per-position arrays stop at
    ``E`` whatever the largest position is."""
    if positions.shape[0] == 0:
        return 0
    seen = np.bincount(positions, minlength=2)[1:] > 0
    missing = np.flatnonzero(~seen)
    return int(missing[0]) if missing.shape[0] else int(seen.shape[0])
