"""An exported file read back as the engine reads it, aligned node for node with the model it came from.

``--check`` evaluates what was written, not what the writer meant: each target parses its own file with the
engine's number parsing (Java's ``Float.parseFloat``, a ``(float)`` cast of Jackson's double, C++ doubles) into a
:class:`ReadBack`. :func:`align` walks each exported tree beside the model's tree, so that node ``n`` of the
read-back arrays is node ``n`` of the model: a tree of another shape is an error, not a silent mismatch.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from rankcli.core.trees.ensemble import Ensemble, from_tree_arrays
from rankcli.core.trees.semantics import Splits
from rankcli.errors import InputError


@dataclass
class ReadBack:
    """The engine's view of an export: per node its feature column and decision, per leaf its value, per tree its
    weight (already in the engine's precision), and how the engine sums."""

    feature: np.ndarray
    splits: Splits
    leaf: np.ndarray
    weight: np.ndarray
    summation: str


@dataclass
class SplitRecord:
    """One split as a reader found it: the feature's name in the file, the threshold the engine compares with, the
    comparison and the missing branch (semantics.NAN_*)."""

    feature: str
    cut: float
    strict: bool
    nan: int


class Accessor:
    """How a reader's nested tree is walked: override :meth:`is_leaf`, :meth:`children`, :meth:`split`, :meth:`leaf`."""

    def is_leaf(self, node) -> bool:  # pragma: no cover - interface
        """Whether ``node`` is a leaf."""
        raise NotImplementedError

    def children(self, node) -> tuple:  # pragma: no cover - interface
        """``(left, right)`` of a split."""
        raise NotImplementedError

    def split(self, node) -> SplitRecord:  # pragma: no cover - interface
        """The split's :class:`SplitRecord`."""
        raise NotImplementedError

    def leaf(self, node) -> float:  # pragma: no cover - interface
        """The leaf's value as the engine holds it."""
        raise NotImplementedError


#: Python's recursion limit while a nested export is read back: the JSON decoder recurses in C, a frame or two per
#: level of a tree, on the thread's stack, which holds some 80,000 (a tree about 25,000 levels deep).
READ_RECURSION_LIMIT = 50000


def tree_depth(ens: Ensemble) -> int:
    """The number of split levels of the ensemble's deepest tree."""
    level, depth = ens.roots[ens.roots >= 0], 0
    while level.size:
        kids = np.concatenate([ens.left[level], ens.right[level]])
        level, depth = kids[kids >= 0], depth + 1
    return depth


@contextmanager
def room_for(ens: Ensemble, where: str) -> Iterator[None]:
    """Python's recursion limit raised for reading back nested trees as deep as ``ens``'s (the JSON decoder and the
    Vespa expression reader recurse once or twice per level, and a tree can be thousands of levels deep), up to
    :data:`READ_RECURSION_LIMIT`; a deeper tree is an error naming ``where``, not a crash."""
    depth = tree_depth(ens)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, min(4 * depth + 1000, READ_RECURSION_LIMIT)))
    try:
        yield
    except RecursionError:
        raise InputError(f"{where}: a tree {depth} levels deep is deeper than --check reads back") from None
    finally:
        sys.setrecursionlimit(old)


def align(ens: Ensemble, roots: list, accessor: Accessor, where: str) -> tuple[list, list]:
    """Walk each exported tree (``roots``) beside the model's: returns the :class:`SplitRecord` of each model node
    and each model leaf's exported value (as the accessor gives it: a number or its text), both lists indexed as
    the model's nodes and leaves."""
    if len(roots) != ens.n_trees:
        raise InputError(f"{where}: holds {len(roots)} trees, the model {ens.n_trees}")
    records: list = [None] * ens.n_nodes
    leaves: list = [None] * ens.leaf_value.shape[0]
    # plain lists and bound methods: this loop visits every node of every tree (254,000 in a 500-tree model)
    model_left, model_right, model_roots = ens.left.tolist(), ens.right.tolist(), ens.roots.tolist()
    is_leaf, children, split, leaf = accessor.is_leaf, accessor.children, accessor.split, accessor.leaf
    for t, root in enumerate(roots):
        stack = [(model_roots[t], root)]
        pop, push = stack.pop, stack.append
        while stack:
            code, node = pop()
            if code < 0:
                if not is_leaf(node):
                    raise InputError(f"{where}: tree {t} has a split where the model has a leaf")
                leaves[-code - 1] = leaf(node)
                continue
            if is_leaf(node):
                raise InputError(f"{where}: tree {t} has a leaf where the model has a split")
            records[code] = split(node)
            left, right = children(node)
            push((model_left[code], left))
            push((model_right[code], right))
    return records, leaves


