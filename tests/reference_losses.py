"""Slow, obviously correct per-query references of the losses added beside XE-NDCG: ListMLE, Position-Aware ListMLE,
ApproxNDCG and LambdaLoss, each written from its paper's formula with plain loops over queries, positions and pairs
(``math`` and Python numbers, no vectorisation), in the style of ``tests/reference.py``."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from tests.reference import queries


def logsumexp(values):
    m = max(values)
    return m + math.log(sum(math.exp(v - m) for v in values))


def sigmoid(z):
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


def pa_weight(n, p):
    """Position-Aware ListMLE's alpha(p) / alpha(1) = (2^(n - p) - 1) / (2^(n - 1) - 1), exactly (Python integers,
    one correctly rounded division); 0 for a query of one document."""
    return (2 ** (n - p) - 1) / (2 ** (n - 1) - 1) if n > 1 else 0.0


def listmle(scores, offsets, order, position_aware=False):
    """-log Plackett-Luce likelihood of the permutation ``order`` per query: sum_p w_p (log sum_{k >= p} exp(x_k) -
    x_p), one double loop per query."""
    out = np.zeros(len(offsets) - 1)
    for q, a, b in queries(offsets):
        x = [float(scores[r]) for r in order[a:b]]
        n = b - a
        if n <= 1:
            continue
        for p in range(1, n + 1):
            w = pa_weight(n, p) if position_aware else 1.0
            out[q] += w * (logsumexp(x[p - 1:]) - x[p - 1])
    return out


def listmle_linear(scores, order, position_aware=False):
    """The same for one long query in O(n): log Z_p accumulated from the end with math.log1p, the position weights
    exact; for 10,000 documents."""
    x = [float(scores[r]) for r in order]
    n = len(x)
    log_z = [0.0] * n
    acc = -math.inf
    for p in range(n - 1, -1, -1):
        hi, lo = max(acc, x[p]), min(acc, x[p])
        acc = hi + math.log1p(math.exp(lo - hi)) if lo > -math.inf else hi
        log_z[p] = acc
    return math.fsum((pa_weight(n, p + 1) if position_aware else 1.0) * (log_z[p] - x[p]) for p in range(n))


def ideal_dcg(labels):
    return sum((2.0 ** y - 1.0) / math.log2(k + 2) for k, y in enumerate(sorted(labels, reverse=True)))


def exact_gains(labels, offsets):
    """G_i = (2^y_i - 1) / maxDCG per row with rationals (integer labels of any size): 2^y as a Python integer, each
    discount the exact binary fraction of its float, one rounding at the end; 0 for one document or no gain."""
    out = np.zeros(len(labels))
    for _, a, b in queries(offsets):
        gains = [Fraction(2) ** int(labels[i]) - 1 for i in range(a, b)]
        ideal = sum(g * Fraction(1.0 / math.log2(k + 2)) for k, g in enumerate(sorted(gains, reverse=True)))
        if b - a > 1 and ideal > 0:
            out[a:b] = [float(g / ideal) for g in gains]
    return out


def approxndcg(scores, labels, offsets, temperature, gains=None):
    """-sum_i G_i / log2(1 + pi_i), pi_i = 1 + sum_{j != i} sigmoid((s_j - s_i) / T), per query."""
    out = np.zeros(len(offsets) - 1)
    for q, a, b in queries(offsets):
        ideal = ideal_dcg(labels[a:b]) if gains is None else 1.0
        if b - a <= 1 or ideal <= 0:
            continue
        for i in range(a, b):
            pi = 1.0 + sum(sigmoid((scores[j] - scores[i]) / temperature) for j in range(a, b) if j != i)
            g = (2.0 ** labels[i] - 1.0) / ideal if gains is None else gains[i]
            out[q] -= g / math.log2(1.0 + pi)
    return out


def ranks_by_score(scores, offsets):
    """1-based rank of every row within its query, scores decreasing, equal scores in input order."""
    ranks = np.zeros(len(scores), dtype=np.int64)
    for _, a, b in queries(offsets):
        rows = sorted(range(a, b), key=lambda r: -scores[r])  # stable
        for k, r in enumerate(rows):
            ranks[r] = k + 1
    return ranks


def lambdaloss(scores, labels, offsets, variant="ndcg-loss2++", mu=10.0, sigma=1.0, ranks=None, gains=None):
    """-sum_{y_i > y_j} w_ij log2 sigmoid(sigma (s_i - s_j)) per query (Wang et al. 2018), a double loop over pairs."""
    ranks = ranks_by_score(scores, offsets) if ranks is None else ranks
    out = np.zeros(len(offsets) - 1)

    def d(r):
        return math.log2(1.0 + r)

    for q, a, b in queries(offsets):
        ideal = ideal_dcg(labels[a:b]) if gains is None else 1.0
        if b - a <= 1 or ideal <= 0:
            continue
        for i in range(a, b):
            for j in range(a, b):
                if not labels[i] > labels[j]:
                    continue
                gi = (2.0 ** labels[i] - 1) / ideal if gains is None else gains[i]
                gj = (2.0 ** labels[j] - 1) / ideal if gains is None else gains[j]
                gap = abs(int(ranks[i]) - int(ranks[j]))
                delta = abs(1 / d(gap) - 1 / d(gap + 1))
                rho = abs(1 / d(ranks[i]) - 1 / d(ranks[j]))
                w = (delta if variant == "ndcg-loss2" else rho + mu * delta) * abs(gi - gj)
                z = sigma * (scores[i] - scores[j])
                log_sig = -math.log1p(math.exp(-z)) if z > -30 else z - math.log1p(math.exp(z))
                out[q] -= w * log_sig / math.log(2.0)
    return out


def softmax_newton_dense(scores, phi, offsets):
    """The paper's step built from dense matrices per query for any target ``phi``: D (I + S + S^2) D^-1 g and
    diag(D), g = softmax(s) - phi."""
    grad = np.zeros(len(scores))
    hess = np.zeros(len(scores))
    for _, a, b in queries(offsets):
        m = b - a
        if m <= 1:
            continue
        e = np.exp(np.asarray(scores[a:b], dtype=float) - max(scores[a:b]))
        rho = e / e.sum()
        g = rho - np.asarray(phi[a:b])
        dmat = np.diag(rho * (1 - rho))
        smat = np.array([[rho[j] / (1 - rho[i]) if i != j else 0.0 for j in range(m)] for i in range(m)])
        step = (np.eye(m) + smat + smat @ smat) @ np.linalg.solve(dmat, g)
        grad[a:b] = dmat @ step
        hess[a:b] = np.diag(dmat)
    return grad, hess
