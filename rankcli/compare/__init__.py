"""Compare runs per query: load them, align their queries, test every pair on every metric, return a Report.

Orchestration only (no printing): :func:`compare_inputs` is what ``rankcli compare`` calls; :func:`compare_values`
(:mod:`rankcli.compare.paired`) does the statistics on per-query values that are already aligned (the experiment
command uses it); :mod:`rankcli.compare.loading` reads and aligns the inputs.

Inputs, detected per file:

* a *run*: a Parquet file with ``qid``, ``label`` and ``score`` (what ``rankcli predict`` writes); metrics are computed
  with :func:`rankcli.core.metrics.per_query` under the given convention;
* a *per-query metric file* (:mod:`rankcli.formats.metric_file`): a Parquet file with ``qid`` and one column per
  metric (what ``rankcli eval --per-query`` writes; recognised by its footer ``rankcli.kind`` or by having neither
  ``label`` nor ``score``); its values are used as they are;
* a *TREC run* (text, ``qid Q0 docid rank score tag``) together with ``qrels``, read as
  :func:`rankcli.evaluate.runs.load_trec` reads it (a run sharing no document id with the qrels is an error).
  With ``qrels`` the default convention is ``trec`` (trec_eval's), else ``paper``; under its docid tie rule the
  documents of a Parquet run are named as TREC files name them (the docid column, else ``<qid>-<row>``).

Alignment: every input must cover the same queries, and runs with labels the same labels per query (compared as
multisets, so two runs may order a query's documents differently). A difference is an
:class:`~rankcli.errors.InputError` (exit 3) naming the first differing query (smallest qid), unless ``intersect``:
then only the queries present in every input with identical labels are compared and the report counts the dropped
ones. TREC runs are judged by the same qrels, so only their query sets are checked. For each metric a query is used
only where every run has a value (queries skipped under ``no_relevant="skip"`` have none); the means reported are
over exactly the queries tested.

Comparisons: with a baseline, every other run against it; otherwise every pair ``(a, b)`` with ``a`` given before
``b``. A comparison tests ``b`` against ``a``: ``difference = mean(b) - mean(a)``, wins count queries where ``b`` is
higher. The family for the multiple-testing correction is every (pair, metric) test in the report; the default
correction is Holm when there is more than one test, else none. A comparison is significant when its adjusted p-value
is below ``alpha``. A test that cannot run (fewer than two queries; for ``ttest`` and ``bootstrap`` also differences
that are all equal, which have no variance) is *not testable*: its p-value is NaN, its ``reason`` says why, and it is
left out of the correction's family (see :mod:`rankcli.core.stats`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankcli.compare.loading import DEFAULT_METRICS, LoadedInput, align, check_conventions, check_kinds, load_input
from rankcli.compare.paired import Comparison, PairedComparisons, compare_values, pairs_for
from rankcli.core.metrics import Convention, parse_metrics
from rankcli.errors import SchemaError, UsageError
from rankcli.evaluate import default_convention

__all__ = [
    "DEFAULT_METRICS", "Comparison", "LoadedInput", "PairedComparisons", "Report", "RunInfo", "align",
    "compare_inputs", "compare_values", "default_names", "load_input", "pairs_for", "resolve_baseline",
]


@dataclass
class RunInfo:
    """One input of the report: its name, its path and its kind (``run``, ``trec`` or ``per-query``)."""

    name: str
    path: str
    kind: str


@dataclass
class Report:
    """Everything ``rankcli compare`` shows; rendering lives in :mod:`rankcli.compare.render`."""

    runs: list[RunInfo]
    metrics: list[str]
    baseline: str | None
    test: str
    alpha: float
    correction: str
    permutations: int
    seed: int
    convention: dict | None
    queries: int                                # queries in the comparison after alignment
    dropped: int                                # queries dropped by --intersect
    used: dict[str, int]                        # metric -> queries where every run has a value
    means: dict[str, dict[str, float]]          # run -> metric -> mean over the used queries
    comparisons: list[Comparison] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # about the inputs (e.g. TREC queries without judgments)

    @property
    def run_names(self) -> list[str]:
        """The runs' names, in input order."""
        return [r.name for r in self.runs]

    def worse_than_baseline(self) -> list[Comparison]:
        """Comparisons in which a run is significantly worse than the baseline (empty without a baseline)."""
        if self.baseline is None:
            return []
        return [c for c in self.comparisons if c.a == self.baseline and c.decision == "worse"]

    def as_dict(self) -> dict:
        """The report as ``rankcli compare --json`` prints it."""
        return {
            "runs": [{"name": r.name, "path": r.path, "kind": r.kind} for r in self.runs],
            "baseline": self.baseline,
            "metrics": list(self.metrics),
            "test": self.test,
            "alpha": self.alpha,
            "confidence": 1.0 - self.alpha,          # level of ci_low / ci_high (ttest and bootstrap)
            "correction": self.correction,
            "tests": sum(1 for c in self.comparisons if c.result.testable),
            "permutations": self.permutations if self.test in ("permutation", "bootstrap") else None,
            "seed": self.seed if self.test in ("permutation", "bootstrap") else None,
            "convention": self.convention,
            "queries": self.queries,
            "dropped": self.dropped,
            "queries_used": dict(self.used),
            "means": {run: dict(m) for run, m in self.means.items()},
            "comparisons": [c.as_dict() for c in self.comparisons],
            "worse_than_baseline": [{"run": c.b, "metric": c.metric} for c in self.worse_than_baseline()],
            "notes": list(self.notes),
        }


