"""Compare runs per query: load them, align their queries, test every pair on every metric, return a Report.

Orchestration only (no printing): :func:`compare_inputs` is what ``rankcli compare`` calls; :func:`compare_values`
does the statistics on per-query values that are already aligned (the experiment command uses it).

Inputs, detected per file:

* a *run*: a Parquet file with ``qid``, ``label`` and ``score`` (what ``rankcli predict`` writes); metrics are computed
  with :func:`rankcli.core.metrics.per_query` under the given convention;
* a *per-query metric file*: a Parquet file with ``qid`` and one column per metric (what ``rankcli eval --per-query``
  writes; recognised by its footer ``rankcli.kind`` or by having neither ``label`` nor ``score``); its values are used
  as they are;
* a *TREC run* (text, ``qid Q0 docid rank score tag``) together with ``qrels``, read as
  :func:`rankcli.evaluate.load_trec_run` reads it (a run sharing no document id with the qrels is an error). With
  ``qrels`` the default convention is ``trec`` (trec_eval's), else ``paper``; under its docid tie rule the documents of
  a Parquet run are named as TREC files name them (the docid column, else ``<qid>-<row>``).

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

import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankcli.core import stats
from rankcli.errors import InputError, SchemaError, UsageError

#: Footer ``rankcli.kind`` values that mark a per-query metric file.
PER_QUERY_KINDS = ("per-query", "per_query", "eval-per-query", "metrics-per-query")
DEFAULT_METRICS = ("ndcg@5", "ndcg@10")


@dataclass
class LoadedInput:
    """One input reduced to per-query values, queries sorted by qid."""

    name: str
    path: str
    kind: str                                   # "run" | "trec" | "per-query"
    qids: np.ndarray                            # (n_queries,) int64 (or str for TREC ids), ascending, unique
    values: dict[str, np.ndarray]               # metric -> (n_queries,) float64, NaN = no value (skipped)
    label_qids: np.ndarray | None = None        # rows sorted by (qid, label), for the label check (runs only)
    label_values: np.ndarray | None = None
    convention: dict | None = None              # the convention the values were computed under, when known
    notes: list[str] = field(default_factory=list)


@dataclass
class Comparison:
    """``b`` tested against ``a`` on one metric."""

    a: str
    b: str
    metric: str
    mean_a: float
    mean_b: float
    result: stats.PairedTestResult              # paired_test(b, a): mean_diff = mean(b) - mean(a)
    p_adjusted: float
    significant: bool
    wins: int
    ties: int
    losses: int

    @property
    def difference(self) -> float:
        return self.result.mean_diff

    @property
    def decision(self) -> str:
        """``better`` / ``worse`` (``b`` against ``a``, significant), ``not significant`` or ``not testable``."""
        if not self.result.testable:
            return "not testable"
        if not self.significant:
            return "not significant"
        return "better" if self.difference > 0 else "worse"

    def as_dict(self) -> dict:
        r = self.result
        return {
            "a": self.a, "b": self.b, "metric": self.metric, "n": r.n,
            "mean_a": self.mean_a, "mean_b": self.mean_b, "difference": r.mean_diff, "stderr": r.stderr,
            "ci_low": r.ci_low, "ci_high": r.ci_high, "test": r.test, "exact": r.exact, "statistic": r.statistic,
            "p_value": r.p_value, "p_adjusted": self.p_adjusted, "significant": self.significant,
            "decision": self.decision, "reason": r.reason, "wins": self.wins, "ties": self.ties,
            "losses": self.losses,
        }


@dataclass
class RunInfo:
    name: str
    path: str
    kind: str


@dataclass
class Report:
    """Everything ``rankcli compare`` shows; rendering lives in :mod:`rankcli.report`."""

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
        return [r.name for r in self.runs]

    def worse_than_baseline(self) -> list[Comparison]:
        """Comparisons in which a run is significantly worse than the baseline (empty without a baseline)."""
        if self.baseline is None:
            return []
        return [c for c in self.comparisons if c.a == self.baseline and c.decision == "worse"]

    def as_dict(self) -> dict:
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


# ---------------------------------------------------------------------------------------------------------------------
# Loading


def _is_parquet(path: Path) -> bool:
    from rankcli.evaluate import is_parquet

    return is_parquet(path)


def _sorted_queries(qids_per_query: np.ndarray, values: dict[str, np.ndarray]) -> tuple[np.ndarray, dict]:
    qids_per_query = np.asarray(qids_per_query)
    if not np.issubdtype(qids_per_query.dtype, np.integer):
        qids_per_query = qids_per_query.astype(str)      # TREC query ids that are not plain integers
    order = np.argsort(qids_per_query, kind="stable")
    qids = qids_per_query[order]
    return qids, {k: np.asarray(v, dtype=np.float64)[order] for k, v in values.items()}


def _per_query_columns(names: Sequence[str]) -> list[str]:
    from rankcli.core.metrics import parse_metric

    out = []
    for name in names:
        if name == "qid":
            continue
        try:
            parse_metric(name)
        except UsageError:
            continue
        out.append(name)
    return out


def load_input(path: Path | str, name: str, specs: Sequence, convention, *, qrels: Path | str | None = None
               ) -> LoadedInput:
    """Read one input and reduce it to per-query values of ``specs`` (``None``: a per-query file's own columns)."""
    from rankcli.core.metrics import per_query
    from rankcli.formats import parquet

    path = Path(path)
    if not _is_parquet(path):
        if qrels is None:
            raise UsageError(f"{path}: not a Parquet file; a TREC run needs --qrels QRELS")
        return _load_trec(path, name, specs, convention, Path(qrels))
    names = parquet.column_names(path)
    meta = parquet.read_metadata(path)
    kind = meta.get("kind", "")
    if kind in PER_QUERY_KINDS or ("score" not in names and "label" not in names):
        return _load_per_query(path, name, names, meta, specs)
    from rankcli.evaluate import read_run

    # Checks columns, NaN and contiguous queries, as eval does; names the documents for the docid tie rule.
    run = read_run(path, docids=convention.ties == "docid-desc")
    wanted = list(specs) if specs is not None else list(DEFAULT_METRICS)
    try:
        values = per_query(wanted, run.labels, run.scores, run.offsets, convention, docids=run.docids)
    except InputError as exc:
        raise type(exc)(f"{path}: {exc}") from None
    qids, values = _sorted_queries(run.qids, values)
    row_qids = np.repeat(np.asarray(run.qids), np.diff(run.offsets))   # int64 from read_run; any id type works
    row_order = np.lexsort((run.labels, row_qids))
    return LoadedInput(name, str(path), "run", qids, values, row_qids[row_order], run.labels[row_order],
                       convention.as_dict())


def _load_per_query(path: Path, name: str, names: list[str], meta: dict, specs) -> LoadedInput:
    from rankcli.formats import parquet

    parquet.require_columns(path, names, ["qid"])
    available = _per_query_columns(names)
    if specs is None:
        wanted = available
        if not wanted:
            raise SchemaError(f"{path}: a per-query metric file needs metric columns besides qid, named as rankcli "
                              f"names metrics (ndcg@10, map, ...), found none: its columns are {', '.join(names)}")
    else:
        wanted = [str(s) for s in specs]
        missing = [m for m in wanted if m not in names]
        if missing:
            raise SchemaError(f"{path}: per-query metric file has no column {missing[0]} "
                              f"(metrics in it: {', '.join(available) or 'none'}); compare it on those or "
                              f"re-run rankcli eval --per-query with --metric {missing[0]}")
    table = parquet.read_table(path, ["qid", *wanted])
    import pyarrow as pa

    qcol = table.column("qid")
    if pa.types.is_integer(qcol.type):
        qids = parquet.qids_as_int64(path, qcol)  # a uint64 id beyond int64 is refused, never wrapped
    elif pa.types.is_string(qcol.type) or pa.types.is_large_string(qcol.type):
        qids = np.asarray(qcol.to_pylist(), dtype=str)   # TREC query ids written by eval --per-query
    else:
        raise SchemaError(f"{path}: column qid must be integer or string, got {qcol.type}")
    uniq, counts = np.unique(qids, return_counts=True)
    if (counts > 1).any():
        raise SchemaError(f"{path}: query {uniq[np.argmax(counts > 1)]} appears in more than one row; a "
                          "per-query metric file has one row per query")
    values = {}
    for m in wanted:
        col = table.column(m)
        try:
            values[m] = col.to_numpy(zero_copy_only=False).astype(np.float64)
        except (TypeError, ValueError):
            raise SchemaError(f"{path}: column {m} must be numeric, got {col.type}") from None
        infinite = np.isinf(values[m])
        if infinite.any():  # NaN marks a query without a value; an infinite metric is no value at all
            i = int(np.flatnonzero(infinite)[0])
            raise SchemaError(f"{path}: column {m} of query {qids[i]} is {values[m][i]}, not a metric value (NaN marks "
                              "a query without one)")
    qids, values = _sorted_queries(qids, values)
    convention = _stored_convention(path, meta["convention"]) if "convention" in meta else None
    return LoadedInput(name, str(path), "per-query", qids, values, convention=convention)


def _stored_convention(path: Path, text: str) -> dict:
    """The convention a per-query file's footer records (``rankcli eval --per-query`` writes it as JSON)."""
    import json

    from rankcli.core.metrics import Convention

    try:
        conv = json.loads(text)
    except ValueError:
        conv = None
    fields = set(Convention().as_dict())
    if not isinstance(conv, dict) or not set(conv) <= fields or not conv:
        raise InputError(f"{path}: its footer's rankcli.convention is not a metric convention (expected a JSON object "
                         f"with {', '.join(sorted(fields))}), got {text[:80]!r}; re-run rankcli eval --per-query")
    return conv


def _load_trec(path: Path, name: str, specs, convention, qrels: Path) -> LoadedInput:
    from rankcli.core.metrics import per_query
    from rankcli.evaluate import load_trec_run

    run = load_trec_run(path, qrels)
    wanted = list(specs) if specs is not None else list(DEFAULT_METRICS)
    try:
        values = per_query(wanted, run.labels, run.scores, run.offsets, convention,
                           unranked_labels=run.unranked_labels, unranked_offsets=run.unranked_offsets,
                           docids=run.docids, judged=run.judged)  # bpref, infAP: which documents are judged
    except InputError as exc:
        raise type(exc)(f"{path}: {exc}") from None
    qids, values = _sorted_queries(run.qids, values)
    return LoadedInput(name, str(path), "trec", qids, values, convention=convention.as_dict(),
                       notes=[f"{name}: {n}" for n in run.notes])


# ---------------------------------------------------------------------------------------------------------------------
# Alignment


def _label_mismatches(ref: LoadedInput, other: LoadedInput, common: np.ndarray) -> np.ndarray:
    """Queries of ``common`` whose multiset of labels differs between two runs."""
    rows_a = np.isin(ref.label_qids, common)
    rows_b = np.isin(other.label_qids, common)
    qa, la = ref.label_qids[rows_a], ref.label_values[rows_a]
    qb, lb = other.label_qids[rows_b], other.label_values[rows_b]
    # Both are sorted by (qid, label) over the same query set: per-query sizes first.
    _, size_a = np.unique(qa, return_counts=True)
    _, size_b = np.unique(qb, return_counts=True)
    bad = common[size_a != size_b]
    same = common[size_a == size_b]
    keep_a, keep_b = np.isin(qa, same), np.isin(qb, same)
    differ = la[keep_a] != lb[keep_b]
    bad_rows = qa[keep_a][differ]
    return np.union1d(bad, bad_rows)


def align(inputs: Sequence[LoadedInput], *, intersect: bool = False) -> tuple[np.ndarray, int]:
    """The qids to compare (ascending) and how many queries were dropped; raises on a mismatch without intersect."""
    if len({i.qids.dtype.kind == "i" for i in inputs}) > 1:
        # Integer ids in some inputs, string ids in others: compare them as strings.
        for i in inputs:
            if i.qids.dtype.kind == "i":
                i.qids, i.values = _sorted_queries(i.qids.astype(str), i.values)
                if i.label_qids is not None:
                    order = np.lexsort((i.label_values, i.label_qids.astype(str)))
                    i.label_qids, i.label_values = i.label_qids.astype(str)[order], i.label_values[order]
    all_qids = inputs[0].qids
    common = inputs[0].qids
    for inp in inputs[1:]:
        all_qids = np.union1d(all_qids, inp.qids)
        common = np.intersect1d(common, inp.qids, assume_unique=True)
    if not intersect and all_qids.shape[0] != common.shape[0]:
        q = all_qids[~np.isin(all_qids, common)][0]
        has = [i for i in inputs if np.isin(q, i.qids)]
        lacks = [i for i in inputs if not np.isin(q, i.qids)]
        raise InputError(f"runs cover different queries: query {q} is in {has[0].path} but not in "
                         f"{lacks[0].path}; pass --intersect to compare on the queries every run has")
    labelled = [i for i in inputs if i.label_qids is not None]
    bad = np.empty(0, dtype=np.int64)
    for other in labelled[1:]:
        mismatch = _label_mismatches(labelled[0], other, common)
        if mismatch.shape[0] and not intersect:
            raise InputError(f"runs have different labels: query {mismatch[0]} differs between "
                             f"{labelled[0].path} and {other.path}; compare runs of the same data, or pass "
                             "--intersect to drop such queries")
        bad = np.union1d(bad, mismatch)
    if bad.shape[0]:
        common = np.setdiff1d(common, bad, assume_unique=True)
    if common.shape[0] == 0:
        raise InputError("the runs have no query in common (with identical labels); nothing to compare")
    return common, int(all_qids.shape[0] - common.shape[0])


# ---------------------------------------------------------------------------------------------------------------------
# Statistics


def pairs_for(names: Sequence[str], baseline: str | None) -> list[tuple[str, str]]:
    if baseline is not None:
        return [(baseline, n) for n in names if n != baseline]
    return [(names[i], names[j]) for i in range(len(names)) for j in range(i + 1, len(names))]


def compare_values(values: dict[str, dict[str, np.ndarray]], metrics: Sequence[str], *, baseline: str | None = None,
                   test: str = "ttest", alpha: float = 0.01, correction: str | None = None, seed: int = 0,
                   permutations: int = 10000) -> tuple[dict, dict, list[Comparison], str]:
    """Test aligned per-query values: ``values[run][metric]`` are vectors over the same queries (NaN = no value).

    Returns ``(means, used, comparisons, correction)``: means per run and metric over the queries where every run has
    a value, the number of such queries per metric, the comparisons in order (pairs, then metrics), and the correction
    applied (``None`` resolves to holm for more than one test, else none).
    """
    if test not in stats.TESTS:
        raise UsageError(f"unknown test {test!r}; choose one of {', '.join(stats.TESTS)}")
    if correction is not None and correction not in stats.CORRECTIONS:
        raise UsageError(f"unknown correction {correction!r}; choose one of {', '.join(stats.CORRECTIONS)}")
    if not 0.0 < alpha < 1.0:
        raise UsageError(f"--alpha must be between 0 and 1, got {alpha}")
    names = list(values)
    masks = {}
    means: dict[str, dict[str, float]] = {n: {} for n in names}
    used = {}
    for m in metrics:
        mask = np.logical_and.reduce([~np.isnan(values[n][m]) for n in names])
        masks[m] = mask
        used[m] = int(mask.sum())
        for n in names:
            means[n][m] = float(values[n][m][mask].mean()) if used[m] else float("nan")
    comparisons = []
    for pi, (a, b) in enumerate(pairs_for(names, baseline)):
        for mi, m in enumerate(metrics):
            va, vb = values[a][m][masks[m]], values[b][m][masks[m]]
            # One generator per test, from (seed, pair, metric): each result is reproducible on its own.
            rng = np.random.default_rng([seed, pi, mi])
            # alpha: the bootstrap interval is then the one its p-value inverts (excludes 0 iff p < alpha).
            result = stats.paired_test(vb, va, test, rng=rng, permutations=permutations, alpha=alpha)
            w, t, l = stats.win_tie_loss(vb, va)
            comparisons.append(Comparison(a, b, m, means[a][m], means[b][m], result, float("nan"), False, w, t, l))
    testable = sum(1 for c in comparisons if c.result.testable)
    if correction is None:
        correction = "holm" if testable > 1 else "none"
    adjusted = stats.adjust_pvalues([c.result.p_value for c in comparisons], correction)
    for c, p in zip(comparisons, adjusted):
        c.p_adjusted = float(p)
        c.significant = bool(not math.isnan(p) and p < alpha)
    return means, used, comparisons, correction


def default_names(paths: Sequence[Path | str]) -> list[str]:
    """A run is named by its file name without the extension (``runs/xendcg.parquet`` -> ``xendcg``)."""
    return [Path(p).stem if Path(p).suffix in (".parquet", ".txt", ".run", ".trec", ".tsv") else Path(p).name
            for p in paths]


def resolve_baseline(baseline: str | None, paths: Sequence[Path | str], names: Sequence[str]) -> str | None:
    """A baseline given by its name or its path, as the run's name."""
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
                   permutations: int = 10000, intersect: bool = False) -> Report:
    """Load, align and compare runs or per-query metric files; see the module docstring."""
    from rankcli.core.metrics import Convention, parse_metrics

    paths = [Path(p) for p in paths]
    if len(paths) < 2:
        raise UsageError(f"compare needs at least two runs, got {len(paths)}")
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
    baseline_name = resolve_baseline(baseline, paths, names)
    if baseline_name is None and len(paths) == 2:
        baseline_name = names[0]        # two runs: the first is the baseline
    requested = convention   # an explicit convention must also be the one per-query files were computed under
    if convention is None:  # trec_eval's for TREC runs (they come with qrels), the paper's otherwise
        from rankcli.evaluate import default_convention

        convention = Convention.preset(default_convention(qrels is not None))
    specs = parse_metrics(metrics) if metrics else None

    inputs = [load_input(p, n, specs, convention, qrels=qrels) for p, n in zip(paths, names)]
    if specs is None:
        # Runs default to DEFAULT_METRICS; per-query files offer their own columns; compare what all have.
        metric_names = [m for m in inputs[0].values if all(m in i.values for i in inputs[1:])]
        if not metric_names:
            raise SchemaError("the inputs have no metric in common; choose one with --metric")
    else:
        metric_names = [str(s) for s in specs]
    _check_conventions(inputs, requested.as_dict() if requested is not None else None)

    qids, dropped = align(inputs, intersect=intersect)
    values = {}
    for inp in inputs:
        pos = np.searchsorted(inp.qids, qids)
        values[inp.name] = {m: inp.values[m][pos] for m in metric_names}
    means, used, comparisons, correction = compare_values(
        values, metric_names, baseline=baseline_name, test=test, alpha=alpha, correction=correction, seed=seed,
        permutations=permutations)
    conv = next((i.convention for i in inputs if i.convention is not None), None)
    notes = [n for i in inputs for n in i.notes]
    if conv is not None:  # the report states one convention: say which inputs do not record theirs
        notes += [f"{i.path} records no convention (it was not written by rankcli eval --per-query); its values are "
                  "taken as computed under the convention shown" for i in inputs if i.convention is None]
    return Report(
        runs=[RunInfo(i.name, i.path, i.kind) for i in inputs], metrics=metric_names, baseline=baseline_name,
        test=test, alpha=alpha, correction=correction, permutations=permutations, seed=seed, convention=conv,
        queries=int(qids.shape[0]), dropped=dropped, used=used, means=means, comparisons=comparisons,
        notes=notes)


def _check_conventions(inputs: Sequence[LoadedInput], requested: dict | None = None) -> None:
    known = [i for i in inputs if i.convention is not None]
    if requested is not None:
        # a convention asked for cannot change values already computed: it was silently ignored for per-query files
        other = next((i for i in known if i.kind == "per-query" and i.convention != requested), None)
        if other is not None:
            raise InputError(f"{other.path} was evaluated under another convention ({other.convention}) than the one "
                             f"asked for ({requested}); a per-query file keeps the convention it was computed under: "
                             "leave out the convention options, or re-run rankcli eval --per-query with them")
    for other in known[1:]:
        if other.convention != known[0].convention:
            raise InputError(f"{other.path} was evaluated under a different convention than {known[0].path} "
                             f"({other.convention} vs {known[0].convention}); compare values computed alike")
