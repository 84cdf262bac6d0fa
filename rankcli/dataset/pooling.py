"""Pooling datasets: several datasets' queries as one dataset (``rankcli experiment`` pools a directory's files).

Part of the data model's neighbourhood: it imports only numpy and :mod:`rankcli.dataset`.
"""

from __future__ import annotations

import numpy as np

from rankcli.dataset import Dataset


def concat_datasets(parts: list[Dataset]) -> Dataset:
    """Pool datasets query by query, in the order given.

    Parameters
    ----------
    parts : the datasets. A qid found in two of them is made distinct by renumbering every file's qids (file number
        ``i`` adds ``i * (max qid + 1)``), so that queries stay distinct. When the feature names differ, the features
        are padded with zeros to the widest and named ``f1 .. fN``. Document ids are kept when every part has them;
        the metadata is the first part's.
    """
    qids = [p.qids for p in parts]
    all_q = np.concatenate([p.qids[p.offsets[:-1]] for p in parts])
    if np.unique(all_q).shape[0] != all_q.shape[0]:
        # Same qid in two files: make them distinct (file number in the high digits).
        base = int(max(int(p.qids.max()) for p in parts if p.n_rows)) + 1
        qids = [p.qids + i * base for i, p in enumerate(parts)]
    names = parts[0].feature_names
    for p in parts[1:]:
        if p.feature_names != names:
            width = max(len(names), len(p.feature_names))
            names = [f"f{i}" for i in range(1, width + 1)]
    width = len(names)

    def pad(f: np.ndarray) -> np.ndarray:
        return f if f.shape[1] == width else np.hstack([f, np.zeros((f.shape[0], width - f.shape[1]), np.float32)])

    sizes = np.concatenate([np.diff(p.offsets) for p in parts])
    docids = (np.concatenate([p.docids for p in parts]) if all(p.docids is not None for p in parts) else None)
    return Dataset(qids=np.concatenate(qids), labels=np.concatenate([p.labels for p in parts]),
                   features=np.vstack([pad(p.features) for p in parts]).astype(np.float32), feature_names=names,
                   docids=docids, offsets=np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
                   metadata=dict(parts[0].metadata))
