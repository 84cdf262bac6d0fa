"""What a trained ranker relies on, and what each feature is worth in ranking quality: ``rankcli explain``.

Without data, LightGBM's own importances of the model's trees: ``gain`` (the total loss reduction of the splits on a
feature) and ``splits`` (how many splits use it), raw and normalised to shares that sum to 1. With labelled data,
also the *ranking importance* (:mod:`rankcli.explain.ranking`: the drop in a metric when the feature is permuted within
each query, with a paired test per feature corrected over the features) and the mean absolute per-document
contribution, centred within each query (:mod:`rankcli.explain.contributions`). Features can be grouped
(:mod:`rankcli.explain.grouping`); a group is permuted as a whole and its gain, splits and contributions are its
members' sums. Orchestration only: :func:`explain` returns an :class:`Explanation`, rendering is
:mod:`rankcli.explain.render`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankcli.core.metrics import EXPONENTIAL_GAIN_LABEL_LIMIT, parse_metric
from rankcli.dataset import Dataset
from rankcli.errors import InputError, UsageError
from rankcli.explain.contributions import (
    BATCH_ROWS,
    SAMPLE_QUERIES,
    SAMPLE_STREAM,
    ContributionSample,
    estimate,
    query_batches,
    query_sums,
    sample_queries,
)
from rankcli.explain.grouping import FeatureGroup, feature_groups, membership
from rankcli.explain.progress import Work
from rankcli.explain.ranking import RankingImportance, check_test, drop_tests, permuted_metrics, tree_permuted_metrics
from rankcli.formats.atomic.kinds import EXPLAIN_COLUMNS
from rankcli.runtime.cpus import default_threads
from rankcli.train.model import file_sha256

__all__ = ["BATCH_ROWS", "DEFAULT_REPEATS", "SAMPLE_QUERIES", "Explanation",
           "FeatureGroup", "RankingImportance", "explain", "feature_groups",
           "fitted_data_warnings", "per_query_columns"]

#: The largest ``--repeats``: each repeat is one model call per feature.
MAX_REPEATS = 10_000
#: ``--repeats``'s default (docs/commands/explain.md, "Speed", says why this many).
DEFAULT_REPEATS = 2
#: The first contributions batch, at most this many rows (whole queries): it measures TreeSHAP's cost early.
PROBE_ROWS = 512
#: Leaf values held at once by the permutations (rows per batch: this over the trees): 64 MiB of float64.
PERMUTATION_CELLS = 1 << 23
#: How a sample of queries for the contributions was drawn (``--json``'s ``contributions.drawn``).
SAMPLE_DRAWN = ("{n} of {of} queries uniformly without replacement: sorted(numpy.random.default_rng([{seed}, "
                f"{SAMPLE_STREAM}]).choice({{of}}, {{n}}, replace=False)), the queries' positions in the data")
#: The fields of each feature in ``--json`` and in the ``-o`` table, in order (the table's format owns them: its CSV
#: is recognised by this header when ``--overwrite`` replaces it).
FIELDS = EXPLAIN_COLUMNS


def _share(values: np.ndarray) -> list[float | None]:
    """Each value's share of the total; None for all when the total is 0 (a model without a split has nothing to
    share out: zeros would be shares that sum to 0, not 1)."""
    total = float(values.sum())
    return [float(v) / total for v in values] if total > 0 else [None] * len(values)


@dataclass
class Explanation:
    """Everything ``rankcli explain`` shows; one entry per group (a feature alone is a group) in the model's order.

    ``ranking`` and ``contributions`` are None without data (and ``contributions`` when not asked for)."""

    model: str
    data: str | None
    groups: list[FeatureGroup]
    gain: np.ndarray
    splits: np.ndarray
    ranking: RankingImportance | None = None
    contributions: np.ndarray | None = None
    contribution_stderr: np.ndarray | None = None  # the standard error of ``contributions`` as the data's
    sample: ContributionSample | None = None   # the queries the contributions are computed on
    qids: np.ndarray | None = None          # one per query of the data
    warnings: list[str] = field(default_factory=list)  # what a user must know to read the numbers (stderr, --json)

    @property
    def order(self) -> list[int]:
        """Group indices, most important first: by drop with data (NaN last), else by gain; ties in model order."""
        if self.ranking is not None:
            drops = [c.difference for c in self.ranking.comparisons]
            key = [(-d if not math.isnan(d) else math.inf) for d in drops]
        else:
            key = list(-self.gain)
        return sorted(range(len(self.groups)), key=lambda k: key[k])

    def rows(self) -> list[dict]:
        """One dict per group, most important first, with the keys of :data:`FIELDS` (None where not computed)."""
        gain_share, split_share = _share(self.gain), _share(self.splits.astype(np.float64))
        out = []
        for k in self.order:
            g = self.groups[k]
            row = {"feature": g.name, "members": list(g.members), "gain": float(self.gain[k]),
                   "gain_share": gain_share[k], "splits": int(self.splits[k]),
                   "splits_share": split_share[k], "drop": None, "drop_stderr": None, "p_value": None,
                   "p_raw": None, "n": None, "not_testable": None, "mean_abs_contribution": None,
                   "mean_abs_contribution_stderr": None}
            if self.ranking is not None:
                c = self.ranking.comparisons[k]
                row.update(drop=c.difference, drop_stderr=c.result.stderr, p_value=c.p_adjusted,
                           p_raw=c.result.p_value, n=c.result.n, not_testable=c.result.reason)
            if self.contributions is not None:
                row["mean_abs_contribution"] = float(self.contributions[k])
                row["mean_abs_contribution_stderr"] = float(self.contribution_stderr[k])
            out.append(row)
        return out

    def as_dict(self) -> dict:
        """``rankcli explain --json``: ``{"metric", "features": [...], ...}`` (numbers that are not finite: null)."""
        r = self.ranking
        return {
            "model": self.model, "data": self.data,
            "metric": r.metric if r else None, "convention": r.convention if r else None,
            "model_metric": r.mean if r else None,
            "test": r.test if r else None, "correction": r.correction if r else None,
            "repeats": r.repeats if r else None, "seed": r.seed if r else None,
            "queries": int(r.base.shape[0]) if r else None,
            "contributions": self.sample_dict(),
            "warnings": list(self.warnings),
            "features": self.rows(),
        }

    def sample_dict(self) -> dict | None:
        """``--json``'s ``contributions``: the queries the contributions were computed on (None: not computed)."""
        s = self.sample
        if s is None or self.qids is None:
            return None
        return {"queries": int(s.queries.shape[0]), "of": s.of, "sampled": not s.complete, "seed": s.seed,
                "drawn": None if s.complete else SAMPLE_DRAWN.format(n=s.queries.shape[0], of=s.of, seed=s.seed),
                "qids": None if s.complete else [int(q) for q in self.qids[s.queries]]}

    def columns(self) -> dict[str, list]:
        """The ``-o`` table: one column per field of :data:`FIELDS` (members joined with commas)."""
        rows = self.rows()
        cols = {f: [row[f] for row in rows] for f in FIELDS}
        cols["members"] = [",".join(m) for m in cols["members"]]
        for f in ("gain_share", "splits_share"):  # float columns even when every share is null (no split)
            cols[f] = np.array([np.nan if v is None else v for v in cols[f]], dtype=np.float64)
        return cols

    def per_query(self) -> dict[str, np.ndarray]:
        """``--per-query``: ``qid`` and the model's metric per query, then each group's drop per query, in the
        groups' order of importance (NaN: the query is skipped)."""
        if self.ranking is None:
            raise UsageError("--per-query needs DATA: the drops are computed on labelled queries")
        drops = self.ranking.drops
        cols = {"qid": self.qids, self.ranking.metric: self.ranking.base}
        for k in self.order:
            cols[self.groups[k].name] = drops[k]
        return cols


