"""Which feature transform a dataset has had, and the one place that brings data to the transform a model expects.

A dataset file records the normalisation ``rankcli convert --normalize`` gave it in its footer (``rankcli.normalize``,
the JSON of :meth:`rankcli.core.normalize.Normalization.as_dict`); a model records the transform of its training data
in ``rankcli.json`` (``normalize``; absent or null: raw features). Before a model scores data, :func:`conform` (a
whole dataset) or :func:`pending` + :func:`apply` (batch by batch) make the data's features what the model was
trained on:

- data recorded as normalised exactly as the model's training data was (the same method and scope, and per dataset
  the same statistics) is used as it is: never normalised twice;
- raw data (no record) is normalised with the model's transform (per dataset: the training data's statistics);
- anything else (data normalised another way, or normalised data for a model trained on raw features) is an
  :class:`~rankcli.errors.InputError` saying what to do: a model is never fed features it was not trained on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from rankcli.core.normalize import METHODS, SCOPES, DatasetStats, Normalization, normalize
from rankcli.dataset import Dataset
from rankcli.errors import InputError, UsageError

#: The footer key (``rankcli.normalize``) and the ``rankcli.json`` key of the transform.
FOOTER_KEY = "normalize"


def recorded(metadata: dict, where: str) -> Normalization | None:
    """The transform a dataset's footer metadata (:func:`rankcli.formats.parquet.read_metadata`) records, or None for
    raw features; ``where`` names the file in errors."""
    text = (metadata or {}).get(FOOTER_KEY)
    if text is None:
        return None
    try:
        obj = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        raise InputError(f"{where}: footer key rankcli.{FOOTER_KEY} is not JSON, got {str(text)[:60]!r}") from None
    return None if obj is None else Normalization.from_dict(obj, f"{where}: footer key rankcli.{FOOTER_KEY}")


def _describe(t: Normalization | None) -> str:
    return "raw features" if t is None else f"features normalised {t.describe()}"


def pending(have: Normalization | None, want: Normalization | None, what: str,
            reference: str = "the model's training data") -> Normalization | None:
    """The transform still to apply to data that has had ``have`` so that it has had ``want`` (None: nothing to do).

    Parameters
    ----------
    have : the data's recorded transform (:func:`recorded`), None for raw features.
    want : the transform of ``reference`` (the data a model was trained on), None for raw features.
    what : the data, for messages. reference : the data that had ``want``, for messages.
    """
    if have == want:
        return None
    if have is None:
        return want
    if want is not None and (have.method, have.per) == (want.method, want.per):
        problem = f"{what} was normalised {have.describe()} with other statistics than {reference}"
    else:
        problem = f"{what} has {_describe(have)}, but {reference} had {_describe(want)}"
    fix = "give the raw data (convert it without --normalize): rankcli applies the training data's transform itself" \
        if want is not None else "give the raw data (convert it without --normalize)"
    raise InputError(f"{problem}; {fix}")


def apply(features: np.ndarray, offsets: np.ndarray, transform: Normalization | None,
          feature_names: list[str] | None = None, what: str | None = None, first_row: int = 0) -> np.ndarray:
    """``features`` (a batch of whole queries, with their ``offsets``) with ``transform`` applied; the array itself
    when ``transform`` is None. The batch-by-batch use of :func:`conform`: decide once per file with :func:`pending`,
    then apply to every batch. ``what`` (the file) and ``first_row`` (the batch's first row in it) name a value the
    transform cannot hold: file, column and row."""
    if transform is None:
        return features
    try:
        return normalize(features, offsets, transform, feature_names=feature_names, first_row=first_row)
    except InputError as exc:
        if what is None:
            raise
        raise InputError(f"{what}: {exc}") from None


def conform(ds: Dataset, want: Normalization | None, what: str,
            reference: str = "the model's training data") -> Dataset:
    """``ds`` with the features that a model trained on ``want``-transformed data expects (see the module docstring):
    ``ds`` itself when nothing is to be done, else a copy whose footer metadata records ``want``. ``what`` and
    ``reference`` as :func:`pending` takes them."""
    todo = pending(recorded(ds.metadata, what), want, what, reference)
    if todo is None:
        return ds
    if ds.features is None:
        raise InputError(f"{what}: read without its feature columns")
    try:
        features = apply(ds.features, ds.offsets, todo, ds.feature_names)
    except InputError as exc:
        raise InputError(f"{what}: {exc}") from None
    return replace(ds, features=features, metadata={**ds.metadata, FOOTER_KEY: json.dumps(want.as_dict())})


def check_options(method: str | None, per: str) -> None:
    """``--normalize`` and ``--per`` of ``rankcli convert``: a known method and scope (:class:`UsageError`), and no
    ``--per dataset`` without a method."""
    if method is None:
        if per != "query":
            raise UsageError(f"--per {per} needs --normalize {'|'.join(METHODS)}")
        return
    if method not in METHODS:
        raise UsageError(f"--normalize: choose one of {', '.join(METHODS)}, got {method!r}")
    if per not in SCOPES:
        raise UsageError(f"--per: choose one of {', '.join(SCOPES)}, got {per!r}")


def fitted(method: str | None, per: str, batches: Iterable[np.ndarray], n_features: int) -> Normalization | None:
    """The transform ``rankcli convert --normalize method --per per`` gives a file: None without a method; per
    dataset, with the statistics of ``batches`` (feature matrices of every row of the data that defines them)."""
    if method is None:
        return None
    if per == "query":
        return Normalization(method, per)
    acc = DatasetStats(method, n_features)
    for features in batches:
        acc.add(features)
    return acc.result()


def join_arguments(transform: Normalization | None) -> dict:
    """The keyword arguments of :meth:`rankcli.formats.convert_writer.ChunkWriter.join` that write a file normalised
    by ``transform`` and record it in the footer (none for raw features)."""
    if transform is None:
        return {}
    return {"rewrite": lambda features, offsets: normalize(features, offsets, transform),
            "metadata": {FOOTER_KEY: transform.as_dict()}}
