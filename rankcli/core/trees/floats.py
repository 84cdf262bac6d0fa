"""The floating-point steps of an exact export: ordered keys of floats, the float32 at or below a double, monotone
searches over every value of a precision, and the inverse of Solr's threshold slack.

Every float32 (and every double) maps to an integer key in the order of the values (:func:`keys`; -0 and +0 share
key 0), so "the largest value whose image is at most t" is a binary search over keys: 32 steps for float32, 64 for
doubles, vectorised over all the splits at once. The searches assume the function is non-decreasing, which every
transform here is: a float operation rounds monotonically, so ``(x - c) / s`` computed in any precision with ``s > 0``
never decreases as ``x`` grows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: The slack Solr's MultipleAdditiveTreesModel adds to every threshold it reads (``NODE_SPLIT_SLACK = 1E-6f``).
SOLR_SLACK = np.float32(1e-6)

def keys(x: np.ndarray) -> np.ndarray:
    """The ordered integer key of each value of ``x`` (float32 or float64; not NaN): ``keys(a) < keys(b)`` exactly
    when ``a < b``."""
    x = np.asarray(x)
    bits = x.view(np.int32 if x.dtype == np.float32 else np.int64).astype(np.int64)
    if x.dtype == np.float32:
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)
    magnitude = bits & np.int64(0x7FFFFFFFFFFFFFFF)
    return np.where(bits < 0, -magnitude, bits)


def from_keys(k: np.ndarray, dtype) -> np.ndarray:
    """The values of the keys ``k`` (:func:`keys`' inverse; key 0 is +0)."""
    k = np.asarray(k, dtype=np.int64)
    if np.dtype(dtype) == np.float32:
        bits = np.where(k < 0, (-k) | np.int64(0x80000000), k).astype(np.uint32)
        return bits.view(np.float32)
    sign = np.uint64(0x8000000000000000)
    bits = np.where(k < 0, (-k).astype(np.uint64) | sign, k.astype(np.uint64))
    return bits.view(np.float64)


def finite_key_range(dtype) -> tuple[int, int]:
    """The keys of the most negative and the largest finite value of ``dtype``."""
    top = np.finfo(dtype).max
    hi = int(keys(np.array([top], dtype=dtype))[0])
    return -hi, hi


def floor32(t: np.ndarray) -> np.ndarray:
    """The largest float32 at or below each double of ``t`` (a double above the float32 range gives the largest
    float32, one below it -inf; NaN stays NaN)."""
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        f = t.astype(np.float32)
        above = f.astype(np.float64) > t
    return np.where(above, np.nextafter(f, np.float32(-np.inf)), f)


def step(x: np.ndarray, up: bool) -> np.ndarray:
    """The next value of ``x``'s precision above (``up``) or below each value."""
    x = np.asarray(x)
    with np.errstate(over="ignore"):
        return np.nextafter(x, np.array(np.inf if up else -np.inf, dtype=x.dtype))


def largest_true(predicate: Callable[[np.ndarray], np.ndarray], n: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """For ``n`` non-increasing predicates over the finite values of ``dtype`` (True up to a point, then False),
    the largest finite value where each is True.

    ``predicate(values)`` takes one value per predicate (an ``(n,)`` array of ``dtype``) and returns ``(n,)`` booleans.
    Returns ``(values, any_true)``: where no finite value makes a predicate True, ``any_true`` is False (the value is
    then the most negative finite one); where every finite value does, the value is the largest finite one.
    """
    lo_key, hi_key = finite_key_range(dtype)
    lo = np.full(n, lo_key, dtype=np.int64)
    hi = np.full(n, hi_key, dtype=np.int64)
    any_true = predicate(from_keys(lo, dtype))
    # invariant: predicate(lo) is True where any_true; the answer lies in [lo, hi]
    for _ in range(66 if np.dtype(dtype) == np.float64 else 34):
        if not np.any(hi > lo):
            break
        mid = lo // 2 + hi // 2 + (lo % 2 + hi % 2 + 1) // 2  # ceil((lo + hi) / 2) without overflowing int64
        ok = predicate(from_keys(mid, dtype))
        lo = np.where(ok & (hi > lo), mid, lo)
        hi = np.where(~ok & (hi > lo), mid - 1, hi)
    return from_keys(lo, dtype), any_true


def solr_preimage(target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The float32 threshold to write so that Solr, which reads it as ``parseFloat(s) + 1E-6f``, compares against
    ``target`` (float32) — or, where no float32 lands there, against the nearest float32 that one does.

    Returns ``(written, reached)``: ``written`` the float32 to write, ``reached = written + 1e-6f`` in float32 (equal
    to ``target`` where an exact preimage exists). Near zero the reachable values are multiples of the spacing of
    float32 around 1e-6 (0, +-1.1e-13, ...): LightGBM's zero-versus-positive threshold 1e-35 has none.
    """
    target = np.asarray(target, dtype=np.float32)

    def reaches_at_most(t: np.ndarray) -> np.ndarray:
        return (t + SOLR_SLACK) <= target  # float32 arithmetic, as Java's float addition

    below, any_below = largest_true(reaches_at_most, target.shape[0], np.float32)
    above = np.where(any_below, step(below, True), below)
    got_below = below + SOLR_SLACK
    got_above = above + SOLR_SLACK
    exact = got_below == target
    nearer_above = np.abs(got_above.astype(np.float64) - target) < np.abs(got_below.astype(np.float64) - target)
    use_above = ~exact & (nearer_above | ~any_below)
    written = np.where(use_above, above, below)
    return written, np.where(use_above, got_above, got_below)
