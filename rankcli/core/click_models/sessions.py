"""A click log as the click models see it: sessions as contiguous rows, laid out as rank-major blocks. Pure numpy.

A *session* is one result list shown for one query: rows ``offsets[s]:offsets[s + 1]`` in rank order (rank 1 first),
each with the *item* whose parameters it uses (a (query, document) pair, or a relevance grade with ``--by
relevance``) and its click. Every model works on :class:`Block` objects: the sessions of one length ``L`` (at most
:data:`CHUNK_SESSIONS` of them) as ``(L, m)`` matrices, rank ``k`` (0-based) in row ``k``, so that a recursion over
ranks is ``L`` steps over contiguous vectors of ``m`` sessions and no Python loop runs over sessions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from rankcli.errors import InputError

#: Sessions per block: each (L, m) float64 temporary then stays within a few megabytes (the CPU's cache).
CHUNK_SESSIONS = 1 << 14


@dataclass
class Sessions:
    """The sessions of a click log, coded.

    Parameters
    ----------
    offsets : (S + 1,) int64
        Session ``s`` is rows ``offsets[s]:offsets[s + 1]``, in rank order; no session is empty.
    item : (N,) int
        The item (0..n_items - 1) whose per-item parameters each row uses.
    click : (N,) bool
        Whether the row's result was clicked.
    n_items : int
        The number of items (parameters per item family).
    group : (S,) int, optional
        Independent sub-logs fitted side by side, each with its own rank and global parameters (items must not be
        shared between groups); default one group.
    n_groups : int
        The number of groups.
    weight : (S,) float, optional
        A weight per session (a bootstrap's multiplicities); default 1.
    """

    offsets: np.ndarray
    item: np.ndarray
    click: np.ndarray
    n_items: int
    group: np.ndarray | None = None
    n_groups: int = 1
    weight: np.ndarray | None = None
    _blocks: list | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.offsets = np.asarray(self.offsets, dtype=np.int64)
        self.click = np.asarray(self.click, dtype=bool)
        dtype = np.int32 if self.n_items < (1 << 31) else np.int64
        self.item = np.asarray(self.item, dtype=dtype)
        if self.offsets.shape[0] < 1 or self.offsets[0] != 0 or self.offsets[-1] != self.item.shape[0]:
            raise InputError("sessions: offsets must run from 0 to the number of rows")
        if self.n_sessions and np.any(np.diff(self.offsets) < 1):
            raise InputError("sessions: a session has no results")
        if self.item.shape != self.click.shape:
            raise InputError("sessions: one item and one click per row")

    @property
    def n_sessions(self) -> int:
        """Sessions in the log."""
        return int(self.offsets.shape[0] - 1)

    @property
    def lengths(self) -> np.ndarray:
        """Results per session."""
        return np.diff(self.offsets)

    @property
    def max_rank(self) -> int:
        """The longest session's length (0 without sessions)."""
        return int(self.lengths.max()) if self.n_sessions else 0

    def blocks(self) -> list[Block]:
        """The sessions as blocks, by length then session number (built once, then reused)."""
        if self._blocks is None:
            self._blocks = make_blocks(self)
        return self._blocks


@dataclass
class Block:
    """Sessions of one length ``L`` as ``(L, m)`` matrices: rank ``k`` (0-based) of the ``j``-th session in
    ``[k, j]``. ``cells`` is the block's range in the block-ordered concatenation of every cell (see
    :func:`cell_items`)."""

    sessions: np.ndarray  # (m,) session numbers
    item: np.ndarray  # (L, m)
    click: np.ndarray  # (L, m) bool
    group: np.ndarray | None  # (m,) or None (one group)
    weight: np.ndarray | None  # (m,) or None (every session weighs 1)
    cells: slice

    @property
    def L(self) -> int:  # noqa: N802 - the book's name for a list's length
        """Results per session."""
        return int(self.item.shape[0])

    @property
    def m(self) -> int:
        """Sessions in the block."""
        return int(self.item.shape[1])

    @property
    def c(self) -> np.ndarray:
        """The clicks as float64 (0.0 / 1.0), made afresh each time: kept, they would be a fit's largest per-row
        array (8 bytes a result), for a conversion that costs little beside an E-step."""
        return self.click.astype(np.float64)

    @cached_property
    def last(self) -> np.ndarray:
        """The 0-based rank of each session's last click; -1 for a session without a click."""
        any_click = self.click.any(axis=0)
        last = self.L - 1 - np.argmax(self.click[::-1], axis=0)
        return np.where(any_click, last, -1)

    @cached_property
    def first(self) -> np.ndarray:
        """The 0-based rank of each session's first click; ``L`` for a session without a click."""
        any_click = self.click.any(axis=0)
        return np.where(any_click, np.argmax(self.click, axis=0), self.L)

    @cached_property
    def rank(self) -> np.ndarray:
        """``(L, 1)``: the 0-based rank of each row."""
        return np.arange(self.L)[:, None]

    @cached_property
    def none_after(self) -> np.ndarray:
        """``(L, m)`` bool: no click below rank ``k`` (every rank of a session without a click)."""
        return self.rank >= self.last[None, :]

    @cached_property
    def previous_click(self) -> np.ndarray:
        """``(L, m)`` int: the 1-based rank of the last click above each row; 0 when there is none."""
        marks = np.where(self.click, self.rank + 1, 0)
        prev = np.zeros_like(marks)
        if self.L > 1:
            prev[1:] = np.maximum.accumulate(marks[:-1], axis=0)
        return prev

    def weigh(self, values: np.ndarray) -> np.ndarray:
        """``values`` (broadcastable to ``(L, m)``) times each session's weight."""
        return values if self.weight is None else values * self.weight[None, :]


def make_blocks(sessions: Sessions, chunk: int = CHUNK_SESSIONS) -> list[Block]:
    """The blocks of ``sessions``: for each session length, its sessions in runs of at most ``chunk``."""
    lengths = sessions.lengths
    blocks, start = [], 0
    for L in np.unique(lengths):
        members = np.flatnonzero(lengths == L)
        for a in range(0, members.shape[0], chunk):
            sess = members[a:a + chunk]
            rows = sessions.offsets[sess][None, :] + np.arange(int(L))[:, None]
            n = rows.size
            blocks.append(Block(
                sessions=sess, item=sessions.item[rows], click=sessions.click[rows],
                group=None if sessions.group is None else np.asarray(sessions.group)[sess],
                weight=None if sessions.weight is None else np.asarray(sessions.weight, dtype=np.float64)[sess],
                cells=slice(start, start + n)))
            start += n
    return blocks


def cell_items(blocks: list[Block]) -> np.ndarray:
    """Every block's items, raveled and concatenated in block order (the order of the blocks' ``cells``)."""
    if not blocks:
        return np.zeros(0, np.int64)
    return np.concatenate([b.item.ravel() for b in blocks])


def subset(sessions: Sessions, chosen: np.ndarray) -> Sessions:
    """The sessions numbered ``chosen`` (ascending or not), as a log of their own with the same items."""
    chosen = np.asarray(chosen, dtype=np.int64)
    lengths = sessions.lengths[chosen]
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    rows = np.repeat(sessions.offsets[chosen], lengths) + (np.arange(offsets[-1]) - np.repeat(offsets[:-1], lengths))
    return Sessions(offsets, sessions.item[rows], sessions.click[rows], sessions.n_items,
                    group=None if sessions.group is None else np.asarray(sessions.group)[chosen],
                    n_groups=sessions.n_groups,
                    weight=None if sessions.weight is None else np.asarray(sessions.weight)[chosen])
