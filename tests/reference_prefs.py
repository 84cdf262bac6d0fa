"""trec_eval's preference measures as its C code computes them, one query at a time, in plain loops: a slow,
line-for-line reading of ``form_prefs_counts.c`` and the ``m_prefs_*.c`` files, which the vectorised code of
``rankcli/core/trec_eval/prefs_*.py`` is tested against (tests/trec_eval/test_prefs.py). Where trec_eval reads past an
array (``recalculate`` of ``m_prefs_avgjg_Rnonrel*.c`` with a short last class) it stops at the array's end, as
rankcli does."""

from __future__ import annotations

import functools
import math


class Refused(Exception):
    """What trec_eval refuses (form_prefs_counts returns UNDEF, or aborts)."""


def docid_ranks(lines, results, max_docs):
    """``form_prefs_and_ranks``: lines (jg, jsg, level, docno), results [(docno, sim)] -> ((jg, jsg, level, docno,
    rank) sorted as trec_eval sorts them, num_judged_ret, num_judged)."""
    ranked = sorted(results, key=lambda r: (-r[1], r[0]))[:max(max_docs, 0)]
    docnos = [d for d, _ in ranked]
    if len(set(docnos)) != len(docnos):
        raise Refused("duplicate docs")
    judged = {line[3] for line in lines}
    retrieved = [d for d in docnos if d in judged]
    rank = {d: i for i, d in enumerate(retrieved)}
    for d in sorted(judged - set(retrieved)):
        rank[d] = len(rank)

    def compare(a, b):
        for x, y in ((a[0], b[0]), (a[1], b[1])):
            if x != y:
                return -1 if x < y else 1
        if a[2] > b[2]:
            return -1
        if a[2] < b[2]:
            return 1
        return a[4] - b[4]

    out = sorted(((jg, jsg, lv, d, rank[d]) for jg, jsg, lv, d in lines), key=functools.cmp_to_key(compare))
    return out, len(retrieved), len(rank)


def _area(r1, r2, njr):
    if r1 < r2:
        return "ful_ret" if r2 < njr else "ful_imp" if r1 < njr else "notoccur"
    return "unful_ret" if r1 < njr else "unful_imp" if r2 < njr else "notoccur"


def _ec_group(prefs, njr, counts):
    """form_jg_ec and add_ec_pref_to_jg."""
    ecs, level = [], None
    for i, p in enumerate(prefs):
        if i == 0 or p[2] != level:
            level = p[2]
            ecs.append((level, []))
        ecs[-1][1].append(p[4])
    if prefs[0][2] == -3.0:  # num_rel_level was not counted for the first level: one class fewer
        ecs = ecs[:-1]
    jg = {k: 0 for k in ("ful_ret", "ful_imp", "unful_ret", "unful_imp", "notoccur", "num_rel", "num_rel_ret",
                         "num_nonrel", "num_nonrel_ret")}
    for e1, (lv, ranks) in enumerate(ecs):
        ret = sum(r < njr for r in ranks)
        kind = "num_rel" if lv > 0.0 else "num_nonrel"
        jg[kind] += len(ranks)
        jg[kind + "_ret"] += ret
        for _, ranks2 in ecs[e1 + 1:]:
            for r1 in ranks:
                for r2 in ranks2:
                    counts[(r1, r2)] = counts.get((r1, r2), 0) + 1
                    if r1 == r2:
                        raise Refused("Internal docid occurs with different rel_level in same jsg")
                    jg[_area(r1, r2, njr)] += 1
    jg["ecs"] = ecs
    return jg


