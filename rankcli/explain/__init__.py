"""What a trained ranker relies on, and what each feature is worth in ranking quality: ``rankcli explain``.

Without data, LightGBM's own importances of the model's trees: ``gain`` (the total loss reduction of the splits on a
feature) and ``splits`` (how many splits use it), raw and normalised to shares that sum to 1. With labelled data,
also the *ranking importance* (:mod:`rankcli.explain.ranking`: the drop in a metric when the feature is permuted within
each query, with a paired test per feature corrected over the features) and the mean absolute per-document
contribution, centred within each query (:mod:`rankcli.explain.contributions`). Features can be grouped
(:mod:`rankcli.explain.groups`); a group is permuted as a whole and its gain, splits and contributions are its members'
sums. Orchestration only: :func:`explain` returns an :class:`Explanation`, rendering is
:mod:`rankcli.explain.render`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankcli.dataset import Dataset
from rankcli.errors import InputError, UsageError
from rankcli.explain.contributions import BATCH_ROWS, mean_abs_contributions, query_batches
from rankcli.explain.groups import FeatureGroup, feature_groups, membership
from rankcli.explain.ranking import RankingImportance, drop_tests, permuted_metrics
from rankcli.formats.atomic.kinds import EXPLAIN_COLUMNS

__all__ = ["BATCH_ROWS", "Explanation", "FeatureGroup", "RankingImportance", "explain", "feature_groups",
           "fitted_data_warnings", "per_query_columns"]

#: The largest ``--repeats``: each repeat is one model call per feature.
MAX_REPEATS = 10_000
#: The fields of each feature in ``--json`` and in the ``-o`` table, in order (the table's format owns them: its CSV
#: is recognised by this header when ``--overwrite`` replaces it).
FIELDS = EXPLAIN_COLUMNS


def _share(values: np.ndarray) -> np.ndarray:
    total = float(values.sum())
    return values / total if total > 0 else np.zeros_like(values, dtype=np.float64)


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
                   "gain_share": float(gain_share[k]), "splits": int(self.splits[k]),
                   "splits_share": float(split_share[k]), "drop": None, "drop_stderr": None, "p_value": None,
                   "p_raw": None, "n": None, "not_testable": None, "mean_abs_contribution": None}
            if self.ranking is not None:
                c = self.ranking.comparisons[k]
                row.update(drop=c.difference, drop_stderr=c.result.stderr, p_value=c.p_adjusted,
                           p_raw=c.result.p_value, n=c.result.n, not_testable=c.result.reason)
            if self.contributions is not None:
                row["mean_abs_contribution"] = float(self.contributions[k])
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
            "warnings": list(self.warnings),
            "features": self.rows(),
        }

    def columns(self) -> dict[str, list]:
        """The ``-o`` table: one column per field of :data:`FIELDS` (members joined with commas)."""
        rows = self.rows()
        cols = {f: [row[f] for row in rows] for f in FIELDS}
        cols["members"] = [",".join(m) for m in cols["members"]]
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


def _ranking(model, features: np.ndarray, ds: Dataset, groups: list[FeatureGroup], splits: np.ndarray, *,
             what: str, metric: str, preset: str, repeats: int, seed: int, test: str, correction: str | None,
             permutations: int, on_step) -> RankingImportance:
    from rankcli.core.metrics import Convention, parse_metric, per_query

    spec, convention = parse_metric(metric), Convention.preset(preset)
    if spec.record.family == "info":
        raise UsageError(f"-m {metric}: not a per-query ranking metric")
    labels = np.asarray(ds.labels, dtype=np.float64)

    def metric_of(scores: np.ndarray) -> np.ndarray:
        return per_query([spec], labels, scores, ds.offsets, convention)[str(spec)]

    scores = model.score(features, what)
    try:
        base = metric_of(scores)
    except InputError as exc:  # a label the metric cannot take (NaN, a gain that overflows): name the file
        raise InputError(f"{what}: {exc}") from None
    if np.isnan(base).all():
        raise InputError(f"{what}: no query has a relevant document, so {spec} under the {preset} convention (which "
                         "skips such queries) has no value to lose; explain on queries with relevant documents, or "
                         "without DATA for the trees' own importances")
    # a feature no split reads cannot change a score, unless leaves hold linear models of the features
    linear = str(model.booster.params.get("linear_tree", "false")).lower() in ("true", "1")
    used = [True] * len(groups) if linear else list(splits > 0)
    base, permuted = permuted_metrics(lambda x: model.score(x, what), features, metric_of, ds.offsets,
                                      groups, repeats=repeats, seed=seed, used=used, on_step=on_step, base=base)
    comparisons, applied = drop_tests(base, permuted, str(spec), test=test, correction=correction, seed=seed,
                                      permutations=permutations)
    return RankingImportance(str(spec), convention.as_dict(), test, applied, repeats, seed, base, permuted,
                             comparisons)


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
    from rankcli.train.model import file_sha256

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


def _check(model, *, repeats: int, seed: int, batch_rows: int, test: str, convention: str | None) -> str:
    """Refuse bad options before any work (exit 2); returns the convention preset."""
    from rankcli.explain.ranking import check_test

    if not 1 <= repeats <= MAX_REPEATS:
        raise UsageError(f"--repeats must be between 1 and {MAX_REPEATS}, got {repeats}")
    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")
    if batch_rows < 1:
        raise UsageError(f"batch rows must be at least 1, got {batch_rows}")
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
            convention: str | None = None, repeats: int = 5, seed: int = 0, test: str = "ttest",
            correction: str | None = None, permutations: int = 10000, groups: Sequence[str] = (),
            group_files: Sequence[Path | str] = (), contributions: bool = True, batch_rows: int = BATCH_ROWS,
            progress: Callable[[str, int], None] | None = None, data_path: Path | str | None = None) -> Explanation:
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
    groups, group_files : feature groups (:func:`rankcli.explain.groups.feature_groups`); none may be named as a
        column of the per-query table (:func:`per_query_columns`).
    contributions : compute the mean absolute contributions (TreeSHAP, the slow part); ``batch_rows`` per batch.
    progress : ``progress(stage, n)`` after each step (``"permutations"``: one per group and repeat;
        ``"contributions"``: the rows of a batch).
    """
    from rankcli.core.metrics import parse_metric

    preset = _check(model, repeats=repeats, seed=seed, batch_rows=batch_rows, test=test, convention=convention)
    names = model.feature_names
    reserved = per_query_columns(str(parse_metric(metric)) if ds is not None else None)
    found = feature_groups(names, groups, group_files, reserved=reserved)
    m = membership(found, len(names))
    booster = model.booster

    def summed(values: np.ndarray) -> np.ndarray:
        return values if m is None else values @ m

    gain = summed(np.asarray(booster.feature_importance("gain"), dtype=np.float64))
    splits = np.rint(summed(np.asarray(booster.feature_importance("split"), dtype=np.float64))).astype(np.int64)
    out = Explanation(str(model.path) if model.path is not None else "model", data_name, found, gain, splits)
    if ds is None:
        return out
    out.warnings = fitted_data_warnings(model, data_path)
    what = data_name or "data"
    features = model.model_features(ds, what)  # permuted in place column by column, and restored
    if not (features.flags.f_contiguous and features.flags.writeable):
        features = np.array(features, order="F")
    if ds.n_rows == 0:
        raise InputError(f"{what}: no rows to explain on")
    step = (lambda: progress("permutations", 1)) if progress is not None else None
    out.ranking = _ranking(model, features, ds, found, splits, what=what, metric=metric, preset=preset,
                           repeats=repeats, seed=seed, test=test, correction=correction, permutations=permutations,
                           on_step=step)
    out.qids = ds.qids[ds.offsets[:-1]]
    if contributions:
        out.contributions = _contributions(booster, features, ds.offsets, len(names), m, batch_rows, progress)
    return out


def _contributions(booster, features: np.ndarray, offsets: np.ndarray, n_features: int, m: np.ndarray | None,
                   batch_rows: int, progress) -> np.ndarray:
    from rankcli.runtime.cpus import default_threads

    threads = default_threads()
    return mean_abs_contributions(
        lambda x: booster.predict(x, pred_contrib=True, num_threads=threads),
        query_batches(features, offsets, batch_rows), n_features, m,
        on_batch=(lambda rows: progress("contributions", rows)) if progress is not None else None)
