"""Generate rankcli's bundled sample data, deterministically (same bytes on every run and machine).

A small, realistic LETOR-format dataset: 150 queries of 5..150 documents (a long-tailed size distribution, as in web
search), 40 features of which a handful carry the signal (a linear part, an interaction and a threshold, as BM25-like
features do), graded labels 0..4 from that signal plus noise, a per-query difficulty so that some queries have no
relevant document at all, and MQ2007-style ``# docid = ...`` comments. Written twice:

- ``letor/{train,vali,test}.txt``: ``<label> qid:<q> <idx>:<value> ... # docid = <id> inc = ... prob = ...``
- ``lightgbm/{train,vali,test}.txt`` + ``.query`` sidecars: LightGBM's layout (no ``qid:``, group sizes per line).

Run from anywhere: ``python sample_data/generate.py``. Uses only numpy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

N_QUERIES = 150
N_FEATURES = 40
SPLITS = {"train": 90, "vali": 30, "test": 30}
SEED = 20210419  # the XE-NDCG paper's conference date (WWW 2021)


def generate(rng: np.random.Generator):
    sizes = np.clip(np.round(rng.lognormal(mean=2.85, sigma=0.75, size=N_QUERIES)), 5, 150).astype(int)
    queries = []
    for q in range(N_QUERIES):
        m = sizes[q]
        x = rng.random((m, N_FEATURES))
        # Sparse, as real LETOR features are: about 35% of the values are exactly zero (omitted in the text).
        x[rng.random((m, N_FEATURES)) < 0.35] = 0.0
        difficulty = rng.normal(0.0, 0.6)
        signal = (1.6 * x[:, 0] + 1.1 * x[:, 3] + 0.8 * x[:, 7] * x[:, 11] + 0.9 * (x[:, 19] > 0.6)
                  - 0.5 * x[:, 25] + rng.normal(0.0, 0.35, m) - difficulty)
        labels = np.digitize(signal, [1.3, 1.9, 2.4, 2.9])
        if rng.random() < 0.08:  # some queries have no relevant document at all
            labels[:] = 0
        queries.append((x, labels))
    return queries


def fmt_row(label: int, qid: int | None, x: np.ndarray, comment: str | None) -> str:
    parts = [str(label)]
    if qid is not None:
        parts.append(f"qid:{qid}")
    nz = np.flatnonzero(x)
    parts += [f"{j + 1}:{x[j]:.3g}" for j in nz]
    line = " ".join(parts)
    return f"{line} # {comment}" if comment else line


def main() -> None:
    rng = np.random.default_rng(SEED)
    queries = generate(rng)
    root = Path(__file__).resolve().parent
    (root / "letor").mkdir(exist_ok=True)
    (root / "lightgbm").mkdir(exist_ok=True)
    q = 0
    for split, count in SPLITS.items():
        letor_lines, lgb_lines, group_sizes = [], [], []
        for _ in range(count):
            x, labels = queries[q]
            qid = 1000 + 7 * q
            for i, (row, label) in enumerate(zip(x, labels)):
                docid = f"SD{qid:05d}-{i:03d}"
                comment = f"docid = {docid} inc = {row[5]:.2g} prob = {row[9]:.2g}"
                letor_lines.append(fmt_row(int(label), qid, row, comment))
                lgb_lines.append(fmt_row(int(label), None, row, None))
            group_sizes.append(len(labels))
            q += 1
        (root / "letor" / f"{split}.txt").write_text("\n".join(letor_lines) + "\n")
        (root / "lightgbm" / f"{split}.txt").write_text("\n".join(lgb_lines) + "\n")
        (root / "lightgbm" / f"{split}.txt.query").write_text("\n".join(map(str, group_sizes)) + "\n")


if __name__ == "__main__":
    main()
