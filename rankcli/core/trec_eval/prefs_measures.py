"""``rankcli trec_eval``'s preference measures (``-R prefs``, ``-R qrels_prefs``), each a function of a
:class:`~rankcli.core.trec_eval.prefs_counts.PrefsBlock` returning one value per query, computed as its ``m_prefs_*.c``
computes it: counts summed over the judgment groups (integers, so in any order), ratios added group after group or
pair after pair in trec_eval's order, and a value trec_eval leaves unset (nothing possible, or a sum not above 0) is
0. Notation per judgment group: F/P fulfilled/possible preferences, ``_ret`` both documents retrieved, ``_imp`` one of
them, ``notoccur`` neither.
"""

from __future__ import annotations

import numpy as np

from rankcli.core.trec_eval.prefs_counts import PrefsBlock
from rankcli.core.trec_eval.prefs_pairs import prefix_sums


def _per_query(b: PrefsBlock, values: np.ndarray) -> np.ndarray:
    """The sum over each query's groups of integer ``values``."""
    return np.bincount(b.group_query, weights=values, minlength=b.n)


def _ratio(ful: np.ndarray, poss: np.ndarray) -> np.ndarray:
    """ful / poss as C divides longs cast to double, 0 where poss is 0 (trec_eval leaves the value unset)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(poss != 0, ful / np.where(poss != 0, poss, 1), 0.0)


def _all_possible(b: PrefsBlock) -> np.ndarray:
    c = b.counts
    return c["poss_ret"] + c["poss_imp"] + c["notoccur"]


def _all_fulfilled(b: PrefsBlock) -> np.ndarray:
    c = b.counts
    return c["ful_ret"] + c["ful_imp"]


def num_prefs_poss(b: PrefsBlock, _):
    """``m_prefs_num_prefs_poss.c``: sum over groups of P_ret + P_imp + notoccur (summary: the sum)."""
    return _per_query(b, _all_possible(b))


def num_prefs_ful(b: PrefsBlock, _):
    """``m_prefs_num_prefs_ful.c``: sum over groups of F_ret + F_imp (summary: the sum)."""
    return _per_query(b, _all_fulfilled(b))


def num_prefs_ful_ret(b: PrefsBlock, _):
    """``m_prefs_num_prefs_ful_ret.c``: sum over groups of F_ret (summary: the sum)."""
    return _per_query(b, b.counts["ful_ret"])


def simp(b: PrefsBlock, _):
    """``m_prefs_simp.c``: sum(F_ret + F_imp) / sum(P_ret + P_imp + notoccur)."""
    return _ratio(_per_query(b, _all_fulfilled(b)), _per_query(b, _all_possible(b)))


def simp_ret(b: PrefsBlock, _):
    """``m_prefs_simp_ret.c``: sum(F_ret) / sum(P_ret)."""
    c = b.counts
    return _ratio(_per_query(b, c["ful_ret"]), _per_query(b, c["poss_ret"]))


def simp_imp(b: PrefsBlock, _):
    """``m_prefs_simp_imp.c``: sum(F_ret + F_imp) / sum(P_ret + P_imp)."""
    c = b.counts
    return _ratio(_per_query(b, _all_fulfilled(b)), _per_query(b, c["poss_ret"] + c["poss_imp"]))


def _average_over_groups(b: PrefsBlock, ratios: np.ndarray) -> np.ndarray:
    """sum over groups (added in order) / number of groups, 0 unless the sum is above 0 (a NaN ratio of a group
    with nothing possible makes the sum NaN, and so the value 0)."""
    total = prefix_sums(ratios, b.group_query, b.n, [np.bincount(b.group_query, minlength=b.n)])[0]
    groups = np.bincount(b.group_query, minlength=b.n)
    return np.where(total > 0, total / np.maximum(groups, 1), 0.0)


def avgjg(b: PrefsBlock, _):
    """``m_prefs_avgjg.c``: the mean over groups of (F_ret + F_imp) / (P_ret + P_imp + notoccur), a group with
    nothing possible adding 0."""
    return _average_over_groups(b, _ratio(_all_fulfilled(b), _all_possible(b)))


def avgjg_ret(b: PrefsBlock, _):
    """``m_prefs_avgjg_ret.c``: the mean over groups of F_ret / P_ret."""
    return _average_over_groups(b, _ratio(b.counts["ful_ret"], b.counts["poss_ret"]))


def avgjg_imp(b: PrefsBlock, _):
    """``m_prefs_avgjg_imp.c``: the mean over groups of (F_ret + F_imp) / (P_ret + P_imp)."""
    c = b.counts
    return _average_over_groups(b, _ratio(_all_fulfilled(b), c["poss_ret"] + c["poss_imp"]))


def _divide(ful: np.ndarray, poss: np.ndarray) -> np.ndarray:
    """ful / poss as doubles, 0/0 giving NaN as in C."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return ful.astype(np.float64) / poss.astype(np.float64)


def avgjg_Rnonrel(b: PrefsBlock, _):
    """``m_prefs_avgjg_Rnonrel.c``: the mean over groups of F / P with the group's non-relevant documents counted
    as R (its relevant ones): with N < R non-relevant, F + R_ret (R - N) over P + R (R - N); with more, the
    preferences recounted with the first R non-relevant documents only."""
    return _average_over_groups(b, _divide(*b.rnonrel(retrieved_only=False)))


def avgjg_Rnonrel_ret(b: PrefsBlock, _):
    """``m_prefs_avgjg_Rnonrel_ret.c``: the same among retrieved documents: R and N the retrieved relevant and
    non-relevant, F_ret + R (R - N) over P_ret + R_all (R - N), or recounted."""
    return _average_over_groups(b, _divide(*b.rnonrel(retrieved_only=True)))


def _pair_value(total: np.ndarray, count: np.ndarray) -> np.ndarray:
    return np.where(count > 0, total / np.maximum(count, 1), 0.0)


def pair(b: PrefsBlock, _):
    """``m_prefs_pair.c``: over document pairs with a preference either way, the mean of count(i > j) /
    (count(i > j) + count(j > i)) (i the earlier docid rank), a pair of two unretrieved documents scoring 0."""
    s = b.pair_sums
    return _pair_value(s["sum_imp"], s["n_all"])


def pair_ret(b: PrefsBlock, _):
    """``m_prefs_pair_ret.c``: the same over pairs of retrieved documents only."""
    s = b.pair_sums
    return _pair_value(s["sum_ret"], s["n_ret"])


def pair_imp(b: PrefsBlock, _):
    """``m_prefs_pair_imp.c``: the same over pairs with at least one document retrieved."""
    s = b.pair_sums
    return _pair_value(s["sum_imp"], s["n_imp"])
