"""Relevance labels: integer grades versus real-valued relevance, and the ``--label-grades`` mapping."""

from __future__ import annotations

import numpy as np

from rankcli.errors import InputError


class NonIntegerLabelsError(InputError):
    """Labels such as 0.07 where a consumer needs integer grades (LightGBM's lambdarank, click probabilities)."""


def is_integer_grades(labels: np.ndarray) -> bool:
    """Whether every label is a finite non-negative integer (a grade LightGBM's lambdarank can take)."""
    labels = np.asarray(labels, dtype=np.float64)
    return bool(np.all(np.isfinite(labels)) and np.all(labels >= 0) and np.all(labels == np.round(labels)))


def to_grades(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Map the distinct label values to grades ``0..n-1`` in increasing order (``--label-grades``).

    Returns the grades (int64, one per row) and the sorted distinct values (``values[g]`` is grade ``g``'s label).
    """
    values, grades = np.unique(np.asarray(labels, dtype=np.float64), return_inverse=True)
    return grades.astype(np.int64), values


def require_integer_grades(labels: np.ndarray, consumer: str, alternatives: str = "") -> np.ndarray:
    """Return ``labels`` as int64 grades, or raise a clear error that offers ``--label-grades``."""
    labels = np.asarray(labels, dtype=np.float64)
    if not is_integer_grades(labels):
        bad = labels[~((labels >= 0) & (labels == np.round(labels)))]
        example = bad[0] if bad.size else float("nan")
        hint = "pass --label-grades to map the distinct label values to grades 0..n-1 in order"
        if alternatives:
            hint += f", or use {alternatives}"
        raise NonIntegerLabelsError(f"{consumer} needs non-negative integer labels, got {example:g}; {hint}")
    return labels.astype(np.int64)
