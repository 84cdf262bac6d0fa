"""Whether a log identifies position bias: which ranks its items connect. Pure numpy (and scipy's graph search).

Under the examination hypothesis ``P(click) = alpha_item gamma_rank``, the ratio ``gamma_r / gamma_r'`` is fixed by
the data only if ranks ``r`` and ``r'`` are joined by a chain of items each shown at two ranks of the chain: in the
bipartite graph of items and ranks (an edge where an item was shown at a rank), they are in one connected
component. A fixed ranker that shows each document at one rank only leaves every rank on its own (any examination
curve fits as well, the attractiveness absorbing it); randomised rankings, or grades shared across queries, connect
them.
"""

from __future__ import annotations

import numpy as np

from rankcli.core.click_models.sessions import Sessions


def rank_components(sessions: Sessions) -> np.ndarray:
    """``(R,)``: the connected component of each rank (0-based ranks; equal labels, ratios identified)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    R, n = sessions.max_rank, sessions.n_items
    rank = np.arange(sessions.item.shape[0]) - np.repeat(sessions.offsets[:-1], sessions.lengths)
    edges = np.unique(sessions.item.astype(np.int64) * R + rank)
    items, ranks = edges // R, edges % R
    size = n + R
    graph = coo_matrix((np.ones(edges.shape[0]), (items, n + ranks)), shape=(size, size))
    _, labels = connected_components(graph, directed=False)
    return labels[n:]
