"""Data-parallel training on a Dask cluster (``rankcli train --dask``), through LightGBM's Dask interface.

Only LightGBM's native ranking objectives train data-parallel (:data:`NATIVE_LOSSES`). The training set is a
query-aligned Parquet dataset (:mod:`rankcli.formats.partitions`): each worker reads its own partitions from the path,
so the path must be visible to every worker (a shared filesystem) as well as to this process, and LightGBM receives
the group sizes of each partition with the partition's rows. Validation runs here, on the client, after training, with
``rankcli train``'s model-selection rule.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import operator
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rankcli.dataset.feature_transform import FOOTER_KEY
from rankcli.distributed import cluster
from rankcli.errors import InputError, SchemaError, UsageError
from rankcli.formats.atomic import check_target
from rankcli.formats.feature_values import precision_name
from rankcli.train import (
    EarlyStopping,
    TrainResult,
    check_boosting,
    check_loss,
    check_params,
    check_validation,
    metric_function,
    resolve_params,
    save_model,
)
from rankcli.train.losses import LOSSES

if TYPE_CHECKING:  # pragma: no cover
    import distributed

    from rankcli.formats.partitions import PartitionPlan

#: The losses LightGBM implements natively in C++; only these train data-parallel on a cluster.
NATIVE_LOSSES = tuple(name for name, loss in LOSSES.items() if loss.native)

OnIteration = Callable[[int, "float | None", "float | None"], None]


def check_dask_loss(loss: str) -> str:
    """The loss name if it can train data-parallel on a cluster, else a :class:`UsageError` saying why not."""
    check_loss(loss)
    if loss not in NATIVE_LOSSES:
        raise UsageError(
            f"--loss {loss} cannot train with --dask: it is one of rankcli's own losses, a Python objective, and under "
            "LightGBM's Dask interface a custom objective runs separately on every worker and sees only that "
            "worker's local rows and random state, which rankcli does not support; use a native loss "
            f"({', '.join(NATIVE_LOSSES)}) with --dask, or run `rankcli experiment --dask` to spread whole "
            f"single-machine trainings of --loss {loss} over the cluster")
    return loss


@dataclass
class DistributedInfo:
    """Where a distributed training ran, for ``rankcli.json`` and the summary."""

    scheduler: str
    workers: int
    partitions: int
    rows: int
    queries: int

    def as_dict(self) -> dict:
        """The ``dask`` key of ``rankcli.json``."""
        return {"scheduler": self.scheduler, "workers": self.workers, "partitions": self.partitions,
                "rows": self.rows, "queries": self.queries}


# ------------------------------------------------------------------------------------------------- the data on workers
def assign_partitions(plan: PartitionPlan, workers: list[str]) -> list[str]:
    """A worker for each partition: in order, to the worker holding the fewest rows so far (deterministic)."""
    load = {w: 0 for w in workers}
    out = []
    for part in plan.partitions:
        w = min(workers, key=lambda a: (load[a], workers.index(a)))
        load[w] += part.n_rows
        out.append(w)
    return out


def load_partitions(client: distributed.Client, plan: PartitionPlan) -> tuple[Any, Any, Any]:
    """Read every partition on its worker and return Dask arrays ``(X, y, group)``, one chunk per partition.

    Workers read their own partitions from ``plan.path`` (nothing goes through this process), spread so that each
    worker holds about the same number of rows. Chunk ``i`` of ``group`` holds the query sizes of chunk ``i`` of
    ``X`` and ``y``: ``DaskLGBMRanker`` concatenates a worker's chunks in the same order for all three, so each
    worker's groups describe exactly its rows.
    """
    import dask.array as da

    from rankcli.formats.parquet import feature_dtype
    from rankcli.formats.partitions import read_partition

    workers = sorted(client.nthreads())
    placement = assign_partitions(plan, workers)
    nf = len(plan.feature_names)
    xs, ys, gs = [], [], []
    for part, sizes, worker in zip(plan.partitions, plan.group_sizes, placement):
        both = client.submit(read_partition, part, plan.feature_names, workers=[worker], pure=False)
        x = client.submit(operator.itemgetter(0), both, workers=[worker], pure=False)
        y = client.submit(operator.itemgetter(1), both, workers=[worker], pure=False)
        xs.append(da.from_delayed(x, shape=(part.n_rows, nf), dtype=feature_dtype(part.path)))
        ys.append(da.from_delayed(y, shape=(part.n_rows,), dtype=np.float64))
        gs.append(da.from_array(sizes, chunks=(sizes.shape[0],)))
    return da.concatenate(xs), da.concatenate(ys), da.concatenate(gs)


def _plan_on_cluster(client: distributed.Client, train_path: Path | str, valid: Any,
                     rows_per_partition: int | None) -> tuple[PartitionPlan, int]:
    """The partitions of the training file (at least one per worker) as the workers see it, and the worker count."""
    from rankcli.formats.partitions import plan_partitions

    workers = cluster.require_workers(client)
    plan = plan_partitions(train_path, rows_per_partition=rows_per_partition, min_partitions=workers)
    where = str(Path(train_path).resolve())
    if not cluster.visible_everywhere(client, [where])[where]:
        raise InputError(f"{train_path}: not visible to every Dask worker (as {where}); --dask training needs the "
                         "training file on a filesystem all workers share")
    plan.partitions = [dataclasses.replace(p, path=where) for p in plan.partitions]
    if not plan.feature_names:
        raise SchemaError(f"{train_path}: no feature columns (f1, f2, ...)")
    return plan, workers


def _check_training(config: Any, train_path: Path | str, valid: Any, valid_name: str = "validation data") -> None:
    """The checks of single-machine training that need no cluster: the configuration (``rankcli.train``'s, and a
    native loss), and the validation set against the training file's feature columns and the validation metric."""
    from rankcli.formats.parquet import column_names, feature_columns

    config.validate()  # a configuration changed after it was built is checked again
    check_dask_loss(config.loss)
    check_boosting(check_params(config.params), config.early_stopping, valid is not None)
    if valid is not None:
        check_validation(feature_columns(column_names(train_path)), valid, config, valid_name)


