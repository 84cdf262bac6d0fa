"""``rankcli click-model compare``: which click model explains held-out sessions best, tested per session (or per
query) on the log-likelihoods with rankcli's paired tests and multiple-testing corrections
(:func:`rankcli.compare.compare_values`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankcli.click_model.evaluating import log_summary, score
from rankcli.click_model.fitting import FitOptions
from rankcli.click_model.logs import code_log
from rankcli.click_model.stored import load_model
from rankcli.compare import PairedComparisons, compare_values
from rankcli.core.click_models import Layout, fit, get_model, subset
from rankcli.core.click_models.evaluation import Evaluation, evaluate
from rankcli.errors import UsageError

UNITS = ("session", "query")
METRIC = "log_likelihood"


@dataclass
class Contender:
    """One model of the comparison and its scores on the held-out sessions."""

    name: str
    model: str
    source: str  # its directory, or "fitted on the split"
    evaluation: Evaluation
    unseen_items: int
    unseen_results: int

    def as_dict(self) -> dict:
        """The model's entry in ``--json``."""
        e = self.evaluation
        return {"name": self.name, "model": self.model, "source": self.source, "log_likelihood": e.log_likelihood,
                "log_likelihood_pyclick": e.log_likelihood_pyclick, "perplexity": e.perplexity,
                "conditional_perplexity": e.conditional_perplexity,
                "unseen": {"items": self.unseen_items, "results": self.unseen_results}}


@dataclass
class CompareReport:
    """What ``click-model compare`` reports."""

    held_out: dict
    contenders: list[Contender]
    paired: PairedComparisons
    baseline: str | None
    test: str
    alpha: float
    unit: str
    units: int
    split: dict | None = None
    notes: list[str] = field(default_factory=list)

    def worse_than_baseline(self) -> list:
        """The comparisons in which a model is significantly worse than the baseline."""
        if self.baseline is None:
            return []
        return [c for c in self.paired.comparisons if c.a == self.baseline and c.decision == "worse"]

    def best(self) -> str:
        """The model with the highest held-out log-likelihood."""
        return max(self.contenders, key=lambda c: c.evaluation.log_likelihood).name

    def as_dict(self) -> dict:
        """The report as ``--json`` prints it."""
        return {"held_out": self.held_out, "split": self.split, "unit": self.unit, "units": self.units,
                "metric": METRIC, "baseline": self.baseline, "test": self.test, "alpha": self.alpha,
                "correction": self.paired.correction, "best": self.best(),
                "models": [c.as_dict() for c in self.contenders],
                "comparisons": [c.as_dict() for c in self.paired.comparisons],
                "worse_than_baseline": [{"model": c.b} for c in self.worse_than_baseline()], "notes": self.notes}


def _per_unit(evaluation: Evaluation, query: np.ndarray, unit: str) -> np.ndarray:
    if unit == "session":
        return evaluation.per_session
    _, q = np.unique(query, return_inverse=True)
    return np.bincount(q.reshape(-1), weights=evaluation.per_session)


def _tested(contenders, query, unit, baseline, test, alpha, correction, seed, permutations):
    if unit not in UNITS:
        raise UsageError(f"--unit: expected session or query, got {unit!r}")
    values = {c.name: {METRIC: _per_unit(c.evaluation, query, unit)} for c in contenders}
    if baseline is not None and baseline not in values:
        raise UsageError(f"--baseline: {baseline!r} is none of the models ({', '.join(values)})")
    paired = compare_values(values, [METRIC], baseline=baseline, test=test, alpha=alpha, correction=correction,
                            seed=seed, permutations=permutations)
    return paired, next(iter(values.values()))[METRIC].shape[0]


def unique_names(names: Sequence[str]) -> list[str]:
    """``names`` made distinct by numbering repeats (``pbm``, ``pbm-2``)."""
    out, seen = [], {}
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}-{seen[n]}")
    return out


