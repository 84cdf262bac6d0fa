"""``rankcli click-model eval``: how well a fitted click model explains a log (log-likelihood, perplexity,
conditional perplexity, CTR prediction at rank 1, relevance prediction)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankcli.click_model.ctr_protocol import ctr_at_rank_1
from rankcli.click_model.logs import code_log, session_of_row
from rankcli.click_model.relevance import relevance_prediction
from rankcli.click_model.stored import LoadedModel, load_model
from rankcli.core.click_models import Sessions
from rankcli.core.click_models.evaluation import Evaluation, evaluate
from rankcli.errors import InputError


@dataclass
class Scored:
    """A model's evaluation on a log, with the results it had no parameters for (scored at the prior)."""

    evaluation: Evaluation
    unseen_items: int  # distinct items of the log the model has no parameters for
    unseen_results: int  # results that show one


def model_items(loaded: LoadedModel, log) -> np.ndarray:
    """The model's item for every result of ``log``; ``loaded.n_items`` (the prior's fallback) where it has none."""
    from rankcli.formats.click_model_dir import match_documents, match_grades

    if not loaded.per_item:  # gctr, rctr: nothing to look up
        return np.full(log.document.shape[0], loaded.n_items, dtype=np.int64)
    if loaded.by == "relevance":
        if log.relevance is None:
            raise InputError(f"{log.path}: the model's parameters are per relevance grade ({loaded.stored.path}), "
                             "and the log has no grades")
        found = match_grades(loaded.stored, log.relevance)
    else:
        found = match_documents(loaded.stored, log.queries, log.documents, log.query[session_of_row(log.offsets)],
                                log.document)
    return np.where(found < 0, loaded.n_items, found)


def score(loaded: LoadedModel, log) -> Scored:
    """Score ``loaded`` on ``log`` (a :class:`~rankcli.formats.click_logs.SessionLog`)."""
    items = model_items(loaded, log)
    missing = (items == loaded.n_items) & loaded.per_item  # a model without per-item parameters misses nothing
    sessions = Sessions(log.offsets, items, log.click, loaded.n_items + 1)
    values, layout = loaded.extended(sessions.max_rank)
    evaluation = evaluate(loaded.model, sessions, values, layout)
    if not missing.any():
        distinct = 0
    elif loaded.by == "relevance":
        distinct = np.unique(log.relevance[missing]).shape[0]
    else:
        width = np.int64(max(len(log.documents), 1))
        keys = log.query[session_of_row(log.offsets)][missing] * width + log.document[missing]
        distinct = np.unique(keys).shape[0]
    return Scored(evaluation, int(distinct), int(missing.sum()))


@dataclass
class EvalReport:
    """What ``click-model eval`` reports."""

    model_path: str
    model: dict
    log: dict
    scored: Scored
    ctr: dict | None = None
    relevance: dict | None = None

    def as_dict(self, per_rank: bool = True) -> dict:
        """The report as ``--json`` prints it (``per_rank``: the per-rank arrays too)."""
        e = self.scored.evaluation
        out = {
            "model": {"path": self.model_path, **self.model}, "log": self.log, "sessions": e.sessions,
            "log_likelihood": e.log_likelihood, "log_likelihood_pyclick": e.log_likelihood_pyclick,
            "perplexity": e.perplexity, "conditional_perplexity": e.conditional_perplexity,
            "unseen": {"items": self.scored.unseen_items, "results": self.scored.unseen_results},
            "ctr_at_1": self.ctr, "relevance_prediction": self.relevance,
        }
        if per_rank:
            out["per_rank"] = [
                {"rank": k + 1, "sessions": int(e.sessions_at_rank[k]), "perplexity": _num(e.perplexity_at_rank[k]),
                 "conditional_perplexity": _num(e.conditional_perplexity_at_rank[k]),
                 "click_rate": _num(e.click_rate_at_rank[k]),
                 "predicted_click_rate": _num(e.predicted_click_rate_at_rank[k])}
                for k in range(e.sessions_at_rank.shape[0])]
        return out


def _num(v) -> float | None:
    v = float(v)
    return v if np.isfinite(v) else None


def evaluate_log(model_dir: Path | str, log_path: Path | str, *, fmt: str = "auto", unknown_clicks: str = "error",
                 ctr: bool = True, qrels: Path | str | None = None, cutoff: int = 10) -> EvalReport:
    """Evaluate the click model at ``model_dir`` on the log at ``log_path``; ``ctr``: also the CTR prediction at
    rank 1 (:mod:`~rankcli.click_model.ctr_protocol`); ``qrels``: also the NDCG@``cutoff`` of the ranking by the
    model's predicted relevance (:mod:`~rankcli.click_model.relevance`)."""
    from rankcli.formats.click_logs import read_session_log

    loaded = load_model(model_dir)
    log = read_session_log(log_path, fmt, unknown_clicks=unknown_clicks)
    scored = score(loaded, log)
    coded = code_log(log, loaded.by) if (ctr or qrels is not None) else None
    info = loaded.info
    model = {k: info.get(k) for k in ("model", "title", "estimator", "by")}
    report = EvalReport(str(model_dir), model, coded.summary() if coded is not None else log_summary(log), scored)
    if ctr:
        report.ctr = ctr_at_rank_1(loaded, coded)
    if qrels is not None:
        report.relevance = relevance_prediction(loaded, log, qrels, cutoff)
    return report


def log_summary(log) -> dict:
    """A log's path, format, fingerprint and counts, as the reports record them."""
    return {"path": log.path, "format": log.format, "fingerprint": log.fingerprint, "sessions": int(log.n_sessions),
            "results": int(log.click.shape[0]), "clicks": int(log.click.sum())}
