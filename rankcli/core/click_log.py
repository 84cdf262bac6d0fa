"""The click log a click model produces, and the two collectors that assemble one from simulated cells. Pure numpy.

A simulator produces the displayed documents of many impressions in whatever order its vectorised steps find them;
the collectors count them (per grade, per position) and put them in (query, impression, position) order:

- :class:`ScanCollector` takes *cells* (impression id, source row, position, click) one scan step or one chunk at a
  time, as the cascade model finds them, and sorts them into place at the end;
- :class:`ListCollector` takes whole displayed *lists* (every impression of a chunk shows the same number of
  documents), as the position-based model makes them.

Impression ids are ``gid = query * impressions + impression``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np


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
        """Impressions in the log (simulated minus dropped)."""
        return int(self.offsets.shape[0] - 1)


def impression_ids(queries: np.ndarray, impressions: int) -> np.ndarray:
    """The ids ``q * impressions + i`` of every impression of ``queries``, each query's ``impressions`` in a row."""
    return (np.repeat(queries * impressions, impressions)
            + np.tile(np.arange(impressions, dtype=np.int64), queries.shape[0]))


def _add_into(acc: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``acc + values`` for count vectors of possibly different lengths (the shorter one padded with zeros)."""
    if values.shape[0] > acc.shape[0]:
        acc = np.concatenate((acc, np.zeros(values.shape[0] - acc.shape[0], np.int64)))
    acc[: values.shape[0]] += values.astype(np.int64)
    return acc


class _Cells(NamedTuple):
    """Displayed cells added at once: arrays of one length, or scalars (one value for every cell of the part)."""

    gid: np.ndarray
    rows: np.ndarray
    positions: np.ndarray | int
    clicks: np.ndarray


class ScanCollector:
    """Gathers displayed cells step by step and chunk by chunk; puts them in (query, impression, position) order at
    the end (:meth:`finish`).

    Parameters
    ----------
    n_queries : int
        Source queries simulated.
    impressions : int
        Impressions per query.
    n_grades : int
        Grades ``0..n_grades - 1`` counted in ``shown_by_grade`` and ``clicks_by_grade``.
    """

    def __init__(self, n_queries: int, impressions: int, n_grades: int):
        self.impressions = impressions
        self.n_gid = n_queries * impressions
        self.n_grades = n_grades
        self.parts: list[_Cells] = []
        # Documents shown in no-click impressions that were dropped without being materialised.
        self.extra_shown_g = np.zeros(n_grades, np.int64)
        self.extra_shown_p = np.zeros(0, np.int64)

    def add_unmaterialised(self, grades: np.ndarray, counts: np.ndarray, positions_from: int,
                           lengths: np.ndarray) -> None:
        """Count dropped no-click impressions without materialising them.

        Parameters
        ----------
        grades : (M, n) int
            Grade of every document of the impressions' lists.
        counts : (M, n) bool or int
            Whether (how often) each document was shown.
        positions_from : int
            Positions already counted for these impressions (their scan phase).
        lengths : (M,) int
            Documents each impression showed after ``positions_from``.
        """
        self.extra_shown_g += np.bincount(grades.ravel(), weights=counts.ravel(),
                                          minlength=self.n_grades)[: self.n_grades].astype(np.int64)
        lengths = lengths[lengths > 0]
        if lengths.size:
            at_least = np.bincount(lengths)[::-1].cumsum()[::-1][1:]  # impressions showing >= k more documents
            self.extra_shown_p = _add_into(self.extra_shown_p,
                                           np.concatenate((np.zeros(positions_from, np.int64), at_least)))

    def add(self, gid, rows, positions, clicks) -> None:
        """Add displayed cells: impression ids ``gid``, source ``rows``, 1-based ``positions`` (an array, or one int
        for all) and ``clicks`` (bool), one entry per cell."""
        self.parts.append(_Cells(gid, rows, positions, clicks))

    def _concatenated(self) -> _Cells:
        sizes = [np.shape(p.gid)[0] for p in self.parts]

        def cat(name, dtype):
            arrs = [np.asarray(getattr(p, name)) for p in self.parts]
            if not arrs:
                return np.zeros(0, dtype)
            if all(a.ndim == 0 for a in arrs):  # one value per part (the scan phase's positions)
                return np.repeat(np.array([a.item() for a in arrs], dtype=dtype), sizes)
            return np.concatenate([np.broadcast_to(a, (k,)) for a, k in zip(arrs, sizes)]).astype(dtype, copy=False)

        return _Cells(cat("gid", np.int64), cat("rows", np.int64), cat("positions", np.int64), cat("clicks", bool))

    def finish(self, grades: np.ndarray, keep_no_click: bool) -> ClickLog:
        """The log of every cell added, in (query, impression, position) order.

        Parameters
        ----------
        grades : (n_rows,) int
            Grade of every source row.
        keep_no_click : bool
            Keep impressions without a click; otherwise they are dropped (and counted in ``dropped``).
        """
        gid, rows, positions, clicks = self._concatenated()
        ng = self.n_grades
        gr = grades[rows]
        shown_g = np.bincount(gr, minlength=ng)[:ng] + self.extra_shown_g
        clicks_g = np.bincount(gr[clicks], minlength=ng)[:ng]
        shown_p = _add_into(self.extra_shown_p.copy(), np.bincount(positions - 1))
        clicks_p = _add_into(np.zeros(shown_p.shape[0], np.int64), np.bincount(positions[clicks] - 1))
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
            rows=out_rows, offsets=offsets, query=kept // self.impressions, impression=kept % self.impressions,
            clicks=out_clicks, positions=out_pos, examined=None, n_impressions=self.n_gid, dropped=dropped,
            shown_by_grade=shown_g, clicks_by_grade=clicks_g, shown_by_position=shown_p,
            clicks_by_position=clicks_p,
        )


class _Lists(NamedTuple):
    """Whole displayed lists added at once, per impression and flattened per cell."""

    gid: np.ndarray  # (k,) impression ids
    length: np.ndarray  # (k,) documents displayed
    has_click: np.ndarray  # (k,) bool
    rows: np.ndarray  # (sum of length,) source rows, impression by impression
    clicks: np.ndarray  # bool, as rows
    examined: np.ndarray  # bool, as rows


class ListCollector:
    """Gathers whole displayed lists with their examinations and clicks, chunk by chunk, and counts them; puts them
    in (query, impression) order at the end (:meth:`finish`).

    Parameters
    ----------
    n_queries, impressions, n_grades : int
        As :class:`ScanCollector`'s.
    width : int
        The most positions any impression displays.
    """

    def __init__(self, n_queries: int, impressions: int, n_grades: int, width: int):
        self.impressions = impressions
        self.n_impressions = n_queries * impressions
        self.n_grades = n_grades
        self.shown_g = np.zeros(n_grades, np.int64)
        self.clicks_g = np.zeros(n_grades, np.int64)
        self.shown_p = np.zeros(width, np.int64)
        self.clicks_p = np.zeros(width, np.int64)
        self.exam_p = np.zeros(width, np.int64)
        self.parts: list[_Lists] = []

    def add(self, queries: np.ndarray, src: np.ndarray, grades: np.ndarray, clicks: np.ndarray,
            examined: np.ndarray) -> None:
        """Add every impression of ``queries``: ``src``, ``grades``, ``clicks`` and ``examined`` are
        ``(len(queries) * impressions, L)``, the source row, grade, click and examination at each displayed position,
        each query's impressions in consecutive rows."""
        n_grades = self.n_grades
        m, L = src.shape
        self.shown_g += np.bincount(grades.reshape(-1), minlength=n_grades)[:n_grades]
        self.clicks_g += np.bincount(grades[clicks], minlength=n_grades)[:n_grades]
        self.shown_p[:L] += m
        self.clicks_p[:L] += clicks.sum(axis=0)
        self.exam_p[:L] += examined.sum(axis=0)
        self.parts.append(_Lists(impression_ids(queries, self.impressions), np.full(m, L, np.int64),
                                 clicks.any(axis=1), src.reshape(-1), clicks.reshape(-1), examined.reshape(-1)))

    def finish(self, keep_no_click: bool) -> ClickLog:
        """The log of every list added, impressions in (query, impression) order; without ``keep_no_click`` the
        impressions without a click are dropped (and counted in ``dropped``)."""
        def cat(name, dtype):
            parts = [getattr(p, name) for p in self.parts]
            return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

        gid, lengths, has = cat("gid", np.int64), cat("length", np.int64), cat("has_click", bool)
        first = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
        chosen = np.flatnonzero(has) if not keep_no_click else np.arange(gid.shape[0])
        chosen = chosen[np.argsort(gid[chosen], kind="stable")]  # impressions in (query, impression) order
        out_len = lengths[chosen]
        offsets_out = np.concatenate(([0], np.cumsum(out_len))).astype(np.int64)
        within = np.arange(offsets_out[-1], dtype=np.int64) - np.repeat(offsets_out[:-1], out_len)
        idx = np.repeat(first[chosen], out_len) + within
        kept = gid[chosen]
        return ClickLog(
            rows=cat("rows", np.int64)[idx], offsets=offsets_out, query=kept // self.impressions,
            impression=kept % self.impressions, clicks=cat("clicks", bool)[idx].astype(np.int8),
            positions=(within + 1).astype(np.int32), examined=cat("examined", bool)[idx],
            n_impressions=self.n_impressions, dropped=int(gid.shape[0] - chosen.shape[0]),
            shown_by_grade=self.shown_g, clicks_by_grade=self.clicks_g, shown_by_position=self.shown_p,
            clicks_by_position=self.clicks_p, examined_by_position=self.exam_p,
        )
