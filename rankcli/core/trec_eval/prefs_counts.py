"""The preference counts of ``form_prefs_counts.c`` for a block of queries, every judgment group at once
(``rankcli trec_eval -R prefs``, ``-R qrels_prefs``).

A judgment group (JG: a query's lines sharing a group id) with one sub-group (JSG) is a list of *equivalence
classes* (ECs: its lines of one level, levels descending); every line of a class is preferred to every line of each
later class, once per pair of lines (a document given twice counts twice). A group with several sub-groups is a
*preference array*: within each sub-group every document is preferred to those of lower levels, the array is closed
under transitivity, and each (document, document) preference counts once.

Each preference A > B (docid ranks ``a``, ``b``; ``njr`` documents retrieved) falls in one area: fulfilled and
retrieved (``a < b < njr``), fulfilled implied (``a < njr <= b``), not fulfilled retrieved (``b < a < njr``), not
fulfilled implied (``b < njr <= a``), or neither retrieved. A group also counts its relevant (level > 0) and
non-relevant documents, retrieved and in all: per line in an EC group (level <= 0 non-relevant), per document in an
array group by the level its last line gives it (level 0 non-relevant; a negative level neither).

trec_eval's particulars, kept: an EC group whose highest level is exactly -3.0 (its "illegal level" marker) counts
one class fewer, its last; a document at two levels of one EC group's sub-group, a document at level 0 and above 0
in consecutive lines of an array group, and a cycle of preferences in an array group are refused (trec_eval aborts on
the cycle).

How, without a loop over queries: an EC group's preferences are never listed; for each line ``b``, four counts over
the lines of the classes before its own (``P`` all of them, ``L`` those ranked before ``b``, ``E`` those of the same
document, ``Rt`` the retrieved ones; from one sorted list holding each line once per later class) give every area.
An array group is a boolean matrix over its documents, closed by repeated squaring, the matrices of a block stacked
per size class.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from rankcli.core.trec_eval.prefs_join import RankedPrefs
from rankcli.core.trec_eval.prefs_pairs import changes, pair_sums, partners, runs


@dataclass
class Conflict:
    """Preferences trec_eval refuses: what is wrong, and a line of the preference file it concerns."""

    what: str
    line: int


@dataclass
class Earlier:
    """For each active line ``b`` of an EC group (``lines``): the lines of the classes before its own (``P``), those
    ranked before it (``L``), those of its document (``E``), and the retrieved ones (``Rt``)."""

    lines: np.ndarray
    P: np.ndarray
    L: np.ndarray
    E: np.ndarray
    Rt: np.ndarray


def _areas(r1: np.ndarray, r2: np.ndarray, njr: np.ndarray) -> list[np.ndarray]:
    """Masks of the five areas of preferences r1 > r2: fulfilled retrieved, fulfilled implied, not fulfilled
    retrieved, not fulfilled implied, neither retrieved."""
    ret1, ret2 = r1 < njr, r2 < njr
    return [(r1 < r2) & ret2, ret1 & ~ret2, (r2 < r1) & ret1, ret2 & ~ret1, ~ret1 & ~ret2]


def _closure(m: np.ndarray, group: np.ndarray, u: np.ndarray, v: np.ndarray):
    """The transitive closure of the preference arrays (``m[g]`` documents each; direct preferences ``u > v`` of
    group ``group``, local indices), as ``add_transitives`` computes it: returns the preferences of the closure
    (group, u, v; u != v) and the groups in which some pair prefers each other (a cycle)."""
    out_g, out_u, out_v, cyclic = [], [], [], []
    size_class = np.ceil(np.log2(np.maximum(m, 1))).astype(np.int64)
    for c in np.unique(size_class[m > 0]):
        members = np.flatnonzero((size_class == c) & (m > 0))
        width = int(m[members].max())
        slot = np.full(m.shape[0], -1)
        slot[members] = np.arange(members.shape[0])
        mine = slot[group] >= 0
        reach = np.zeros((members.shape[0], width, width), dtype=bool)
        reach[slot[group[mine]], u[mine], v[mine]] = True
        reach |= np.eye(width, dtype=bool)[None]
        while True:  # squaring: paths of length up to 2^k, until nothing changes
            f = reach.astype(np.float32)
            longer = np.matmul(f, f) > 0
            if np.array_equal(longer, reach):
                break
            reach = longer
        reach &= ~np.eye(width, dtype=bool)[None]
        cyclic.append(members[(reach & reach.transpose(0, 2, 1)).any(axis=(1, 2))])
        s, a, b = np.nonzero(reach)
        out_g.append(members[s])
        out_u.append(a)
        out_v.append(b)
    return tuple(np.concatenate(xs) if xs else np.zeros(0, dtype=np.int64) for xs in (out_g, out_u, out_v, cyclic))


def _per_group(group: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Integer sums of ``values`` per group (exact: below 2^53)."""
    return np.rint(np.bincount(group, weights=values, minlength=n)).astype(np.int64)


