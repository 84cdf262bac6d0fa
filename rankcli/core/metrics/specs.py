"""The metric registry: one record per metric (its canonical name, aliases, trec_eval names, kernel, aggregation), and
the parser of every spelling a user may type, for every command that names a metric (``eval``, ``compare``, ``train``,
``tune``, ``experiment``, ...); ``rankcli trec_eval``'s ``-m`` is :mod:`rankcli.core.trec_eval.registry`.

Spellings accepted for one metric (all give the same :class:`MetricSpec`, whose ``str`` is the canonical name used as
JSON key and Parquet column):

- rankcli's: ``ndcg@10``, ``p@5``, ``mrr``, ``rr@10``, ``bpref``, ``success@1`` (names case-insensitive);
- trec_eval's measure names, case as trec_eval spells them: ``ndcg_cut_10``, ``P_5``, ``recall_100``, ``map_cut_10``,
  ``recip_rank``, ``Rprec``, ``iprec_at_recall_0.50``, ``Rprec_mult_0.20``, ``num_rel_ret``, ``set_P``, ...;
- trec_eval's ``-m`` syntax ``stem.params``: ``P.5,10`` (P_5 and P_10), ``ndcg_cut.10``, ``iprec_at_recall.0.5``;
  a bare parameterised trec stem (``P``, ``ndcg_cut``, ``success``, ``iprec_at_recall``, ...) is trec_eval's default
  parameter list; (``recall``, ``map`` and ``ndcg`` stay rankcli's whole-list metrics);
- the sets ``official`` (trec_eval's default output) and ``all_trec`` (every trec_eval measure rankcli computes).

An unknown name is a :class:`UnknownMetricError` (exit status 2) naming the closest spelling of either kind.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from rankcli.errors import UsageError

#: trec_eval's default cutoffs (``m_P.c``, ``m_recall.c``, ``m_ndcg_cut.c``, ``m_map_cut.c``, ``m_rel_P.c``).
DEFAULT_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RECALL_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
R_MULTIPLES = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)


@dataclass(frozen=True)
class Measure:
    """One metric.

    name: canonical rankcli name (the JSON key, with ``@param``). aliases: other rankcli spellings (case-insensitive).
    trec_plain: trec_eval's name without a parameter; trec_stem: trec_eval's stem of the parameterised form (``P`` ->
    ``P_5``). param: None, ``"cutoff"`` (positive integer k) or ``"level"`` (a fraction, printed with two decimals).
    defaults: trec_eval's default parameters for a bare stem. family: ``"core"`` (computed by
    :mod:`rankcli.core.metrics`) or ``"trec"`` (:mod:`rankcli.core.metrics.trec_eval_measures`). aggregate: how
    per-query values become the summary: ``mean``, ``sum`` (counts), ``gmean`` (geometric mean with trec_eval's floor
    1e-5) or ``count`` (the number of queries). integer: printed as an integer by ``--format trec_eval``.
    per_query_line: whether trec_eval's ``-q`` prints it per query. graded: "has a relevant document" means a positive
    label (else label >= threshold). normalised: best value 1 (scores 1 under ``no_relevant=one``). kernel: for the
    ``trec`` family, the function of :mod:`rankcli.core.metrics.trec_eval_measures` that computes it (its docstring
    gives the definition); the ``core`` family is computed by :func:`rankcli.core.metrics.per_query`'s bucket code.
    """

    name: str
    doc: str
    aliases: tuple[str, ...] = ()
    trec_plain: str | None = None
    trec_stem: str | None = None
    param: str | None = None
    defaults: tuple = ()
    family: str = "trec"
    aggregate: str = "mean"
    integer: bool = False
    per_query_line: bool = True
    graded: bool = False
    normalised: bool = True
    needs_param: bool = False
    kernel: str | None = None


_C, _L = "cutoff", "level"
#: The registry, one record per metric (``TREC_ORDER`` below fixes trec_eval's output order).
REGISTRY: tuple[Measure, ...] = (
    Measure("runid", "the run's tag (trec_eval's runid line); not a metric", trec_plain="runid", family="info",
            per_query_line=False),
    Measure("num_q", kernel="num_q", doc="number of queries evaluated", trec_plain="num_q", aggregate="count",
            integer=True, per_query_line=False, normalised=False),
    Measure("num_ret", kernel="num_ret", doc="documents retrieved", trec_plain="num_ret", aggregate="sum",
            integer=True, normalised=False),
    Measure("num_rel", kernel="num_rel", doc="relevant documents judged (R)", trec_plain="num_rel", aggregate="sum",
            integer=True, normalised=False),
    Measure("num_rel_ret", kernel="num_rel_ret", doc="relevant documents retrieved", trec_plain="num_rel_ret",
            aggregate="sum", integer=True, normalised=False),
    Measure("map", "average precision: sum of precision at each relevant rank / R", aliases=("ap",), trec_plain="map",
            trec_stem="map_cut", param=_C, defaults=DEFAULT_CUTOFFS, family="core"),
    Measure("gm_map", kernel="average_precision", doc="geometric mean over queries of AP (each floored at 1e-5)",
            trec_plain="gm_map", aggregate="gmean", per_query_line=False),
    Measure("rprec", kernel="rprec", doc="precision at rank R", aliases=("r-prec", "r_prec"), trec_plain="Rprec"),
    Measure("bpref", kernel="bpref", doc="binary preference (Buckley & Voorhees 2004), judged documents only",
            trec_plain="bpref"),
    Measure("mrr", "reciprocal rank of the first relevant document", aliases=("rr", "recip_rank"),
            trec_plain="recip_rank", param=_C, family="core"),
    Measure("iprec_at_recall", kernel="iprec_at_recall",
            doc="interpolated precision at a recall level (trec_eval 10: R x level rounded)",
            aliases=("iprec",), trec_stem="iprec_at_recall", param=_L, defaults=RECALL_LEVELS, needs_param=True),
    Measure("precision", "relevant documents in the top k / k (whole list: / documents retrieved)",
            aliases=("p", "prec"), trec_plain="set_P", trec_stem="P", param=_C, defaults=DEFAULT_CUTOFFS,
            family="core"),
    Measure("recall", "relevant documents in the top k / R", aliases=("r",), trec_plain="set_recall",
            trec_stem="recall", param=_C, defaults=DEFAULT_CUTOFFS, family="core"),
    Measure("infap", kernel="infap", doc="inferred AP (Yilmaz & Aslam 2006): qrels labels < 0 are pooled but unjudged",
            trec_plain="infAP"),
    Measure("gm_bpref", kernel="bpref", doc="geometric mean over queries of bpref (each floored at 1e-5)",
            trec_plain="gm_bpref", aggregate="gmean", per_query_line=False),
    Measure("rprec_mult", kernel="rprec_mult", doc="precision at rank R x multiple (rank (long)(x R + 0.9))",
            trec_stem="Rprec_mult", param=_L, defaults=R_MULTIPLES, needs_param=True),
    Measure("11pt_avg", kernel="pt11_avg", doc="interpolated precision averaged over the recall levels 0.0 ... 1.0",
            aliases=("iprec_avg",), trec_plain="11pt_avg"),
    Measure("dcg", "discounted cumulative gain", family="core", param=_C, graded=True, normalised=False),
    Measure("ndcg", "DCG / ideal DCG over every judged document", trec_plain="ndcg", trec_stem="ndcg_cut", param=_C,
            defaults=DEFAULT_CUTOFFS, family="core", graded=True),
    Measure("ndcg_rel", kernel="ndcg_rel",
            doc="nDCG averaged over the ranks of the relevant (positive-label) documents",
            trec_plain="ndcg_rel", graded=True),
    Measure("rndcg", kernel="rndcg", doc="nDCG averaged at the R levels of each positive grade", aliases=("r_ndcg",),
            trec_plain="Rndcg", graded=True),
    Measure("relative_p", kernel="relative_p", doc="relevant documents in the top k / min(k, R)",
            aliases=("relative_precision",), trec_stem="relative_P", param=_C, defaults=DEFAULT_CUTOFFS,
            needs_param=True),
    Measure("success", kernel="success", doc="1 when a relevant document is in the top k (ranx's hit_rate)",
            aliases=("hit_rate",), trec_stem="success", param=_C, defaults=(1, 5, 10)),
    Measure("set_f", kernel="set_f", doc="F1 of the retrieved set: 2 P R / (P + R)", trec_plain="set_F"),
    Measure("f1", kernel="f1", doc="F1 of precision@k and recall@k (ranx's f1)", param=_C),
    Measure("num_nonrel_judged_ret", kernel="num_nonrel_judged_ret", doc="judged non-relevant documents retrieved",
            trec_plain="num_nonrel_judged_ret", aggregate="sum", integer=True, normalised=False),
    Measure("err", "expected reciprocal rank (Chapelle et al. 2009)", family="core", param=_C, graded=True,
            normalised=False),
)
BY_NAME = {m.name: m for m in REGISTRY}
#: rankcli spellings, lower case -> record.
_ALIAS = {a: m for m in REGISTRY for a in (m.name, *m.aliases)}
#: trec_eval spellings, exact case -> record.
_TREC_PLAIN = {m.trec_plain: m for m in REGISTRY if m.trec_plain}
_TREC_STEM = {m.trec_stem: m for m in REGISTRY if m.trec_stem}
#: The core metrics (the ones of :mod:`rankcli.core.metrics`), in their historical order.
CORE = ("ndcg", "dcg", "err", "mrr", "map", "precision", "recall")

#: trec_eval's measure sets (``measures.c``), restricted to the measures rankcli computes.
SETS = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P"),
    "all_trec": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 # "recall" alone is rankcli's whole-list recall (set_recall, below); trec_eval's all_trec means
                 # recall at its default cutoffs
                 "recip_rank", "iprec_at_recall", "P", *(f"recall_{k}" for k in DEFAULT_CUTOFFS),
                 "infAP", "gm_bpref", "11pt_avg", "ndcg",
                 "Rprec_mult", "success", "map_cut", "ndcg_cut", "ndcg_rel", "Rndcg", "relative_P", "set_P",
                 "set_recall", "set_F", "num_nonrel_judged_ret"),
}
#: trec_eval names rankcli does not compute, so that a user learns it is not a typo.
UNSUPPORTED_TREC = ("relstring", "utility", "binG", "G", "ideal_dcg", "set_relative_P", "set_map", "prefs_simp")


class UnknownMetricError(UsageError):
    """A metric name that is not known, or a malformed ``name@k``: a usage error (exit status 2), as an unknown loss."""


def _format_level(x: float) -> str:
    return f"{x:.2f}"


@dataclass(frozen=True, order=True)
class MetricSpec:
    """A metric and its parameter (a cutoff ``k``, or a recall level / R multiple); hashable, and ``str(spec)``
    (``"ndcg@10"``, ``"mrr"``, ``"iprec_at_recall@0.50"``) is its canonical name."""

    name: str
    k: int | float | None = None

    def __post_init__(self) -> None:
        rec = BY_NAME.get(self.name)
        if rec is None:
            raise UnknownMetricError(_unknown_message(self.name))
        if self.k is None:
            if rec.needs_param:
                raise UnknownMetricError(f"metric {self.name} needs a parameter, e.g. {self.name}@"
                                         f"{_param_text(rec, rec.defaults[len(rec.defaults) // 2])}")
            return
        if rec.param is None:
            raise UnknownMetricError(f"metric {self.name} takes no parameter, got {self.name}@{self.k}")
        if rec.param == _C:
            if isinstance(self.k, bool) or not float(self.k).is_integer() or self.k < 1:
                raise UnknownMetricError(f"metric {self.name}@{self.k}: the cutoff k must be a positive integer")
            object.__setattr__(self, "k", int(self.k))
        else:
            k = float(self.k)
            top = 1.0 if self.name == "iprec_at_recall" else 1000.0
            if not (0.0 <= k <= top):
                raise UnknownMetricError(f"metric {self.name}@{self.k}: the parameter must be in [0, {top:g}]")
            object.__setattr__(self, "k", round(k, 6))

    @property
    def record(self) -> Measure:
        return BY_NAME[self.name]

    def __str__(self) -> str:
        return self.name if self.k is None else f"{self.name}@{_param_text(self.record, self.k)}"

    @property
    def graded(self) -> bool:
        return self.record.graded

    @property
    def trec_name(self) -> str | None:
        """trec_eval's name (``P_5``, ``ndcg_cut_10``, ``map``, ``iprec_at_recall_0.50``), None when it has none."""
        rec = self.record
        if self.k is None:
            return rec.trec_plain
        if rec.trec_stem is None:
            return None
        return f"{rec.trec_stem}_{_param_text(rec, self.k)}"

    def output_name(self) -> str:
        """The name ``--format trec_eval`` prints: trec_eval's, else the canonical one."""
        return self.trec_name or str(self)


