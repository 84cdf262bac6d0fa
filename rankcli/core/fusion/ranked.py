"""The rank-based fusion methods: each document's fused score from its ranks in the runs that list it.

Notation (per document ``d`` of a query): ``rank_r(d)`` is its 1-based rank in run ``r`` (score descending; ascending
under ``min-max-inverted``; equal scores by document id descending, as trec_eval ranks a run; ranx ranks by the
run's stored order), ``L_d`` the runs that list ``d``, ``n_r`` the length of run ``r``'s list for the query and ``N``
the query's number of candidates. These methods read the runs' own lists: ``--normalize`` only orients them, and
``borda``'s filling in of missing documents does not apply. Sums run over the runs in the order given.
"""

from __future__ import annotations

import numpy as np

from rankcli.core.fusion.combine import ordered_sum
from rankcli.core.fusion.normalize import Evidence


def _listed_sum(ev: Evidence, terms: np.ndarray) -> np.ndarray:
    return ordered_sum(np.where(ev.aligned.listed, terms, 0.0))


def _listed_count(ev: Evidence) -> np.ndarray:
    return ev.aligned.listed.sum(axis=0).astype(np.float64)


def _inverse_square_ranks(ev: Evidence) -> np.ndarray:
    r = ev.aligned.ranks.astype(np.float64)
    with np.errstate(divide="ignore"):
        return _listed_sum(ev, 1.0 / (r * r))


def isr(ev: Evidence, params: dict) -> np.ndarray:
    r"""ISR, inverse square rank: :math:`f(d) = |L_d| \sum_{r \in L_d} \mathrm{rank}_r(d)^{-2}`.

    Reference: Mourão, A., Martins, F. & Magalhães, J. (2015). Multimodal medical information retrieval with
    unsupervised rank fusion. Computerized Medical Imaging and Graphics 39, 35-45.
    """
    return _inverse_square_ranks(ev) * _listed_count(ev)


def log_isr(ev: Evidence, params: dict) -> np.ndarray:
    r"""Log ISR: :math:`f(d) = \ln|L_d| \sum_{r \in L_d} \mathrm{rank}_r(d)^{-2}` (0 for a document only one run
    lists).

    Reference: Mourão, A., Martins, F. & Magalhães, J. (2015). Multimodal medical information retrieval with
    unsupervised rank fusion. Computerized Medical Imaging and Graphics 39, 35-45.
    """
    return _inverse_square_ranks(ev) * np.log(_listed_count(ev))


def logn_isr(ev: Evidence, params: dict) -> np.ndarray:
    r"""LogN ISR: :math:`f(d) = \ln(|L_d| + \sigma) \sum_{r \in L_d} \mathrm{rank}_r(d)^{-2}` (``sigma``, default
    0.01, keeps a document only one run lists above 0).

    Reference: Mourão, A., Martins, F. & Magalhães, J. (2015). Multimodal medical information retrieval with
    unsupervised rank fusion. Computerized Medical Imaging and Graphics 39, 35-45.
    """
    return _inverse_square_ranks(ev) * np.log(_listed_count(ev) + float(params["sigma"]))


def rrf(ev: Evidence, params: dict) -> np.ndarray:
    r"""Reciprocal rank fusion: :math:`f(d) = \sum_{r \in L_d} \frac{1}{k + \mathrm{rank}_r(d)}` (``k``, default 60).

    Reference: Cormack, G. V., Clarke, C. L. A. & Büttcher, S. (2009). Reciprocal rank fusion outperforms Condorcet
    and individual rank learning methods. SIGIR 2009, 758-759.
    """
    k = params["k"]
    with np.errstate(divide="ignore"):  # k = 0: the unlisted cells' rank 0, never read
        return _listed_sum(ev, 1.0 / (k + ev.aligned.ranks))


def int_power(base: float, exponents: np.ndarray) -> np.ndarray:
    """``base ** e`` for integer ``e >= 0`` by repeated squaring, the product numba computes for a float raised to an
    integer (``pow`` may round the last bit differently)."""
    e = exponents.astype(np.int64, copy=True)
    out = np.ones(e.shape, dtype=np.float64)
    a = np.full(e.shape, float(base))
    while e.any():
        odd = (e & 1).astype(bool)
        out = np.where(odd, out * a, out)
        e >>= 1
        a = a * a
    return out


def rbc(ev: Evidence, params: dict) -> np.ndarray:
    r"""Rank-biased centroid: :math:`f(d) = \sum_{r \in L_d} (1 - \phi)\, \phi^{\mathrm{rank}_r(d) - 1}` (``phi``,
    the persistence of rank-biased precision, in [0, 1]).

    Reference: Bailey, P., Moffat, A., Scholer, F. & Thomas, P. (2017). Retrieval consistency in the presence of
    query variations. SIGIR 2017, 395-404.
    """
    phi = float(params["phi"])
    exponents = np.where(ev.aligned.listed, ev.aligned.ranks - 1, 0)
    return _listed_sum(ev, (1 - phi) * int_power(phi, exponents))


def borda_points(ev: Evidence) -> np.ndarray:
    """Each run's Borda points for each candidate: ``N - rank + 1`` when listed, else an equal share of the points
    left, ``(N - n_r + 1) / 2``."""
    al = ev.aligned
    big_n = al.per_candidate(np.diff(al.offsets)).astype(np.float64)
    n = al.per_candidate(al.lengths).astype(np.float64)
    return np.where(al.listed, big_n - al.ranks + 1, (big_n - n + 1) / 2)


def bordafuse(ev: Evidence, params: dict) -> np.ndarray:
    r"""Borda fuse: :math:`f(d) = \sum_r b_r(d)`, with :math:`b_r(d) = N - \mathrm{rank}_r(d) + 1` when run ``r`` lists
    ``d`` and :math:`(N - n_r + 1) / 2` otherwise (the points left shared by the documents it does not list).

    Reference: Aslam, J. A. & Montague, M. (2001). Models for metasearch. SIGIR 2001, 276-284.
    """
    return ordered_sum(borda_points(ev))


def w_bordafuse(ev: Evidence, params: dict) -> np.ndarray:
    r"""Weighted Borda fuse: :math:`f(d) = \sum_r w_r\, b_r(d)` (Borda points as in :func:`bordafuse`).

    Reference: Aslam, J. A. & Montague, M. (2001). Models for metasearch. SIGIR 2001, 276-284.
    """
    w = np.asarray(params["weights"], dtype=np.float64)[:, None]
    return ordered_sum(w * borda_points(ev))
