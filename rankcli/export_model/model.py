"""The model to export: a rankcli model directory read as LightGBM predicts with it, checked for what no engine
can express, and each split's threshold brought back to the raw feature values the engine sees.

The model is loaded as ``predict`` loads it (:func:`rankcli.train.load_model`: ``rankcli.json`` validated,
``model.txt`` checked against its SHA-256) and its trees read from that same verified text
(:mod:`rankcli.formats.lightgbm_text`). A model trained on features normalised per dataset is exported on the raw
values: each split's threshold becomes the largest raw value whose normalised value (computed exactly as rankcli
computes it, :func:`rankcli.core.normalize.normalize_values`) goes left — so the engine, given raw values, takes
LightGBM's branch for every one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankcli.core.normalize import Normalization, normalize_values
from rankcli.core.trees.ensemble import Ensemble, finite_half_line, from_tree_arrays, lightgbm_left, nan_left
from rankcli.core.trees.parity import breakpoints
from rankcli.errors import InputError
from rankcli.formats.lightgbm_text import parse_model_text
from rankcli.train import load_model
from rankcli.train.model import MODEL_FILE

#: LightGBM objectives whose prediction is the raw sum of the trees (``predict`` applies no transform).
IDENTITY_OBJECTIVES = ("lambdarank", "rank_xendcg", "regression", "regression_l2", "regression_l1", "l2", "l1",
                       "mse", "mae", "huber", "fair", "quantile", "mape", "custom", "none", "")


class CannotExpress(InputError):
    """The model holds something the target cannot state (exit 3): a categorical split, a missing-value rule, a
    per-query normalisation. The message names the split or the reason, and the way out."""


@dataclass
class ModelToExport:
    """A loaded model ready for any target."""

    path: Path
    model: object  # rankcli.train.model.TrainedModel
    ensemble: Ensemble
    feature_names: list[str]  # the model's columns (f1..fN)
    engine_names: list[str]  # the engine's name of each column (from the training data, else the column's)
    normalization: Normalization | None
    t_eff: np.ndarray  # per node: LightGBM's finite left set is (-inf, t_eff] in the model's (normalised) values
    nan_left: np.ndarray  # per node: where LightGBM sends NaN
    cuts: dict = field(default_factory=dict, repr=False)  # raw_cut's searches, by dtype name

    @property
    def used(self) -> np.ndarray:
        """The columns the splits use, in column order."""
        return np.unique(self.ensemble.feature)

    def split_name(self, node: int) -> str:
        """``tree 3 split 5 (f12)``: a split as LightGBM's ``model.txt`` numbers it."""
        return self.split_names(np.array([node]))[0]

    def split_names(self, nodes: np.ndarray) -> list[str]:
        """:meth:`split_name` of each of ``nodes`` (one search for all: Solr can name tens of thousands)."""
        ens = self.ensemble
        nodes = np.asarray(nodes, dtype=np.int64)
        tree = np.searchsorted(ens.node_offsets, nodes, side="right") - 1
        local = nodes - ens.node_offsets[tree]
        names = self.feature_names
        return [f"tree {t} split {n} ({names[f]})" for t, n, f in
                zip(tree.tolist(), local.tolist(), ens.feature[nodes].tolist())]

    def raw_left(self, nodes: np.ndarray, values: np.ndarray) -> np.ndarray:
        """LightGBM's decision at ``nodes`` for raw feature ``values`` (normalised first, as rankcli scores raw data
        with a model trained on normalised features)."""
        ens = self.ensemble
        z = values if self.normalization is None else normalize_values(values, ens.feature[nodes], self.normalization)
        return lightgbm_left(np.asarray(z, dtype=np.float64), ens.threshold[nodes], ens.decision_type[nodes])

    def raw_cut(self, dtype) -> tuple[np.ndarray, np.ndarray]:
        """Per node, the largest raw value of ``dtype`` (float32 or float64) that LightGBM sends left, and whether
        any finite value goes left: the threshold an exact ``<=`` engine holding ``dtype`` values needs."""
        if self.normalization is None and np.dtype(dtype) == np.float64:
            return self.t_eff.copy(), np.ones(self.t_eff.shape[0], dtype=bool)
        key = np.dtype(dtype).name
        if key not in self.cuts:  # the plan and the check both need it: one search over every split
            self.cuts[key] = breakpoints(self.raw_left, self.ensemble.n_nodes, dtype)
        cut, any_left = self.cuts[key]
        return cut.copy(), any_left.copy()


