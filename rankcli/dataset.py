"""The in-memory dataset: flat numpy arrays sorted by query, plus offsets. Independent of any file format."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rankcli.core.groups import offsets_from_qids


@dataclass
class Dataset:
    """Rows of a ranking dataset, queries contiguous.

    ``features`` is ``(n_rows, n_features)`` float32 (or ``None`` when not loaded); ``docids`` is an object array of
    strings or ``None``; ``offsets`` has length ``n_queries + 1``.
    """

    qids: np.ndarray
    labels: np.ndarray
    features: np.ndarray | None = None
    feature_names: list[str] = field(default_factory=list)
    docids: np.ndarray | None = None
    offsets: np.ndarray | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.offsets is None:
            self.offsets = offsets_from_qids(self.qids)

    @property
    def n_rows(self) -> int:
        return int(self.qids.shape[0])

    @property
    def n_queries(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    def take_queries(self, query_numbers: np.ndarray) -> Dataset:
        """A new dataset with the given queries (by position), in the given order."""
        query_numbers = np.asarray(query_numbers, dtype=np.int64)
        sz = np.diff(self.offsets)[query_numbers]
        starts = self.offsets[query_numbers]
        new_offsets = np.concatenate(([0], np.cumsum(sz))).astype(np.int64)
        rows = np.repeat(starts - new_offsets[:-1], sz) + np.arange(new_offsets[-1], dtype=np.int64)
        return self.take_rows(rows, new_offsets)

    def take_rows(self, rows: np.ndarray, offsets: np.ndarray | None = None) -> Dataset:
        return Dataset(
            qids=self.qids[rows],
            labels=self.labels[rows],
            features=None if self.features is None else self.features[rows],
            feature_names=list(self.feature_names),
            docids=None if self.docids is None else self.docids[rows],
            offsets=offsets,
            metadata=dict(self.metadata),
            extra={k: v[rows] for k, v in self.extra.items()},
        )
