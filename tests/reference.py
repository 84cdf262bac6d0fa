"""Slow, obviously correct per-query reference implementations that the vectorised code is checked against.

Every function here loops over queries and documents in plain Python on purpose: clarity over speed.
"""

from __future__ import annotations

import itertools
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


# ---------------------------------------------------------------------------------------------------------------------
# Ranking metrics (rankcli.core.metrics), one query at a time, straight from the textbook definitions.


def _gain(label, gain):
    label = max(label, 0.0)
    return 2.0 ** label - 1.0 if gain == "exponential" else label


def _metric_of_ranking(name, k, ranked, judged, gain="exponential", threshold=1.0, max_grade=4.0):
    """The metric of one ranked list of labels; ``judged`` = every judged label of the query (ranked or not)."""
    cut = ranked if k is None else ranked[:k]
    n_rel = sum(1 for y in judged if y >= threshold)
    if name in ("dcg", "ndcg"):
        dcg = sum(_gain(y, gain) / math.log2(i + 2) for i, y in enumerate(cut))
        if name == "dcg":
            return dcg
        ideal_list = sorted(judged, reverse=True)
        ideal_list = ideal_list if k is None else ideal_list[:k]
        ideal = sum(_gain(y, gain) / math.log2(i + 2) for i, y in enumerate(ideal_list))
        return dcg / ideal if ideal > 0 else 0.0
    if name == "err":
        total, p_reach = 0.0, 1.0
        for i, y in enumerate(cut):
            r = (2.0 ** max(y, 0.0) - 1.0) / 2.0 ** max_grade
            total += p_reach * r / (i + 1)
            p_reach *= 1.0 - r
        return total
    if name == "mrr":
        for i, y in enumerate(cut):
            if y >= threshold:
                return 1.0 / (i + 1)
        return 0.0
    if name == "precision":
        hits = sum(1 for y in cut if y >= threshold)
        return hits / (len(ranked) if k is None else k)
    if name == "recall":
        hits = sum(1 for y in cut if y >= threshold)
        return hits / n_rel if n_rel else 0.0
    if name == "map":
        hits, total = 0, 0.0
        for i, y in enumerate(cut):
            if y >= threshold:
                hits += 1
                total += hits / (i + 1)
        return total / n_rel if n_rel else 0.0
    raise ValueError(name)


def _orderings(labels, scores, ties):
    """Every ranking of a query's labels that the tie rule allows: one (stable) for 'input', all for 'average'."""
    idx = sorted(range(len(scores)), key=lambda i: -scores[i])  # stable
    if ties == "input":
        return [[labels[i] for i in idx]]
    groups = [list(g) for _, g in itertools.groupby(idx, key=lambda i: scores[i])]
    out = []
    for combo in itertools.product(*[itertools.permutations(g) for g in groups]):
        out.append([labels[i] for grp in combo for i in grp])
    return out


def metric_per_query(name, k, labels, scores, offsets, *, gain="exponential", no_relevant="skip", ties="input",
                     threshold=1.0, max_grade=4.0, unranked=None):
    """Reference per-query values. ``unranked``: list (one per query) of judged labels missing from the ranking.

    Ties 'average' enumerates every ordering of tied documents and averages: keep tie groups tiny.
    """
    out = []
    for q, a, b in queries(offsets):
        lab = [float(x) for x in labels[a:b]]
        sc = [float(x) for x in scores[a:b]]
        judged = lab + [float(x) for x in (unranked[q] if unranked is not None else [])]
        graded = name in ("ndcg", "dcg", "err")
        has = any(y > 0 for y in judged) if graded else any(y >= threshold for y in judged)
        if not has:
            if no_relevant == "skip":
                out.append(float("nan"))
            elif no_relevant == "zero" or name in ("dcg", "err"):
                out.append(0.0)
            else:
                out.append(1.0)
            continue
        rankings = _orderings(lab, sc, ties)
        vals = [_metric_of_ranking(name, k, r, judged, gain, threshold, max_grade) for r in rankings]
        out.append(sum(vals) / len(vals))
    return np.array(out, dtype=np.float64)
