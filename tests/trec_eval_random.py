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


#: Judgment group and sub-group names (byte order traps: "10" < "2", "B" < "a").
GROUPS = [b"0", b"10", b"2", b"a", b"B", b"u:1"]
#: How a level is spelt (atof reads each): the level's value, then spellings.
LEVEL_TEXT = {0.0: [b"0", b"0.0", b"-0"], 1.0: [b"1", b"1.0", b"1e0"], 2.0: [b"2", b"0x1p1", b"2.00"],
              1.5: [b"1.5"], 3.0: [b"3"], 6.0: [b"6"], -1.0: [b"-1"], -2.0: [b"-2"], -3.0: [b"-3.0", b"-3"]}


def _level(rng: np.random.Generator, value: float) -> bytes:
    options = LEVEL_TEXT[value]
    return options[int(rng.integers(len(options)))]


def _ec_levels(rng: np.random.Generator, n: int) -> list[float]:
    """Levels of one sub-group's documents: positive ones and at most one level at or below 0 (with two, trec_eval's
    prefs_avgjg_Rnonrel reads past an array: docs/trec_eval.md); now and then all -3.0 (its marker level)."""
    if rng.random() < 0.04:
        return [-3.0] * n
    low = [0.0, 0.0, -1.0, None][int(rng.integers(4))]
    pool = [1.0, 2.0, 1.5, 3.0] + ([low] * 2 if low is not None else [])
    return [pool[int(rng.integers(len(pool)))] for _ in range(n)]


def _group_lines(rng: np.random.Generator, docs: list[bytes], qrels_style: bool) -> list[tuple[bytes, bytes, float]]:
    """(sub-group, document, level) lines of one judgment group: one sub-group (classes of levels) or several drawn
    from one hidden order (so that the group is consistent), with a rare inconsistency trec_eval refuses."""
    if qrels_style or rng.random() < 0.5:
        chosen = [docs[i] for i in rng.choice(len(docs), size=int(rng.integers(1, min(len(docs), 8) + 1)),
                                               replace=False)]
        lines = [(b"0", d, lv) for d, lv in zip(chosen, _ec_levels(rng, len(chosen)))]
        if rng.random() < 0.15:  # a document given twice at its level counts twice
            lines.append(lines[int(rng.integers(len(lines)))])
        if rng.random() < 0.008:  # one document at two levels of one sub-group: refused
            sub, d, lv = lines[0]
            lines.append((sub, d, 6.0 if lv != 6.0 else 1.0))
        return lines
    hidden = {d: [0.0, 0.0, 1.0, 2.0, 3.0, 6.0, -1.0][int(rng.integers(7))] for d in docs}
    lines = []
    for s in rng.choice(len(GROUPS), size=int(rng.integers(2, 4)), replace=False):
        chosen = rng.choice(len(docs), size=int(rng.integers(1, min(len(docs), 6) + 1)), replace=False)
        lines += [(GROUPS[s], docs[i], hidden[docs[i]]) for i in chosen]
    if rng.random() < 0.01:  # a reversed sub-group: a cycle (trec_eval aborts) or a 0 / above-0 clash
        sub = lines[0][0]
        lines = [(s, d, {0.0: 6.0, 6.0: 0.0}.get(lv, -lv) if s == sub else lv) for s, d, lv in lines]
    return lines


def prefs_case(rng: np.random.Generator) -> tuple[bytes, bytes, bool, str]:
    """One (preference file, run, every query ranked, -R format) of random content: judgment groups of one
    sub-group and of several, levels at and below 0, documents judged in several groups, unretrieved and unjudged
    documents, ties, comments, queries missing from the run."""
    qrels_style = rng.random() < 0.35
    prefs, run, complete = [], [], True
    for q in rng.choice(len(QIDS), size=int(rng.integers(1, 6)), replace=False):
        qid = QIDS[q]
        docs = [DOCS[i] for i in rng.choice(len(DOCS), size=int(rng.integers(2, 15)), replace=False)]
        for g in rng.choice(len(GROUPS), size=int(rng.integers(1, 4)), replace=False):
            for sub, d, lv in _group_lines(rng, docs, qrels_style):
                fields = [qid, GROUPS[g], d, _level(rng, lv)] if qrels_style else [qid, GROUPS[g], sub, d,
                                                                                   _level(rng, lv)]
                end = b" \r" if rng.random() < 0.05 else b""
                prefs.append((b" ", b"\t")[int(rng.integers(2))].join(fields) + end)
        if rng.random() < 0.15:
            complete = False
            continue
        pool = docs + [DOCS[i] for i in rng.choice(len(DOCS), size=4, replace=False) if DOCS[i] not in docs]
        for rank, i in enumerate(rng.choice(len(pool), size=int(rng.integers(1, len(pool) + 1)), replace=False)):
            run.append(b"%s Q0 %s %d %d tag" % (qid, pool[i], rank, rng.integers(0, 4)))
    if not run:
        run.append(b"%s Q0 d1 1 1 tag" % prefs[0].split()[0])
        complete = complete and all(line.split()[0] == prefs[0].split()[0] for line in prefs)
    rng.shuffle(prefs)
    rng.shuffle(run)
    for at in sorted(rng.choice(len(prefs), size=min(int(rng.integers(0, 3)), len(prefs)),
                                replace=False), reverse=True):
        prefs.insert(int(at), b"# a comment")  # never last: trec_eval reads past the end of a last comment
    return b"\n".join(prefs) + b"\n", b"\n".join(run) + b"\n", complete, "qrels_prefs" if qrels_style else "prefs"


#: Flag sets compared on preference cases (-R added): -J, -l and -N change nothing there.
PREFS_FLAG_SETS = [["-q", "-m", "all_prefs"], ["-q", "-m", "all_prefs", "-M3"], ["-m", "all_prefs", "-c", "-M5"],
                   ["-q", "-m", "prefs", "-J", "-l2", "-N", "9"], ["-q", "-m", "prefs_pair", "-m", "num_q", "-c"]]


def prefs_flag_sets(complete: bool, rel_format: str) -> list[list[str]]:
    """The flag sets to compare a preference case under (``-c`` added when a query has no ranking)."""
    return [[*flags, "-R", rel_format, *([] if complete or "-c" in flags else ["-c"])] for flags in PREFS_FLAG_SETS]