def _labels_checked(spec, convention, labels: np.ndarray, what: str) -> None:
    """Refuse labels the metric cannot take under the convention with advice in explain's own options (the metrics
    core's advice names ``--gain`` and ``--max-grade``, which explain does not have: its convention is a preset)."""
    finite = labels[np.isfinite(labels)]
    top = float(finite.max()) if finite.shape[0] else 0.0
    if convention.gain == "exponential" and "dcg" in spec.name and top > EXPONENTIAL_GAIN_LABEL_LIMIT:
        row = int(np.flatnonzero(labels > EXPONENTIAL_GAIN_LABEL_LIMIT)[0])
        raise InputError(f"{what}: label {top:g} at row {row}: the exponential gain 2^label - 1 of {spec} overflows "
                         f"beyond label {EXPONENTIAL_GAIN_LABEL_LIMIT}; use --convention sklearn (linear gain; it "
                         "also scores a query without a relevant document 0 and averages tied scores) or map the "
                         "labels to grades")
    if spec.name == "err" and top > convention.err_max_grade:
        row = int(np.flatnonzero(labels > convention.err_max_grade)[0])
        raise InputError(f"{what}: label {top:g} at row {row} exceeds {spec}'s maximum grade "
                         f"{convention.err_max_grade:g}, which explain's conventions fix; map the labels to grades "
                         f"0..{convention.err_max_grade:g} or measure another metric (-m ndcg@10)")


