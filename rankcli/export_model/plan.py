"""What to write for one target: each split's threshold as the engine must hold it, its missing branch, the leaf
values in the engine's precision, and the engine normalisers when asked for.

The thresholds (docs/commands/export-model.md, "Exact branches"): LightGBM sends a raw value ``x`` left exactly when
``x <= X``, ``X`` the largest value of the engine's precision that goes left (:meth:`ModelToExport.raw_cut`). An
engine comparing ``<=`` gets ``X``; a strict one (``<``) the next value up; Solr, which adds ``1E-6f`` to what it
reads, the float32 that lands on ``X`` after the addition (:func:`rankcli.core.trees.floats.solr_preimage`) — near
zero none does, and the nearest is written and the split named (:class:`Inexact`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rankcli.core.normalize import Normalization
from rankcli.core.trees import semantics as sem
from rankcli.core.trees.floats import solr_preimage, step
from rankcli.errors import UsageError
from rankcli.export_model.features import FeatureSpec
from rankcli.export_model.model import CannotExpress, ModelToExport
from rankcli.export_model.targets import MISSING_AS_ZERO, TARGETS, Target


@dataclass
class Inexact:
    """A split the export cannot write exactly: the values between the two cuts go the other way."""

    node: int
    split: str
    reason: str
    lightgbm_cut: float  # LightGBM sends the values up to this one left
    engine_cut: float  # the engine sends the values up to this one left

    def as_dict(self) -> dict:
        """The JSON form."""
        return {"split": self.split, "reason": self.reason, "lightgbm_cut": self.lightgbm_cut,
                "engine_cut": self.engine_cut}


@dataclass
class EngineNorm:
    """An engine normaliser of one feature, in float32 as the engine computes: ``(v - center) / scale``."""

    kind: int  # semantics.NORM_STANDARD or NORM_MINMAX
    center: np.float32
    scale: np.float32  # std, or max - min computed in float32
    params: dict  # the two numbers as written (o19s: mean/standard_deviation, minimum/maximum)


@dataclass
class Plan:
    """Everything a target's writer writes, aligned with the model's nodes and leaves."""

    source: ModelToExport
    target: Target
    key: str
    name: str
    features: list[FeatureSpec]
    cut: np.ndarray  # per node: the threshold the engine compares with, exactly (float64 holding float32 values)
    written: np.ndarray  # per node: the number the file holds (Solr: before its slack; else == cut)
    nan_left: np.ndarray  # per node: the missing branch (for a missing-as-zero target, where 0 goes)
    leaf: np.ndarray  # per leaf: the value in the engine's precision
    norms: dict[int, EngineNorm] = field(default_factory=dict)
    inexact: list[Inexact] = field(default_factory=list)

    def feature_of(self, column: int) -> FeatureSpec:
        """The spec of a used column."""
        return self.by_column[column]

    @property
    def by_column(self) -> dict[int, FeatureSpec]:
        """Used column -> its spec."""
        return {s.column: s for s in self.features}


def _engine_norms(src: ModelToExport, target: Target, used: np.ndarray) -> dict[int, EngineNorm]:
    norm: Normalization | None = src.normalization
    if norm is None:
        raise UsageError("--engine-normalizer: the model was trained on raw features; there is nothing to normalise")
    if not target.normalizers:
        raise UsageError(f"--engine-normalizer: {target.name} has no feature normalisers; export without it (the "
                         "normalisation is folded into the thresholds, exactly)")
    if norm.method == "sum":
        raise UsageError("--engine-normalizer: no engine has the sum normalisation; export without it (folded, exact)")
    out = {}
    for c in used:
        name = src.feature_names[c]
        if norm.method == "zscore":
            mean, std = norm.stats["mean"][c], norm.stats["std"][c]
            if std > 0:  # rankcli leaves a feature with std 0 unchanged: no normaliser
                out[int(c)] = EngineNorm(sem.NORM_STANDARD, np.float32(mean), np.float32(std),
                                         {"mean": float(np.float32(mean)), "std": float(np.float32(std))})
            continue
        lo, hi = np.float32(norm.stats["min"][c]), np.float32(norm.stats["max"][c])
        if not hi > lo:
            raise CannotExpress(f"--engine-normalizer: {name} is constant in the training data (max == min), which "
                                "rankcli maps to 0 and no engine normaliser does; export without --engine-normalizer")
        if target.name != "solr" and lo < 0:
            raise CannotExpress(f"--engine-normalizer: {name}'s minimum {float(lo)!r} is negative, which the LTR "
                                "plugin's min_max normaliser refuses (MinMaxFeatureNormDefinition.setMinimum); export "
                                "without --engine-normalizer")
        out[int(c)] = EngineNorm(sem.NORM_MINMAX, lo, np.float32(hi - lo), {"min": float(lo), "max": float(hi)})
    return out


def _normalised_cut(src, plan_cut, any_left, norms, target) -> tuple[np.ndarray, list[int]]:
    """The engine normaliser's value of each split's raw cut, and the splits where the normaliser maps the cut and
    the next value up to one float32 (no threshold separates them)."""
    ens = src.ensemble
    out = plan_cut.astype(np.float64).copy()
    bad = []
    for c, n in norms.items():
        nodes = np.flatnonzero((ens.feature == c) & any_left)
        x = plan_cut[nodes].astype(np.float32)
        v = sem.engine_normalize(x, np.full(nodes.size, n.kind), np.full(nodes.size, n.center),
                                 np.full(nodes.size, n.scale))
        v_next = sem.engine_normalize(step(x, True), np.full(nodes.size, n.kind), np.full(nodes.size, n.center),
                                      np.full(nodes.size, n.scale))
        out[nodes] = v
        bad += list(nodes[~(v_next > v)])
    return out, bad


def _missing_as_zero(src: ModelToExport, key: str) -> np.ndarray:
    """Splits with a learned missing rule (missing type NaN or Zero: the training data had missing values there)
    that sends a missing value otherwise than a raw 0: a target that reads a missing feature as 0 cannot state
    them. A split of missing type None learned no rule: its training data had none, and an absent feature was 0
    there too, as the engine makes it."""
    ens = src.ensemble
    zero_left = src.raw_left(np.arange(ens.n_nodes), np.zeros(ens.n_nodes))
    return np.flatnonzero((zero_left != src.nan_left) & (ens.missing_type != 0))


def _refuse_missing(src: ModelToExport, key: str, nodes: np.ndarray) -> None:
    n = int(nodes[0])
    where = "NaN" if src.ensemble.missing_type[n] == 2 else "a missing value"
    raise CannotExpress(f"{src.path}: {src.split_name(n)} sends {where} {'left' if src.nan_left[n] else 'right'} "
                        f"but 0 the other way ({nodes.size} such splits); {key.split('/')[0]} reads a missing "
                        "feature as 0 and cannot state it: export to a target with missing branches "
                        "(elasticsearch-ltr xgboost+json, solr, elasticsearch, vespa, onnx)")


def resolve_target(src: ModelToExport, target: str, model_type: str, missing_as_zero: bool) -> str:
    """The :data:`TARGETS` key for ``--target``/``--model-type``/``--missing-as-zero``, refusing a missing-value
    rule the target cannot state (Solr switches to its null-aware form instead)."""
    if target in ("elasticsearch-ltr", "opensearch-ltr"):
        key = f"{target}/{model_type}" + ("/missing-as-zero" if missing_as_zero and model_type == "xgboost+json"
                                          else "")
    else:
        key = target
    if TARGETS[key].missing == MISSING_AS_ZERO:
        odd = _missing_as_zero(src, key)
        if odd.size and key == "solr":
            return "solr/null-aware"
        if odd.size:
            _refuse_missing(src, key, odd)
    return key


def _cuts(src: ModelToExport, target: Target, naive: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per node: the raw cut the engine must compare with (``<=`` sense) and whether any finite value goes left."""
    if naive:  # the threshold as is, rounded as the engine reads it: the control the tests show failing
        t = src.ensemble.threshold
        cut = t if target.dtype == np.float64 else t.astype(np.float32).astype(np.float64)
        return cut, np.ones(cut.shape[0], dtype=bool)
    cut, any_left = src.raw_cut(target.dtype)
    return np.asarray(cut, dtype=np.float64), any_left


