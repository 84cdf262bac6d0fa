"""trec_eval's measures, one record each, in trec_eval's order (``te_trec_measures`` in ``measures.c``, the order it
prints them), its measure sets, and ``-m`` as ``mark_measure`` reads it: ``rankcli trec_eval``'s (``eval``'s names
are :mod:`rankcli.core.metrics.specs`).

A record's ``kind`` is trec_eval's family of init/print procedures (``meas_init.c``, ``meas_print_*.c``):

- ``long``: one integer value (``%ld``); ``double``: one value (``%6.4f``);
- ``cut_long``: one value per cutoff (``P_5``), cutoffs read with ``atol``, sorted, positive, without duplicates;
- ``cut_double``: one value per level (``iprec_at_recall_0.10``, named with ``%3.2f``), sorted, without duplicates;
- ``param_double``: one value; parameters read with ``atof`` in the order given (named ``11pt_avg_<params>`` when
  given); ``param_pairs``: one value; parameters ``name=value`` (``ndcg_1=3,2=9``).

``needs`` is the ``-R`` format a measure reads (``any``: every format; ``prefs``: ``prefs`` or ``qrels_prefs``, whose
measures follow ``form_prefs_counts.c``, see :mod:`.prefs_counts`). The ``_avgjg`` measures of ``-R qrels_jg``
compute the measure of their name on each judgment group's qrels (the kernel given) and average over the groups.

``summary`` says how the ``all`` line comes from the per-query values: ``mean`` (the running sum over the queries,
divided by their number), ``sum``, ``gm`` (exp of the mean of the per-query logs), ``count`` (num_q), ``num_rel``
(the sum; with ``-c`` the qrels' positive labels), ``none``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rankcli.core.trec_eval import cutoffs, gains, interp, simple
from rankcli.core.trec_eval import prefs_measures as prefs
from rankcli.errors import UsageError

_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


@dataclass(frozen=True)
class TrecMeasure:
    """One trec_eval measure: name, kind (see the module docstring), default parameters, the kernel computing it,
    the trec_eval file it follows, whether ``-q`` prints it per query, and its summary."""

    name: str
    kind: str
    kernel: Callable | None
    source: str
    defaults: tuple = ()
    per_query: bool = True
    summary: str = "mean"
    needs: str = "qrels"


def reads(record: TrecMeasure, rel_format: str) -> bool:
    """Whether trec_eval computes ``record`` from relevance information in ``rel_format`` (``-R``)."""
    if record.needs == "prefs":
        return rel_format in ("prefs", "qrels_prefs")
    return record.needs in ("any", rel_format)


def _m(name, kind, kernel, source, defaults=(), per_query=True, summary="mean", needs="qrels") -> TrecMeasure:
    return TrecMeasure(name, kind, kernel, source, defaults, per_query, summary, needs)


def _pref(name, kernel) -> TrecMeasure:
    """A measure of ``-R prefs`` or ``-R qrels_prefs``: the three counts (``prefs_num_*``) summed, the others
    averaged."""
    count = name.startswith("prefs_num_")
    return _m(name, "long" if count else "double", kernel, f"m_{name}.c", summary="sum" if count else "mean",
              needs="prefs")


MEASURES: tuple[TrecMeasure, ...] = (
    _m("runid", "runid", None, "m_runid.c", per_query=False, summary="none", needs="any"),
    _m("num_q", "long", simple.num_q, "m_num_q.c", per_query=False, summary="count", needs="any"),
    _m("num_ret", "long", simple.num_ret, "m_num_ret.c", summary="sum"),
    _m("num_rel", "long", simple.num_rel, "m_num_rel.c", summary="num_rel"),
    _m("num_rel_ret", "long", simple.num_rel_ret, "m_num_rel_ret.c", summary="sum"),
    _m("map", "double", simple.ap, "m_map.c"),
    _m("gm_map", "double", simple.gm_map, "m_gm_map.c", per_query=False, summary="gm"),
    _m("Rprec", "double", simple.rprec, "m_Rprec.c"),
    _m("bpref", "double", simple.bpref, "m_bpref.c"),
    _m("recip_rank", "double", simple.recip_rank, "m_recip_rank.c"),
    _m("iprec_at_recall", "cut_double", interp.iprec_at_recall, "m_iprec_at_recall.c", _LEVELS),
    _m("P", "cut_long", cutoffs.P, "m_P.c", _CUTS),
    _m("relstring", "relstring", simple.relstring, "m_relstring.c", (10.0,), summary="none"),
    _m("recall", "cut_long", cutoffs.recall, "m_recall.c", _CUTS),
    _m("infAP", "double", simple.infap, "m_infap.c"),
    _m("gm_bpref", "double", simple.gm_bpref, "m_gm_bpref.c", per_query=False, summary="gm"),
    _m("Rprec_mult", "cut_double", interp.Rprec_mult, "m_Rprec_mult.c",
       (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)),
    _m("utility", "param_double", simple.utility, "m_utility.c", (1.0, -1.0, 0.0, 0.0)),
    _m("11pt_avg", "param_double", interp.pt11_avg, "m_11pt_avg.c", _LEVELS),
    _m("binG", "double", simple.binG, "m_binG.c"),
    _m("G", "param_pairs", gains.G, "m_G.c"),
    _m("dcg", "param_pairs", gains.dcg, "m_ndcg.c"),
    _m("ideal_dcg", "param_pairs", gains.ideal_dcg, "m_ndcg.c"),
    _m("ndcg", "param_pairs", gains.ndcg, "m_ndcg.c"),
    _m("ndcg_rel", "param_pairs", gains.ndcg_rel, "m_ndcg_rel.c"),
    _m("Rndcg", "param_pairs", gains.Rndcg, "m_Rndcg.c"),
    _m("ndcg_cut", "cut_long", cutoffs.ndcg_cut, "m_ndcg_cut.c", _CUTS),
    _m("map_cut", "cut_long", cutoffs.map_cut, "m_map_cut.c", _CUTS),
    _m("relative_P", "cut_long", cutoffs.relative_P, "m_rel_P.c", _CUTS),
    _m("success", "cut_long", cutoffs.success, "m_success.c", (1, 5, 10)),
    _m("set_P", "double", simple.set_P, "m_set_P.c"),
    _m("set_relative_P", "double", simple.set_relative_P, "m_set_rel_P.c"),
    _m("set_recall", "double", simple.set_recall, "m_set_recall.c"),
    _m("set_map", "double", simple.set_map, "m_set_map.c"),
    _m("set_F", "param_double", simple.set_F, "m_set_F.c", (1.0,)),
    _m("num_nonrel_judged_ret", "long", simple.num_nonrel_judged_ret, "m_num_nonrel_judged_ret.c", summary="sum"),
    _pref("prefs_num_prefs_poss", prefs.num_prefs_poss),
    _pref("prefs_num_prefs_ful", prefs.num_prefs_ful),
    _pref("prefs_num_prefs_ful_ret", prefs.num_prefs_ful_ret),
    _pref("prefs_simp", prefs.simp),
    _pref("prefs_pair", prefs.pair),
    _pref("prefs_avgjg", prefs.avgjg),
    _pref("prefs_avgjg_Rnonrel", prefs.avgjg_Rnonrel),
    _pref("prefs_simp_ret", prefs.simp_ret),
    _pref("prefs_pair_ret", prefs.pair_ret),
    _pref("prefs_avgjg_ret", prefs.avgjg_ret),
    _pref("prefs_avgjg_Rnonrel_ret", prefs.avgjg_Rnonrel_ret),
    _pref("prefs_simp_imp", prefs.simp_imp),
    _pref("prefs_pair_imp", prefs.pair_imp),
    _pref("prefs_avgjg_imp", prefs.avgjg_imp),
    _m("map_avgjg", "double", simple.ap, "m_map_avgjg.c", needs="qrels_jg"),
    _m("P_avgjg", "cut_long", cutoffs.P, "m_P_avgjg.c", _CUTS, needs="qrels_jg"),
    _m("Rprec_mult_avgjg", "cut_double", interp.Rprec_mult, "m_Rprec_mult_avgjg.c",
       (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0), needs="qrels_jg"),
    _m("yaap", "double", simple.yaap, "m_yaap.c"),
    _m("rbp", "param_pairs", gains.rbp, "m_rbp.c"),
    _m("rbp_resid", "param_pairs", simple.rbp_resid, "m_rbp_resid.c"),
    _m("unj", "cut_long", cutoffs.unj, "m_unjudged.c", (5, 10, 20)),
)
BY_NAME = {m.name: m for m in MEASURES}

#: trec_eval's nicknames (``measures.c``).
SETS = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P"),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
            "set_relative_P", "set_map", "set_F"),
    "all_trec": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP",
                 "gm_bpref", "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut",
                 "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map",
                 "set_F", "num_nonrel_judged_ret"),
    "all_prefs": ("runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret",
                  "prefs_simp", "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret",
                  "prefs_pair_ret", "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp",
                  "prefs_pair_imp", "prefs_avgjg_imp"),
    "prefs": ("runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret",
              "prefs_simp", "prefs_pair", "prefs_avgjg"),
    "qrels_jg": ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"),
}


@dataclass
class Selection:
    """What ``-m`` marked: the measures (a set of names) and the parameters given to each name, first given first
    (trec_eval's ``meas_arg`` list: a measure takes the first parameters given under its name)."""

    marked: set
    params: list

    def parameters_of(self, name: str) -> str | None:
        for measure, text in self.params:
            if measure == name:
                return text
        return None


def mark(selection: Selection, text: str) -> None:
    """``mark_measure``: ``name[.params]``, a measure or a set; an unknown name is a usage error."""
    name, dot, params = text.partition(".")
    if dot:
        if params == "":
            raise UsageError(f"trec_eval: improper measure in parameter '{name}'")
        selection.params.append((name, params))
    names = SETS.get(name, (name,))
    for n in names:
        if n not in BY_NAME:
            raise UsageError(f"illegal measure '{text}' (trec_eval's measures and sets: see rankcli trec_eval -h)")
        selection.marked.add(n)
