"""Click logs simulated from known click-model parameters, vectorised (the recovery tests and benchmarks): sessions of
``length`` results drawn in random order from ``docs_per_query`` documents of a random query, clicked by
:meth:`ClickModel.simulate` (itself checked against the model's click probabilities in test_click_models.py)."""

from __future__ import annotations

import numpy as np

from rankcli.core import click_models as cm
from rankcli.core.click_models.simulation import list_parameters


def true_parameters(name: str, n_items: int, length: int, rng: np.random.Generator) -> dict:
    """Plausible parameters: attractiveness and satisfaction spread over (0.05, 0.9), examination falling with rank."""
    attr = rng.uniform(0.05, 0.9, n_items)
    ranks = np.arange(1, length + 1)
    if name == "pbm":
        return {"attr": attr, "exam": 1.0 / ranks ** 0.8}
    if name == "ubm":
        grid = np.zeros((length, length))
        for k in range(length):
            for j in range(k + 1):  # j: the rank of the last click above (0: none)
                grid[k, j] = (1.0 / (k + 1) ** 0.9) if j == 0 else 0.95 / (k + 1 - j) ** 0.6
        return {"attr": attr, "exam": grid.ravel()}
    if name == "dbn":
        return {"attr": attr, "sat": rng.uniform(0.1, 0.8, n_items), "cont": np.array([0.85])}
    raise ValueError(name)


def simulated_log(name: str, params: dict, n_sessions: int, rng: np.random.Generator, *, queries: int = 10,
                  docs_per_query: int = 8, length: int = 5) -> cm.Sessions:
    """``n_sessions`` sessions clicked by the model ``name`` with ``params`` (items are ``query * docs_per_query +
    document``)."""
    model = cm.get_model(name)
    q = rng.integers(0, queries, n_sessions)
    order = rng.permuted(np.broadcast_to(np.arange(docs_per_query), (n_sessions, docs_per_query)), axis=1)
    items = (q[:, None] * docs_per_query + order[:, :length]).T  # (length, sessions)
    layout = cm.Layout(queries * docs_per_query, length)
    clicks, _ = model.simulate(list_parameters(model, params, items, layout), items.shape, rng)
    return cm.Sessions(np.arange(n_sessions + 1) * length, items.T.ravel(), clicks.T.ravel(),
                       queries * docs_per_query)
