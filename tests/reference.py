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


# ------------------------------------------------------- losses: the loops rankcli.core.losses is checked against
def xendcg_value(scores, labels, offsets, gamma):
    """-sum phi log rho per query, phi_i = (2^y_i - gamma_i) / sum_j (...); 0 for one document or no mass."""
    gamma = np.broadcast_to(np.asarray(gamma, dtype=float), (len(scores),))
    out = np.zeros(len(offsets) - 1)
    for q, a, b in queries(offsets):
        numer = [2.0 ** labels[i] - gamma[i] for i in range(a, b)]
        total = sum(numer)
        if b - a <= 1 or total <= 0:
            continue
        m = max(scores[a:b])
        logz = m + math.log(sum(math.exp(s - m) for s in scores[a:b]))
        out[q] = -sum(numer[i - a] / total * (scores[i] - logz) for i in range(a, b))
    return out


def xendcg_newton_dense(scores, labels, offsets, gamma):
    """The paper's step built from dense matrices per query: D (I + S + S^2) D^-1 g and diag(D)."""
    gamma = np.broadcast_to(np.asarray(gamma, dtype=float), (len(scores),))
    grad = np.zeros(len(scores))
    hess = np.zeros(len(scores))
    for _, a, b in queries(offsets):
        m = b - a
        y = np.asarray(labels[a:b], dtype=float)
        numer = 2.0 ** y - gamma[a:b]
        if m <= 1 or numer.sum() <= 0:
            continue
        phi = numer / numer.sum()
        e = np.exp(np.asarray(scores[a:b], dtype=float) - max(scores[a:b]))
        rho = e / e.sum()
        g = rho - phi
        D = np.diag(rho * (1 - rho))
        S = np.zeros((m, m))
        for i in range(m):
            for j in range(m):
                if i != j:
                    S[i, j] = rho[j] / (1 - rho[i])
        H = -np.outer(rho, rho) + np.diag(rho)
        assert np.allclose(H, D @ (np.eye(m) - S))
        step = (np.eye(m) + S + S @ S) @ np.linalg.solve(D, g)
        grad[a:b] = D @ step
        hess[a:b] = np.diag(D)
    return grad, hess


def listnet_value(scores, labels, offsets):
    out = np.zeros(len(offsets) - 1)
    for q, a, b in queries(offsets):
        if b - a <= 1:
            continue
        my = max(labels[a:b])
        zy = sum(math.exp(v - my) for v in labels[a:b])
        ms = max(scores[a:b])
        logz = ms + math.log(sum(math.exp(s - ms) for s in scores[a:b]))
        out[q] = -sum(math.exp(labels[i] - my) / zy * (scores[i] - logz) for i in range(a, b))
    return out


def ranknet(scores, labels, offsets):
    """(value per query, gradient, hessian diagonal) of RankNet by a double loop over each query's pairs."""
    value = np.zeros(len(offsets) - 1)
    grad = np.zeros(len(scores))
    hess = np.zeros(len(scores))
    for q, a, b in queries(offsets):
        for i in range(a, b):
            for j in range(a, b):
                if labels[i] > labels[j]:
                    z = scores[i] - scores[j]
                    value[q] += math.log1p(math.exp(-z)) if z > -30 else -z + math.log1p(math.exp(z))
                    p = 1.0 / (1.0 + math.exp(z)) if z < 700 else 0.0
                    grad[i] -= p
                    grad[j] += p
                    hess[i] += p * (1 - p)
                    hess[j] += p * (1 - p)
    return value, grad, hess


def displayed_rows(a, b, rng, display_rank=None, max_rank=None):
    """The rows a..b-1 in display order: shuffled (random ranker) or by ``display_rank``, cut at ``max_rank``."""
    rows = list(range(a, b))
    if display_rank is None:
        rng.shuffle(rows)
    else:
        rows.sort(key=lambda r: display_rank[r])
    return rows if max_rank is None else rows[:max_rank]


def cascade_clicks(grades, offsets, click_probs, impressions, rng, display_rank=None, max_rank=None):
    """Cascade impressions by the literal procedure: per query and impression, order (shuffle or fixed), scan from
    the top, click with p[grade], stop at the first click. Returns a list of (query, impression, [(row, click)...])
    for every impression, clicked or not."""
    out = []
    for q, a, b in queries(offsets):
        for i in range(impressions):
            rows = displayed_rows(a, b, rng, display_rank, max_rank)
            shown = []
            for r in rows:
                clicked = rng.random() < click_probs[grades[r]]
                shown.append((r, int(clicked)))
                if clicked:
                    break
            out.append((q, i, shown))
    return out


