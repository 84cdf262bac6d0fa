"""Randomised logging policies over a deterministic ranker's order: RandTop-n and the swap intervention. Pure numpy.

Both are from Joachims, Swaminathan and Schnabel, "Unbiased learning-to-rank with biased feedback", WSDM 2017. Under
either policy a position's examination propensity is identified from clicks (:mod:`rankcli.core.propensity`): RandTop-n
makes the expected relevance at every randomised position equal; the swap intervention shows one document (the
ranker's K-th) at every displayed position with equal probability.
"""

from __future__ import annotations

import numpy as np

from rankcli.errors import UsageError

#: Randomised logging policies over a deterministic ranker: ``("top", N)`` RandTop-n, ``("swap", K)`` swap
#: intervention.
RANDOMIZATIONS = ("top", "swap")


def randomized_orders(at_pos: np.ndarray, impressions: int, randomize: tuple[str, int], shown: int,
                      rng: np.random.Generator) -> np.ndarray:
    """Display orders of ``impressions`` impressions of each of ``G`` equal-size lists under a randomised policy.

    Parameters
    ----------
    at_pos : (G, n) int
        The ranker's order of each list: ``at_pos[g, r]`` is the document (0-based index in its list) at rank ``r``.
    impressions : int
        Impressions per list; the result has ``G * impressions`` rows, list ``g``'s impressions consecutive.
    randomize : ("top", N) or ("swap", K)
        ``("top", N)``: RandTop-n (Joachims et al. 2017), the top ``min(N, n)`` documents of the ranker's order in a
        fresh uniformly random order per impression (one Fisher-Yates shuffle per row, in C), the rest in the ranker's
        order. ``("swap", K)``: the swap intervention (Joachims et al. 2017), the document at rank ``K`` exchanged
        with the document at a position drawn uniformly from ``1..shown`` (``K`` itself included: then nothing
        moves), so the ranker's ``K``-th document appears at every displayed position with probability ``1/shown``;
        lists with fewer than ``K`` displayed documents keep the ranker's order.
    shown : int
        Documents displayed per impression (``min(n, max_rank)``).
    rng : numpy.random.Generator
        The randomness of the policy.

    Returns
    -------
    (G * impressions, n) int64
        The document at each position of each impression (cut to ``shown`` by the caller).
    """
    order = np.repeat(np.asarray(at_pos, dtype=np.int64), impressions, axis=0)
    kind, k = randomize
    n = order.shape[1]
    if kind == "top":
        m = min(int(k), n)
        if m > 1:
            order[:, :m] = rng.permuted(order[:, :m], axis=1)
    elif kind == "swap":
        if int(k) <= shown:
            rows = np.arange(order.shape[0])
            j = rng.integers(0, shown, size=order.shape[0])
            moved = order[:, k - 1].copy()
            order[:, k - 1] = order[rows, j]
            order[rows, j] = moved
    else:
        raise UsageError(f"unknown randomisation {kind!r}; expected one of {', '.join(RANDOMIZATIONS)}")
    return order
