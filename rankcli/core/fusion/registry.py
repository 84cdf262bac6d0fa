"""The fusion methods, one record each: name, aliases, what it reads, its parameters and their search grids.

The definition and the reference of each method are in its function's docstring
(:mod:`~rankcli.core.fusion.combine`, :mod:`~rankcli.core.fusion.ranked`, :mod:`~rankcli.core.fusion.condorcet`,
:mod:`~rankcli.core.fusion.trained`); ``formula`` is the one-line form the command's help and docs show. The grids
``--optimize`` searches are ranx's (``optimize_fusion``): RRF's ``k`` 10..100 by 10; ``phi``, ``gamma`` and
``sigma`` 0.01..1 by 0.01; ProbFuse's segments and SlideFuse's window 1..100; weights every point of the simplex of
step ``--step`` (:mod:`rankcli.core.fusion.grid`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rankcli.core.fusion import combine, condorcet, ranked, trained
from rankcli.errors import UsageError


@dataclass(frozen=True)
class Param:
    """A method's parameter: ``name`` (its option is ``--name``), the value used when none is given (None: it must
    be given, or found by ``--optimize``), the values ``--optimize`` tries (None for ``weights``: the simplex), whether
    it is an integer, and its bounds."""

    name: str
    doc: str
    default: float | None = None
    grid: tuple | None = None
    integer: bool = False
    low: float | None = None
    high: float | None = None


def _hundredths() -> tuple:
    return tuple(round(i / 100, 2) for i in range(1, 101))


WEIGHTS = Param("weights", "one weight per run, in the order of the runs (default: equal weights)")
K = Param("k", "RRF's rank offset", default=60, grid=tuple(range(10, 101, 10)), low=0)
PHI = Param("phi", "RBC's persistence, in [0, 1]", grid=_hundredths(), low=0, high=1)
GAMMA = Param("gamma", "the exponent of the number of runs holding a document", grid=_hundredths())
SIGMA = Param("sigma", "added to the number of runs listing a document before its logarithm", default=0.01,
              grid=_hundredths(), low=0, high=1)
SEGMENTS = Param("segments", "the segments each list is cut into", grid=tuple(range(1, 101)), integer=True, low=1)
WINDOW = Param("window", "positions on each side averaged", grid=tuple(range(1, 101)), integer=True, low=0)


@dataclass(frozen=True)
class Method:
    """A fusion method: ``fn(evidence, params)`` (trained methods: ``fn(evidence, params, model)``) returns the fused
    score of every candidate; ``reads`` is ``scores`` (normalised scores), ``ranks`` (the runs' rankings) or
    ``both``; ``trained``: it learns from judged training queries."""

    name: str
    fn: Callable
    formula: str
    reads: str
    aliases: tuple[str, ...] = ()
    params: tuple[Param, ...] = ()
    trained: bool = False

    @property
    def param_names(self) -> tuple[str, ...]:
        """The names of the parameters."""
        return tuple(p.name for p in self.params)


_M = Method
METHODS: dict[str, Method] = {m.name: m for m in [
    _M("min", combine.comb_min, "min over the runs holding d of s_r", "scores", ("combmin", "comb_min")),
    _M("max", combine.comb_max, "max over the runs holding d of s_r", "scores", ("combmax", "comb_max")),
    _M("med", combine.comb_med, "median over the runs holding d of s_r", "scores", ("combmed", "comb_med")),
    _M("sum", combine.comb_sum, "sum of s_r", "scores", ("combsum", "comb_sum")),
    _M("anz", combine.comb_anz, "sum of s_r / |R_d|", "scores", ("combanz", "comb_anz")),
    _M("mnz", combine.comb_mnz, "|R_d| * sum of s_r", "scores", ("combmnz", "comb_mnz")),
    _M("gmnz", combine.comb_gmnz, "|R_d|^gamma * sum of s_r", "scores", ("combgmnz", "comb_gmnz"), (GAMMA,)),
    _M("wsum", combine.wsum, "sum of w_r s_r", "scores", ("weighted-sum", "weighted_sum"), (WEIGHTS,)),
    _M("wmnz", combine.wmnz, "(sum of s_r) * (sum of w_r over the runs holding d)", "scores", ("weighted-mnz",),
       (WEIGHTS,)),
    _M("mixed", combine.mixed, "sqrt(|R_d|) * sum of w_r s_r", "scores", (), (WEIGHTS,)),
    _M("isr", ranked.isr, "|L_d| * sum of 1 / rank_r^2", "ranks"),
    _M("log_isr", ranked.log_isr, "ln|L_d| * sum of 1 / rank_r^2", "ranks", ("log-isr",)),
    _M("logn_isr", ranked.logn_isr, "ln(|L_d| + sigma) * sum of 1 / rank_r^2", "ranks", ("logn-isr",), (SIGMA,)),
    _M("rrf", ranked.rrf, "sum of 1 / (k + rank_r)", "ranks", ("reciprocal-rank-fusion",), (K,)),
    _M("rbc", ranked.rbc, "sum of (1 - phi) phi^(rank_r - 1)", "ranks", ("rank-biased-centroid",), (PHI,)),
    _M("bordafuse", ranked.bordafuse, "sum of Borda points: N - rank_r + 1, or (N - n_r + 1) / 2 if unlisted",
       "ranks", ("borda-fuse", "borda")),
    _M("w_bordafuse", ranked.w_bordafuse, "sum of w_r times Borda points", "ranks",
       ("w-bordafuse", "weighted_bordafuse"), (WEIGHTS,)),
    _M("condorcet", condorcet.condorcet, "sorted by pairwise majority votes; N - position", "ranks",
       ("condorcet-fuse", "condorcetfuse")),
    _M("w_condorcet", condorcet.w_condorcet, "sorted by pairwise votes weighted w_r; N - position", "ranks",
       ("w-condorcet", "weighted_condorcet"), (WEIGHTS,)),
    _M("posfuse", trained.posfuse, "sum of P_r(rel | position)", "ranks", trained=True),
    _M("probfuse", trained.probfuse, "sum of P_r(rel | segment k) / k", "ranks", params=(SEGMENTS,), trained=True),
    _M("segfuse", trained.segfuse, "sum of P_r(rel | segment) * (s_r + 1)", "both", trained=True),
    _M("slidefuse", trained.slidefuse, "sum of the mean of P_r(rel | i) for i within window of the position",
       "ranks", params=(WINDOW,), trained=True),
    _M("mapfuse", trained.mapfuse, "sum of MAP_r / rank_r", "ranks", trained=True),
    _M("bayesfuse", trained.bayesfuse, "sum of ln odds of relevance of the rank band (ln(0.001/0.999) if unlisted)",
       "ranks", ("bayes-fuse",), trained=True),
]}

ALIASES: dict[str, str] = {alias: m.name for m in METHODS.values() for alias in m.aliases}


def method(name: str) -> Method:
    """The method a name or alias means (case and ``-``/``_`` as typed); unknown: a :class:`UsageError` listing the
    methods."""
    key = name.strip().lower()
    found = METHODS.get(key) or METHODS.get(ALIASES.get(key, "")) or METHODS.get(key.replace("-", "_"))
    if found is None:
        raise UsageError(f"unknown fusion method {name!r}; choose one of {', '.join(METHODS)}")
    return found