def _base(model, features: np.ndarray, ds: Dataset, metric: str, preset: str, what: str, work: Work):
    """``(spec, convention, metric_of, base)``: the model's metric per query, checked (its scores timed);
    ``metric_of(scores, rows=slice(None), offsets=ds.offsets)`` is the metric per query of rows ``rows``."""
    from rankcli.core.metrics import Convention, parse_metric, per_query

    spec, convention = parse_metric(metric), Convention.preset(preset)
    if spec.record.family == "info":
        raise UsageError(f"-m {metric}: not a per-query ranking metric")
    labels = np.asarray(ds.labels, dtype=np.float64)
    _labels_checked(spec, convention, labels, what)

    def metric_of(scores: np.ndarray, rows: slice = slice(None), offsets: np.ndarray = ds.offsets) -> np.ndarray:
        return per_query([spec], labels[rows], scores, offsets, convention)[str(spec)]

    cells = ds.n_rows * model.booster.num_trees()
    work.plan("predict", cells)
    with work.timed("predict", cells):
        scores = model.score(features, what)
    try:
        base = metric_of(scores)
    except InputError as exc:  # a label the metric cannot take (NaN, a gain that overflows): name the file
        raise InputError(f"{what}: {exc}") from None
    if np.isnan(base).all():
        raise InputError(f"{what}: no query has a relevant document, so {spec} under the {preset} convention (which "
                         "skips such queries) has no value to lose; explain on queries with relevant documents, or "
                         "without DATA for the trees' own importances")
    return spec, convention, metric_of, base