def _param_text(rec: Measure, k) -> str:
    return _format_level(k) if rec.param == _L else str(int(k))


def known_names() -> list[str]:
    """Every spelling of a metric name (for suggestions)."""
    return sorted({*_ALIAS, *_TREC_PLAIN, *_TREC_STEM, *SETS})


def _unknown_message(name: str) -> str:
    lowered = {n.lower(): n for n in known_names()}
    close = difflib.get_close_matches(name, known_names(), n=1, cutoff=0.6) or \
        [lowered[c] for c in difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.5)]
    hint = ""
    if close:
        c = close[0]
        target = _ALIAS[c].name if c in _ALIAS else c
        hint = f"; did you mean {target!r}?"
    if name in UNSUPPORTED_TREC or name.startswith("prefs_"):
        hint = "; rankcli eval does not compute this trec_eval measure, rankcli trec_eval does (see docs/trec_eval.md)"
    return (f"unknown metric {name!r}{hint} (known: {', '.join(CORE)}, each optionally @k; bpref, rprec, success@k "
            f"and the other trec_eval measures, by rankcli's or trec_eval's name (P_5, ndcg_cut.10); sets official, "
            f"all_trec)")


_NUMBER = re.compile(r"^(\d+|\d*\.\d+)$")
_RANKCLI = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*(?:@\s*([^\s]+))?\s*$")
_TREC_PARAM = re.compile(r"^(.+?)_(\d+|\d*\.\d+)$")