def compare_models(held_out: Path | str, model_dirs: Sequence[Path | str], *, names: Sequence[str] | None = None,
                   baseline: str | None = None, unit: str = "session", fmt: str = "auto",
                   unknown_clicks: str = "error", **tests) -> CompareReport:
    """Score fitted model directories on the held-out log and test them pairwise. ``tests``: ``test``, ``alpha``,
    ``correction``, ``seed``, ``permutations`` (:func:`rankcli.compare.compare_values`)."""
    from rankcli.formats.click_logs import read_session_log

    if len(model_dirs) < 2:
        raise UsageError("click-model compare needs at least two models")
    names = unique_names(list(names) if names else [Path(p).name for p in model_dirs])
    if len(names) != len(model_dirs):
        raise UsageError(f"--name: {len(names)} names for {len(model_dirs)} models")
    log = read_session_log(held_out, fmt, unknown_clicks=unknown_clicks)
    contenders = []
    for name, path in zip(names, model_dirs):
        loaded = load_model(path)
        s = score(loaded, log)
        contenders.append(Contender(name, loaded.model.name, str(path), s.evaluation, s.unseen_items,
                                    s.unseen_results))
    paired, units = _tested(contenders, log.query, unit, baseline or names[0], **_test_options(tests))
    return CompareReport(log_summary(log), contenders, paired, baseline or names[0], tests.get("test", "ttest"),
                         tests.get("alpha", 0.01), unit, units)


def _test_options(tests: dict) -> dict:
    return {"test": tests.get("test", "ttest"), "alpha": tests.get("alpha", 0.01),
            "correction": tests.get("correction"), "seed": tests.get("seed", 0),
            "permutations": tests.get("permutations", 10000)}


def compare_split(log_path: Path | str, models: Sequence[str], options: FitOptions, *, split: float = 0.8,
                  baseline: str | None = None, unit: str = "session", fmt: str = "auto",
                  unknown_clicks: str = "error", **tests) -> CompareReport:
    """Fit each of ``models`` on a split of the log's sessions (``tests["seed"]`` draws it) and compare them on the
    rest."""
    from rankcli.formats.click_logs import read_session_log

    if not 0.0 < split < 1.0:
        raise UsageError(f"--split: the fraction of sessions to fit on, within (0, 1), got {split:g}")
    if len(models) < 2:
        raise UsageError("--models: name at least two models, e.g. pbm,ubm,dbn")
    names = unique_names(list(models))
    for m in models:
        get_model(m)
    coded = code_log(read_session_log(log_path, fmt, unknown_clicks=unknown_clicks), options.by)
    s = coded.sessions
    seed = int(tests.get("seed", 0))
    order = np.random.default_rng(seed).permutation(s.n_sessions)
    n_train = int(round(split * s.n_sessions))
    if n_train < 1 or n_train >= s.n_sessions:
        raise UsageError(f"--split {split:g} of {s.n_sessions} sessions leaves no session to fit on or to test on")
    train, test = np.sort(order[:n_train]), np.sort(order[n_train:])
    fit_on, held = subset(s, train), subset(s, test)
    layout = Layout(s.n_items, s.max_rank)
    seen = np.bincount(fit_on.item, minlength=s.n_items) > 0
    contenders = []
    for name, m in zip(names, models):
        model = get_model(m)
        result = fit(model, fit_on, iterations=options.iterations, tolerance=options.tolerance, prior=options.prior,
                     e_step=options.e_step, layout=layout)
        ev = evaluate(model, held, result.values, layout)
        unseen = ~seen[held.item]
        contenders.append(Contender(name, m, "fitted on the split", ev, int(np.unique(held.item[unseen]).shape[0]),
                                    int(unseen.sum())))
    query = coded.log.query[test]
    paired, units = _tested(contenders, query, unit, baseline or names[0], **_test_options(tests))
    split_info = {"fraction": split, "seed": seed, "fit_sessions": int(n_train), "held_out_sessions": int(test.size),
                  "by": options.by}
    return CompareReport({**log_summary(coded.log), "held_out_sessions": int(test.size)}, contenders, paired,
                         baseline or names[0], tests.get("test", "ttest"), tests.get("alpha", 0.01), unit, units,
                         split=split_info)