def pbm_clicks(grades, offsets, click_probs, impressions, rng, eta, display_rank=None, max_rank=None):
    """PBM impressions by the literal procedure; returns (query, impression, [(row, examined, click)...])."""
    out = []
    for q, a, b in queries(offsets):
        for i in range(impressions):
            rows = displayed_rows(a, b, rng, display_rank, max_rank)
            shown = []
            for pos, r in enumerate(rows, start=1):
                examined = rng.random() < (1.0 / pos) ** eta
                clicked = examined and rng.random() < click_probs[grades[r]]
                shown.append((r, int(examined), int(clicked)))
            out.append((q, i, shown))
    return out


# ------------------------------------------------------- XE-NDCG targets for large labels, where 2^y overflows float64
def xendcg_targets_logspace(labels, offsets, gamma):
    """phi_i = (2^y_i - gamma_i) / sum_j (2^y_j - gamma_j) per document, in log space with plain ``math``.

    In base 2: log2(2^y - g) = y + log2(1 - g 2^-y) (with log1p); each term is normalised by the query's largest
    one before exponentiating (a difference of labels, exact in float64, so no precision is lost to the size of the
    labels) and the weights are divided by their sum. 0 for a query
    of one document or without target mass, as in rankcli.core.losses.
    """
    gamma = np.broadcast_to(np.asarray(gamma, dtype=float), (len(labels),))
    phi = np.zeros(len(labels))
    for _, a, b in queries(offsets):
        logs = []
        for i in range(a, b):
            y, g = float(labels[i]), float(gamma[i])
            rest = -g * 2.0 ** -y if y < 1074 else 0.0
            logs.append(y + math.log1p(rest) / math.log(2.0) if rest > -1.0 else -math.inf)
        top = max(logs)
        if b - a <= 1 or top == -math.inf:
            continue
        weights = [2.0 ** (v - top) for v in logs]  # 2^(log2 term - log2 of the largest term), never above 1
        phi[a:b] = [w / sum(weights) for w in weights]
    return phi


def xendcg_targets_exact(labels, offsets, gamma):
    """The same targets computed exactly with rationals (integer labels): 2^y as a Python integer, gamma as the
    exact binary fraction of its float, the division rounded once at the end."""
    from fractions import Fraction

    gamma = np.broadcast_to(np.asarray(gamma, dtype=float), (len(labels),))
    phi = np.zeros(len(labels))
    for _, a, b in queries(offsets):
        numer = [Fraction(2) ** int(labels[i]) - Fraction(float(gamma[i])) for i in range(a, b)]
        total = sum(numer)
        if b - a <= 1 or total <= 0:
            continue
        phi[a:b] = [float(x / total) for x in numer]
    return phi


def ranklib_normalize(features, offsets, method):
    """RankLib's per-ranked-list normalisers, a loop per query and feature as RankLib writes them
    (``ZScoreNormalizor``, ``LinearNormalizer``, ``SumNormalizor`` in ``ciir.umass.edu.features``), on the finite
    values (rankcli's rule for NaN and infinities, which RankLib does not consider), with the true maximum where
    RankLib starts its maximum at ``Float.MIN_VALUE``."""
    out = np.array(features, dtype=np.float64)
    for _, a, b in queries(offsets):
        for j in range(out.shape[1]):
            col = [float(v) for v in features[a:b, j]]
            keep = [i for i, v in enumerate(col) if math.isfinite(v)]
            xs = [col[i] for i in keep]
            n = len(xs)
            if method == "zscore":
                mean = sum(xs) / n if n else 0.0
                var = sum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else float("nan")
                std = math.sqrt(var) if n > 1 else float("nan")
                if std > 0:  # NaN (one document) and 0 fail this test: the value is left as it is
                    for i in keep:
                        out[a + i, j] = (col[i] - mean) / std
            elif method == "minmax":
                lo, hi = (min(xs), max(xs)) if n else (0.0, 0.0)
                for i in keep:
                    out[a + i, j] = (col[i] - lo) / (hi - lo) if hi > lo else 0.0
            else:
                norm = sum(abs(x) for x in xs)
                if norm > 0:
                    for i in keep:
                        out[a + i, j] = col[i] / norm
    return out.astype(np.float32)
