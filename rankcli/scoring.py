"""Scoring a Parquet dataset with a model batch by batch: what ``predict`` and ``eval --model`` do, in memory that does
not grow with the data.

The small columns (``qid``, ``label``, ``docid``) are read whole and checked as :func:`rankcli.formats.parquet.
read_dataset` checks them (queries contiguous: the same errors); the feature matrix never is. It is read a row group
at a time (:class:`rankcli.formats.feature_rows.ParquetFeatureRows`) and scored in batches of whole queries
(:func:`rankcli.formats.feature_rows.query_batches`: the row groups of a file that rankcli wrote, whose row groups end
on query boundaries; any other file's queries are kept whole too). Each row's score depends on its features only, so
the scores are those of scoring the whole matrix at once, bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rankcli.dataset import Dataset

#: The largest batch scored at once, in rows (a query longer than that is scored alone): ~35 MB of float32 features
#: at 136 features, next to the decoded row group.
DEFAULT_BATCH_ROWS = 65_536


@dataclass
class ScoringInput:
    """A dataset opened for scoring: the model, the small columns in memory, the features by row."""

    model: Any            # rankcli.train.TrainedModel
    index: Dataset        # qids, labels, docids, offsets, feature names; no features
    rows: Any             # rankcli.formats.feature_rows.ParquetFeatureRows
    path: Path


@dataclass
class ScoredBatch:
    """Rows ``start:stop`` of the dataset (whole queries) and their scores."""

    start: int
    stop: int
    qids: np.ndarray
    labels: np.ndarray
    docids: np.ndarray | None
    offsets: np.ndarray   # the batch's query boundaries, from 0
    scores: np.ndarray    # float64
    features: np.ndarray  # float32 (rows, features): what was scored (a view of the decoded row group)


def open_scoring(model_dir: Path | str, data: Path | str, *, label_required: bool = False,
                 docids: bool = True) -> ScoringInput:
    """Load the model directory ``model_dir`` and open the Parquet dataset ``data`` for scoring: its small columns
    read and checked (:func:`rankcli.formats.parquet.read_dataset`), its feature columns checked against the model's
    (a :class:`~rankcli.errors.SchemaError` naming ``data``).

    Parameters
    ----------
    label_required : refuse a file without ``label`` (``eval --model``); else the labels are NaN.
    docids : read the ``docid`` column when there is one.
    """
    from rankcli.formats.feature_rows import ParquetFeatureRows
    from rankcli.formats.parquet import read_dataset
    from rankcli.train import load_model

    model = load_model(model_dir)
    index = read_dataset(data, features=False, label_required=label_required, docids=docids)
    model.check_features(index.feature_names, str(data))
    return ScoringInput(model, index, ParquetFeatureRows(data, index.feature_names), Path(data))


def score_batches(source: ScoringInput, batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[ScoredBatch]:
    """The dataset of ``source`` scored in batches of whole queries of at most ``batch_rows`` rows (a longer query
    alone), in row order; non-finite scores are refused as :meth:`rankcli.train.TrainedModel.predict` refuses them,
    naming the row in the file."""
    from rankcli.formats.feature_rows import query_batches

    ds = source.index
    cuts = query_batches(ds.offsets, source.rows.row_group_ends(), max(1, int(batch_rows)))
    q_at = np.searchsorted(ds.offsets, cuts)
    for i in range(cuts.shape[0] - 1):
        start, stop = int(cuts[i]), int(cuts[i + 1])
        features = source.rows.block(start, stop)
        scores = source.model.score(features, str(source.path), first_row=start)
        yield ScoredBatch(start, stop, ds.qids[start:stop], ds.labels[start:stop],
                          None if ds.docids is None else ds.docids[start:stop],
                          ds.offsets[q_at[i]:q_at[i + 1] + 1] - start, scores, features)
    source.rows.release()
