"""``rankcli click-model fit``: read a click log, fit a click model, write its directory."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankcli import __version__
from rankcli.click_model.logs import code_log
from rankcli.click_model.stored import parameter_tables
from rankcli.core.click_models import ITEM, RANK, SINGLE, FitResult, Layout, Prior, fit, get_model
from rankcli.core.click_models.identify import rank_components
from rankcli.errors import InputError, UsageError


@dataclass
class FitOptions:
    """How to fit: the model, what its items are, and the estimator's settings (PyClick's by default)."""

    model: str
    by: str = "document"
    iterations: int = 50
    tolerance: float = 0.0
    prior: Prior = field(default_factory=Prior)
    e_step: str = "exact"

    def check(self) -> None:
        """Refuse (exit 2) options out of range, before the log is read."""
        get_model(self.model)
        if self.iterations < 1:
            raise UsageError(f"--iterations: must be at least 1, got {self.iterations}")
        if not (self.tolerance >= 0 and np.isfinite(self.tolerance)):
            raise UsageError(f"--tolerance: must be a finite number >= 0, got {self.tolerance:g}")

    def as_dict(self) -> dict:
        """The options as model.json records them."""
        return {"iterations": self.iterations, "tolerance": self.tolerance,
                "prior": [self.prior.numerator, self.prior.denominator], "cap": self.prior.cap,
                "e_step": self.e_step}


@dataclass
class FitReport:
    """A fit: what was fitted on what, the parameters and how the estimate went."""

    options: FitOptions
    log: dict
    result: FitResult
    seconds: float
    output: str
    globals: dict[str, float]
    ranks: dict[str, list[float]]
    items: dict[str, dict]
    ranks_connected: bool | None

    @property
    def model(self):
        """The fitted model."""
        return get_model(self.options.model)

    def info(self) -> dict:
        """model.json (without its ``format`` and ``files``)."""
        m = self.model
        return {"model": m.name, "title": m.title, "estimator": "em" if m.em else "mle", "by": self.options.by,
                "options": self.options.as_dict(), "log": self.log,
                "fit": {"iterations": self.result.iterations, "converged": self.result.converged,
                        "log_likelihood": [float(v) for v in self.result.log_likelihood],
                        "seconds": round(self.seconds, 3)},
                "ranks_connected": self.ranks_connected,
                "families": {f.name: {"kind": f.kind, "description": f.description} for f in m.families},
                "written_by": f"rankcli {__version__}"}

    def as_dict(self) -> dict:
        """What ``click-model fit --json`` prints."""
        info = self.info()
        return {"output": self.output, **{k: info[k] for k in ("model", "title", "estimator", "by", "options", "log",
                                                                 "fit", "ranks_connected")},
                "global": self.globals, "ranks": self.ranks, "items": self.items}


def _summaries(model, coded, result: FitResult) -> tuple[dict, dict, dict]:
    """The single values, the per-rank values and a summary of each per-item family, for the report."""
    R = coded.sessions.max_rank
    globals_ = {f.name: float(result.values[f.name][0]) for f in model.families if f.kind == SINGLE}
    ranks = {f.name: [float(v) for v in result.values[f.name][:R]] for f in model.families if f.kind == RANK}
    items = {}
    shown = coded.impressions()
    for f in model.families:
        if f.kind == ITEM:
            v = result.values[f.name]
            items[f.name] = {"items": int(v.shape[0]), "mean": float(np.average(v, weights=shown)) if v.size else
                             float("nan"), "min": float(v.min()) if v.size else float("nan"),
                             "max": float(v.max()) if v.size else float("nan")}
    return globals_, ranks, items


#: The longest session UBM is fitted on: its examination has a parameter per (rank, previous click) pair.
UBM_MAX_RANK = 1000


def check_ranks(model, max_rank: int, what: str) -> None:
    """Refuse (exit 3) a log whose sessions are too long for ``model``'s per-rank parameters."""
    if model.name == "ubm" and max_rank > UBM_MAX_RANK:
        raise InputError(f"{what}: a session of {max_rank} results; UBM's examination has one parameter per (rank, "
                         f"rank of the last click above), {max_rank ** 2:,} here; it is fitted on sessions of at most "
                         f"{UBM_MAX_RANK} results (cut the log's lists, or fit pbm)")


def fit_log(log_path: Path | str, output: Path | str, options: FitOptions, *, fmt: str = "auto",
            unknown_clicks: str = "error", overwrite: bool = False,
            progress: Callable[[int, int, float], None] | None = None, runner_factory=None) -> FitReport:
    """Fit ``options.model`` to the click log at ``log_path`` and write the model directory ``output``.

    ``runner_factory(model, sessions, layout, e_step)``, when given, returns what computes the sums over the
    sessions (a Dask cluster's runner; default: here).
    """
    from rankcli.formats.click_logs import read_session_log
    from rankcli.formats.click_model_dir import write_click_model
    from rankcli.runtime.cpus import available_cpus

    options.check()
    threads = available_cpus()
    model = get_model(options.model)
    coded = code_log(read_session_log(log_path, fmt, unknown_clicks=unknown_clicks), options.by, release=True)
    check_ranks(model, coded.sessions.max_rank, str(log_path))
    start = time.perf_counter()
    runner = None
    if runner_factory is not None:
        s = coded.sessions
        runner = runner_factory(model, s, Layout(s.n_items, s.max_rank), options.e_step)
    try:
        result = fit(model, coded.sessions, iterations=options.iterations, tolerance=options.tolerance,
                     prior=options.prior, e_step=options.e_step, progress=progress, runner=runner, threads=threads)
    finally:
        if runner is not None:
            runner.close()
    seconds = time.perf_counter() - start
    connected = None
    if any(f.kind == RANK for f in model.families) and any(f.kind == ITEM for f in model.families):
        connected = bool(np.unique(rank_components(coded.sessions)).shape[0] == 1)
    globals_, ranks, items = _summaries(model, coded, result)
    report = FitReport(options, coded.summary(), result, seconds, str(output), globals_, ranks, items, connected)
    write_click_model(output, report.info(), parameter_tables(model, coded, result), overwrite=overwrite)
    return report