def flatten(roots: list, accessor: Accessor) -> tuple[Ensemble, list, list]:
    """An exported file's trees on their own (no model beside them): the structure as an
    :class:`~rankcli.core.trees.ensemble.Ensemble` numbered in pre-order (its features and thresholds unset), the
    :class:`SplitRecord` of each node and each leaf's value. For evaluating files that no rankcli model wrote (the
    engines' own test models)."""
    trees, records, leaves = [], [], []
    for root in roots:
        left, right, n_leaf = [], [], [0]
        stack = [(root, None, None)]
        while stack:
            node, parent, is_left = stack.pop()
            if accessor.is_leaf(node):
                leaves.append(accessor.leaf(node))
                code = ~n_leaf[0]
                n_leaf[0] += 1
            else:
                code = len(left)
                records.append(accessor.split(node))
                left.append(0), right.append(0)
                kid_l, kid_r = accessor.children(node)
                stack += [(kid_r, code, False), (kid_l, code, True)]
            if parent is not None:
                (left if is_left else right)[parent] = code
        n = len(left)
        trees.append((np.zeros(n, np.int64), np.zeros(n), np.zeros(n, np.int64), left, right, np.zeros(n_leaf[0])))
    return from_tree_arrays(trees), records, leaves


def splits_from(records: list, columns: dict[str, int], precision, where: str, *, inf_is_missing: bool = False
                ) -> tuple[np.ndarray, Splits]:
    """The node arrays of aligned :class:`SplitRecord` s: feature columns (by the engine names in ``columns``) and
    :class:`~rankcli.core.trees.semantics.Splits`."""
    try:
        feature = np.array([columns[r.feature] for r in records], dtype=np.int64)
    except KeyError as exc:
        raise InputError(f"{where}: a split uses the feature {exc.args[0]!r}, which the export does not list") from None
    splits = Splits(cut=np.array([r.cut for r in records], dtype=np.float64),
                    strict=np.array([r.strict for r in records], dtype=bool),
                    nan=np.array([r.nan for r in records], dtype=np.int64), precision=precision,
                    inf_is_missing=inf_is_missing)
    return feature, splits


def _nearest_float32(text: str) -> np.float32:
    """Java's ``Float.parseFloat`` of one decimal whose nearest double lies exactly halfway between two float32s:
    rounded from the exact decimal (ties to even), not from the double."""
    exact = Fraction(text.strip())
    d = float(exact)
    lo = np.float32(d)
    if float(lo) > d:
        lo = np.nextafter(lo, np.float32(-np.inf))
    hi = np.nextafter(lo, np.float32(np.inf))
    below, above = exact - Fraction(float(lo)), Fraction(float(hi)) - exact
    if below != above:
        return lo if below < above else hi
    return lo if int(lo.view(np.uint32)) % 2 == 0 else hi


def _java_text(text: str) -> str:
    """A number as ``Float.parseFloat`` reads it: white space trimmed, a type suffix (``0.5f``, ``1d``) dropped."""
    text = str(text).strip()
    return text[:-1] if text[-1:] in ("f", "F", "d", "D") and not text.endswith(("Inf", "inf")) else text


def java_float(texts: list[str]) -> np.ndarray:
    """``Float.parseFloat`` of each decimal string (correctly rounded to float32, as Java does): through the nearest
    double, corrected where that double is a float32 midpoint (the only case double rounding can err)."""
    texts = list(texts)
    try:  # the common case, plain decimals: the texts as they are (float() trims white space as Java does)
        d = np.fromiter(map(float, texts), dtype=np.float64, count=len(texts))
    except (ValueError, TypeError):
        texts = [_java_text(t) for t in texts]
        try:
            d = np.array([float(t) for t in texts], dtype=np.float64)
        except ValueError as exc:
            raise InputError(f"not a number Java reads ({exc})") from None
    with np.errstate(over="ignore"):
        f = d.astype(np.float32)
        low = np.where(f.astype(np.float64) > d, np.nextafter(f, np.float32(-np.inf)), f)
        high = np.nextafter(low, np.float32(np.inf))
    mid = (low.astype(np.float64) + high.astype(np.float64)) / 2
    for i in np.flatnonzero((d == mid) & np.isfinite(d)):
        f[i] = _nearest_float32(texts[i])
    return f