def _text_model(model_dir: Path):
    path = model_dir / MODEL_FILE
    try:
        text = path.read_bytes().decode("utf-8", "surrogateescape")
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    return parse_model_text(text, str(path))


def _refuse_model_kind(text, where: Path) -> None:
    if text.objective not in IDENTITY_OBJECTIVES:
        raise CannotExpress(f"{where}: LightGBM's objective {text.objective!r} transforms the trees' sum before "
                            "rankcli ranks by it; export-model writes ranking models whose score is the sum of the "
                            "trees (lambdamart, xendcg, pointwise, the library losses)")
    if text.num_tree_per_iteration != 1 or text.average_output:
        raise CannotExpress(f"{where}: a model of {text.num_tree_per_iteration} trees per iteration"
                            f"{' averaging its trees (boosting rf)' if text.average_output else ''}; export-model "
                            "writes a sum of single trees")
    if not text.trees:
        raise CannotExpress(f"{where}: holds no tree, so there is nothing to export (rankcli train writes at least "
                            "one): retrain")
    for i, tree in enumerate(text.trees):
        if tree.is_linear:
            raise CannotExpress(f"{where}: tree {i} has linear models in its leaves (linear_tree); no target "
                                "evaluates them: retrain without linear_tree")


def _refuse_splits(ens: Ensemble, names: list[str], where: Path) -> tuple[np.ndarray, np.ndarray]:
    """Categorical splits and missing-type Zero splits whose left set is not a half-line: refused, named."""
    tree = np.searchsorted(ens.node_offsets, np.arange(ens.n_nodes), side="right") - 1
    local = np.arange(ens.n_nodes) - ens.node_offsets[tree]
    cat = np.flatnonzero(ens.categorical)
    if cat.size:
        n = cat[0]
        raise CannotExpress(f"{where}: tree {tree[n]} split {local[n]} splits feature {names[ens.feature[n]]} by "
                            f"category ({cat.size} categorical splits in all); the targets compare a value with a "
                            "threshold: retrain without categorical features (LightGBM's categorical_feature)")
    t_eff, ok = finite_half_line(ens.threshold, ens.decision_type)
    if not ok.all():
        n = int(np.flatnonzero(~ok)[0])
        side = "left" if ens.default_left[n] else "right"
        raise CannotExpress(f"{where}: tree {tree[n]} split {local[n]} ({names[ens.feature[n]]} <= "
                            f"{float(ens.threshold[n])!r}) sends values within 1e-35 of zero {side} (missing type "
                            "Zero) and the values beside them the other way; one threshold cannot state that (a "
                            "missing rule no target can state): retrain without zero_as_missing")
    return t_eff, nan_left(ens)


def _normalization(model, where: Path) -> Normalization | None:
    norm = model.normalization
    if norm is not None and norm.per == "query":
        raise CannotExpress(f"{where}: the model was trained on features normalised {norm.describe()}; an engine "
                            "scores one document at a time and cannot normalise by the other documents of a query: "
                            "convert the data with --normalize "
                            f"{norm.method} --per dataset and retrain")
    return norm


def load_for_export(model_dir: Path | str) -> ModelToExport:
    """Load ``model_dir`` for an export, refusing (:class:`CannotExpress`, exit 3) what no target can state."""
    model_dir = Path(model_dir)
    model = load_model(model_dir)
    text = _text_model(model_dir)
    _refuse_model_kind(text, model_dir / "model.txt")
    ens = from_tree_arrays([(t.split_feature, t.threshold, t.decision_type, t.left_child, t.right_child,
                             t.leaf_value) for t in text.trees])
    names = list(model.feature_names)
    t_eff, to_left = _refuse_splits(ens, names, model_dir / "model.txt")
    norm = _normalization(model, model_dir / "rankcli.json")
    engine = model.info.get("engine_features")
    engine_names = list(engine) if isinstance(engine, list) and len(engine) == len(names) else list(names)
    return ModelToExport(model_dir, model, ens, names, engine_names, norm, t_eff, to_left)
