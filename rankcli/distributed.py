"""Beyond one machine: ``--dask`` for ``train``, ``experiment`` and ``convert`` on a Dask cluster.

rankcli does not schedule work itself; it hands it to Dask (``dask[distributed]``) and, for data-parallel training,
to LightGBM's own Dask interface (:class:`lightgbm.dask.DaskLGBMRanker`). Everything here is an optional extra
(``pip install "rankcli[dask]"``); importing this module does not import Dask, only calling into it does.

Three kinds of work go to the cluster:

* **Data-parallel training** of LightGBM's native ranking objectives (``lambdamart``, ``xendcg-native``,
  ``pointwise``). The training set is a Parquet dataset whose row groups end on query boundaries (``rankcli convert``
  writes them so). Each Dask partition is one row group or a run of whole row groups, so every query sits inside one
  partition and LightGBM receives the group sizes of each partition with the partition's rows. A file in which a query
  spans two row groups is refused (:func:`rankcli.formats.parquet.check_query_aligned`). Workers read their own
  partitions from the path, so the path must be visible to every worker (a shared filesystem) as well as to this
  process.
* **Experiment units** (one trial of one setting): each unit trains single-machine inside a Dask task; results are
  written by the experiment module as units complete, so an interrupted run (or a dead worker) loses at most the
  units that were running.
* **Conversion of many input files**: one task per input file, one output per input.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rankcli.cpus import available_cpus
from rankcli.errors import OutputError, SchemaError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    import distributed

#: The losses LightGBM implements natively in C++; only these train data-parallel on a cluster.
NATIVE_LOSSES = ("lambdamart", "xendcg-native", "pointwise")
#: How long ``--dask tcp://...`` waits for the scheduler before giving up (seconds).
CONNECT_TIMEOUT = 10.0
INSTALL_HINT = 'install the optional extra: pip install "rankcli[dask]"'

_ADDRESS = re.compile(r"^(?:(?P<scheme>[a-z][a-z0-9+]*)://)?(?P<host>\[[0-9a-fA-F:]+\]|[^:/\s]+)(?::(?P<port>\d+))?$")


# --------------------------------------------------------------------------------------------------------------------
# The cluster
# --------------------------------------------------------------------------------------------------------------------

def require_dask(training: bool = False) -> None:
    """Raise a :class:`UsageError` naming the extra to install when Dask, distributed or pandas is missing (and, for
    ``training``, scikit-learn, on which ``lightgbm.dask`` builds)."""
    import importlib.util

    # find_spec locates a package without importing it (scikit-learn alone takes ~1.7 s to import here).
    missing = [m for m in ("dask", "distributed", "pandas") + (("sklearn",) if training else ())
               if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(f"--dask needs {', '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not "
                         f"installed; {INSTALL_HINT}")


@dataclass(frozen=True)
class DaskTarget:
    """A parsed ``--dask`` value: ``local:N`` (a LocalCluster of N worker processes) or a scheduler address."""

    spec: str
    workers: int | None = None      # local:N
    address: str | None = None      # tcp://host:port

    @property
    def is_local(self) -> bool:
        return self.workers is not None


def parse_dask_target(spec: str) -> DaskTarget:
    """Parse ``--dask``: ``local`` / ``local:N`` or ``[scheme://]host[:port]`` (default scheme tcp, port 8786)."""
    text = spec.strip()
    if text == "local" or text.startswith("local:"):
        count = text[len("local:"):] if text != "local" else str(available_cpus())
        if not count.isdigit() or int(count) < 1:
            raise UsageError(f"--dask local:N needs a positive number of workers, got {spec!r}")
        return DaskTarget(spec=text, workers=int(count))
    if text.startswith("inproc://"):  # a scheduler in this process (tests, notebooks)
        return DaskTarget(spec=text, address=text)
    m = _ADDRESS.match(text)
    if not m:
        raise UsageError(f"--dask expects local:N or a scheduler address such as tcp://host:8786, got {spec!r}")
    scheme = m.group("scheme") or "tcp"
    if scheme not in ("tcp", "tls", "ucx", "ws", "wss"):
        raise UsageError(f"--dask: unknown protocol {scheme!r} in {spec!r}; use tcp://host:port or local:N")
    port = m.group("port") or "8786"
    return DaskTarget(spec=text, address=f"{scheme}://{m.group('host')}:{port}")


def _quiet_stdout() -> None:
    """Run on local worker processes, which share our stdout: it is reserved for results (``--json``), and LightGBM's
    network code prints ``[LightGBM] [Info]`` lines whatever its verbosity. Errors still reach us as exceptions."""
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def _quiet_local_workers(client: distributed.Client) -> None:
    """Silence the stdout of local workers now and after a restart (a worker plugin runs on every (re)started
    worker)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class QuietStdout(WorkerPlugin):
        name = "rankcli-quiet-stdout"

        def setup(self, worker: Any) -> None:
            _quiet_stdout()

    if hasattr(client, "register_plugin"):
        client.register_plugin(QuietStdout())
    else:  # distributed < 2023.9
        client.register_worker_plugin(QuietStdout())


@contextmanager
def connect(spec: str | DaskTarget, *, timeout: float | None = None, threads_per_worker: int | None = None,
            memory_limit: str | float | None = "auto") -> Iterator[distributed.Client]:
    """A Dask client for ``--dask``, closed (with its LocalCluster, if any) on exit.

    ``local:N`` starts a :class:`distributed.LocalCluster` of N worker processes sharing this machine's cores
    (``threads_per_worker`` defaults to cores // N, at least 1). An address connects to a running scheduler, waiting at
    most ``timeout`` seconds (default: ``$RANKCLI_DASK_TIMEOUT``, else 10); an unreachable scheduler is an
    :class:`OutputError` (exit 4) naming the address.
    """
    require_dask()
    if timeout is None:
        try:
            timeout = float(os.environ.get("RANKCLI_DASK_TIMEOUT", CONNECT_TIMEOUT))
        except ValueError:
            raise UsageError(f"RANKCLI_DASK_TIMEOUT must be a number of seconds, got "
                             f"{os.environ['RANKCLI_DASK_TIMEOUT']!r}") from None
    target = spec if isinstance(spec, DaskTarget) else parse_dask_target(spec)
    import logging

    from distributed import Client, LocalCluster

    if target.is_local:
        threads = threads_per_worker or max(1, available_cpus() // target.workers)
        cluster = LocalCluster(n_workers=target.workers, threads_per_worker=threads, processes=True,
                               memory_limit=memory_limit, dashboard_address=None, silence_logs=logging.ERROR)
        try:
            client = Client(cluster, timeout=f"{max(timeout, 30):g}s")
            try:
                _quiet_local_workers(client)
                yield client
            finally:
                client.close()
        finally:
            cluster.close()
        return
    try:
        client = Client(target.address, timeout=f"{timeout:g}s")
    except (OSError, TimeoutError) as exc:
        raise OutputError(f"cannot reach the Dask scheduler at {target.address} ({exc}); start one with "
                          f"`dask scheduler` and `dask worker {target.address}`, or use --dask local:N") from None
    try:
        yield client
    finally:
        client.close()


def n_workers(client: distributed.Client) -> int:
    """The number of workers currently connected to the scheduler."""
    return len(client.nthreads())


def require_workers(client: distributed.Client, timeout: float | None = None) -> int:
    """The number of workers, after waiting up to ``timeout`` seconds for a first one (a scheduler without workers
    would otherwise hold every task forever): :class:`OutputError` if none comes."""
    if n_workers(client) == 0:
        if timeout is None:
            try:
                timeout = float(os.environ.get("RANKCLI_DASK_TIMEOUT", CONNECT_TIMEOUT))
            except ValueError:
                timeout = CONNECT_TIMEOUT
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (TimeoutError, OSError):
            raise OutputError(f"the Dask scheduler at {client.scheduler.address} has no workers (waited "
                              f"{timeout:g} s); start some with `dask worker {client.scheduler.address}`") from None
    return n_workers(client)


# --------------------------------------------------------------------------------------------------------------------
# Query-aligned partitions of a Parquet dataset
# --------------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Partition:
    """Rows ``start:stop`` of the concatenation of whole row groups ``row_groups`` of ``path``; whole queries only."""

    path: str
    row_groups: tuple[int, ...]
    start: int
    stop: int

    @property
    def n_rows(self) -> int:
        return self.stop - self.start


@dataclass
class PartitionPlan:
    """How a dataset is split for a cluster: the partitions, and each partition's query sizes (LightGBM's groups)."""

    path: Path
    feature_names: list[str]
    partitions: list[Partition]
    group_sizes: list[np.ndarray]
    n_rows: int
    n_queries: int
    metadata: dict[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.partitions)


def plan_partitions(path: Path | str, *, rows_per_partition: int | None = None,
                    min_partitions: int = 1) -> PartitionPlan:
    """Split a query-aligned Parquet dataset into partitions that never split a query.

    Whole row groups are joined until a partition has at least ``rows_per_partition`` rows (default: one row group per
    partition). When that gives fewer than ``min_partitions`` partitions (a small file of one row group on a cluster
    of several workers), the largest partitions are cut further, at query boundaries only, into near-equal row counts.
    Refuses (:class:`SchemaError`, exit 3) a file in which a query spans two row groups, or whose queries are not
    contiguous.
    """
    from rankcli.core.groups import NonContiguousQueryError, offsets_from_qids
    from rankcli.formats import parquet

    path = Path(path)
    names = parquet.column_names(path)
    parquet.require_columns(path, names, ["qid", "label"])
    parquet.check_query_aligned(path)
    rg_rows = parquet.row_group_rows(path)
    qids = parquet.read_table(path, ["qid"]).column("qid").to_numpy()
    if not np.issubdtype(qids.dtype, np.integer):
        raise SchemaError(f"{path}: column qid must be integer, got {qids.dtype}")
    try:
        offsets = offsets_from_qids(qids)
    except NonContiguousQueryError as exc:
        raise SchemaError(f"{path}: {exc}") from None
    n = int(qids.shape[0])
    if n == 0:
        raise SchemaError(f"{path}: the dataset has no rows")

    # Join whole row groups (row groups with no rows are dropped).
    rg_starts = np.concatenate(([0], np.cumsum(rg_rows))).astype(np.int64)
    target = max(1, int(rows_per_partition or 1))
    spans: list[tuple[tuple[int, ...], int, int]] = []   # (row groups, global start, global stop)
    current: list[int] = []
    for i, rows in enumerate(rg_rows):
        if rows == 0:
            continue
        current.append(i)
        if rg_starts[current[-1] + 1] - rg_starts[current[0]] >= target:
            spans.append((tuple(current), int(rg_starts[current[0]]), int(rg_starts[current[-1] + 1])))
            current = []
    if current:
        spans.append((tuple(current), int(rg_starts[current[0]]), int(rg_starts[current[-1] + 1])))

    # Cut further at query boundaries when there are fewer partitions than wanted.
    pieces: list[tuple[tuple[int, ...], int, int, int, int]] = [(rgs, lo, hi, lo, hi) for rgs, lo, hi in spans]
    while len(pieces) < min_partitions:
        k = max(range(len(pieces)), key=lambda j: pieces[j][4] - pieces[j][3])
        rgs, base_lo, base_hi, lo, hi = pieces[k]
        middle = (lo + hi) // 2
        # The query boundary nearest the middle, strictly inside (lo, hi).
        inside = offsets[(offsets > lo) & (offsets < hi)]
        if inside.size == 0:
            break  # the largest piece is a single query: nothing more to cut
        cut = int(inside[np.argmin(np.abs(inside - middle))])
        pieces[k: k + 1] = [(rgs, base_lo, base_hi, lo, cut), (rgs, base_lo, base_hi, cut, hi)]

    partitions, group_sizes = [], []
    for rgs, base_lo, _base_hi, lo, hi in pieces:
        partitions.append(Partition(str(path), rgs, lo - base_lo, hi - base_lo))
        q = offsets[(offsets >= lo) & (offsets <= hi)]
        group_sizes.append(np.diff(q).astype(np.int64))
    return PartitionPlan(path=path, feature_names=parquet.feature_columns(names), partitions=partitions,
                         group_sizes=group_sizes, n_rows=n, n_queries=int(offsets.shape[0] - 1),
                         metadata=parquet.read_metadata(path))


def read_partition(part: Partition, feature_names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Read one partition (on a worker): the float32 feature matrix and the float64 labels."""
    from rankcli.formats import parquet

    table = parquet.read_row_groups(part.path, part.row_groups, ["label", *feature_names])
    table = table.slice(part.start, part.n_rows)
    features = parquet.features_matrix(table, feature_names)
    labels = table.column("label").to_numpy().astype(np.float64)
    return np.ascontiguousarray(features), labels


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
    import operator

    import dask.array as da

    workers = sorted(client.nthreads())
    placement = assign_partitions(plan, workers)
    nf = len(plan.feature_names)
    xs, ys, gs = [], [], []
    for part, sizes, worker in zip(plan.partitions, plan.group_sizes, placement):
        both = client.submit(read_partition, part, plan.feature_names, workers=[worker], pure=False)
        x = client.submit(operator.itemgetter(0), both, workers=[worker], pure=False)
        y = client.submit(operator.itemgetter(1), both, workers=[worker], pure=False)
        xs.append(da.from_delayed(x, shape=(part.n_rows, nf), dtype=np.float32))
        ys.append(da.from_delayed(y, shape=(part.n_rows,), dtype=np.float64))
        gs.append(da.from_array(sizes, chunks=(sizes.shape[0],)))
    return da.concatenate(xs), da.concatenate(ys), da.concatenate(gs)


# --------------------------------------------------------------------------------------------------------------------
# Data-parallel training
# --------------------------------------------------------------------------------------------------------------------

def check_dask_loss(loss: str) -> str:
    """The loss name if it can train data-parallel on a cluster, else a :class:`UsageError` saying why not."""
    from rankcli.train import check_loss

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
        return {"scheduler": self.scheduler, "workers": self.workers, "partitions": self.partitions,
                "rows": self.rows, "queries": self.queries}


def _early_stopping_point(curve: list[float], patience: int) -> tuple[int, int]:
    """(trees single-machine training would have trained, best number of trees) under ``train``'s stopping rule."""
    best, best_iter = -np.inf, -1
    for t, value in enumerate(curve):
        if not np.isnan(value) and value > best:
            best, best_iter = value, t
        if patience > 0 and best_iter >= 0 and t - best_iter >= patience:
            return t + 1, best_iter + 1
    if patience > 0 and best_iter >= 0:
        return len(curve), best_iter + 1
    return len(curve), len(curve)


def _validation_curve(booster: Any, valid: Any, metric: str, convention: str, n_trees: int,
                      on_iteration: Callable[[int, float | None, float | None], None] | None) -> tuple[str, list[float]]:
    """The validation metric after each tree, from one tree's contribution at a time (same cost as one prediction)."""
    from rankcli.core import metrics

    spec = metrics.parse_metric(metric)
    conv = metrics.Convention.preset(convention)
    labels = np.asarray(valid.labels, dtype=np.float64)
    scores = np.zeros(valid.n_rows, dtype=np.float64)
    curve: list[float] = []
    best = None
    for t in range(n_trees):
        scores += booster.predict(valid.features, start_iteration=t, num_iteration=1)
        value = float(metrics.evaluate([spec], labels, scores, valid.offsets, conv).means[str(spec)])
        curve.append(value)
        if not np.isnan(value) and (best is None or value > best):
            best = value
        if on_iteration is not None:
            on_iteration(t + 1, value, best)
    return str(spec), curve


def train_distributed(client: distributed.Client, train_path: Path | str, valid: Any, config: Any, *,
                      scheduler: str = "", rows_per_partition: int | None = None,
                      on_iteration: Callable[[int, float | None, float | None], None] | None = None
                      ) -> tuple[Any, DistributedInfo]:
    """Train ``config`` (a :class:`rankcli.train.TrainConfig`) data-parallel on the cluster behind ``client``.

    ``train_path`` is a query-aligned Parquet dataset that every worker can read; ``valid`` is an in-memory
    :class:`rankcli.dataset.Dataset` (or ``None``) evaluated here, on the client. Returns a
    :class:`rankcli.train.TrainResult` (save it with :func:`save_distributed_model` or ``rankcli.train.save_model``)
    and where it ran.

    Model selection follows ``rankcli train``'s rule, applied after training: LightGBM's Dask interface trains all
    ``config.trees`` trees in one call, then the validation curve is computed tree by tree with the metrics core, cut
    where single-machine early stopping would have stopped, and the model keeps the trees up to the best iteration.
    """
    import contextlib
    import dataclasses
    import io
    import time
    import warnings

    import dask.array as da
    import lightgbm
    from lightgbm.dask import DaskLGBMRanker

    from rankcli.core.labels import require_integer_grades
    from rankcli.errors import InputError
    from rankcli.train import (
        INTEGER_LABEL_LOSSES,
        LOSSES,
        REAL_LABEL_HINT,
        TrainResult,
        check_grade_range,
        feature_difference,
        resolve_params,
    )

    check_dask_loss(config.loss)
    if config.trees < 1:
        raise UsageError(f"--trees must be at least 1, got {config.trees}")
    if config.early_stopping < 0:
        raise UsageError(f"--early-stopping must be 0 (off) or a positive number of trees, got {config.early_stopping}")
    workers = require_workers(client)
    plan = plan_partitions(train_path, rows_per_partition=rows_per_partition, min_partitions=workers)
    where = str(Path(train_path).resolve())
    if not _visible_everywhere(client, [where])[where]:
        raise InputError(f"{train_path}: not visible to every Dask worker (as {where}); --dask training needs the "
                         "training file on a filesystem all workers share")
    plan.partitions = [dataclasses.replace(p, path=where) for p in plan.partitions]
    if not plan.feature_names:
        raise SchemaError(f"{train_path}: no feature columns (f1, f2, ...)")
    if valid is not None:
        diff = feature_difference(plan.feature_names, valid.feature_names)
        if diff:
            raise SchemaError(f"validation feature columns differ from the training data's: {diff}")

    X, y, group = load_partitions(client, plan)
    values = np.asarray(da.unique(y).compute(), dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise InputError(f"{train_path}: some label is not a finite number, got {values[~np.isfinite(values)][0]}")
    label_values = None
    if config.label_grades:
        label_values = [float(v) for v in values]
        y = y.map_blocks(lambda b, v=values: np.searchsorted(v, b).astype(np.float64), dtype=np.float64)
        values = np.arange(values.shape[0], dtype=np.float64)
    if config.loss in INTEGER_LABEL_LOSSES:
        consumer = f"--loss {config.loss} (LightGBM {LOSSES[config.loss]})"
        require_integer_grades(values, consumer, REAL_LABEL_HINT)
        check_grade_range(config.loss, values, config.label_grades)
    max_grade = int(values.max()) if config.loss == "lambdamart" else None

    params = resolve_params(config, max_grade)
    run_params = {k: v for k, v in params.items() if k not in ("num_threads", "n_jobs")}
    run_params.setdefault("tree_learner", "data")
    start = time.perf_counter()
    try:
        # lightgbm.dask prints its progress with print() and warns that it sets n_jobs itself: keep stdout for results.
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Parameter n_jobs will be ignored")
            model = DaskLGBMRanker(client=client, n_estimators=int(config.trees), **run_params)
            model.fit(X, y, group=group, feature_name=list(plan.feature_names))
    except lightgbm.basic.LightGBMError as exc:
        raise InputError(f"LightGBM refused the training data or parameters: {exc}") from None
    seconds = time.perf_counter() - start
    booster = model.booster_
    trees_trained = booster.current_iteration()

    curve: list[float] = []
    metric_name = None
    best_iteration = trees_trained
    if valid is not None:
        metric_name, curve = _validation_curve(booster, valid, config.select_by, config.convention, trees_trained,
                                               on_iteration)
        if config.early_stopping > 0:
            _stop, best_iteration = _early_stopping_point(curve, config.early_stopping)
    elif on_iteration is not None:
        for t in range(trees_trained):
            on_iteration(t + 1, None, None)
    if best_iteration < trees_trained:
        booster = lightgbm.Booster(model_str=booster.model_to_string(num_iteration=best_iteration))
    booster.best_iteration = best_iteration
    params = {k: v for k, v in params.items() if k not in ("num_threads", "n_jobs")}  # each worker uses its own
    params["tree_learner"] = run_params["tree_learner"]
    result = TrainResult(booster=booster, best_iteration=best_iteration, curve=curve, seconds=seconds, params=params,
                         trees_trained=trees_trained, metric=metric_name, label_values=label_values)
    info = DistributedInfo(scheduler=scheduler or str(client.scheduler.address), workers=workers,
                           partitions=len(plan), rows=plan.n_rows, queries=plan.n_queries)
    return result, info


def train_command(dask: str, train_path: Path, valid_path: Path | None, config: Any, output: Path, *,
                  overwrite: bool = False, log: Callable[[str], None] | None = None,
                  on_iteration: Callable[[int, float | None, float | None], None] | None = None) -> dict:
    """``rankcli train ... --dask SPEC``: every check first (cheap ones before a cluster starts), then
    :func:`train_distributed` and the model directory. Returns the ``rankcli.json`` content."""
    from rankcli.formats.atomic import check_target
    from rankcli.formats.parquet import check_query_aligned, read_dataset

    target = parse_dask_target(dask)
    check_dask_loss(config.loss)
    require_dask(training=True)
    check_target(output, overwrite)
    check_query_aligned(train_path)  # refuse a query spanning row groups before starting anything
    valid = read_dataset(valid_path) if valid_path is not None else None
    if valid is not None:
        from rankcli.train import check_valid_rows

        check_valid_rows(valid, str(valid_path))
    if config.threads:
        (log or (lambda m: None))("--threads is ignored with --dask: every worker trains with its own threads")
    with connect(target) as client:
        if log is not None:
            log(f"training {config.loss} on the Dask cluster {target.spec} ({n_workers(client)} workers): "
                f"{train_path}" + (f"; validating on {valid_path} ({valid.n_queries} queries) here"
                                   if valid is not None else ""))
        result, info = train_distributed(client, train_path, valid, config, scheduler=target.spec,
                                         on_iteration=on_iteration)
    if log is not None:
        log(f"trained on {info.workers} workers, {info.partitions} partitions: {info.rows} rows, "
            f"{info.queries} queries")
    return save_distributed_model(result, config, info, output, train_path=train_path, valid_path=valid_path,
                                  feature_names=result.booster.feature_name(), overwrite=overwrite)


def save_distributed_model(result: Any, config: Any, info: DistributedInfo, model_dir: Path | str, *,
                           train_path: Path | str, valid_path: Path | str | None = None,
                           feature_names: list[str], overwrite: bool = False) -> dict:
    """Write the same model directory as ``rankcli train`` (``model.txt``, ``rankcli.json`` with the model's
    SHA-256), plus a ``dask`` key."""
    from rankcli.train import model_info, write_model_dir

    content = model_info(result, config, train_path=train_path, valid_path=valid_path, feature_names=feature_names)
    content["dask"] = info.as_dict()
    return write_model_dir(model_dir, result.booster.model_to_string(num_iteration=result.best_iteration), content,
                           overwrite=overwrite)


@contextmanager
def _client_for(target: str | DaskTarget | distributed.Client) -> Iterator[distributed.Client]:
    """Use a client the caller already holds, or open one for a ``--dask`` value (closed on exit)."""
    if isinstance(target, (str, DaskTarget)):
        with connect(target) as client:
            yield client
    else:
        yield target


def _visible_everywhere(client: distributed.Client, paths: list[str], kind: str = "exists") -> dict[str, bool]:
    """For each path, whether every worker sees it (``kind``: ``exists`` or ``isdir``)."""
    check = os.path.isdir if kind == "isdir" else os.path.exists
    seen = client.run(lambda ps: [check(p) for p in ps], paths)
    return {p: all(flags[i] for flags in seen.values()) for i, p in enumerate(paths)}


# --------------------------------------------------------------------------------------------------------------------
# Experiments: one task per unit (setting, trial, loss), each training single-machine
# --------------------------------------------------------------------------------------------------------------------

# On a worker: the experiment data, loaded once per worker process and reused by every unit it runs.
_WORKER_DATA: dict[tuple, tuple[Any, str]] = {}


def _unit_task(data_path: str, data: Any, fingerprint: str, config: Any, setting: Any, trial: int, loss: str) -> Any:
    from rankcli.errors import InputError
    from rankcli.experiment import load_data, run_unit

    if data is None:  # read from the shared filesystem, once per worker
        key = (data_path, bool(config.folds))
        if key not in _WORKER_DATA:
            _WORKER_DATA.clear()
            loaded = load_data(data_path, config.folds)  # folds: read when a unit needs them
            _WORKER_DATA[key] = (loaded, loaded.fingerprint())
        data, seen = _WORKER_DATA[key]
        if seen != fingerprint:
            import socket

            raise InputError(f"{data_path}: the data this worker ({socket.gethostname()}) reads differ from the data "
                             "the experiment was started with; every worker must see the same files")
    return run_unit(data, config, setting, trial, loss)


def run_experiment_units(target: str | DaskTarget | distributed.Client, data_path: str, config: Any,
                         pending: list[tuple[Any, int, str]], finished: Callable[[Any], None], *,
                         data: Any = None, window: int | None = None) -> None:
    """Run experiment units ``(setting, trial, loss)`` as Dask tasks; ``finished(UnitResult)`` as each completes.

    Each unit trains single-machine (:func:`rankcli.experiment.run_unit`, deterministic in its arguments), so results
    equal those of ``--jobs N`` runs. ``finished`` runs here, in the calling process, and is where the experiment
    module writes the unit to ``trials.parquet``: whatever finished is on disk, so if the client, the scheduler or
    workers die, a rerun resumes. A worker that dies mid-unit only loses that unit: Dask runs it again elsewhere.

    Workers read ``data_path`` themselves when every worker sees it (a shared filesystem), once per worker process
    (under the folds protocol, each fold when a unit needs it); otherwise ``data`` (the
    :class:`rankcli.experiment.ExperimentData` the caller loaded, with every fold read into memory) is sent to every
    worker. The units, their seeds and the per-query files are those of a ``--jobs`` run: both protocols run alike.
    """
    from distributed import as_completed

    with _client_for(target) as client:
        if not pending:
            return
        require_workers(client)
        if data is None:
            from rankcli.experiment import load_data

            data = load_data(data_path, config.folds)
        fingerprint = data.fingerprint()
        if _visible_everywhere(client, [str(Path(data_path).resolve())])[str(Path(data_path).resolve())]:
            data_path, shipped = str(Path(data_path).resolve()), None
        else:
            shipped = client.scatter(data.in_memory() if data.folds is not None else data, broadcast=True, hash=False)
        slots = window or max(2, 2 * sum(client.nthreads().values()))
        queue = list(pending)
        futures = as_completed()
        in_flight = []

        def submit_next() -> None:
            setting, trial, loss = queue.pop(0)
            fut = client.submit(_unit_task, data_path, shipped, fingerprint, config, setting, trial, loss,
                                pure=False, key=f"rankcli-unit-{setting.name}-{trial}-{loss}-{os.urandom(4).hex()}")
            in_flight.append(fut)
            futures.add(fut)

        try:
            # A bounded number of units in flight, so results arrive roughly in plan order and a cancelled run
            # leaves little half-done work behind.
            while queue and len(in_flight) < slots:
                submit_next()
            for fut in futures:
                in_flight.remove(fut)
                result = fut.result()  # re-raises the unit's exception (e.g. InputError) here
                finished(result)
                if queue:
                    submit_next()
        except BaseException:
            client.cancel(in_flight, force=True)
            raise


# --------------------------------------------------------------------------------------------------------------------
# Conversion: one task per input file, one output per input
# --------------------------------------------------------------------------------------------------------------------

def _convert_task(source: str, target: str, options: Any) -> Any:
    from rankcli.convert import convert

    return convert([source], target, options, overwrite=True)


def convert_on_cluster(target: str | DaskTarget | distributed.Client, inputs: list[str], output: Path | str,
                       options: Any = None, *, overwrite: bool = False,
                       on_file: Callable[[Any], None] | None = None) -> Any:
    """``rankcli convert --dask``: every input file converted by its own task into ``OUTPUT/<name>.parquet``.

    Inputs are files or directories of files (as ``rankcli convert`` takes them); standard input is not possible.
    All outputs get the same feature columns: the largest width of any input (or ``--num-features``); a file found
    narrower than the widest is converted again at that width (for dense data such as WEB30K every file has the same
    width, so nothing is converted twice). The output directory is built in a temporary directory beside it and
    renamed into place when every file succeeded, so the inputs and the output's parent directory must be on a
    filesystem every worker sees. Returns a :class:`rankcli.convert.ConvertResult`.
    """
    import dataclasses
    import time

    from rankcli.convert import ConvertOptions, ConvertResult, FileResult, directory_inputs, output_name
    from rankcli.errors import InputError
    from rankcli.formats import svmlight
    from rankcli.formats.atomic import atomic_directory, check_target

    options = options or ConvertOptions()
    start = time.perf_counter()
    output = Path(output)
    if not inputs:
        raise UsageError("no input given")
    if svmlight.STDIN in inputs:
        raise UsageError("--dask converts files that the workers can read; standard input (-) is not possible")
    if options.query_file is not None:
        raise UsageError("--query-file does not combine with --dask; put <input>.query sidecars next to the inputs")
    if options.num_features is not None and options.num_features < 1:
        raise UsageError(f"--num-features must be at least 1, got {options.num_features}")
    expanded: list[str] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            expanded.extend(str(q.resolve()) for q in directory_inputs(p))
        elif p.exists():
            expanded.append(str(p.resolve()))
        else:
            raise InputError(f"{item}: no such file")
    if output.suffix.lower() == ".parquet":
        raise UsageError(f"--dask writes one output per input into a directory, got {output}; give a directory "
                         "as --output (or drop --dask to concatenate inputs into one file)")
    names = [output_name(Path(src)) for src in expanded]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise UsageError(f"two inputs would both be written to {sorted(dup)[0]}.parquet; convert them separately")
    check_target(output, overwrite)

    with _client_for(target) as client:
        require_workers(client)
        unseen = [p for p, ok in _visible_everywhere(client, expanded).items() if not ok]
        if unseen:
            raise InputError(f"{unseen[0]}: not visible to every Dask worker; --dask needs the inputs on a "
                             "filesystem all workers share")
        with atomic_directory(output, overwrite) as tmpdir:
            tmp = str(tmpdir.resolve())
            if not _visible_everywhere(client, [tmp], "isdir")[tmp]:
                raise OutputError(f"{output}: not visible to every Dask worker; --dask needs the output directory "
                                  "on a filesystem all workers share")

            def run(srcs: list[str], opts: Any) -> dict[str, Any]:
                futs = {client.submit(_convert_task, s, str(Path(tmp) / f"{n}.parquet"), opts, pure=False): s
                        for s, n in zip(srcs, (names[expanded.index(s)] for s in srcs))}
                from distributed import as_completed

                done = {}
                try:
                    for fut in as_completed(futs):
                        done[futs[fut]] = fut.result()
                        if on_file is not None:
                            on_file(done[futs[fut]])
                except BaseException:
                    client.cancel(list(futs), force=True)
                    raise
                return done

            results = run(expanded, options)
            width = max(r.features for r in results.values())
            narrow = [s for s, r in results.items() if r.features < width]
            if narrow:
                results.update(run(narrow, dataclasses.replace(options, num_features=width)))
            files = []
            for src, name in zip(expanded, names):
                f = results[src].files[0]
                files.append(FileResult(f.inputs, str(output / f"{name}.parquet"), f.summary))
    return ConvertResult(str(output), True, files, width, time.perf_counter() - start)
