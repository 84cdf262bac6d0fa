"""How well a fitted click model explains a log (Chuklin, Markov and de Rijke 2015, chapter 5). Pure numpy.

With ``P(C_k = c_k | C_<k)`` the conditional probability of each observed click or skip and ``P(C_k = 1)`` the full
(unconditional) click probability of each result (:meth:`ClickModel.probabilities`), over ``S`` sessions:

log-likelihood
    ``sum_s log P(C^s) = sum_s sum_k log P(C_k^s = c_k^s | C_<k^s)`` (natural log), and PyClick's
    ``LogLikelihood``: ``1/S sum_s (1/n_s) sum_k log P(C_k^s = c_k^s | C_<k^s)``, the mean per result.
perplexity at rank ``k`` (Dupret and Piwowarski, SIGIR 2008)
    ``2 ** (-1/S_k sum_s log2 P(C_k^s = c_k^s))`` over the ``S_k`` sessions with a result at ``k``, the click
    probability being the full one, ``q = P(C_k = 1)`` for a click and ``1 - q`` for a skip; the perplexity is the
    mean over ranks. 1 is perfect prediction, 2 a coin flip. PyClick's ``Perplexity`` divides by every session and
    averages over ranks 1-10, which is the same for sessions of 10 results.
conditional perplexity
    The same with the conditional probabilities (PyClick's ``PerplexityCond``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankcli.core.click_models.base import ClickModel
from rankcli.core.click_models.em import Layout, gather
from rankcli.core.click_models.sessions import Sessions


@dataclass
class Evaluation:
    """A model's scores on a log (see the module docstring)."""

    sessions: int
    log_likelihood: float
    log_likelihood_pyclick: float
    per_session: np.ndarray  # (S,) natural log of each session's probability
    perplexity: float
    perplexity_at_rank: np.ndarray  # (R,)
    conditional_perplexity: float
    conditional_perplexity_at_rank: np.ndarray
    sessions_at_rank: np.ndarray  # (R,)
    click_rate_at_rank: np.ndarray  # observed
    predicted_click_rate_at_rank: np.ndarray  # the mean full click probability


def _perplexity(log2_sum: np.ndarray, counts: np.ndarray) -> tuple[float, np.ndarray]:
    present = counts > 0
    at_rank = np.full(counts.shape, np.nan)
    at_rank[present] = 2.0 ** (-log2_sum[present] / counts[present])
    return (float(at_rank[present].mean()) if present.any() else float("nan")), at_rank


def evaluate(model: ClickModel, sessions: Sessions, values: dict[str, np.ndarray], layout: Layout) -> Evaluation:
    """Score ``model`` with parameters ``values`` (sized by ``layout``) on ``sessions``."""
    R = max(sessions.max_rank, 1)
    per_session = np.zeros(sessions.n_sessions)
    mean_per_result = np.zeros(sessions.n_sessions)
    full_log2, cond_log2 = np.zeros(R), np.zeros(R)
    counts, clicks, predicted = np.zeros(R), np.zeros(R), np.zeros(R)
    for b in sessions.blocks():
        cond, full = model.probabilities(b, gather(model, values, b, layout))
        log_cond = np.log(cond)
        per_session[b.sessions] = log_cond.sum(axis=0)
        mean_per_result[b.sessions] = log_cond.mean(axis=0)
        full_log2[:b.L] += np.log2(np.where(b.click, full, 1.0 - full)).sum(axis=1)
        cond_log2[:b.L] += log_cond.sum(axis=1) / np.log(2.0)
        counts[:b.L] += b.m
        clicks[:b.L] += b.click.sum(axis=1)
        predicted[:b.L] += full.sum(axis=1)
    perplexity, p_at = _perplexity(full_log2, counts)
    cond_perplexity, c_at = _perplexity(cond_log2, counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate, pred = clicks / counts, predicted / counts
    n = sessions.n_sessions
    return Evaluation(n, float(per_session.sum()), float(mean_per_result.mean()) if n else float("nan"),
                      per_session, perplexity, p_at, cond_perplexity, c_at, counts.astype(np.int64), rate, pred)
