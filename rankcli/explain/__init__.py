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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankcli.dataset import Dataset
from rankcli.errors import InputError, UsageError
from rankcli.explain.contributions import BATCH_ROWS, mean_abs_contributions, query_batches
from rankcli.explain.groups import FeatureGroup, feature_groups, membership
from rankcli.explain.ranking import RankingImportance, drop_tests, permuted_metrics

__all__ = ["BATCH_ROWS", "Explanation", "FeatureGroup", "RankingImportance", "explain", "feature_groups"]

#: The largest ``--repeats``: each repeat is one model call per feature.
MAX_REPEATS = 10_000
#: The fields of each feature in ``--json`` and in the ``-o`` table, in order.
FIELDS = ("feature", "members", "gain", "gain_share", "splits", "splits_share", "drop", "drop_stderr", "p_value",
          "p_raw", "n", "not_testable", "mean_abs_contribution")


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


def explain(model, ds: Dataset | None = None, *, data_name: str | None = None, metric: str = "ndcg@10",
            convention: str | None = None, repeats: int = 5, seed: int = 0, test: str = "ttest",
            correction: str | None = None, permutations: int = 10000, groups: Sequence[str] = (),
            group_files: Sequence[Path | str] = (), contributions: bool = True, batch_rows: int = BATCH_ROWS,
            progress: Callable[[str, int], None] | None = None) -> Explanation:
    """Explain the loaded model ``model`` (:class:`rankcli.train.TrainedModel`), on the labelled dataset ``ds`` when
    given.

    Parameters
    ----------
    model : the model. ds : labelled data with the model's feature columns (raw, or normalised as the model's training
        data; :meth:`~rankcli.train.TrainedModel.model_features`), or None for the importances of the trees alone.
    data_name : how messages and the report name ``ds``.
    metric : the metric whose drop is measured. convention : its preset (default: the model's recorded one, else
        ``paper``); ``trec`` is refused (its tie rule needs document ids).
    repeats, seed : permutations per feature and their seed (:mod:`rankcli.explain.ranking`).
    test, correction, permutations : the paired test per feature, as ``rankcli compare`` takes them.
    groups, group_files : feature groups (:func:`rankcli.explain.groups.feature_groups`).
    contributions : compute the mean absolute contributions (TreeSHAP, the slow part); ``batch_rows`` per batch.
    progress : ``progress(stage, n)`` after each step (``"permutations"``: one per group and repeat;
        ``"contributions"``: the rows of a batch).
    """
    from rankcli.cpus import default_threads

    if not 1 <= repeats <= MAX_REPEATS:
        raise UsageError(f"--repeats must be between 1 and {MAX_REPEATS}, got {repeats}")
    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")
    if batch_rows < 1:
        raise UsageError(f"batch rows must be at least 1, got {batch_rows}")
    preset = convention or model.info.get("convention") or "paper"
    if preset not in ("paper", "lightgbm", "sklearn"):
        raise UsageError(f"--convention {preset}: explain ranks the data by the model's scores alone; choose paper, "
                         "lightgbm or sklearn")
    names = model.feature_names
    found = feature_groups(names, groups, group_files)
    m = membership(found, len(names))
    booster = model.booster

    def summed(values: np.ndarray) -> np.ndarray:
        return values if m is None else values @ m

    gain = summed(np.asarray(booster.feature_importance("gain"), dtype=np.float64))
    splits = np.rint(summed(np.asarray(booster.feature_importance("split"), dtype=np.float64))).astype(np.int64)
    out = Explanation(str(model.path) if model.path is not None else "model", data_name, found, gain, splits)
    if ds is None:
        return out
    what = data_name or "data"
    features = model.model_features(ds, what)  # permuted in place column by column, and restored
    if not (features.flags.f_contiguous and features.flags.writeable):
        features = np.array(features, order="F")
    step = (lambda: progress("permutations", 1)) if progress is not None else None
    if ds.n_rows == 0:
        raise InputError(f"{what}: no rows to explain on")
    out.ranking = _ranking(model, features, ds, found, splits, what=what, metric=metric, preset=preset,
                           repeats=repeats, seed=seed, test=test, correction=correction, permutations=permutations,
                           on_step=step)
    out.qids = ds.qids[ds.offsets[:-1]]
    if contributions:
        threads = default_threads()
        out.contributions = mean_abs_contributions(
            lambda x: booster.predict(x, pred_contrib=True, num_threads=threads),
            query_batches(features, ds.offsets, batch_rows), len(names), m,
            on_batch=(lambda rows: progress("contributions", rows)) if progress is not None else None)
    return out
