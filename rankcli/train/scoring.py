"""Scoring a Parquet dataset with a model batch by batch: what ``predict`` and ``eval --model`` do, in memory that does
not grow with the data.

The small columns (``qid``, ``label``, ``docid``) are read whole and checked as :func:`rankcli.formats.parquet.
read_dataset` checks them (queries contiguous: the same errors); the feature matrix never is. It is read a row group
at a time (:class:`rankcli.formats.feature_rows.ParquetFeatureRows`) and scored in batches of whole queries
(:func:`rankcli.formats.feature_rows.query_batches`: the row groups of a file that rankcli wrote, whose row groups end
on query boundaries; any other file's queries are kept whole too). Raw features get the model's normalisation batch
by batch (:meth:`rankcli.train.TrainedModel.input_transform`: decided once per file, applied to whole queries). Each
row's score depends on its features only, so the scores are those of scoring the whole matrix at once, bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rankcli.dataset import Dataset
from rankcli.train import load_model

#: The largest batch scored at once, in rows (a query longer than that is scored alone): ~35 MB of float32 features
#: at 136 features, next to the decoded row group.
DEFAULT_BATCH_ROWS = 65_536


@dataclass
class ScoringInput:
    """A dataset opened for scoring: the model, the small columns in memory, the features by row."""

    model: Any            # rankcli.train.TrainedModel
    index: Dataset        # qids, offsets, feature names (labels and docids too, unless read by batch); no features
    rows: Any             # rankcli.formats.feature_rows.ParquetFeatureRows
    path: Path
    by_batch: tuple[bool, bool] = (False, False)  # labels, docids read with each batch (not held in ``index``)
    # the normalisation still to apply to each batch (rankcli.dataset.feature_transform.pending), or None
    transform: Any = None


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
    features: np.ndarray | None = None  # float32 (rows, features) with ``features=True``: what was scored


def open_scoring(model_dir: Path | str, data: Path | str, *, label_required: bool = False,
                 docids: bool = True, by_batch: bool = False) -> ScoringInput:
    """Load the model directory ``model_dir`` and open the Parquet dataset ``data`` for scoring: its small columns
    read and checked (:func:`rankcli.formats.parquet.read_dataset`), its feature columns checked against the model's
    (a :class:`~rankcli.errors.SchemaError` naming ``data``).

    Parameters
    ----------
    label_required : refuse a file without ``label`` (``eval --model``); else the labels are NaN.
    docids : read the ``docid`` column when there is one.
    by_batch : hold only the query ids in memory and read the labels and docids with each batch (memory that does
        not grow with the rows beyond 8 bytes each).
    """
    from rankcli.formats.feature_rows import ParquetFeatureRows
    from rankcli.formats.parquet import read_dataset, read_metadata, read_query_index, require_columns

    model = load_model(model_dir)
    if by_batch:
        qids, offsets, names, has_labels = read_query_index(data)
        if label_required:
            require_columns(data, names + (["label"] if has_labels else []), ["label"])
        index = Dataset(qids=qids, labels=np.zeros(0), feature_names=names, offsets=offsets)
    else:
        index = read_dataset(data, features=False, label_required=label_required, docids=docids)
    model.check_features(index.feature_names, str(data))
    # decided once for the file: raw data gets the model's normalisation, data normalised otherwise is refused
    transform = model.input_transform(read_metadata(data), str(data))
    return ScoringInput(model, index, ParquetFeatureRows(data, index.feature_names), Path(data),
                        (True, docids) if by_batch else (False, False), transform)


def score_batches(source: ScoringInput, batch_rows: int = DEFAULT_BATCH_ROWS, *,
                  features: bool = False) -> Iterator[ScoredBatch]:
    """The dataset of ``source`` scored in batches of whole queries of at most ``batch_rows`` rows (a longer query
    alone), in row order; non-finite scores are refused as :meth:`rankcli.train.TrainedModel.predict` refuses them,
    naming the row in the file. With ``features``, each batch carries its feature rows (a copy: a batch kept by the
    caller then holds no decoded row group)."""
    from rankcli.dataset.feature_transform import apply
    from rankcli.formats.feature_rows import query_batches

    ds = source.index
    cuts = query_batches(ds.offsets, source.rows.row_group_ends(), max(1, int(batch_rows)))
    q_at = np.searchsorted(ds.offsets, cuts)
    for i in range(cuts.shape[0] - 1):
        start, stop = int(cuts[i]), int(cuts[i + 1])
        offsets = ds.offsets[q_at[i]:q_at[i + 1] + 1] - start
        block = apply(source.rows.block(start, stop), offsets, source.transform, ds.feature_names,
                      str(source.path), start)
        scores = source.model.score(block, str(source.path), first_row=start)
        kept = np.array(block) if features else None
        del block
        if any(source.by_batch):
            labels, docids = source.rows.labels_and_docids(start, stop, labels=source.by_batch[0],
                                                           docids=source.by_batch[1])
        else:
            labels, docids = ds.labels[start:stop], None if ds.docids is None else ds.docids[start:stop]
        yield ScoredBatch(start, stop, ds.qids[start:stop], labels, docids, offsets, scores, kept)
    source.rows.release()
