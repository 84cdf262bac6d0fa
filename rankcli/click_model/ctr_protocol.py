"""CTR prediction at rank 1: Chapelle and Zhang's protocol (WWW 2009, section 5.3; Chuklin, Markov and de Rijke
2015, section 5.4).

For every (query, document) pair that the log shows at rank 1 in some sessions (its *test* sessions) and below rank
1 in other sessions of the query (its *training* sessions), the model is fitted on the training sessions alone and
predicts the click-through rate at rank 1, ``P(C_1 = 1)``, which is compared with the click rate at rank 1 of the test
sessions. The score is the root mean squared error over the pairs, each weighted by its number of test sessions.
Every pair is evaluated (PyClick's ``CTRPrediction`` stops at the first pair whose top document was seen before: a
``break`` where the protocol needs ``continue``) and every pair's model is its own fit (PyClick trains one model
object again and again, its counts accumulating).

All pairs are fitted at once: each pair's training sessions form a group with its own rank and global parameters
(:class:`~rankcli.core.click_models.Sessions` ``group``), so that no pair's fit sees another's data.
"""

from __future__ import annotations

import numpy as np

from rankcli.click_model.logs import session_of_row
from rankcli.core.click_models import Layout, Prior, Sessions, fit, gather, subset


def _groups(sessions: Sessions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pairs, train_sessions, train_group)``: the pairs shown both at rank 1 and below, and every (training
    session, pair) combination."""
    row_session = session_of_row(sessions.offsets)
    rank = np.arange(sessions.item.shape[0]) - sessions.offsets[:-1][row_session]
    top = sessions.item[sessions.offsets[:-1]]
    lower = rank > 0
    pairs = np.intersect1d(np.unique(top), np.unique(sessions.item[lower]))
    rows = np.flatnonzero(lower & np.isin(sessions.item, pairs))
    width = np.int64(max(pairs.shape[0], 1))
    combos = np.unique(row_session[rows] * width + np.searchsorted(pairs, sessions.item[rows]))
    return pairs, combos // width, combos % width


def ctr_at_rank_1(loaded, coded) -> dict:
    """The protocol's RMSE for the model ``loaded`` (its model, prior and options) on the coded log ``coded``."""
    if loaded.by != "document":
        return {"protocol": "Chapelle-Zhang", "pairs": 0, "rmse": None, "test_sessions": 0,
                "note": "defined per (query, document) pair; the model's parameters are per relevance grade"}
    sessions = coded.sessions
    pairs, train, group = _groups(sessions)
    top = sessions.item[sessions.offsets[:-1]]
    base = {"protocol": "Chapelle-Zhang: fitted per pair on the sessions showing it below rank 1",
            "pairs": int(pairs.shape[0])}
    if pairs.shape[0] == 0:
        return {**base, "rmse": None, "test_sessions": 0,
                "note": "no (query, document) pair is shown both at rank 1 and below it"}
    derived = subset(sessions, train)
    key = np.repeat(group, derived.lengths) * np.int64(sessions.n_items) + derived.item
    keys, items = np.unique(key, return_inverse=True)
    derived = Sessions(derived.offsets, items.reshape(-1), derived.click, int(keys.shape[0]), group=group,
                       n_groups=int(pairs.shape[0]))
    options = loaded.info.get("options") or {}
    prior: Prior = loaded.prior
    layout = Layout(derived.n_items, derived.max_rank, derived.n_groups)
    result = fit(loaded.model, derived, iterations=int(options.get("iterations", 50)),
                 tolerance=float(options.get("tolerance", 0.0)), prior=prior,
                 e_step=str(options.get("e_step", "exact")), layout=layout)
    G = pairs.shape[0]
    probe_items = np.searchsorted(keys, np.arange(G) * np.int64(sessions.n_items) + pairs)
    probe = Sessions(np.arange(G + 1), probe_items, np.zeros(G, bool), derived.n_items, group=np.arange(G),
                     n_groups=G)
    predicted = np.empty(G)
    for b in probe.blocks():
        _, full = loaded.model.probabilities(b, gather(loaded.model, result.values, b, layout))
        predicted[b.sessions] = full[0]
    test = np.isin(top, pairs)
    which = np.searchsorted(pairs, top[test])
    n_test = np.bincount(which, minlength=G)
    clicks = np.bincount(which, weights=sessions.click[sessions.offsets[:-1]][test], minlength=G)
    observed = clicks / n_test
    rmse = float(np.sqrt(np.sum(n_test * (predicted - observed) ** 2) / n_test.sum()))
    return {**base, "rmse": rmse, "test_sessions": int(n_test.sum()), "training_sessions": int(train.shape[0])}
