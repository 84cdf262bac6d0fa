"""Beyond one machine: ``--dask`` for ``train``, ``experiment`` and ``convert`` on a Dask cluster.

rankcli does not schedule work itself; it hands it to Dask (``dask[distributed]``) and, for data-parallel training,
to LightGBM's own Dask interface (:class:`lightgbm.dask.DaskLGBMRanker`). Everything here is an optional extra
(``pip install "rankcli[dask]"``); importing this package does not import Dask, only calling into it does.

Three kinds of work go to the cluster:

* **Data-parallel training** of LightGBM's native ranking objectives (``lambdamart``, ``xendcg-native``,
  ``pointwise``), :mod:`rankcli.distributed.training`. The training set is a Parquet dataset whose row groups end on
  query boundaries (``rankcli convert`` writes them so). Each Dask partition is one row group or a run of whole row
  groups (:mod:`rankcli.formats.partitions`), so every query sits inside one partition and LightGBM receives the
  group sizes of each partition with the partition's rows. A file in which a query spans two row groups is refused
  (:func:`rankcli.formats.parquet.check_query_aligned`). Workers read their own partitions from the path, so the path
  must be visible to every worker (a shared filesystem) as well as to this process.
* **Experiment units** (one trial of one setting), :func:`rankcli.distributed.runners.run_units`: each unit trains
  single-machine inside a Dask task; results are written by the experiment module as units complete, so an
  interrupted run (or a dead worker) loses at most the units that were running.
* **Conversion of many input files**, :func:`rankcli.distributed.runners.convert_on_cluster`: one task per input
  file, one output per input.

The connection to the cluster (``--dask local:N`` or a scheduler address) is :mod:`rankcli.distributed.cluster`.
"""

from rankcli.distributed.cluster import (
    CONNECT_TIMEOUT,
    INSTALL_HINT,
    DaskTarget,
    connect,
    n_workers,
    parse_dask_target,
    require_dask,
    require_workers,
)
from rankcli.distributed.runners import convert_on_cluster, run_units
from rankcli.distributed.training import (
    NATIVE_LOSSES,
    DistributedInfo,
    check_dask_loss,
    save_distributed_model,
    train_command,
    train_distributed,
)

__all__ = ["CONNECT_TIMEOUT", "INSTALL_HINT", "NATIVE_LOSSES", "DaskTarget", "DistributedInfo", "check_dask_loss",
           "connect", "convert_on_cluster", "n_workers", "parse_dask_target", "require_dask", "require_workers",
           "run_units", "save_distributed_model", "train_command", "train_distributed"]