def _permutations(model, features: np.ndarray, ds: Dataset, groups: list[FeatureGroup], splits: np.ndarray,
                  metric_of, base: np.ndarray, *, what: str, repeats: int, seed: int, work: Work):
    """Plan the permutations (:mod:`rankcli.explain.ranking`) in ``work`` and return what runs them: a function
    giving each group's permuted metric per query, from the trees that read the group (:mod:`rankcli.explain.trees`)
    when the model allows it, else by scoring the whole model."""
    from rankcli.explain.trees import tree_scorer

    # a feature no split reads cannot change a score, unless leaves hold linear models of the features
    booster, n, trees = model.booster, ds.n_rows, model.booster.num_trees()
    linear = str(booster.params.get("linear_tree", "false")).lower() in ("true", "1")
    used = [True] * len(groups) if linear else list(splits > 0)
    scorer = None if linear else tree_scorer(booster, len(model.feature_names), default_threads())
    if scorer is None:
        work.plan("predict", sum(used) * repeats * n * trees)

        def predict(x: np.ndarray) -> np.ndarray:
            with work.timed("predict", n * trees):
                return model.score(x, what)

        return lambda: permuted_metrics(predict, features, metric_of, ds.offsets, groups, repeats=repeats, seed=seed,
                                        used=used, base=base)[1]
    reading = [int(scorer.trees_reading(g.columns).sum()) if u else 0 for g, u in zip(groups, used)]
    partial = any(0 < r < trees for r in reading)
    work.plan("predict", n * (trees * partial + repeats * sum(reading)))
    return lambda: tree_permuted_metrics(scorer, booster, features, metric_of, ds.offsets, groups, repeats=repeats,
                                         seed=seed, used=used, base=base,
                                         batch_rows=max(1, PERMUTATION_CELLS // trees), work=work)


def fitted_data_warnings(model, data_path: Path | str | None) -> list[str]:
    """Warnings when ``data_path`` is the file the model was trained or validated on: ``rankcli.json`` records the
    SHA-256 of both files' bytes (``data_sha256``), and the file's own digest is compared with them. On the data it
    was fitted to, the model's splits on a noise feature are not noise (they fit that data), so the feature's drop is
    real there and its test rejects; the validation file chose the model's best iteration, so it is not held out
    either. A copy with the same bytes is recognised, the same queries written otherwise are not."""
    recorded = model.info.get("data_sha256") if isinstance(model.info.get("data_sha256"), dict) else {}
    wanted = {k: recorded.get(k) for k in ("train", "valid") if recorded.get(k)}
    if data_path is None or not wanted:
        return []

    try:
        digest = file_sha256(data_path)
    except OSError:
        return []
    advice = ("; explain on queries the model was neither trained nor validated on (a test set) for the drops and "
              "their tests")
    if wanted.get("train") == digest:
        return [f"{data_path}: is the model's training data (the bytes rankcli.json records for it): on the data "
                "it was fitted to, the model's splits fit even features of pure noise, whose drops are then real "
                f"and come out significant{advice}"]
    if wanted.get("valid") == digest:
        return [f"{data_path}: is the model's validation data (the bytes rankcli.json records for it): it chose the "
                f"model's best iteration, so the model is not independent of it{advice}"]
    return []


def _check(model, *, repeats: int, seed: int, batch_rows: int, test: str, convention: str | None,
           contributions_queries: int | None = None) -> str:
    """Refuse bad options before any work (exit 2); returns the convention preset."""
    if not 1 <= repeats <= MAX_REPEATS:
        raise UsageError(f"--repeats must be between 1 and {MAX_REPEATS}, got {repeats}")
    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")
    if batch_rows < 1:
        raise UsageError(f"batch rows must be at least 1, got {batch_rows}")
    if contributions_queries is not None and contributions_queries < 1:
        raise UsageError(f"--contributions-queries must be at least 1 (or all), got {contributions_queries}")
    check_test(test, repeats)
    preset = convention or model.info.get("convention") or "paper"
    if preset not in ("paper", "lightgbm", "sklearn"):
        raise UsageError(f"--convention {preset}: explain ranks the data by the model's scores alone; choose paper, "
                         "lightgbm or sklearn")
    return preset


def per_query_columns(metric: str | None) -> dict[str, str]:
    """The columns of ``--per-query`` besides one per group (name -> what it is), which no group may be named as;
    ``metric``: the metric's canonical name (None without data)."""
    out = {"qid": "the qid column of --per-query"}
    if metric is not None:
        out[metric] = f"the column of the model's {metric} in --per-query"
    return out


def explain(model, ds: Dataset | None = None, *, data_name: str | None = None, metric: str = "ndcg@10",
            convention: str | None = None, repeats: int = DEFAULT_REPEATS, seed: int = 0, test: str = "ttest",
            correction: str | None = None, permutations: int = 10000, groups: Sequence[str] = (),
            group_files: Sequence[Path | str] = (), contributions: bool = True,
            contributions_queries: int | None = SAMPLE_QUERIES, batch_rows: int = BATCH_ROWS,
            progress: Callable[[float, float], None] | None = None,
            data_path: Path | str | None = None) -> Explanation:
    """Explain the loaded model ``model`` (:class:`rankcli.train.TrainedModel`), on the labelled dataset ``ds`` when
    given.

    Parameters
    ----------
    model : the model. ds : labelled data with the model's feature columns (raw, or normalised as the model's training
        data; :meth:`~rankcli.train.TrainedModel.model_features`), or None for the importances of the trees alone.
    data_name : how messages and the report name ``ds``. data_path : the file ``ds`` was read from, checked against
        the model's training and validation files (:func:`fitted_data_warnings`).
    metric : the metric whose drop is measured. convention : its preset (default: the model's recorded one, else
        ``paper``); ``trec`` is refused (its tie rule needs document ids).
    repeats, seed : permutations per feature and their seed (:mod:`rankcli.explain.ranking`).
    test, correction, permutations : the paired test per feature, as ``rankcli compare`` takes them (``wilcoxon``
        with ``repeats`` 1 only: :func:`rankcli.explain.ranking.check_test`).
    groups, group_files : feature groups (:func:`rankcli.explain.grouping.feature_groups`); none may be named as a
        column of the per-query table (:func:`per_query_columns`).
    contributions : compute the mean absolute contributions (TreeSHAP, the slow part), on ``contributions_queries``
        queries drawn with ``seed`` when the data has more (None: every query;
        :func:`rankcli.explain.contributions.sample_queries`), ``batch_rows`` per batch.
    progress : ``progress(done, total)`` in estimated seconds of work, after each model call
        (:mod:`rankcli.explain.progress`).
    """
    preset = _check(model, repeats=repeats, seed=seed, batch_rows=batch_rows, test=test, convention=convention,
                    contributions_queries=contributions_queries)
    names = model.feature_names
    reserved = per_query_columns(str(parse_metric(metric)) if ds is not None else None)
    found = feature_groups(names, groups, group_files, reserved=reserved)
    m = membership(found, len(names))
    booster = model.booster
    gain, splits = _importances(booster, m)
    out = Explanation(str(model.path) if model.path is not None else "model", data_name, found, gain, splits)
    if ds is None:
        return out
    out.warnings = fitted_data_warnings(model, data_path)
    what = data_name or "data"
    features = _permutable_features(model, ds, what)
    work = Work(progress)
    spec, conv, metric_of, base = _base(model, features, ds, metric, preset, what, work)
    run_permutations = _permutations(model, features, ds, found, splits, metric_of, base, what=what,
                                     repeats=repeats, seed=seed, work=work)
    if contributions:  # first: its first batch measures TreeSHAP's cost, which the time left then counts
        out.sample = sample_queries(ds.n_queries, contributions_queries, seed)
        out.contributions, out.contribution_stderr = _contributions(booster, features, ds.offsets, len(names), m,
                                                                    batch_rows, out.sample, work)
    permuted = run_permutations()
    comparisons, applied = drop_tests(base, permuted, str(spec), test=test, correction=correction, seed=seed,
                                      permutations=permutations)
    out.ranking = RankingImportance(str(spec), conv.as_dict(), test, applied, repeats, seed, base, permuted,
                                    comparisons)
    out.qids = ds.qids[ds.offsets[:-1]]
    return out


def _importances(booster, m: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``(gain, splits)`` per group: LightGBM's importances of the features, summed over each group's members
    (``m``: the features x groups membership matrix, None when every feature is its own group)."""
    gain = np.asarray(booster.feature_importance("gain"), dtype=np.float64)
    splits = np.asarray(booster.feature_importance("split"), dtype=np.float64)
    if m is not None:
        gain, splits = gain @ m, splits @ m
    return gain, np.rint(splits).astype(np.int64)


def _permutable_features(model, ds: Dataset, what: str) -> np.ndarray:
    """The model's feature columns of ``ds``, writeable and in Fortran order: the permutations shuffle them in place
    column by column, and restore them."""
    features = model.model_features(ds, what)
    if not (features.flags.f_contiguous and features.flags.writeable):
        features = np.array(features, order="F")
    if ds.n_rows == 0:
        raise InputError(f"{what}: no rows to explain on")
    return features


def _contributions(booster, features: np.ndarray, offsets: np.ndarray, n_features: int, m: np.ndarray | None,
                   batch_rows: int, sample: ContributionSample, work: Work) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, stderr)`` of the mean absolute centred contributions on the sampled queries; the first batch is
    small (:data:`PROBE_ROWS`), so that TreeSHAP's cost is measured early for the progress."""
    threads = default_threads()
    rows, sub = (None, offsets) if sample.complete else sample.rows(offsets)
    x = features if rows is None else features[rows]
    trees = booster.num_trees()
    work.plan("shap", x.shape[0] * trees)

    def contrib(batch: np.ndarray) -> np.ndarray:
        with work.timed("shap", batch.shape[0] * trees):
            return booster.predict(batch, pred_contrib=True, num_threads=threads)

    sums, sizes = query_sums(contrib, _probe_first(x, sub, batch_rows), n_features, m)
    return estimate(sums, sizes, sample.of)


def _probe_first(features: np.ndarray, offsets: np.ndarray, batch_rows: int):
    """:func:`query_batches` of ``batch_rows``, the first of at most :data:`PROBE_ROWS` (at least one query)."""
    first = next(query_batches(features, offsets, min(batch_rows, PROBE_ROWS)), None)
    if first is None:
        return
    yield first
    rows = first[0].shape[0]
    yield from query_batches(features[rows:], offsets[first[1].shape[0] - 1:] - rows, batch_rows)
