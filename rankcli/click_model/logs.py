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
        return np.bincount(self.sessions.item, minlength=self.n_items)

    def clicks(self) -> np.ndarray:
        """How many clicks each item got."""
        return np.bincount(self.sessions.item, weights=self.sessions.click, minlength=self.n_items).astype(np.int64)

    def summary(self) -> dict:
        """The log's counts, as model.json and the reports record them."""
        log = self.log
        return {"path": log.path, "format": log.format, "fingerprint": log.fingerprint,
                "sessions": int(log.n_sessions), "results": int(log.click.shape[0]),
                "clicks": int(log.click.sum()), "queries": int(len(log.queries)),
                "documents": int(len(log.documents)), "items": int(self.n_items),
                "max_rank": int(self.sessions.max_rank), **({"notes": log.notes} if log.notes else {})}


def session_of_row(offsets: np.ndarray) -> np.ndarray:
    """The session number of every row."""
    return np.repeat(np.arange(offsets.shape[0] - 1, dtype=np.int64), np.diff(offsets))


def code_log(log, by: str = "document") -> CodedLog:
    """The items of ``log`` (a :class:`~rankcli.formats.click_logs.SessionLog`) by document or by relevance."""
    if by not in BY:
        raise UsageError(f"--by: expected document or relevance, got {by!r}")
    if by == "relevance":
        if log.relevance is None:
            raise InputError(f"{log.path}: --by relevance needs each result's grade, and the log has none (a rankcli "
                             "click log's relevance column; a table's relevance column)")
        grades, item = np.unique(log.relevance, return_inverse=True)
        sessions = Sessions(log.offsets, item.reshape(-1), log.click, int(grades.shape[0]))
        return CodedLog(log, by, sessions, item_relevance=grades)
    from rankcli.formats.session_log import integer_codes

    width = np.int64(max(len(log.documents), 1))
    keys = np.repeat(log.query * width, np.diff(log.offsets))
    keys += log.document
    item, pairs = integer_codes(keys)
    del keys
    sessions = Sessions(log.offsets, item, log.click, int(pairs.shape[0]))
    return CodedLog(log, by, sessions, item_query=pairs // width, item_document=pairs % width)
