"""Test helper: the bundled LETOR sample (``sample_data/letor``) as :class:`rankcli.dataset.Dataset` and Parquet.

Read with scikit-learn's ``load_svmlight_file`` (an independent reader), so that these tests do not depend on
``rankcli convert``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from rankcli.dataset import Dataset

LETOR = Path(__file__).resolve().parent.parent / "sample_data" / "letor"
_DOCID = re.compile(r"#\s*docid\s*=\s*(\S+)")


def load_letor(split: str, n_features: int | None = None) -> Dataset:
    from sklearn.datasets import load_svmlight_file

    path = LETOR / f"{split}.txt"
    X, y, qid = load_svmlight_file(str(path), query_id=True, n_features=n_features, zero_based=False)
    docids = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            m = _DOCID.search(line)
            docids.append(m.group(1) if m else None)
    n = X.shape[1]
    return Dataset(qids=qid.astype(np.int64), labels=y.astype(np.float64),
                   features=np.asarray(X.todense(), dtype=np.float32), feature_names=[f"f{i}" for i in range(1, n + 1)],
                   docids=np.array(docids, dtype=object) if all(d is not None for d in docids) else None)


def write_letor(directory: Path, splits=("train", "vali", "test"), n_features: int | None = None) -> dict[str, Path]:
    from rankcli.formats.parquet import write_dataset

    if n_features is None:
        n_features = max(load_letor(s).n_features for s in splits)
    out = {}
    for s in splits:
        out[s] = Path(directory) / f"{s}.parquet"
        write_dataset(out[s], load_letor(s, n_features))
    return out
