"""Independent tasks on a Dask cluster: experiment units (``experiment --dask``) and file conversions
(``convert --dask``).

Each task runs single-machine code on a worker, so its result equals a local run's. Results come back to the calling
process as tasks complete, where the caller stores them: an interrupted run (or a dead worker) loses at most the tasks
that were running, and a worker that dies mid-task only loses that task (Dask runs it again elsewhere).
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rankcli.distributed import cluster
from rankcli.distributed.cluster import DaskTarget
from rankcli.errors import InputError, OutputError, UsageError
from rankcli.formats import svmlight_text
from rankcli.formats.atomic import atomic_directory, check_target

if TYPE_CHECKING:  # pragma: no cover
    import distributed

# On a worker: the data of the units, loaded once per worker process and reused by every unit it runs.
_WORKER_DATA: dict[str, tuple[Any, str]] = {}


def _unit_task(load: Callable[[str], Any], run: Callable[..., Any], args: tuple, data_path: str, data: Any,
               fingerprint: str, unit: tuple) -> Any:
    if data is None:  # read from the shared filesystem, once per worker
        cached = _WORKER_DATA.get(data_path)
        if cached is None or cached[1] != fingerprint:
            _WORKER_DATA.clear()
            loaded = load(data_path)
            cached = _WORKER_DATA[data_path] = (loaded, loaded.fingerprint())
        data, seen = cached
        if seen != fingerprint:
            raise InputError(f"{data_path}: the data this worker ({socket.gethostname()}) reads differ from the data "
                             "the experiment was started with; every worker must see the same files")
    return run(data, *args, *unit)


def run_units(target: str | DaskTarget | distributed.Client, data_path: str, units: Sequence[tuple],
              finished: Callable[[Any], None], *, load: Callable[[str], Any], run: Callable[..., Any],
              args: tuple = (), data: Any = None, window: int | None = None) -> None:
    """Run ``run(data, *args, *unit)`` for every unit as a Dask task; ``finished(result)`` here as each completes.

    ``target``: a ``--dask`` value or a client. ``load(data_path)`` reads the data the units share; the data object
    has ``fingerprint()`` (a digest of its content) and ``in_memory()`` (a copy that holds everything it would read
    later, what is sent to workers). ``load``, ``run`` and ``args`` travel to the workers, so the functions are
    module-level ones (or :func:`functools.partial` of them). A unit's elements show in the task's key (by their
    ``name`` when they have one).

    Workers load ``data_path`` themselves when every worker sees it (a shared filesystem), once per worker process,
    and refuse to run when what they read differs from ``data`` (the data the caller loaded, else ``load(data_path)``
    here); otherwise ``data.in_memory()`` is sent to every worker. ``finished`` runs in the calling process, where the
    caller stores the result; a unit's exception is re-raised here and cancels the units in flight. At most
    ``window`` units are in flight (default: twice the cluster's threads, at least 2), so results arrive roughly in
    order and a cancelled run leaves little half-done work behind.
    """
    from distributed import as_completed

    with cluster.client_for(target) as client:
        if not units:
            return
        cluster.require_workers(client)
        if data is None:
            data = load(data_path)
        fingerprint = data.fingerprint()
        where = str(Path(data_path).resolve())
        if cluster.visible_everywhere(client, [where])[where]:
            data_path, shipped = where, None
        else:
            shipped = client.scatter(data.in_memory(), broadcast=True, hash=False)
        slots = window or max(2, 2 * sum(client.nthreads().values()))
        queue = list(units)
        futures = as_completed()
        in_flight = []

        def submit_next() -> None:
            unit = queue.pop(0)
            label = "-".join(str(getattr(part, "name", part)) for part in unit)
            fut = client.submit(_unit_task, load, run, args, data_path, shipped, fingerprint, unit, pure=False,
                                key=f"rankcli-unit-{label}-{os.urandom(4).hex()}")
            in_flight.append(fut)
            futures.add(fut)

        try:
            while queue and len(in_flight) < slots:
                submit_next()
            for fut in futures:
                in_flight.remove(fut)
                finished(fut.result())  # re-raises the unit's exception (e.g. InputError) here
                if queue:
                    submit_next()
        except BaseException:
            client.cancel(in_flight, force=True)
            raise


def _convert_task(source: str, target: str, options: Any) -> Any:
    from rankcli.convert import convert

    return convert([source], target, options, overwrite=True)


def _cluster_inputs(inputs: list[str], output: Path, options: Any) -> tuple[list[str], list[str]]:
    """The input files as absolute paths (directories expanded) and the output name of each, after the checks that
    need no cluster: ``rankcli convert``'s own, and what ``--dask`` cannot do."""
    from rankcli.convert import check_options, expand_inputs, output_names

    if inputs and svmlight_text.STDIN in inputs:
        raise UsageError("--dask converts files that the workers can read; standard input (-) is not possible")
    check_options(inputs, options)
    if options.query_file is not None:
        raise UsageError("--query-file does not combine with --dask; put <input>.query sidecars next to the inputs")
    if options.normalize is not None and options.per == "dataset":
        raise UsageError("--per dataset does not combine with --dask (each worker sees one file, not the training "
                         "file's statistics); convert without --dask, or normalise --per query")
    expanded = [str(Path(p).resolve()) for p in expand_inputs(inputs)[0]]
    if output.suffix.lower() == ".parquet":
        raise UsageError(f"--dask writes one output per input into a directory, got {output}; give a directory "
                         "as --output (or drop --dask to concatenate inputs into one file)")
    return expanded, output_names(expanded)


def _convert_each(client: distributed.Client, sources: list[str], targets: list[str], options: Any,
                  on_file: Callable[[Any], None] | None) -> dict[str, Any]:
    """Convert each source into its target, one task each; the :class:`rankcli.convert.ConvertResult` by source."""
    from distributed import as_completed

    futures = {client.submit(_convert_task, s, t, options, pure=False): s for s, t in zip(sources, targets)}
    done = {}
    try:
        for fut in as_completed(futures):
            done[futures[fut]] = fut.result()
            if on_file is not None:
                on_file(done[futures[fut]])
    except BaseException:
        client.cancel(list(futures), force=True)
        raise
    return done


def convert_on_cluster(target: str | DaskTarget | distributed.Client, inputs: list[str], output: Path | str,
                       options: Any = None, *, overwrite: bool = False,
                       on_file: Callable[[Any], None] | None = None) -> Any:
    """``rankcli convert --dask``: every input file converted by its own task into ``OUTPUT/<name>.parquet``.

    ``target``: a ``--dask`` value or a client; ``inputs``: files or directories of files (as ``rankcli convert``
    takes them; standard input is not possible); ``options``: :class:`rankcli.convert.ConvertOptions`;
    ``overwrite``: replace an output rankcli wrote; ``on_file(result)`` as each file is done. All outputs get the same
    feature columns: the largest width of any input (or ``--num-features``); a file found narrower than the widest is
    converted again at that width (for dense data such as WEB30K every file has the same width, so nothing is
    converted twice). The output directory is built in a temporary directory beside it and renamed into place when
    every file succeeded, so the inputs and the output's parent directory must be on a filesystem every worker sees.
    Returns a :class:`rankcli.convert.ConvertResult`.
    """
    from rankcli.convert import ConvertOptions, ConvertResult, FileResult

    options = options or ConvertOptions()
    start = time.perf_counter()
    output = Path(output)
    expanded, names = _cluster_inputs(inputs, output, options)
    check_target(output, overwrite)

    with cluster.client_for(target) as client:
        cluster.require_workers(client)
        unseen = [p for p, ok in cluster.visible_everywhere(client, expanded).items() if not ok]
        if unseen:
            raise InputError(f"{unseen[0]}: not visible to every Dask worker; --dask needs the inputs on a "
                             "filesystem all workers share")
        with atomic_directory(output, overwrite) as tmpdir:
            tmp = str(tmpdir.resolve())
            if not cluster.visible_everywhere(client, [tmp], "isdir")[tmp]:
                raise OutputError(f"{output}: not visible to every Dask worker; --dask needs the output directory "
                                  "on a filesystem all workers share")
            targets = {s: str(Path(tmp) / f"{n}.parquet") for s, n in zip(expanded, names)}
            results = _convert_each(client, expanded, [targets[s] for s in expanded], options, on_file)
            width = max(r.features for r in results.values())
            narrow = [s for s, r in results.items() if r.features < width]
            if narrow:
                results.update(_convert_each(client, narrow, [targets[s] for s in narrow],
                                             dataclasses.replace(options, num_features=width), on_file))
            files = []
            for src, name in zip(expanded, names):
                f = results[src].files[0]
                files.append(FileResult(f.inputs, str(output / f"{name}.parquet"), f.summary))
    return ConvertResult(str(output), True, files, width, time.perf_counter() - start)
