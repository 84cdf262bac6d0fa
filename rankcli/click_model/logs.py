"""A read click log coded for the click models: each result's item (its (query, document) pair, or its relevance
grade) and the sessions as the core's :class:`~rankcli.core.click_models.Sessions`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankcli.core.click_models import Sessions
from rankcli.errors import InputError, UsageError

BY = ("document", "relevance")


@dataclass
class CodedLog:
    """A log and its items. By document, item ``i`` is the pair (``item_query[i]``, ``item_document[i]``), codes into
    the log's ``queries`` and ``documents``; by relevance, the grade ``item_relevance[i]``."""

    log: object  # rankcli.formats.click_logs.SessionLog
    by: str
    sessions: Sessions
    item_query: np.ndarray | None = None
    item_document: np.ndarray | None = None
    item_relevance: np.ndarray | None = None

    @property
    def n_items(self) -> int:
        """Items in the log."""
        return self.sessions.n_items

    def impressions(self) -> np.ndarray:
        """How many results show each item."""
        return _item_counts(self.sessions.item, None, self.n_items)

    def clicks(self) -> np.ndarray:
        """How many clicks each item got."""
        return _item_counts(self.sessions.item, self.sessions.click, self.n_items)

    def summary(self) -> dict:
        """The log's counts, as model.json and the reports record them."""
        log = self.log
        return {"path": log.path, "format": log.format, "fingerprint": log.fingerprint,
                "sessions": int(log.n_sessions), "results": int(log.click.shape[0]),
                "clicks": int(log.click.sum()), "queries": int(len(log.queries)),
                "documents": int(len(log.documents)), "items": int(self.n_items),
                "max_rank": int(self.sessions.max_rank), **({"notes": log.notes} if log.notes else {})}


#: Rows counted at a time by :func:`_item_counts`.
COUNT_ROWS = 1 << 22


def _item_counts(item: np.ndarray, where: np.ndarray | None, n_items: int) -> np.ndarray:
    """``(n_items,)`` int64: the rows of each item (those with ``where`` set, when given), a block of rows at a time:
    ``bincount`` of a whole log would make an int64 copy of its items (and a float64 one of the clicks as weights),
    8 to 16 bytes a result at a fit's end."""
    out = np.zeros(n_items, np.int64)
    for a in range(0, item.shape[0], COUNT_ROWS):
        part = item[a:a + COUNT_ROWS]
        out += np.bincount(part if where is None else part[where[a:a + COUNT_ROWS]], minlength=n_items)
    return out


def session_of_row(offsets: np.ndarray) -> np.ndarray:
    """The session number of every row."""
    return np.repeat(np.arange(offsets.shape[0] - 1, dtype=np.int64), np.diff(offsets))


def code_log(log, by: str = "document", *, release: bool = False) -> CodedLog:
    """The items of ``log`` (a :class:`~rankcli.formats.click_logs.SessionLog`) by document or by relevance.

    ``release``: drop the log's per-row document codes (``log.document`` becomes None) as soon as the items are made
    from them, for a caller that needs only the items (a fit: 4 bytes a result less while it runs, and less at the
    peak of the coding)."""
    if by not in BY:
        raise UsageError(f"--by: expected document or relevance, got {by!r}")
    if by == "relevance":
        if log.relevance is None:
            raise InputError(f"{log.path}: --by relevance needs each result's grade, and the log has none (a rankcli "
                             "click log's relevance column; a table's relevance column)")
        if release:
            log.document = None
        grades, item = np.unique(log.relevance, return_inverse=True)
        sessions = Sessions(log.offsets, item.reshape(-1), log.click, int(grades.shape[0]))
        return CodedLog(log, by, sessions, item_relevance=grades)
    from rankcli.formats.session_log import integer_codes

    width = np.int64(max(len(log.documents), 1))
    keys = np.repeat(log.query * width, np.diff(log.offsets))
    keys += log.document
    if release:
        log.document = None
    item, pairs = integer_codes(keys)
    del keys
    sessions = Sessions(log.offsets, item, log.click, int(pairs.shape[0]))
    return CodedLog(log, by, sessions, item_query=pairs // width, item_document=pairs % width)
