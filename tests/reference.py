"""Slow, obviously correct per-query reference implementations that the vectorised code is checked against.

Every function here loops over queries and documents in plain Python on purpose: clarity over speed.
"""

from __future__ import annotations

import math

import numpy as np


def queries(offsets):
    for q in range(len(offsets) - 1):
        yield q, int(offsets[q]), int(offsets[q + 1])


def order_within(scores, offsets, descending=True):
    perm = []
    for _, a, b in queries(offsets):
        rows = list(range(a, b))
        rows.sort(key=lambda r: -scores[r] if descending else scores[r])  # Python's sort is stable
        perm.extend(rows)
    return np.array(perm, dtype=np.int64)


def softmax(values, offsets):
    out = np.empty(len(values))
    for _, a, b in queries(offsets):
        m = max(values[a:b])
        e = [math.exp(v - m) for v in values[a:b]]
        s = sum(e)
        out[a:b] = [x / s for x in e]
    return out