def _training_labels(y: Any, config: Any, train_path: Path | str) -> tuple[Any, int | None, list[float] | None]:
    """The labels LightGBM trains on (grades with ``label_grades``), checked by single-machine training's rule on the
    distinct label values; the largest grade (``lambdamart``) and the label value of each grade (``label_grades``)."""
    import dask.array as da

    from rankcli.train import trainable_labels

    values = np.asarray(da.unique(y).compute(), dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise InputError(f"{train_path}: some label is not a finite number, got {values[~np.isfinite(values)][0]}")
    grades, label_values = trainable_labels(values, config)
    if config.label_grades:
        y = y.map_blocks(lambda b, v=values: np.searchsorted(v, b).astype(np.float64), dtype=np.float64)
    max_grade = int(grades.max()) if config.loss == "lambdamart" else None
    return y, max_grade, label_values


def _fit(client: distributed.Client, data: tuple[Any, Any, Any], feature_names: list[str], trees: int,
         params: dict) -> tuple[Any, float]:
    """Train ``trees`` trees with LightGBM's Dask interface; the booster and the seconds it took."""
    import lightgbm
    from lightgbm.dask import DaskLGBMRanker

    X, y, group = data
    start = time.perf_counter()
    try:
        # lightgbm.dask prints its progress with print() and warns that it sets n_jobs itself: keep stdout for results.
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Parameter n_jobs will be ignored")
            model = DaskLGBMRanker(client=client, n_estimators=int(trees), **params)
            model.fit(X, y, group=group, feature_name=list(feature_names))
    except lightgbm.basic.LightGBMError as exc:
        raise InputError(f"LightGBM refused the training data or parameters: {exc}") from None
    return model.booster_, time.perf_counter() - start


def _validation_curve(booster: Any, valid: Any, config: Any, on_iteration: OnIteration | None
                      ) -> tuple[str, list[float]]:
    """The validation metric's name and its value after each tree, from one tree's contribution at a time (the cost
    of one prediction); ``on_iteration(tree, value, best so far)`` as each is known."""
    name, metric = metric_function(config.select_by, config.convention)
    labels = np.asarray(valid.labels, dtype=np.float64)
    scores = np.zeros(valid.n_rows, dtype=np.float64)
    progress = EarlyStopping(0)  # keeps the best value so far, never stops
    for t in range(booster.current_iteration()):
        scores += booster.predict(valid.features, start_iteration=t, num_iteration=1)
        progress.update(metric(labels, scores, valid.offsets))
        if on_iteration is not None:
            on_iteration(t + 1, progress.curve[-1], progress.best if progress.best_iter >= 0 else None)
    return name, progress.curve


def _select(booster: Any, valid: Any, config: Any, on_iteration: OnIteration | None
            ) -> tuple[Any, int, list[float], str | None]:
    """Model selection after training, by ``rankcli train``'s rule (:class:`rankcli.train.EarlyStopping`): the
    booster cut at the best iteration, that iteration, the validation curve and the metric's name (``None`` without
    validation)."""
    import lightgbm

    trees_trained = booster.current_iteration()
    curve: list[float] = []
    metric_name = None
    best_iteration = trees_trained
    if valid is not None:
        metric_name, curve = _validation_curve(booster, valid, config, on_iteration)
        rule = EarlyStopping(config.early_stopping)
        for value in curve:
            if rule.update(value):
                break
        best_iteration = rule.best_iteration(trees_trained)
    elif on_iteration is not None:
        for t in range(trees_trained):
            on_iteration(t + 1, None, None)
    if best_iteration < trees_trained:
        booster = lightgbm.Booster(model_str=booster.model_to_string(num_iteration=best_iteration))
    booster.best_iteration = best_iteration
    return booster, best_iteration, curve, metric_name


def train_distributed(client: distributed.Client, train_path: Path | str, valid: Any, config: Any, *,
                      scheduler: str = "", rows_per_partition: int | None = None,
                      on_iteration: OnIteration | None = None) -> tuple[Any, DistributedInfo]:
    """Train ``config`` (a :class:`rankcli.train.TrainConfig`) data-parallel on the cluster behind ``client``.

    ``train_path`` is a query-aligned Parquet dataset that every worker can read; ``valid`` is an in-memory
    :class:`rankcli.dataset.Dataset` (or ``None``) evaluated here, on the client. ``scheduler`` names the cluster in
    the result (default: the scheduler's address); ``rows_per_partition`` joins row groups into larger partitions;
    ``on_iteration(tree, value, best)`` sees the validation metric after each tree. Returns a
    :class:`rankcli.train.TrainResult` (save it with :func:`save_distributed_model`) and where it ran.

    Model selection follows ``rankcli train``'s rule, applied after training: LightGBM's Dask interface trains all
    ``config.trees`` trees in one call, then the validation curve is computed tree by tree with the metrics core, cut
    where single-machine early stopping would have stopped, and the model keeps the trees up to the best iteration.
    """
    _check_training(config, train_path, valid)
    plan, workers = _plan_on_cluster(client, train_path, valid, rows_per_partition)
    X, y, group = load_partitions(client, plan)
    y, max_grade, label_values = _training_labels(y, config, train_path)
    # each worker uses its own threads
    params = {k: v for k, v in resolve_params(config, max_grade).items() if k not in ("num_threads", "n_jobs")}
    params.setdefault("tree_learner", "data")
    booster, seconds = _fit(client, (X, y, group), plan.feature_names, config.trees, params)
    trees_trained = booster.current_iteration()
    booster, best_iteration, curve, metric_name = _select(booster, valid, config, on_iteration)
    result = TrainResult(booster=booster, best_iteration=best_iteration, curve=curve, seconds=seconds, params=params,
                         trees_trained=trees_trained, metric=metric_name, label_values=label_values)
    info = DistributedInfo(scheduler=scheduler or str(client.scheduler.address), workers=workers,
                           partitions=len(plan), rows=plan.n_rows, queries=plan.n_queries)
    return result, info


def train_command(dask: str, train_path: Path, valid_path: Path | None, config: Any, output: Path, *,
                  overwrite: bool = False, log: Callable[[str], None] | None = None,
                  on_iteration: OnIteration | None = None, extra: dict | None = None) -> dict:
    """``rankcli train ... --dask SPEC``: every check first (cheap ones before a cluster starts), then
    :func:`train_distributed` and the model directory.

    ``dask`` is the ``--dask`` value, ``output`` the model directory (``overwrite``: replace one rankcli wrote),
    ``log`` receives progress lines for stderr, ``extra`` more keys for ``rankcli.json`` (``params_file``, as
    ``rankcli train`` records it). Returns the ``rankcli.json`` content."""
    from rankcli.dataset.feature_transform import conform, recorded
    from rankcli.formats.parquet import check_query_aligned, read_dataset, read_metadata

    target = cluster.parse_dask_target(dask)
    check_dask_loss(config.loss)
    cluster.require_dask(training=True)
    check_target(output, overwrite)
    check_query_aligned(train_path)  # refuse a query spanning row groups before starting anything
    normalization = recorded(read_metadata(train_path), str(train_path))
    valid = read_dataset(valid_path) if valid_path is not None else None
    if valid is not None:  # the validation set as the workers' training features are (as rankcli train does)
        valid = conform(valid, normalization, str(valid_path), f"the training data {train_path}")
    _check_training(config, train_path, valid, str(valid_path))
    if config.threads:
        (log or (lambda m: None))("--threads is ignored with --dask: every worker trains with its own threads")
    with cluster.connect(target) as client:
        if log is not None:
            log(f"training {config.loss} on the Dask cluster {target.spec} ({cluster.n_workers(client)} workers): "
                f"{train_path}" + (f"; validating on {valid_path} ({valid.n_queries} queries) here"
                                   if valid is not None else ""))
        result, info = train_distributed(client, train_path, valid, config, scheduler=target.spec,
                                         on_iteration=on_iteration)
    if log is not None:
        log(f"trained on {info.workers} workers, {info.partitions} partitions: {info.rows} rows, "
            f"{info.queries} queries")
    from rankcli.formats.parquet import feature_dtype

    extra = {**(extra or {}), "feature_dtype": precision_name(feature_dtype(train_path))}  # as rankcli train records
    return save_distributed_model(result, config, info, output, train_path=train_path, valid_path=valid_path,
                                  feature_names=result.booster.feature_name(), overwrite=overwrite,
                                  normalization=normalization, extra=extra)


def save_distributed_model(result: Any, config: Any, info: DistributedInfo, model_dir: Path | str, *,
                           train_path: Path | str, valid_path: Path | str | None = None,
                           feature_names: list[str], overwrite: bool = False, normalization: Any = None,
                           extra: dict | None = None) -> dict:
    """Write the same model directory as ``rankcli train`` (``model.txt``, ``rankcli.json`` with the model's
    SHA-256), plus a ``dask`` key.

    ``result`` and ``config``: the :class:`rankcli.train.TrainResult` and its configuration; ``info``: where it was
    trained; ``train_path``/``valid_path``: the data files (their SHA-256 is recorded); ``feature_names``: the
    model's features; ``normalization``: the training features' transform (``None``: raw); ``extra``: more keys for
    ``rankcli.json``. Returns the ``rankcli.json`` content."""
    extra = {**(extra or {}), FOOTER_KEY: None if normalization is None else normalization.as_dict(),
             "dask": info.as_dict()}
    return save_model(result, config, model_dir, train_path=train_path, valid_path=valid_path,
                      feature_names=feature_names, overwrite=overwrite, extra=extra)