def _param_value(rec: Measure, text: str, whole: str):
    if not _NUMBER.match(text):
        what = "a positive integer" if rec.param == _C else "a number"
        raise UnknownMetricError(f"metric {whole!r}: the parameter must be {what}, got {text!r}")
    if rec.param == _C:
        if "." in text or int(text) < 1:
            raise UnknownMetricError(f"metric {whole!r}: the cutoff must be a positive integer, got {text!r}")
        return int(text)
    return float(text)


def _expand(rec: Measure, params: Iterable) -> list[MetricSpec]:
    return [MetricSpec(rec.name, p) for p in params]


def parse_one(text: str) -> list[MetricSpec]:
    """Every spec one comma-free token names (a set or a bare trec stem names several)."""
    text = str(text).strip()
    if text in SETS:
        out: list[MetricSpec] = []
        for t in SETS[text]:
            out += parse_one(t)
        return out
    # trec_eval's -m syntax: stem.params (the first '.' splits, as trec_eval's mark_measure does)
    if "." in text and "@" not in text:
        stem, _, params = text.partition(".")
        rec = _TREC_STEM.get(stem)
        if rec is not None:
            return [MetricSpec(rec.name, _param_value(rec, params, text))]
        if stem in _TREC_PLAIN or stem in SETS:
            raise UnknownMetricError(f"metric {text!r}: rankcli takes no parameters for trec_eval's {stem}")
    # trec_eval's full names, exact case: P_5, ndcg_cut_10, iprec_at_recall_0.50, set_P, Rprec
    if text in _TREC_PLAIN:
        rec = _TREC_PLAIN[text]
        return [MetricSpec(rec.name)]
    m = _TREC_PARAM.match(text)
    if m and m.group(1) in _TREC_STEM:
        rec = _TREC_STEM[m.group(1)]
        return [MetricSpec(rec.name, _param_value(rec, m.group(2), text))]
    rec = _TREC_STEM.get(text)
    if rec is not None and rec.defaults and (text not in _ALIAS or rec.name not in CORE):
        # a bare parameterised trec stem (P, ndcg_cut, success, iprec_at_recall): trec_eval's default parameters;
        # recall, map and ndcg stay rankcli's whole-list metrics
        return _expand(rec, rec.defaults)
    # rankcli's: name or name@param, case-insensitive
    m = _RANKCLI.match(text)
    if not m:
        raise UnknownMetricError(f"cannot parse metric {text!r}; expected NAME or NAME@K, e.g. ndcg@10 (or trec_eval's "
                                 "P_5, ndcg_cut.10)")
    name, param = m.group(1), m.group(2)
    rec = _ALIAS.get(name.lower()) or _TREC_STEM.get(name) or _TREC_PLAIN.get(name)
    if rec is None:
        lowered = {k.lower(): v for k, v in {**_TREC_STEM, **_TREC_PLAIN}.items()}
        rec = lowered.get(name.lower())
    if rec is None:
        raise UnknownMetricError(_unknown_message(name))
    if param is None:
        return [MetricSpec(rec.name)]
    if rec.param is None:
        raise UnknownMetricError(f"metric {text!r}: {rec.name} takes no parameter")
    if not _NUMBER.match(param) or (rec.param == _C and ("." in param or int(param) < 1)):
        raise UnknownMetricError(f"metric {text!r}: the cutoff after '@' must be a positive integer, got {param!r}")
    return [MetricSpec(rec.name, int(param) if rec.param == _C else float(param))]


