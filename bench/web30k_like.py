"""A WEB30K-shaped synthetic dataset written straight to Parquet, for the scale benchmarks (bench/scale.py).

MSLR-WEB30K has 3.7M documents x 136 features in ~31k queries (~120 documents each), graded labels 0-4 (most 0 or
1). Its features are counts (term frequencies: many zeros, heavy tails), normalised fractions, BM25/LMIR-like
scores, PageRank-like heavy-tailed values and a few nearly constant or binary ones; about a third of the cells are
zero. This generator draws each feature from one such family, with a per-query shift, and makes the labels depend on
a few of the features so that a ranker has something to learn. It writes the data model's Parquet file (qid int64,
label float64, f1..f136 float32; row groups ending on query boundaries) chunk by chunk, so that a 3.7M-row file needs
no more memory than a chunk.

    python bench/web30k_like.py --rows 1000000 -o bench/data/web30k_1m.parquet
    python bench/web30k_like.py --rows 3700000 -o bench/data/web30k_3m7.parquet
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

N_FEATURES = 136
CHUNK_QUERIES = 1000


def feature_families(rng: np.random.Generator) -> np.ndarray:
    """The family of each feature: 0 counts, 1 fractions, 2 scores, 3 heavy-tailed, 4 binary, 5 nearly constant."""
    return rng.choice(6, N_FEATURES, p=[0.35, 0.2, 0.25, 0.1, 0.05, 0.05])


def chunk(rng: np.random.Generator, families: np.ndarray, first_qid: int, n_queries: int):
    """``(qids, labels, features)`` of ``n_queries`` queries: int64, float64, float32 ``(rows, 136)`` C-ordered."""
    sizes = np.clip(rng.normal(120, 45, n_queries).round().astype(np.int64), 5, 1250)
    n = int(sizes.sum())
    qids = np.repeat(np.arange(first_qid, first_qid + n_queries, dtype=np.int64), sizes)
    query_of_row = np.repeat(np.arange(n_queries), sizes)
    shift = rng.normal(0, 1, (n_queries, 1))[query_of_row]  # a query's documents look alike
    x = np.empty((n, N_FEATURES), dtype=np.float32)
    for j, family in enumerate(families):
        if family == 0:      # term counts: mostly zero in the title/anchor streams, heavy-tailed
            v = rng.poisson(np.exp(rng.uniform(-2, 3)) * np.exp(0.5 * shift[:, 0]))
        elif family == 1:    # normalised fractions, often zero
            v = np.where(rng.random(n) < rng.uniform(0.1, 0.6), 0.0, rng.beta(0.5, 3, n))
        elif family == 2:    # BM25 / LMIR-like scores
            v = np.maximum(0.0, rng.normal(10 + 3 * shift[:, 0], 5))
        elif family == 3:    # PageRank-like
            v = rng.lognormal(2, 2.5, n)
        elif family == 4:
            v = (rng.random(n) < 0.2).astype(np.float64)
        else:
            v = np.where(rng.random(n) < 0.995, 0.0, rng.integers(1, 5, n)).astype(np.float64)
        x[:, j] = v
    informative = np.log1p(x[:, :12].astype(np.float64)) @ rng.normal(0.3, 0.2, 12)
    z = informative - informative.mean() + rng.logistic(0, 1.2, n)
    labels = np.digitize(z, np.quantile(z, [0.52, 0.80, 0.93, 0.985])).astype(np.float64)
    return qids, labels, x


def generate(rows: int, path: Path, seed: int = 0) -> None:
    """Write ``rows`` rows (whole queries: a little more) to ``path`` atomically."""
    import pyarrow as pa

    from rankcli.formats.parquet import QueryAlignedWriter, dataset_schema, feature_names

    rng = np.random.default_rng(seed)
    families = feature_families(rng)
    schema = dataset_schema(N_FEATURES)
    tmp = path.with_name(path.name + ".tmp")
    done, qid = 0, 0
    with QueryAlignedWriter(tmp, schema, {"kind": "dataset", "num_features": N_FEATURES,
                                          "source": f"bench/web30k_like.py seed {seed}"},
                            use_dictionary=["qid", "label"]) as writer:
        while done < rows:
            qids, labels, x = chunk(rng, families, qid, CHUNK_QUERIES)
            keep = np.searchsorted(qids, qids[min(rows - done, qids.shape[0]) - 1], side="right")
            columns = {"qid": pa.array(qids[:keep]), "label": pa.array(labels[:keep])}
            for j, name in enumerate(feature_names(N_FEATURES)):
                columns[name] = pa.array(x[:keep, j])
            writer.write(pa.table(columns))
            done += keep
            qid += CHUNK_QUERIES
    os.replace(tmp, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", type=Path, required=True)
    args = ap.parse_args()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    generate(args.rows, args.output, args.seed)
    print(f"{args.output}: {args.output.stat().st_size / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