def _unwritable(src: ModelToExport, any_left: np.ndarray, cut: np.ndarray, target: Target) -> None:
    top = np.finfo(target.dtype).max
    bad = np.flatnonzero(~any_left | (target.strict & (cut >= top)))
    if bad.size:
        n = int(bad[0])
        raise CannotExpress(f"{src.path}: {src.split_name(n)} sends every finite value "
                            f"{'right' if not any_left[n] else 'left'}; {target.name} has no threshold beyond the "
                            f"{target.dtype.name} range to state it")


def _engine_cut(src: ModelToExport, target: Target, cut: np.ndarray, naive: bool) -> tuple:
    """``(engine_cut, written, inexact)``: the value the engine compares with, the number to write, and the splits
    where no written number gives the wanted comparison (Solr near zero)."""
    value = cut if target.dtype == np.float64 else cut.astype(np.float32)
    if target.strict and not naive:
        value = step(value, True)  # x < next(X) exactly when x <= X
    if not target.slack:
        return value.astype(np.float64), value.astype(np.float64), []
    if naive:
        written = value
        reached = written.astype(np.float32) + np.float32(1e-6)
        return reached.astype(np.float64), written.astype(np.float64), []
    written, reached = solr_preimage(value)
    nodes = np.flatnonzero(reached != value)
    reason = ("no float32 lands on this threshold after Solr adds its 1E-6f slack (near zero the reachable thresholds "
              "are 0, +-1.1e-13, ...); the nearest is written")
    inexact = [Inexact(n, name, reason, v, r) for n, name, v, r in
               zip(nodes.tolist(), src.split_names(nodes), value[nodes].astype(np.float64).tolist(),
                   reached[nodes].astype(np.float64).tolist())]
    return reached.astype(np.float64), written.astype(np.float64), inexact


