"""``export-model --check DATA``: score DATA and every split's probe values with rankcli's model and with the
exported file as the engine evaluates it, and count what takes another branch.

The engine's side is read back from the written file (:mod:`rankcli.export_model.readback`). Each row's leaf in
every tree is LightGBM's (``pred_leaf``, or rankcli's compiled walk of the same rule,
:mod:`rankcli.core.trees.leaves`); the engine takes the same leaf unless the row's path crosses a split where
the two rules disagree on its value (:func:`rankcli.core.trees.parity.diverging_pairs`), and those (row, tree) pairs
are walked again with the engine's rule. The engine's leaves are summed the engine's way
(:func:`rankcli.core.trees.semantics.add_trees`); for ONNX, onnxruntime itself scores DATA.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankcli.core.normalize import normalize
from rankcli.core.trees import semantics as sem
from rankcli.core.trees.ensemble import descend
from rankcli.core.trees.leaves import leaf_indices
from rankcli.core.trees.parity import (
    breakpoints,
    candidate_rows,
    diverging_pairs,
    ranking_changes,
    reachable,
    split_probes,
)
from rankcli.dataset import Dataset
from rankcli.errors import InputError
from rankcli.evaluate.runs import is_parquet
from rankcli.export_model.onnx_model import require, score
from rankcli.export_model.plan import Plan
from rankcli.export_model.readback import ReadBack
from rankcli.runtime.cpus import default_threads

#: Rows scored at once (LightGBM's leaf matrix of a chunk: rows x trees int32).
CHUNK_ROWS = 16384
#: Rows of the first chunk that LightGBM scores too (the leaves' sum must be its score).
SAMPLE_ROWS = 2048


@dataclass
class CheckResult:
    """What ``--check`` found."""

    data: str
    evaluator: str
    rows: int
    queries: int
    rows_other_branch: int
    synthetic_rows: int
    synthetic_other_branch: int
    synthetic_at_named_splits: int
    splits_other_branch: list[str]
    max_abs_diff: float
    max_bound: float
    rows_beyond_bound: int
    queries_changed: int
    queries_changed_beyond_bound: int

    @property
    def passed(self) -> bool:
        """No row of DATA and no synthetic row (but at the splits the export named) on another branch, and every
        score within the rounding its summation allows."""
        return self.rows_other_branch == 0 and self.synthetic_other_branch == 0 and self.rows_beyond_bound == 0

    def as_dict(self) -> dict:
        """The JSON form (``--json``'s ``check``)."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["passed"] = self.passed
        return out


def read_data(path: Path | str, model, width: int) -> Dataset:
    """DATA as raw feature values: Parquet, or LETOR text converted on the fly."""
    from rankcli.formats.parquet import read_dataset

    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: a directory; --check takes a dataset file (Parquet or LETOR text)")
    if not is_parquet(path):
        from rankcli.convert import ConvertOptions, convert

        with tempfile.TemporaryDirectory(prefix="rankcli-check-") as tmp:
            target = Path(tmp) / "data.parquet"
            convert([str(path)], target, ConvertOptions(zero_based=None, num_features=width))
            return _raw(read_dataset(target, label_required=False), model, str(path))
    return _raw(read_dataset(path, label_required=False), model, str(path))


def _raw(ds: Dataset, model, where: str) -> Dataset:
    from rankcli.dataset.feature_transform import recorded

    model.check_features(ds.feature_names, where)
    if recorded(ds.metadata, where) is not None:
        raise InputError(f"{where}: its features are normalised; --check gives the engine raw feature values, as a "
                         "search engine computes them: give DATA converted without --normalize")
    return ds


def _leaves(src, z: np.ndarray) -> np.ndarray:
    """LightGBM's leaf of each row in each tree, as the ensemble's leaf indices: walked by rankcli's compiled walk,
    which the tests prove equal to LightGBM's ``pred_leaf`` on every pair (and whose sums the first chunk checks
    against LightGBM's scores), else LightGBM's ``pred_leaf`` itself."""
    walked = leaf_indices(src.ensemble, z, default_threads())
    if walked is not None:
        return walked
    local = src.model.booster.predict(z, pred_leaf=True, num_threads=default_threads())
    local = np.asarray(local).reshape(z.shape[0], src.ensemble.n_trees)
    # (rows, trees) in Fortran order: one tree's leaves contiguous, as the sums and the lookups read them
    return np.asfortranarray(local.astype(np.int64) + src.ensemble.leaf_offsets[:-1][None, :])


def _terms(back: ReadBack, leaves: np.ndarray) -> np.ndarray:
    """Each (row, tree)'s weighted leaf value as the engine multiplies it ((rows, trees), Fortran order)."""
    by_tree = leaves.T  # C order: (trees, rows)
    if back.summation == sem.SUM_FLOAT32:  # float * float (o19s weights[i] * eval, Solr weight * value)
        return (back.leaf.astype(np.float32)[by_tree] * back.weight.astype(np.float32)[:, None]).T
    return (back.leaf[by_tree] * back.weight[:, None]).T


def _engine_rule(back: ReadBack):
    return lambda nodes, values: sem.engine_left(back.splits, nodes, values)


def _score_chunk(src, back: ReadBack, x: np.ndarray, bad: np.ndarray, onnx_out: Path | None, first: bool) -> tuple:
    """``(reference, engine, bound, rows on another branch)`` of a chunk of raw rows ``x``.

    rankcli's score is the sum of LightGBM's leaves in double in tree order, which is LightGBM's own prediction
    (``GBDT::PredictRaw``) bit for bit; the first chunk's first rows are scored by LightGBM too, to prove it."""
    ens = src.ensemble
    z = x if src.normalization is None else normalize(x, np.array([0, x.shape[0]]), src.normalization)
    leaves = _leaves(src, z)
    reference = sem.add_trees(ens.leaf_value[leaves.T].T, sem.SUM_DOUBLE)
    if first and not np.array_equal(reference[:SAMPLE_ROWS], src.model.score(z[:SAMPLE_ROWS])):
        raise RuntimeError("the model's trees as read do not sum to LightGBM's scores (a bug in reading model.txt "
                           "or in walking the trees)")
    engine_rule = _engine_rule(back)
    maybe = candidate_rows(ens, x, bad, src.raw_left, engine_rule)
    rows, trees = diverging_pairs(ens, leaves[maybe], x[maybe], bad, src.raw_left, engine_rule)
    rows = maybe[rows]
    engine_leaves = leaves
    if rows.size:
        engine_leaves = leaves.copy(order="K")
        engine_leaves[rows, trees] = descend(
            ens, lambda nodes, r: engine_rule(nodes, x[r, ens.feature[nodes]]), rows, trees)
    if onnx_out is not None:
        engine = score(onnx_out, x)
    else:
        engine = sem.add_trees(_terms(back, engine_leaves), back.summation)
    magnitude = np.abs(ens.leaf_value)[leaves.T].sum(axis=0)
    bound = sem.rounding_bound(magnitude, ens.n_trees, back.summation, reference)
    return reference, engine, bound, np.unique(rows)


def _probes(src, back: ReadBack, plan: Plan):
    """Every split's probe values, decided by LightGBM and by the engine: the splits where they disagree are those
    the rows of DATA are walked again at, whatever values DATA holds."""
    n, dtype = src.ensemble.n_nodes, back.splits.precision
    lightgbm_cut, any_left = src.raw_cut(dtype)
    engine_cut, _ = breakpoints(_engine_rule(back), n, dtype)
    reach = reachable(src.ensemble, np.asarray(lightgbm_cut, dtype=np.float64), any_left, src.nan_left)
    return split_probes(n, src.raw_left, _engine_rule(back), reach, dtype, lightgbm_cut, engine_cut)


def _held(back: ReadBack, values: np.ndarray) -> np.ndarray:
    """Which probe values the engine holds (the synthetic rows): Elasticsearch's features are scores, finite, so not
    +-inf; an engine that turns a missing value into 0 never holds NaN. DATA may hold them all the same."""
    held = np.ones(values.shape[0], dtype=bool)
    if back.splits.inf_is_missing:
        held &= ~np.isinf(values)
    if np.all(back.splits.nan == sem.NAN_AS_ZERO):
        held &= ~np.isnan(values)
    return held


def run_check(plan: Plan, out: Path, back: ReadBack, data: Path | str) -> CheckResult:
    """Check the export in ``out`` (read back as ``back``) on DATA and on every split's probes."""
    src = plan.source
    if not np.array_equal(back.feature, src.ensemble.feature):
        raise InputError(f"{out}: an exported split reads another feature than the model's")
    ds = read_data(data, src.model, len(src.feature_names))
    probes = _probes(src, back, plan)
    named = np.zeros(src.ensemble.n_nodes, dtype=bool)
    named[[i.node for i in plan.inexact]] = True
    bad = np.unique(probes.nodes[probes.disagree])
    held = _held(back, probes.values)
    nodes, disagree = probes.nodes[held], probes.disagree[held]
    onnx_out = out if plan.target.name == "onnx" else None
    parts = [_score_chunk(src, back, ds.features[a:a + CHUNK_ROWS], bad, onnx_out, a == 0)
             for a in range(0, ds.n_rows, CHUNK_ROWS)] or [(np.zeros(0),) * 3 + (np.zeros(0, np.int64),)]
    reference, engine, bound = (np.concatenate([p[i] for p in parts]) for i in range(3))
    other_rows = sum(int(p[3].size) for p in parts)
    changes = ranking_changes(reference, engine, bound, ds.offsets)
    off = disagree & ~named[nodes]
    splits = [src.split_name(int(n)) for n in np.unique(nodes[off])[:20]]
    diff = np.abs(engine - reference)
    evaluator = ("onnxruntime " + _ort_version()) if onnx_out is not None else f"rankcli's {plan.target.name} evaluator"
    return CheckResult(str(data), evaluator, ds.n_rows, ds.n_queries, other_rows, int(nodes.size),
                       int(off.sum()), int((disagree & named[nodes]).sum()), splits,
                       float(diff.max()) if diff.size else 0.0, float(bound.max()) if bound.size else 0.0,
                       changes["beyond_bound_rows"], changes["changed"], changes["changed_beyond_bound"])


def _ort_version() -> str:
    return require("onnxruntime").__version__
