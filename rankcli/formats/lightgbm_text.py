"""LightGBM's text model (``model.txt``) read as arrays: the trees exactly as LightGBM predicts with them.

LightGBM writes each tree's arrays on one line each (``src/io/tree.cpp``, ``Tree::ToString``): ``split_feature``,
``threshold`` and ``leaf_value`` with 17 significant digits (``ArrayToString<true>``), so that reading them back as
doubles gives LightGBM's own values bit for bit; ``decision_type`` packs the categorical flag (bit 0), default_left
(bit 1) and the missing type (bits 2-3: 0 None, 1 Zero, 2 NaN; ``include/LightGBM/tree.h``); ``left_child`` and
``right_child`` hold an internal node's index, or ``~leaf`` (a negative number) for a leaf. A tree of one leaf has no
split arrays. The model text is read after :func:`rankcli.train.load_model` has verified it (its SHA-256), so a
malformed file here is a damaged model: an :class:`~rankcli.errors.InputError` naming the tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rankcli.errors import InputError

_INT_KEYS = ("split_feature", "decision_type", "left_child", "right_child")
_FLOAT_KEYS = ("threshold", "leaf_value")


@dataclass
class TextTree:
    """One tree's arrays as ``model.txt`` holds them (internal nodes ``0..num_leaves-2``)."""

    num_leaves: int
    split_feature: np.ndarray  # (num_leaves - 1,) int64
    threshold: np.ndarray  # (num_leaves - 1,) float64
    decision_type: np.ndarray  # (num_leaves - 1,) int64
    left_child: np.ndarray  # (num_leaves - 1,) int64: >= 0 a node, < 0 ~leaf
    right_child: np.ndarray
    leaf_value: np.ndarray  # (num_leaves,) float64
    num_cat: int = 0
    is_linear: bool = False


@dataclass
class TextModel:
    """The header facts an export needs and the trees, in prediction order."""

    objective: str
    feature_names: list[str]
    num_tree_per_iteration: int
    average_output: bool
    trees: list[TextTree] = field(default_factory=list)


def _header(text: str) -> dict[str, str]:
    head = text.split("\nTree=", 1)[0]
    out = {}
    for line in head.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key] = value
        elif line.strip():
            out[line.strip()] = ""
    return out


def _numbers(values: str, kind: type, key: str, where: str) -> np.ndarray:
    try:
        return np.array(values.split(), dtype=np.float64 if kind is float else np.int64)
    except ValueError:
        raise InputError(f"{where}: its {key} line does not hold numbers, got {values[:40]!r}") from None


def _tree(block: str, where: str) -> TextTree:
    fields = {}
    for line in block.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key] = value
    try:
        num_leaves = int(fields["num_leaves"])
    except (KeyError, ValueError):
        raise InputError(f"{where}: no num_leaves line") from None
    n = num_leaves - 1
    arrays = {}
    for key in _INT_KEYS + _FLOAT_KEYS:
        if key == "leaf_value" or n > 0:
            if key not in fields:
                raise InputError(f"{where}: no {key} line")
            arrays[key] = _numbers(fields[key], float if key in _FLOAT_KEYS else int, key, where)
        else:
            arrays[key] = np.zeros(0, dtype=np.float64 if key in _FLOAT_KEYS else np.int64)
    sizes = {k: (num_leaves if k == "leaf_value" else n) for k in arrays}
    bad = [k for k, v in arrays.items() if v.shape[0] != sizes[k]]
    if bad or num_leaves < 1:
        raise InputError(f"{where}: {bad[0] if bad else 'num_leaves'} does not match num_leaves={num_leaves}")
    return TextTree(num_leaves=num_leaves, num_cat=int(fields.get("num_cat", "0") or 0),
                    is_linear=fields.get("is_linear", "0").strip() == "1", **arrays)


def parse_model_text(text: str, where: str = "model.txt") -> TextModel:
    """The trees of LightGBM's text model ``text`` (``where`` names it in errors)."""
    header = _header(text)
    names = header.get("feature_names", "").split()
    model = TextModel(objective=header.get("objective", "").split(" ")[0], feature_names=names,
                      num_tree_per_iteration=int(header.get("num_tree_per_iteration", "1") or 1),
                      average_output="average_output" in header)
    body = text.split("\nend of trees", 1)[0]
    blocks = body.split("\nTree=")[1:]
    for i, block in enumerate(blocks):
        model.trees.append(_tree(block, f"{where}: tree {i}"))
    return model