def make_plan(src: ModelToExport, key: str, name: str, features: list[FeatureSpec], *,
              engine_normalizer: bool = False, naive: bool = False) -> Plan:
    """The :class:`Plan` of ``src`` for the target ``key`` (:func:`resolve_target`).

    ``engine_normalizer`` writes the engine's own normaliser of each feature instead of folding the normalisation
    into the thresholds (the splits where float32 normalising leaves no threshold are listed as :class:`Inexact`);
    ``naive`` writes each threshold as LightGBM holds it, rounded as the engine reads it — the export this module
    exists to avoid, kept as the control that shows ``--check`` failing.
    """
    target = TARGETS[key]
    cut, any_left = _cuts(src, target, naive)
    if not naive:
        _unwritable(src, any_left, cut, target)
    inexact: list[Inexact] = []
    norms = _engine_norms(src, target, src.used) if engine_normalizer else {}
    if norms:
        cut, bad = _normalised_cut(src, cut, any_left, norms, target)
        bad = np.asarray(bad, dtype=np.int64)
        inexact += [Inexact(n, name, "the engine normaliser computes in float32 and maps this split's cut and the "
                            "next value up to one number; no threshold separates them", c, c)
                    for n, name, c in zip(bad.tolist(), src.split_names(bad), cut[bad].tolist())]
    engine_cut, written, near_zero = _engine_cut(src, target, cut, naive)
    leaf = src.ensemble.leaf_value
    if target.dtype == np.float32:
        leaf = leaf.astype(np.float32).astype(np.float64)
    return Plan(src, target, key, name, features, engine_cut, written, src.nan_left.copy(), leaf, norms,
                inexact + near_zero)



