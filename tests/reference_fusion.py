"""Slow, obviously correct per-query references of rank fusion (rankcli.core.fusion), straight from the definitions.

A run is ``{query: {document: score}}``; a query may be missing from a run, a document from a query. Everything loops
over queries and documents in plain Python on purpose.
"""

from __future__ import annotations

import math
import statistics

FLOOR = 1e-9
SEGFUSE_BOUNDS = [0] + [10 * 2 ** (k - 1) - 5 for k in range(1, 11)]
BAYES_CUTS = [0, 5, 10, 15, 20, 30, 100, 200, 500, 1000]
MIN_LOG_ODDS = math.log(0.001 / 0.999)


def ranking(docs: dict, ascending: bool = False) -> list:
    """A query's documents best first: score descending (ascending), equal scores by document id descending."""
    by_id = sorted(docs, reverse=True)  # Python's sort is stable: the id order stays among equal scores
    return sorted(by_id, key=lambda d: docs[d] if ascending else -docs[d])


def queries(runs) -> list:
    return sorted({q for run in runs for q in run})


def candidates(runs, q) -> list:
    return sorted({d for run in runs for d in run.get(q, {})})


def normalize(run: dict, q, how: str, n_candidates: int, ascending: bool) -> dict:
    """One run's normalised scores of query ``q`` (its listed documents)."""
    docs = run.get(q, {})
    if not docs:
        return {}
    s = list(docs.values())
    n, lo, hi, total = len(s), min(s), max(s), sum(s)
    order = ranking(docs, ascending)
    rank = {d: i + 1 for i, d in enumerate(order)}
    out = {}
    for d, x in docs.items():
        if how == "min-max":
            out[d] = (x - lo) / max(hi - lo, FLOOR)
        elif how == "min-max-inverted":
            out[d] = (hi - x) / max(hi - lo, FLOOR)
        elif how == "max":
            out[d] = x / max(hi, FLOOR)
        elif how == "sum":
            out[d] = (x - lo) / max(total - lo * n, FLOOR)
        elif how == "zmuv":
            mean = total / n
            std = math.sqrt(sum((y - mean) ** 2 for y in s) / n)
            out[d] = (x - mean) / max(std, FLOOR)
        elif how == "rank":
            out[d] = 1 - (rank[d] - 1) / n
        elif how == "borda":
            out[d] = 1 - (rank[d] - 1) / n_candidates
        else:
            out[d] = x
    return out


def _evidence(runs, q, how):
    """Per run: normalised scores held (borda: every candidate), ranks and list length, for query ``q``."""
    cands = candidates(runs, q)
    big_n = len(cands)
    asc = how == "min-max-inverted"
    held, ranks, lengths = [], [], []
    for run in runs:
        docs = run.get(q, {})
        norm = normalize(run, q, how, big_n, asc)
        if how == "borda":
            for d in cands:
                norm.setdefault(d, 0.5 - (len(docs) - 1) / (2 * big_n))
        held.append(norm)
        ranks.append({d: i + 1 for i, d in enumerate(ranking(docs, asc))})
        lengths.append(len(docs))
    return cands, held, ranks, lengths


def _score_method(name, vals, ws, p):
    """vals: the scores of the runs holding d, ws: their weights."""
    if name == "min":
        return min(vals)
    if name == "max":
        return max(vals)
    if name == "med":
        return statistics.median(vals)
    total = sum(vals)
    count = len(vals)
    if name == "sum":
        return total
    if name == "anz":
        return total / count
    if name == "mnz":
        return total * count
    if name == "gmnz":
        return total * count ** p["gamma"]
    if name == "wsum":
        return sum(w * v for w, v in zip(ws, vals))
    if name == "wmnz":
        return total * sum(ws)
    if name == "mixed":
        return sum(w * v for w, v in zip(ws, vals)) * math.sqrt(count)
    raise KeyError(name)


def _rank_method(name, d, ranks, lengths, big_n, weights, p):
    listed = [r for r in ranks if d in r]
    inv_sq = sum(1 / r[d] ** 2 for r in listed)
    if name == "isr":
        return inv_sq * len(listed)
    if name == "log_isr":
        return inv_sq * math.log(len(listed))
    if name == "logn_isr":
        return inv_sq * math.log(len(listed) + p["sigma"])
    if name == "rrf":
        return sum(1 / (p["k"] + r[d]) for r in listed)
    if name == "rbc":
        return sum((1 - p["phi"]) * p["phi"] ** (r[d] - 1) for r in listed)
    points = [big_n - r[d] + 1 if d in r else (big_n - n + 1) / 2 for r, n in zip(ranks, lengths)]
    if name == "bordafuse":
        return sum(points)
    if name == "w_bordafuse":
        return sum(w * x for w, x in zip(weights, points))
    raise KeyError(name)


def fuse(runs, name: str, how: str = "min-max", params: dict | None = None, model: dict | None = None) -> dict:
    """``{query: {document: fused score}}`` by the definitions (see rankcli.core.fusion's modules)."""
    p = dict(params or {})
    weights = list(p.get("weights") or [1 / len(runs)] * len(runs))
    out = {}
    for q in queries(runs):
        cands, held, ranks, lengths = _evidence(runs, q, how)
        if name in ("condorcet", "w_condorcet"):
            out[q] = condorcet(cands, held, ranks, lengths, weights if name == "w_condorcet" else [1] * len(runs))
            continue
        res = {}
        for d in cands:
            if name in ("posfuse", "probfuse", "segfuse", "slidefuse", "mapfuse", "bayesfuse"):
                res[d] = _trained_method(name, d, held, ranks, lengths, p, model)
            elif name in ("isr", "log_isr", "logn_isr", "rrf", "rbc", "bordafuse", "w_bordafuse"):
                res[d] = _rank_method(name, d, ranks, lengths, len(cands), weights, p)
            else:
                idx = [i for i, h in enumerate(held) if d in h]
                res[d] = _score_method(name, [held[i][d] for i in idx], [weights[i] for i in idx], p)
        out[q] = res
    return out


