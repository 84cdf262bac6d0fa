"""Random runs for the fusion tests: ``{query: {document: score}}`` dictionaries with ties, missing documents and
(optionally) missing queries, and their forms for rankcli (RunRows, TREC files) and for ranx."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rankcli.core.fusion import RunRows
from rankcli.formats.trec.parse import doc_hash, words_of


def random_runs(rng: np.random.Generator, n_runs: int = 3, n_queries: int = 12, pool: int = 14, *,
                ties: bool = True, missing_queries: bool = False, max_docs: int | None = None) -> list[dict]:
    """Runs over queries ``q00..``: each lists a random subset of the query's ``pool`` documents (``d0..``), scores
    rounded to a few levels when ``ties`` (several documents share a score), else distinct; with
    ``missing_queries`` some runs lack some queries."""
    runs = []
    for _ in range(n_runs):
        run = {}
        for q in range(n_queries):
            if missing_queries and rng.random() < 0.25:
                continue
            n = int(rng.integers(1, (max_docs or pool) + 1))
            docs = rng.choice(pool, n, replace=False)
            scores = rng.integers(0, 4, n) * 0.5 + rng.integers(-2, 3) if ties else rng.normal(size=n) * 2
            run[f"q{q:02d}"] = {f"d{d}": float(s) for d, s in zip(docs, scores)}
        runs.append(run)
    if missing_queries:  # every query in at least one run
        for q in range(n_queries):
            name = f"q{q:02d}"
            if not any(name in r for r in runs):
                runs[0][name] = {"d0": 1.0}
    return runs


def query_names(runs: list[dict]) -> list[str]:
    return sorted({q for run in runs for q in run})


def to_rows(run: dict, names: list[str], label: str = "") -> RunRows:
    """A dictionary run as rankcli's RunRows in the numbering ``names`` (rows in dictionary order)."""
    qs, offsets, docs, scores = [], [0], [], []
    for i, q in enumerate(names):
        items = run.get(q)
        if not items:
            continue
        qs.append(i)
        docs += list(items)
        scores += list(items.values())
        offsets.append(len(docs))
    arr = np.array(docs, dtype="S").astype("S8") if docs else np.zeros(0, dtype="S8")
    return RunRows(np.array(qs, dtype=np.int64), np.array(offsets, dtype=np.int64), doc_hash(words_of(arr)), arr,
                   np.array(scores, dtype=np.float64), label)


def all_rows(runs: list[dict]) -> tuple[list[RunRows], list[str]]:
    names = query_names(runs)
    return [to_rows(r, names, f"run{i}") for i, r in enumerate(runs)], names


def as_dict(ev, fused, names) -> dict:
    """rankcli's fused scores as ``{query: {document: score}}``."""
    al = ev.aligned
    out = {}
    for qi, q in enumerate(names):
        a, b = al.offsets[qi], al.offsets[qi + 1]
        if b > a:
            out[q] = {al.names[c].decode(): float(fused[c]) for c in range(a, b)}
    return out


def write_trec(path: Path, run: dict, tag: str = "t") -> Path:
    """A dictionary run as a TREC file, each query's lines best first (equal scores by docid descending)."""
    from tests.reference_fusion import ranking

    with open(path, "w") as fh:
        for q in sorted(run):
            for i, d in enumerate(ranking(run[q])):
                fh.write(f"{q} Q0 {d} {i + 1} {run[q][d]!r} {tag}\n")
    return path


def write_qrels(path: Path, qrels: dict) -> Path:
    with open(path, "w") as fh:
        for q in sorted(qrels):
            for d, y in qrels[q].items():
                fh.write(f"{q} 0 {d} {y}\n")
    return path


def random_qrels(rng: np.random.Generator, runs: list[dict], pool: int = 14, share: float = 0.6) -> dict:
    """Graded judgments of about ``share`` of each query's pool, at least one relevant document per query."""
    out = {}
    for q in query_names(runs):
        docs = [f"d{d}" for d in range(pool) if rng.random() < share] or ["d0"]
        out[q] = {d: int(rng.integers(0, 3)) for d in docs}
        if not any(v > 0 for v in out[q].values()):
            out[q][docs[0]] = 1
    return out


def close(a: dict, b: dict, tol: float = 1e-12) -> float:
    """The largest difference between two fused runs over the same (query, document) pairs (inf if they differ)."""
    if a.keys() != b.keys():
        return float("inf")
    worst = 0.0
    for q in a:
        if a[q].keys() != b[q].keys():
            return float("inf")
        worst = max([worst] + [abs(a[q][d] - b[q][d]) for d in a[q]])
    return worst