def _pa_group(prefs, njr, nj, counts):
    """form_jg_pa, add_transitives and add_pa_pref_to_jg."""
    rel = [-1.0] * nj
    pa = [[0] * nj for _ in range(nj)]
    for i, p in enumerate(prefs):
        if (rel[p[4]] > 0.0 and p[2] == 0.0) or (rel[p[4]] == 0.0 and p[2] > 0.0):
            raise Refused("has both 0 and non-0 rel_level")
        rel[p[4]] = p[2]
        j = i + 1
        while j < len(prefs) and prefs[j][1] == p[1] and prefs[j][2] == p[2]:
            j += 1
        while j < len(prefs) and prefs[j][1] == p[1]:
            pa[p[4]][prefs[j][4]] = 1
            j += 1
    for i in range(nj):
        pa[i][i] = 1
    changed = True
    while changed:
        new = [[int(any(pa[i][k] and pa[k][j] for k in range(nj))) for j in range(nj)] for i in range(nj)]
        changed, pa = new != pa, new
    for i in range(nj):
        pa[i][i] = 0
    if any(pa[i][j] and pa[j][i] for i in range(nj) for j in range(nj)):
        raise Refused("Pref inconsistency found")
    jg = {k: 0 for k in ("ful_ret", "ful_imp", "unful_ret", "unful_imp", "notoccur")}
    for i in range(nj):
        for j in range(nj):
            if pa[i][j]:
                counts[(i, j)] = counts.get((i, j), 0) + 1
                jg[_area(i, j, njr)] += 1
    jg["num_rel"] = sum(x > 0.0 for x in rel)
    jg["num_rel_ret"] = sum(x > 0.0 for x in rel[:njr])
    jg["num_nonrel"] = sum(x == 0.0 for x in rel)
    jg["num_nonrel_ret"] = sum(x == 0.0 for x in rel[:njr])
    jg["pa"], jg["rel"] = pa, rel
    return jg


def form_prefs_counts(lines, results, max_docs):
    """The judgment groups (counts, classes or array) and the pair counts of one query."""
    prefs, njr, nj = docid_ranks(lines, results, max_docs)
    counts, jgs, start = {}, [], 0
    for i in range(1, len(prefs) + 1):
        if i == len(prefs) or prefs[i][0] != prefs[start][0]:
            group = prefs[start:i]
            if len({p[1] for p in group}) > 1:
                jgs.append(_pa_group(group, njr, nj, counts))
            else:
                jgs.append(_ec_group(group, njr, counts))
            start = i
    for jg in jgs:
        jg["poss_ret"] = jg["ful_ret"] + jg["unful_ret"]
        jg["poss_imp"] = jg["ful_imp"] + jg["unful_imp"]
    return jgs, {k: v % 65536 for k, v in counts.items()}, njr, nj


def _recalculate(jg, njr, nj, retrieved_only):
    """recalculate of m_prefs_avgjg_Rnonrel.c (and _ret)."""
    ful = poss = 0
    if "ecs" in jg:
        ecs = jg["ecs"]
        last = ecs[-1][1]
        if retrieved_only:
            new = [r for r in last[:jg["num_rel_ret"]] if r < njr]
            for e1, (_, ranks) in enumerate(ecs):
                for ec2 in ecs[e1 + 1:-1]:
                    for r1 in (r for r in ranks if r < njr):
                        for r2 in (r for r in ec2[1] if r < njr):
                            ful, poss = (ful + 1, poss) if r1 < r2 else (ful, poss + 1)
            for _, ranks in ecs:
                for r1 in (r for r in ranks if r < njr):
                    for r2 in new:
                        ful, poss = (ful + 1, poss) if r1 < r2 else (ful, poss + 1)
        else:
            new = last[:jg["num_rel"]]
            for e1, (_, ranks) in enumerate(ecs):
                for ec2 in ecs[e1 + 1:-1]:
                    for r1 in ranks:
                        for r2 in ec2[1]:
                            ful, poss = (ful + 1, poss) if r1 < r2 and r1 < njr else (ful, poss + 1)
            for _, ranks in ecs:
                for r1 in ranks:
                    for r2 in new:
                        ful, poss = (ful + 1, poss) if r1 < r2 and r1 < njr else (ful, poss + 1)
        return ful, poss + ful
    rel, pa = jg["rel"], jg["pa"]
    seen, first = 0, (njr if retrieved_only else nj)
    for i in range(njr if retrieved_only else nj):
        if rel[i] == 0.0:
            seen += 1
            if seen == jg["num_rel"] + 1:
                first = i
                break
    kept = [not (i >= first and rel[i] == 0.0) for i in range(nj)]
    for i in range(nj):
        for j in range(nj):
            if pa[i][j] and kept[i] and kept[j]:
                area = _area(i, j, njr)
                if retrieved_only and area not in ("ful_ret", "unful_ret"):
                    continue
                ful += area in ("ful_ret", "ful_imp") and (area == "ful_ret" or not retrieved_only)
                poss += area not in ("ful_ret", "ful_imp")
    return ful, poss + ful