def parse_metric(text) -> MetricSpec:
    """Parse one metric name of either spelling into a :class:`MetricSpec` (a set or bare stem is refused here)."""
    if isinstance(text, MetricSpec):
        return text
    specs = parse_one(text)
    if len(specs) != 1:
        raise UnknownMetricError(f"{text!r} names {len(specs)} metrics; give one (e.g. {specs[0].output_name()})")
    return specs[0]


def parse_metrics(texts: Iterable[str] | str) -> list[MetricSpec]:
    """Parse several metrics; each text may be a comma list. A bare number repeats the previous metric with that
    parameter: ``"ndcg@1,3,5,10"`` is ndcg@1, ndcg@3, ndcg@5, ndcg@10; ``"P.5,10"`` is P_5 and P_10 (trec_eval's
    ``-m``); ``"ndcg@5,map"`` is ndcg@5 and map. Duplicates are dropped, first occurrence kept."""
    if isinstance(texts, (str, MetricSpec)):
        texts = [texts]
    out: list[MetricSpec] = []
    for text in texts:
        if isinstance(text, MetricSpec):
            parts = [text]
        else:
            parts = [p.strip() for p in str(text).split(",")]
        previous = None
        for part in parts:
            if isinstance(part, MetricSpec):
                specs = [part]
            elif part == "":
                raise UnknownMetricError(f"empty metric in {text!r}")
            elif _NUMBER.match(part):
                if previous is None or previous.record.param is None:
                    raise UnknownMetricError(f"cutoff {part!r} in {text!r} follows no metric; write e.g. ndcg@1,3,5")
                specs = [MetricSpec(previous.name, _param_value(previous.record, part, str(text)))]
            else:
                specs = parse_one(part)
            previous = specs[-1]
            for spec in specs:
                if spec not in out:
                    out.append(spec)
    if not out:
        raise UnknownMetricError("no metric given")
    return out


#: trec_eval's output order (``te_trec_measures`` in ``measures.c``), by plain name or stem.
TREC_ORDER = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
              "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult", "utility", "11pt_avg",
              "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P",
              "success", "set_P", "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret")


def trec_order(specs: Iterable[MetricSpec]) -> list[MetricSpec]:
    """Specs in trec_eval's output order (its measure list; a measure's parameters ascending); metrics without a
    trec_eval name last, in the order given."""
    index = {n: i for i, n in enumerate(TREC_ORDER)}
    specs = list(specs)
    trec = [s for s in specs if s.trec_name is not None]
    other = [s for s in specs if s.trec_name is None]
    trec.sort(key=lambda s: (index[s.record.trec_plain if s.k is None else s.record.trec_stem], s.k or 0))
    return trec + other