def _beats(x, y, ranks, weights) -> bool:
    """x goes before y: at least as many (weighted) votes for x above y as for y above x."""
    big = float("inf")
    vx = sum(w for r, w in zip(ranks, weights) if r.get(x, big) < r.get(y, big))
    vy = sum(w for r, w in zip(ranks, weights) if r.get(y, big) < r.get(x, big))
    return vx >= vy


def condorcet(cands, held, ranks, lengths, weights) -> dict:
    """Condorcet fuse: a stable bottom-up merge sort with the majority comparison, from the Borda-fuse order (equal
    counts by document id descending); score N - position."""
    big_n = len(cands)
    borda = {d: _rank_method("bordafuse", d, ranks, lengths, big_n, weights, {}) for d in cands}
    seq = ranking(borda)
    width = 1
    while width < len(seq):
        merged = []
        for start in range(0, len(seq), 2 * width):
            left, right = seq[start:start + width], seq[start + width:start + 2 * width]
            i = j = 0
            while i < len(left) or j < len(right):
                if j >= len(right) or (i < len(left) and _beats(left[i], right[j], ranks, weights)):
                    merged.append(left[i])
                    i += 1
                else:
                    merged.append(right[j])
                    j += 1
        seq = merged
        width *= 2
    return {d: float(big_n - i) for i, d in enumerate(seq)}


# ---------------------------------------------------------------------------------------------------------------------
# Trained methods


def hit_lists(run, qrels, train_queries, threshold=1.0, ascending=False) -> list:
    """The run's hit list (1.0 relevant, 0.0 not) of each training query, in rank order ([] when not listed)."""
    return [[1.0 if qrels.get(q, {}).get(d, 0) >= threshold else 0.0 for d in ranking(run.get(q, {}), ascending)]
            for q in train_queries]


def train(name, runs, qrels, train_queries, params=None, threshold=1.0, ascending=False) -> dict:
    """What a trained method learns, per run, by the definitions."""
    p = params or {}
    out = []
    for run in runs:
        hl = hit_lists(run, qrels, train_queries, threshold, ascending)
        t = len(hl)
        if name in ("posfuse", "slidefuse"):
            width = max((len(h) for h in hl), default=0)
            out.append([sum(h[i] for h in hl if len(h) > i) / sum(1 for h in hl if len(h) > i)
                        for i in range(width)])
        elif name == "probfuse":
            k = p["segments"]
            probs = [0.0] * k
            for h in hl:
                size = math.ceil(len(h) / k)
                for s in range(k):
                    seg = h[s * size:(s + 1) * size]
                    if seg:
                        probs[s] += sum(seg) / len(seg)
            out.append([x / t for x in probs])
        elif name == "segfuse":
            out.append([sum(sum(h[a:b]) / (b - a) for h in hl) / t
                        for a, b in zip(SEGFUSE_BOUNDS[:-1], SEGFUSE_BOUNDS[1:])])
        elif name == "mapfuse":
            aps = []
            for q, h in zip(train_queries, hl):
                n_rel = sum(1 for v in qrels.get(q, {}).values() if v >= threshold)
                found = 0
                total = 0.0
                for i, x in enumerate(h):
                    if x:
                        found += 1
                        total += found / (i + 1)
                aps.append(total / n_rel if n_rel else 0.0)
            out.append(sum(aps) / t)
        else:  # bayesfuse
            odds = []
            for a, b in zip(BAYES_CUTS[:-1], BAYES_CUTS[1:]):
                prec = sum(sum(h[a:b]) / (b - a) for h in hl) / t
                prec = prec + 0.001 if prec == 0 else prec
                neg = 1 - prec
                neg = neg + 0.001 if neg == 0 else neg
                odds.append(math.log(prec / neg))
            out.append(odds)
    key = {"mapfuse": "map", "bayesfuse": "log_odds"}.get(name, "probabilities")
    return {key: out}


def _trained_method(name, d, held, ranks, lengths, p, model):
    total = 0.0
    for r, (rk, n) in enumerate(zip(ranks, lengths)):
        if d not in rk:
            if name == "bayesfuse":
                total += MIN_LOG_ODDS
            continue
        pos = rk[d] - 1
        if name == "bayesfuse":
            band = max(i for i, c in enumerate(BAYES_CUTS) if c <= pos)
            total += model["log_odds"][r][band] if pos < BAYES_CUTS[-1] else MIN_LOG_ODDS
        elif name == "mapfuse":
            total += model["map"][r] / (pos + 1)
        else:
            probs = model["probabilities"][r]
            if name == "posfuse":
                total += probs[pos] if pos < len(probs) else 0.0
            elif name == "probfuse":
                size = math.ceil(n / p["segments"])
                k = pos // size
                total += probs[k] / (k + 1)
            elif name == "segfuse":
                k = max(i for i, c in enumerate(SEGFUSE_BOUNDS) if c <= pos)
                total += (probs[k] if pos < SEGFUSE_BOUNDS[-1] else 0.0) * (held[r][d] + 1)
            else:  # slidefuse
                a, b = max(pos - p["window"], 0), min(pos + p["window"], n - 1)
                total += sum(probs[i] for i in range(a, b + 1) if i < len(probs)) / (b - a + 1)
    return total