def _sum_ratios(pairs):
    total = 0.0
    for ful, poss in pairs:
        total += ful / poss if poss else math.nan
    return total


def measures(lines, results, max_docs):
    """Every prefs measure of one query, as trec_eval computes it (a value it leaves unset is 0)."""
    jgs, c, njr, nj = form_prefs_counts(lines, results, max_docs)
    s = lambda key: sum(jg[key] for jg in jgs)  # noqa: E731
    out = {"prefs_num_prefs_poss": s("poss_ret") + s("poss_imp") + s("notoccur"),
           "prefs_num_prefs_ful": s("ful_ret") + s("ful_imp"), "prefs_num_prefs_ful_ret": s("ful_ret")}
    for name, ful, poss in (("prefs_simp", ("ful_ret", "ful_imp"), ("poss_ret", "poss_imp", "notoccur")),
                            ("prefs_simp_ret", ("ful_ret",), ("poss_ret",)),
                            ("prefs_simp_imp", ("ful_ret", "ful_imp"), ("poss_ret", "poss_imp"))):
        f, p = sum(s(k) for k in ful), sum(s(k) for k in poss)
        out[name] = f / p if p else 0.0
        total = 0.0
        for jg in jgs:
            f, p = sum(jg[k] for k in ful), sum(jg[k] for k in poss)
            if p:
                total += f / p
        out[name.replace("simp", "avgjg")] = total / len(jgs) if total > 0.0 else 0.0
    for name, ret in (("prefs_avgjg_Rnonrel", False), ("prefs_avgjg_Rnonrel_ret", True)):
        ratios = []
        for jg in jgs:
            r, n = (jg["num_rel_ret"], jg["num_nonrel_ret"]) if ret else (jg["num_rel"], jg["num_nonrel"])
            if r >= n:
                f = jg["ful_ret"] + (0 if ret else jg["ful_imp"]) + jg["num_rel_ret"] * (r - n)
                p = jg["poss_ret"] + (0 if ret else jg["poss_imp"] + jg["notoccur"]) + jg["num_rel"] * (r - n)
                ratios.append((f, p))
            else:
                ratios.append(_recalculate(jg, njr, nj, ret))
        total = _sum_ratios(ratios)
        out[name] = total / len(jgs) if total > 0.0 else 0.0
    loops = {1: [], 2: [], 3: []}
    for i in range(nj):
        for j in range(i + 1, nj):
            a, b = c.get((i, j), 0), c.get((j, i), 0)
            if a or b:
                loops[1 if j < njr else 2 if i < njr else 3].append(a / (a + b))
    pair_sum = 0.0
    for x in loops[1]:
        pair_sum += x
    ret_sum = pair_sum
    for x in loops[2]:
        pair_sum += x
    n1, n2, n3 = len(loops[1]), len(loops[2]), len(loops[3])
    out["prefs_pair_ret"] = ret_sum / n1 if n1 else 0.0
    out["prefs_pair_imp"] = pair_sum / (n1 + n2) if n1 + n2 else 0.0
    out["prefs_pair"] = pair_sum / (n1 + n2 + n3) if n1 + n2 + n3 else 0.0
    return out
