"""Random qrels and runs for the differential test of ``rankcli trec_eval`` against a trec_eval binary (and its
bench script, bench/trec_eval_diff.py): graded, negative and unjudged labels, labels above 32, ties, judged queries
missing from the run and run queries missing from the qrels, runs shorter than the cutoffs, ids whose byte order
differs from their numeric or case-folded order, extra columns, odd number spellings."""

from __future__ import annotations

import numpy as np

QIDS = [b"1", b"10", b"2", b"9", b"a", b"A", b"q-1", b"\xc3\xa9t\xc3\xa9", b"Z0"]
DOCS = [b"d1", b"d10", b"d2", b"D1", b"d\xff", b"d_1", b"d-1", b"doc", b"Doc", b"d01", b"x", b"ceci",
        b"e1", b"e2", b"e3", b"e4", b"e5", b"e6", b"e7", b"e8", b"e9", b"e10", b"e11", b"e12"]
LABELS = [-2, -1, 0, 0, 0, 1, 1, 2, 3, 4, 40]
SCORES = [b"1", b"2", b"2.0", b"0.5", b"-1", b"3e0", b"1e-3", b"0x1p1", b"+2", b"7"]

#: Flag sets compared (each with every measure of all_trec, per query); -c whenever a judged query lacks a run.
#: ideal_dcg is left out: for a query whose judgments are all negative trec_eval 10.0 reuses the previous query's
#: label counts (docs/trec_eval.md), where rankcli counts none.
FLAG_SETS = [[], ["-c"], ["-l2"], ["-l0"], ["-J"], ["-M3"], ["-c", "-J"], ["-l3", "-M5"],
             ["-m", "ndcg.1=3,2=0.5,3=0", "-m", "G.2=5", "-m", "Rndcg.1=2,3=2", "-m", "rbp.p=0.8",
              "-m", "ndcg_rel.4=1", "-m", "11pt_avg.0.9,.1,.5", "-m", "set",
              "-m", "yaap", "-m", "relstring.5", "-m", "utility.1,-2,0.5,0", "-N", "100",
              "-m", "Rprec_mult.0.5,3", "-m", "set_F.0.5"],
             ["-m", "dcg", "-m", "rbp_resid.p=0.5", "-m", "unj.1,3", "-m", "success.2,3"],
             ["-R", "qrels_jg", "-m", "qrels_jg", "-m", "P_avgjg.1,3"]]


def case(rng: np.random.Generator) -> tuple[bytes, bytes, bool]:
    """One (qrels, run, every judged query ranked) pair of file contents."""
    plain = rng.random() < 0.5  # plain numbers and six fields: the C path's input (else trec_eval's own rules)
    nq = int(rng.integers(1, 7))
    qids = list(rng.choice(len(QIDS), size=nq, replace=False))
    qrels, run = [], []
    complete = True
    for q in qids:
        qid = QIDS[q]
        judged = rng.random() < 0.85
        ranked = rng.random() < 0.85 or not judged
        if judged:
            nj = int(rng.integers(1, 12))
            negative_only = rng.random() < 0.05
            for d in rng.choice(len(DOCS), size=nj, replace=False):
                label = -1 if negative_only else int(rng.choice(LABELS))
                group = (b"0", b"10", b"2")[int(rng.integers(3))]  # judgment groups, for -R qrels_jg
                qrels.append(b"%s %s %s %d" % (qid, group, DOCS[d], label))
            complete &= ranked
        if ranked:
            nr = int(rng.integers(1, 16))
            for rank, d in enumerate(rng.choice(len(DOCS), size=nr, replace=False)):
                score = SCORES[int(rng.integers(len(SCORES)))]
                if plain:
                    score = b"%d.%d" % (rng.integers(-2, 3), rng.integers(0, 3))
                extra = b" extra col" if rng.random() < 0.1 and not plain else b""
                run.append(b"%s Q0 %s %d %s tag%d%s" % (qid, DOCS[d], rank, score, rank % 3, extra))
    if not run:  # trec_eval reads a run without a line as one query of uninitialised memory
        run.append(b"%s Q0 d1 1 1 tag" % QIDS[qids[0]])
    if not qrels:
        qrels.append(b"%s 0 d1 1" % QIDS[qids[0]])
        complete = complete and any(line.startswith(QIDS[qids[0]] + b" ") for line in run)
    rng.shuffle(qrels)
    rng.shuffle(run)
    return b"\n".join(qrels) + b"\n", b"\n".join(run) + b"\n", complete


def flag_sets(complete: bool) -> list[list[str]]:
    """The flag sets to compare a case under (``-c`` added when a judged query has no ranking: trec_eval 10.0
    refuses that case without it, where 9.0.x and rankcli leave the query out)."""
    out = []
    for flags in FLAG_SETS:
        flags = list(flags)
        if not complete and "-c" not in flags:
            flags.append("-c")
        out.append(["-q", *([] if "qrels_jg" in flags else ["-m", "all_trec"]), *flags])
    return out
