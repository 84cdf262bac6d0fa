"""A tune's results: the files written after every trial (a loss's trials and best parameters) and at the end of a
run, finished or interrupted (every loss's best parameters, the best-so-far curve and its plot), and the JSON summary
``rankcli tune --json`` prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rankcli.formats.tune_store import BEST_FILE, PLOT_FILE, params_document, write_curves, write_json, write_trials
from rankcli.tune.space import Space


@dataclass
class LossResult:
    """One loss's study as it stands after the run."""

    loss: str
    trials: list[dict]           # every trial: trial, state, value, invalid, trees, trees_trained, seconds, retry_of,
    #                              params (``invalid``: the value of a FAIL trial that had one, not finite)
    space: Space
    ran: int = 0                 # trials this process trained

    @property
    def finished(self) -> list[dict]:
        """The COMPLETE trials, in number order."""
        return [t for t in self.trials if t["state"] == "COMPLETE"]

    @property
    def best(self) -> dict | None:
        """The finished trial with the highest validation value (the lowest number among equals)."""
        done = self.finished
        return max(done, key=lambda t: (t["value"], -t["trial"])) if done else None

    @property
    def default(self) -> dict | None:
        """The finished trial with ``train``'s parameters (trial 0 or its rerun)."""
        return next((t for t in self.finished if t["defaults"]), None)

    def best_so_far(self) -> list[float]:
        """The best validation value after each finished trial."""
        out: list[float] = []
        for t in self.finished:
            out.append(t["value"] if not out else max(out[-1], t["value"]))
        return out


@dataclass
class TuneResult:
    """What :func:`run_tune` returns."""

    out_dir: Path
    config: Any  # the TuneConfig
    losses: dict[str, LossResult]
    seconds: float = 0.0
    files: list[Path] = field(default_factory=list)


def trial_record(t: Any) -> dict:
    """A frozen Optuna trial as a plain record."""
    outcome = t.user_attrs.get("outcome") or {}
    return {"trial": t.number, "state": t.state.name, "value": t.value, "invalid": outcome.get("invalid"),
            "trees": outcome.get("trees"),
            "trees_trained": outcome.get("trees_trained"), "seconds": outcome.get("seconds"),
            "retry_of": t.user_attrs.get("retry_of"), "defaults": bool(t.user_attrs.get("defaults")),
            "params": {**dict(t.params), **(outcome.get("fixed") or {})}}


def best_entry(r: LossResult, config: Any) -> dict | None:
    """The parameter-file entry of one loss: its best parameters, where they come from and what they scored."""
    best = r.best
    if best is None:
        return None
    return {"params": best["params"], "value": best["value"], "select_by": config.train.select_by,
            "convention": config.train.convention, "trial": best["trial"], "trees": best["trees"],
            "trials": len(r.finished), "budget": config.budget, "default_value": default_value(r)}


def default_value(r: LossResult) -> float | None:
    """The validation value of ``train``'s parameters (trial 0), or ``None`` when the space excluded them."""
    d = r.default
    return d["value"] if d is not None and not r.space.clipped else None


def write_loss_files(out_dir: Path, r: LossResult, config: Any) -> tuple[list[Path], dict | None]:
    """Write ``<loss>/trials.csv`` and, once a trial has finished, ``<loss>/best.json`` (atomically: a reader sees
    the previous version or this one); returns the files written and the loss's parameter-file entry."""
    files = [write_trials(out_dir / r.loss, r.trials, [d.name for d in r.space.dimensions])]
    entry = best_entry(r, config)
    if entry is not None:
        files.append(write_json(out_dir / r.loss / BEST_FILE, params_document({r.loss: entry})))
    return files, entry


def write_results(result: TuneResult) -> list[Path]:
    """Write ``<loss>/trials.csv``, ``<loss>/best.json``, ``best.json``, ``best-so-far.csv`` and, with matplotlib,
    ``best-so-far.png``; returns the files written."""
    out, files, entries = result.out_dir, [], {}
    for loss, r in result.losses.items():
        written, entry = write_loss_files(out, r, result.config)
        files += written
        if entry is not None:
            entries[loss] = entry
    files.append(write_json(out / BEST_FILE, params_document(entries)))
    curves = {loss: r.best_so_far() for loss, r in result.losses.items()}
    files.append(write_curves(out, curves))
    from rankcli.tune.render import best_so_far_plot

    plot = best_so_far_plot(curves, out / PLOT_FILE, result.config.train.select_by, result.config.budget)
    return files + ([plot] if plot is not None else [])


def json_shape(result: TuneResult) -> dict:
    """What ``rankcli tune --json`` prints: per loss its finished trials, best and default validation values and
    best parameters, and the run's options."""
    losses = {}
    for loss, r in result.losses.items():
        best = r.best
        losses[loss] = {"trials": len(r.finished), "best_value": best["value"] if best else None,
                        "default_value": default_value(r), "best_params": best["params"] if best else None,
                        "best_trial": best["trial"] if best else None, "best_trees": best["trees"] if best else None,
                        "ran": r.ran, "failed": sum(t["state"] == "FAIL" for t in r.trials),
                        "searched": [d.name for d in r.space.searched], "fixed": r.space.fixed,
                        "clipped": list(r.space.clipped)}
    t = result.config.train
    return {"dir": str(result.out_dir), "budget": result.config.budget, "select_by": t.select_by,
            "convention": t.convention, "seed": t.seed, "losses": losses, "seconds": round(result.seconds, 3),
            "files": [str(p) for p in result.files]}