def default_names(paths: Sequence[Path | str]) -> list[str]:
    """The default names of the inputs ``paths``: each file's name without the extension (``runs/xendcg.parquet`` ->
    ``xendcg``) for the extensions of runs, else the whole file name."""
    return [Path(p).stem if Path(p).suffix in (".parquet", ".txt", ".run", ".trec", ".tsv") else Path(p).name
            for p in paths]


def resolve_baseline(baseline: str | None, paths: Sequence[Path | str], names: Sequence[str]) -> str | None:
    """The run's name of a ``baseline`` given by its name or its path (None stays None).

    Parameters
    ----------
    baseline : ``--baseline`` as given. paths, names : the inputs and their names, in order.
    """
    if baseline is None:
        return None
    if baseline in names:
        return baseline
    for p, n in zip(paths, names):
        if str(p) == baseline or Path(p).resolve() == Path(baseline).resolve():
            return n
    raise UsageError(f"--baseline {baseline!r} is not one of the runs (names: {', '.join(names)})")


def compare_inputs(paths: Sequence[Path | str], *, names: Sequence[str] | None = None, metrics: Sequence | None = None,
                   qrels: Path | str | None = None, convention=None, test: str = "ttest", alpha: float = 0.01,
                   correction: str | None = None, baseline: str | None = None, seed: int = 0,
                   permutations: int = 10000, intersect: bool = False,
                   pairs: Sequence[tuple[str, str]] | None = None) -> Report:
    """Load, align and compare runs or per-query metric files; see the module docstring.

    Parameters
    ----------
    paths : two or more inputs. names : one name per input (default: :func:`default_names`).
    metrics : metric names (``ndcg@1,3,5`` shorthand allowed); None: ndcg@5 and ndcg@10 for runs, every metric column
        the per-query files share.
    qrels : the qrels of TREC runs.
    convention : a :class:`~rankcli.core.metrics.Convention`; None: trec with ``qrels``, paper otherwise, and
        per-query files keep theirs (an explicit convention must be the one they were computed under).
    test, alpha, correction, seed, permutations : as :func:`compare_values`.
    baseline : a run's name or path; None: the first of two runs, every pair for more.
    intersect : compare on the queries every input has with identical labels instead of refusing a difference.
    pairs : the ``(a, b)`` pairs of names to test (``b`` against ``a``), instead of those ``baseline`` implies.
    """
    paths = [Path(p) for p in paths]
    if len(paths) < 2:
        raise UsageError(f"compare needs at least two runs, got {len(paths)}")
    names = _run_names(paths, names)
    baseline_name = resolve_baseline(baseline, paths, names)
    if baseline_name is None and len(paths) == 2:
        baseline_name = names[0]        # two runs: the first is the baseline
    scored_under = _convention(convention, qrels)
    specs = parse_metrics(metrics) if metrics else None
    inputs = [load_input(p, n, specs, scored_under, qrels=qrels) for p, n in zip(paths, names)]
    check_kinds(inputs)
    metric_names = _metric_names(inputs, specs)
    # an explicit convention must also be the one per-query files were computed under
    check_conventions(inputs, convention.as_dict() if convention is not None else None)
    qids, dropped = align(inputs, intersect=intersect)
    means, used, comparisons, correction = compare_values(
        _aligned_values(inputs, qids, metric_names), metric_names, pairs=pairs, baseline=baseline_name, test=test,
        alpha=alpha, correction=correction, seed=seed, permutations=permutations)
    conv = next((i.convention for i in inputs if i.convention is not None), None)
    return Report(
        runs=[RunInfo(i.name, i.path, i.kind) for i in inputs], metrics=metric_names, baseline=baseline_name,
        test=test, alpha=alpha, correction=correction, permutations=permutations, seed=seed, convention=conv,
        queries=int(qids.shape[0]), dropped=dropped, used=used, means=means, comparisons=comparisons,
        notes=_notes(inputs, conv))