class PrefsBlock:
    """Queries ``start:stop`` of ``ranked``: their judgment groups' counts (one entry per group, in trec_eval's
    order; ``group_query`` the query of each) and the preference counts per document pair; :meth:`conflict` tells
    what in them trec_eval refuses."""

    def __init__(self, ranked: RankedPrefs, start: int, stop: int):
        lo, hi = int(ranked.offsets[start]), int(ranked.offsets[stop])
        self.n = stop - start
        self.query = np.repeat(np.arange(self.n), np.diff(ranked.offsets[start:stop + 1]))
        self.levels, self.ranks, self.lines = ranked.levels[lo:hi], ranked.ranks[lo:hi], ranked.lines[lo:hi]
        self.num_judged_ret = ranked.num_judged_ret[start:stop]
        self.njr = self.num_judged_ret[self.query]
        self.width = int(self.ranks.max(initial=0)) + 2  # ranks and njr of the block below it: keys group * width + r
        new_group = changes(self.query, ranked.groups[lo:hi])
        self.group, self.group_start, self.group_end = runs(new_group)
        self.new_subgroup = new_group | changes(ranked.subgroups[lo:hi])
        self.new_level = self.new_subgroup | changes(self.levels)
        subgroups = np.add.reduceat(self.new_subgroup.astype(np.int64), self.group_start) if hi > lo else \
            np.zeros(0, dtype=np.int64)
        self.array_group = subgroups > 1  # several sub-groups: a preference array
        self.group_query = self.query[self.group_start]
        self.n_groups = self.group_start.shape[0]
        # EC groups: one sub-group, so its classes are the level runs
        self.ec, self.ec_start, self.ec_end = runs(new_group | changes(self.levels))
        quirk = ~self.array_group & (self.levels[self.group_start] == -3.0)
        self.active_end = np.where(quirk, self.ec_start[self.ec[self.group_end - 1]], self.group_end)
        self.last_class = self.ec[np.maximum(self.active_end - 1, 0)]  # of a group with active lines
        self.active = ~self.array_group[self.group] & (np.arange(hi - lo) < self.active_end[self.group])

    @cached_property
    def earlier(self) -> Earlier:
        """:class:`Earlier` of every active EC line."""
        lines = np.flatnonzero(self.active)
        ec, g, r, njr = self.ec[lines], self.group[lines], self.ranks[lines], self.njr[lines]
        a, later = partners(lines, ec + 1, self.last_class[g] + 1)  # each line once per later class of its group
        keys = np.sort(later * self.width + self.ranks[a])
        base = ec * self.width
        start = np.searchsorted(keys, base)
        before = np.searchsorted(keys, base + r) - start
        same = np.searchsorted(keys, base + r, side="right") - start - before
        retrieved = np.searchsorted(keys, base + njr) - start
        return Earlier(lines, self.ec_start[ec] - self.group_start[g], before, same, retrieved)

    @cached_property
    def documents(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The documents of the array groups: (group, docid rank, level of its last line, local index of each array
        line in its group)."""
        lines = np.flatnonzero(self.array_group[self.group])
        g, r = self.group[lines], self.ranks[lines]
        order = np.lexsort((lines, r, g))
        ids, starts, ends = runs(changes(g[order], r[order]))
        local = np.empty(lines.shape[0], dtype=np.int64)
        doc_group = g[order][starts]
        local[order] = (np.arange(starts.shape[0]) - np.searchsorted(doc_group, doc_group))[ids]
        return doc_group, r[order][starts], self.levels[lines[order[ends - 1]]], local

    @cached_property
    def closure(self) -> tuple[np.ndarray, ...]:
        """The array groups' preferences after closure (group, docid rank preferred, docid rank not), the groups
        with a cycle, and the preferences' two documents (indices into :attr:`documents`)."""
        lines = np.flatnonzero(self.array_group[self.group])
        doc_group, doc_rank, _, local = self.documents
        local_of = np.full(self.levels.shape[0], -1)
        local_of[lines] = local
        level_run, _, level_end = runs(self.new_level)
        subgroup, _, subgroup_end = runs(self.new_subgroup)
        a, b = partners(lines, level_end[level_run[lines]], subgroup_end[subgroup[lines]])
        g, u, v, cyclic = _closure(np.bincount(doc_group, minlength=self.n_groups), self.group[a], local_of[a],
                                   local_of[b])
        d1, d2 = (np.searchsorted(doc_group, g) + x for x in (u, v))
        return g, doc_rank[d1], doc_rank[d2], cyclic, d1, d2

    def conflict(self) -> Conflict | None:
        """The first thing trec_eval refuses, in its order (group by group), or None."""
        found = []
        e = self.earlier
        same = np.flatnonzero(e.E > 0)
        if same.shape[0]:
            line = e.lines[same[0]]
            found.append((int(self.group[line]), "a document at two levels in one judgment sub-group (trec_eval "
                          "refuses it too)", int(self.lines[line])))
        lines = np.flatnonzero(self.array_group[self.group])
        g, r = self.group[lines], self.ranks[lines]
        order = np.lexsort((lines, r, g))
        lines, g, r = lines[order], g[order], r[order]
        prev, cur = self.levels[lines[:-1]], self.levels[lines[1:]]
        clash = (g[1:] == g[:-1]) & (r[1:] == r[:-1]) & (((prev > 0) & (cur == 0)) | ((prev == 0) & (cur > 0)))
        if clash.any():
            at = np.flatnonzero(clash)
            i = at[np.lexsort((lines[1:][at], g[1:][at]))[0]]
            found.append((int(g[1:][i]), "a document at level 0 and above 0 in one judgment group (trec_eval "
                          "refuses it too)", int(self.lines[lines[1:][i]])))
        cyclic = self.closure[3]
        if cyclic.shape[0]:
            group = int(cyclic.min())
            found.append((group, "preferences in a cycle within one judgment group (trec_eval aborts)",
                          int(self.lines[self.group_start[group]:self.group_end[group]].min())))
        if not found:
            return None
        _, what, line = min(found, key=lambda f: f[0])
        return Conflict(what, line)

    @cached_property
    def counts(self) -> dict[str, np.ndarray]:
        """Per group: ``ful_ret``, ``poss_ret``, ``ful_imp``, ``poss_imp`` (possible counts include the fulfilled
        ones), ``notoccur``, ``num_rel``, ``num_rel_ret``, ``num_nonrel``, ``num_nonrel_ret``."""
        e, ng = self.earlier, self.n_groups
        g_b, ret_b = self.group[e.lines], self.ranks[e.lines] < self.njr[e.lines]
        ec_areas = [np.where(ret_b, e.L, 0), np.where(ret_b, 0, e.Rt), np.where(ret_b, e.Rt - e.L - e.E, 0),
                    np.where(ret_b, e.P - e.Rt, 0), np.where(ret_b, 0, e.P - e.Rt - e.E)]
        g, r1, r2 = self.closure[:3]
        areas = [_per_group(g_b, x, ng) + np.bincount(g[m], minlength=ng)
                 for x, m in zip(ec_areas, _areas(r1, r2, self.num_judged_ret[self.group_query[g]]))]
        ful_ret, ful_imp, not_ret, not_imp, neither = areas
        out = {"ful_ret": ful_ret, "poss_ret": not_ret + ful_ret, "ful_imp": ful_imp, "poss_imp": not_imp + ful_imp,
               "notoccur": neither}
        # relevant and non-relevant: per active line in EC groups (level <= 0 non-relevant), per document in arrays
        doc_group, doc_rank, doc_level, _ = self.documents
        rel = np.concatenate([self.levels[e.lines] > 0, doc_level > 0])
        nonrel = np.concatenate([self.levels[e.lines] <= 0, doc_level == 0])
        group = np.concatenate([g_b, doc_group])
        ret = np.concatenate([self.ranks[e.lines], doc_rank]) < self.num_judged_ret[self.group_query[group]]
        for name, mask in (("num_rel", rel), ("num_rel_ret", rel & ret), ("num_nonrel", nonrel),
                           ("num_nonrel_ret", nonrel & ret)):
            out[name] = np.bincount(group[mask], minlength=ng)
        return out

    def _ec_recalculated(self, retrieved_only: bool, need: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``recalculate`` of ``m_prefs_avgjg_Rnonrel[_ret].c`` for the EC groups ``need``: the pairs of classes but
        the last, and every (retrieved) line against the first R lines of the last class (R: the group's relevant
        lines, the retrieved ones for ``_ret``, where the class's retrieved lines end the list; trec_eval reads past
        the class when it has fewer, rankcli stops at its end). Returns the fulfilled and possible counts."""
        e, c, ng = self.earlier, self.counts, self.n_groups
        g, r, njr = self.group[e.lines], self.ranks[e.lines], self.njr[e.lines]
        ret = r < njr
        before_last = need[g] & (self.ec[e.lines] != self.last_class[g])
        if retrieved_only:
            before_last &= ret
            ful1, unful1 = e.L, e.Rt - e.L
            in_class = np.add.reduceat((self.ranks < self.njr).astype(np.int64), self.ec_start)
            wanted = np.minimum(c["num_rel_ret"], in_class[self.last_class])
        else:
            ful1 = np.where(ret, e.L, e.Rt)
            unful1 = e.P - ful1
            wanted = np.minimum(c["num_rel"], self.ec_end[self.last_class] - self.ec_start[self.last_class])
        first = self.ec_start[self.last_class]
        groups = np.flatnonzero(need & ~self.array_group)
        owner, new = partners(groups, first[groups], first[groups] + wanted[groups])
        new_keys = owner * self.width + self.ranks[new]  # ascending: groups in order, ranks ascending in a class
        against = need[g] & (ret if retrieved_only else True)
        key = g * self.width + r
        greater = wanted[g] - (np.searchsorted(new_keys, key, side="right") - np.searchsorted(new_keys, g * self.width))
        ful2 = greater if retrieved_only else np.where(ret, greater, 0)
        fulfilled = _per_group(g[before_last], ful1[before_last], ng) + _per_group(g[against], ful2[against], ng)
        unfulfilled = _per_group(g[before_last], unful1[before_last], ng) + \
            _per_group(g[against], (wanted[g] - ful2)[against], ng)
        return fulfilled, unfulfilled + fulfilled

    def _array_recalculated(self, retrieved_only: bool, need: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``recalculate`` for the array groups ``need``: the non-relevant documents after the first R (R: the
        group's relevant documents, in both measures) in docid rank order are left out of the array."""
        ng, c = self.n_groups, self.counts
        doc_group, _, doc_level, _ = self.documents
        zero = doc_level == 0
        seen = np.cumsum(zero)
        before = np.r_[0, seen][np.searchsorted(doc_group, doc_group)]
        dropped = zero & (seen - 1 - before >= c["num_rel"][doc_group])
        g, r1, r2, _, d1, d2 = self.closure
        keep = need[g] & ~dropped[d1] & ~dropped[d2]
        g, r1, r2 = g[keep], r1[keep], r2[keep]
        ful_ret, ful_imp, not_ret, not_imp, neither = _areas(r1, r2, self.num_judged_ret[self.group_query[g]])
        ful = ful_ret if retrieved_only else ful_ret | ful_imp
        unful = not_ret if retrieved_only else not_ret | not_imp | neither
        fulfilled = np.bincount(g[ful], minlength=ng)
        return fulfilled, np.bincount(g[unful], minlength=ng) + fulfilled

    def rnonrel(self, retrieved_only: bool) -> tuple[np.ndarray, np.ndarray]:
        """Per group, the fulfilled and possible preferences of ``prefs_avgjg_Rnonrel`` (``_ret``): the counts with
        the non-relevant documents taken as R when there are fewer (R - N fulfilled preferences added for each
        relevant retrieved document), recounted with only the first R of them when there are more."""
        c = self.counts
        if retrieved_only:
            rel, nonrel = c["num_rel_ret"], c["num_nonrel_ret"]
            ful, poss = c["ful_ret"], c["poss_ret"]
        else:
            rel, nonrel = c["num_rel"], c["num_nonrel"]
            ful, poss = c["ful_ret"] + c["ful_imp"], c["poss_ret"] + c["poss_imp"] + c["notoccur"]
        ful = ful + c["num_rel_ret"] * (rel - nonrel)
        poss = poss + c["num_rel"] * (rel - nonrel)
        fewer = rel < nonrel
        if fewer.any():
            ec_ful, ec_poss = self._ec_recalculated(retrieved_only, fewer & ~self.array_group)
            pa_ful, pa_poss = self._array_recalculated(retrieved_only, fewer & self.array_group)
            ful = np.where(fewer, np.where(self.array_group, pa_ful, ec_ful), ful)
            poss = np.where(fewer, np.where(self.array_group, pa_poss, ec_poss), poss)
        return ful, poss

    @cached_property
    def pair_sums(self) -> dict[str, np.ndarray]:
        """:func:`~rankcli.core.trec_eval.prefs_pairs.pair_sums` of the block. A query of one judgment group (without a
        document twice in it, when it is an EC group) has one preference per pair of documents, each adding 1 or 0:
        its sums are its counts. The others' preferences are listed."""
        c = self.counts
        per_query = {k: np.bincount(self.group_query, weights=v, minlength=self.n) for k, v in c.items()}
        out = {"n_ret": per_query["poss_ret"], "sum_ret": per_query["ful_ret"],
               "n_imp": per_query["poss_ret"] + per_query["poss_imp"],
               "sum_imp": per_query["ful_ret"] + per_query["ful_imp"]}
        out["n_all"] = out["n_imp"] + per_query["notoccur"]
        lines = np.flatnonzero(self.active)
        keys = np.sort(self.group[lines] * self.width + self.ranks[lines])
        twice = np.zeros(self.n_groups, dtype=bool)
        twice[keys[1:][keys[1:] == keys[:-1]] // self.width] = True
        listed = (np.bincount(self.group_query, minlength=self.n) > 1) | \
            (np.bincount(self.group_query, weights=twice, minlength=self.n) > 0)
        if listed.any():
            lines = lines[listed[self.query[lines]]]
            a, b = partners(lines, self.ec_end[self.ec[lines]], self.active_end[self.group[lines]])
            g, r1, r2 = self.closure[:3]
            arr = listed[self.group_query[g]]
            sums = pair_sums(self.n, np.concatenate([self.query[a], self.group_query[g[arr]]]),
                             np.concatenate([self.ranks[a], r1[arr]]), np.concatenate([self.ranks[b], r2[arr]]),
                             self.num_judged_ret)
            for k, v in sums.items():
                out[k] = np.where(listed, v, out[k])
        return out
