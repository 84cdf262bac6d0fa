"""Slow, obviously correct EM for the click models: every latent variable enumerated, session by session.

Each model is written as the user's walk down the list, one coin per decision (``coin(family, slot)``): whether a
result is attractive, examined, satisfying, whether the user goes on. :func:`configurations` enumerates every outcome
of every coin the walk flips; those whose clicks are the session's observed ones are its posterior (weights
proportional to their probabilities). The E-step counts, per parameter, the expected number of flips that came up 1
and of flips in all; the M-step is PyClick's ratio with its prior and cap. Nothing is vectorised and nothing is
shared with rankcli's code.

A coin is flipped for every result's attractiveness (examined or not: the parameterisation of PyClick's
``DBNAttrEM``, whose denominator counts every result), and a continuation coin is flipped after the last result too
(PyClick's ``DBNContEM`` counts every rank); both leave the EM's fixed point unchanged.
"""

from __future__ import annotations

import math
from collections import defaultdict


def _flip(values, family, slot, state, then):
    """Both outcomes of one coin: ``then(outcome, state with the coin recorded)``."""
    coins, prob, clicks = state
    p = values[family][slot]
    for outcome, q in ((1, p), (0, 1.0 - p)):
        then(outcome, (coins + [(family, slot, outcome)], prob * q, clicks))


def _walk(model, items, values, rank, examined, prev_click, state, out):
    """Recursively flip the coins of ranks ``rank, rank + 1, ...`` (and the continuation after the last)."""
    if rank == len(items):
        out.append(state)
        return

    def go(next_examined, next_prev, st):
        _walk(model, items, values, rank + 1, next_examined, next_prev, st, out)

    def with_click(st, click):
        return st[0], st[1], st[2] + [int(click)]

    def attractiveness(attractive, st):
        if model in ("pbm", "ubm"):
            slot = rank if model == "pbm" else rank * L_MAX + prev_click
            _flip(values, "exam", slot, st, lambda e, st2: go(True, rank + 1 if (e and attractive) else prev_click,
                                                              with_click(st2, e and attractive)))
            return
        click = examined and attractive
        st = with_click(st, click)
        if not examined:
            go(False, prev_click, st)
        elif click:
            def satisfaction(s, st2):
                if model == "dbn" and s:
                    go(False, prev_click, st2)  # satisfied: the user leaves
                    return
                family = "cont" if model == "dbn" else ("tau3" if s else "tau2")
                _flip(values, family, 0, st2, lambda g, st3: go(bool(g), prev_click, st3))
            _flip(values, "sat" if model == "dbn" else "attr", items[rank], st, satisfaction)
        else:
            _flip(values, "cont" if model == "dbn" else "tau1", 0, st, lambda g, st2: go(bool(g), prev_click, st2))

    _flip(values, "attr", items[rank], state, attractiveness)


L_MAX = 8  # UBM's examination slot: rank * L_MAX + rank of the previous click (1-based, 0: none)


def configurations(model, items, values):
    """Every outcome of the walk over a session showing ``items``: ``(coins, probability, clicks)``."""
    out = []
    _walk(model, list(items), values, 0, True, 0, ([], 1.0, []), out)
    return out


def em(model, sessions, n_items, iterations, prior=(1.0, 2.0), cap=1e-6):
    """EM by enumeration. ``sessions`` is a list of ``(items, clicks)``; returns ``(values, log-likelihoods)``, the
    log-likelihood under the values after 0, 1, ..., ``iterations`` iterations."""
    families = {"pbm": {"attr": n_items, "exam": L_MAX}, "ubm": {"attr": n_items, "exam": L_MAX * L_MAX},
                "dbn": {"attr": n_items, "sat": n_items, "cont": 1},
                "ccm": {"attr": n_items, "tau1": 1, "tau2": 1, "tau3": 1}}[model]
    values = {f: [prior[0] / prior[1]] * n for f, n in families.items()}
    history = []
    for it in range(iterations + 1):
        num = {f: defaultdict(float) for f in families}
        den = {f: defaultdict(float) for f in families}
        ll = 0.0
        for items, clicks in sessions:
            matching = [(coins, p) for coins, p, c in configurations(model, items, values) if c == list(clicks)]
            total = sum(p for _, p in matching)
            ll += math.log(total)
            for coins, p in matching:
                w = p / total
                for family, slot, outcome in coins:
                    num[family][slot] += w * outcome
                    den[family][slot] += w
        history.append(ll)
        if it == iterations:
            break
        values = {f: [min((prior[0] + num[f][s]) / (prior[1] + den[f][s]), 1.0 - cap) for s in range(n)]
                  for f, n in families.items()}
    return values, history