def _run_names(paths: list[Path], names: Sequence[str] | None) -> list[str]:
    """The runs' names: ``names`` (one per input) or :func:`default_names`, each visible text on one line and no two
    alike."""
    names = list(names) if names else []
    if names and len(names) != len(paths):
        raise UsageError(f"--name given {len(names)} times for {len(paths)} runs; give one name per run, in order")
    given = bool(names)
    names = names or default_names(paths)
    for n, path in zip(names, paths):
        # a line break ended the LaTeX comment and the Markdown table row a name is printed in; empty labels "x - "
        if not n.strip() or any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in n):
            where = "--name" if given else f"the name taken from {path}"
            raise UsageError(f"{where}: a run name must be visible text on one line (no line breaks, tabs or other "
                             f"control characters), got {n!r}" + ("" if given else "; pass --name NAME"))
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"two runs are named {dup[0]!r}; tell them apart with --name (once per run, in order)")
    return names


def _convention(convention, qrels):
    """The convention runs are scored under: the one given, else trec_eval's for TREC runs (they come with qrels)
    and the paper's otherwise."""
    if convention is not None:
        return convention

    return Convention.preset(default_convention(qrels is not None))


def _metric_names(inputs: list[LoadedInput], specs) -> list[str]:
    """The metrics compared: those asked for, else what every input has (runs default to DEFAULT_METRICS; per-query
    files offer their own columns)."""
    if specs is not None:
        return [str(s) for s in specs]
    metric_names = [m for m in inputs[0].values if all(m in i.values for i in inputs[1:])]
    if not metric_names:
        raise SchemaError("the inputs have no metric in common; choose one with --metric")
    return metric_names


def _aligned_values(inputs: list[LoadedInput], qids: np.ndarray, metric_names: list[str]) -> dict:
    """Run -> metric -> its per-query values on the aligned ``qids``, in their order."""
    values = {}
    for inp in inputs:
        pos = np.searchsorted(inp.qids, qids)
        values[inp.name] = {m: inp.values[m][pos] for m in metric_names}
    return values


def _notes(inputs: list[LoadedInput], conv: dict | None) -> list[str]:
    """The inputs' notes; when the report states a convention, also which inputs do not record theirs."""
    notes = [n for i in inputs for n in i.notes]
    if conv is not None:
        notes += [f"{i.path} records no convention (it was not written by rankcli eval --per-query); its values are "
                  "taken as computed under the convention shown" for i in inputs if i.convention is None]
    return notes
