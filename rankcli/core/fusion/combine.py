"""The score-based fusion methods: each document's fused score from the normalised scores the runs give it.

Notation (per document ``d`` of a query): ``s_r`` is run ``r``'s normalised score of ``d``, ``R_d`` the runs that hold
``d`` (list it, or every run after ``borda`` normalisation), ``|R_d|`` their number, ``w_r`` run ``r``'s weight. A run
that does not hold ``d`` adds nothing to a sum. Sums run over the runs in the order given, as ranx sums them, so
that equal evidence gives equal fused scores bit for bit.
"""

from __future__ import annotations

import numpy as np

from rankcli.core.fusion.normalize import Evidence


def ordered_sum(mat: np.ndarray) -> np.ndarray:
    """``mat[0] + mat[1] + ...`` in that order (numpy's pairwise reduction may round differently)."""
    out = mat[0].astype(np.float64, copy=True)
    for row in mat[1:]:
        out += row
    return out


def _count(ev: Evidence) -> np.ndarray:
    return ev.present.sum(axis=0).astype(np.float64)


def comb_sum(ev: Evidence, params: dict) -> np.ndarray:
    r"""CombSUM: :math:`f(d) = \sum_{r \in R_d} s_r`.

    Reference: Fox, E. A. & Shaw, J. A. (1993). Combination of multiple searches. TREC-2, NIST SP 500-215, 243-252.
    """
    return ordered_sum(np.where(ev.present, ev.scores, 0.0))


def comb_min(ev: Evidence, params: dict) -> np.ndarray:
    r"""CombMIN: :math:`f(d) = \min_{r \in R_d} s_r`.

    Reference: Fox, E. A. & Shaw, J. A. (1993). Combination of multiple searches. TREC-2, NIST SP 500-215, 243-252.
    (ranx gives a run without ``d`` the score 1e9, which is the same unless a score exceeds 1e9.)
    """
    return np.where(ev.present, ev.scores, np.inf).min(axis=0)


def comb_max(ev: Evidence, params: dict) -> np.ndarray:
    r"""CombMAX: :math:`f(d) = \max_{r \in R_d} s_r`.

    Reference: Fox, E. A. & Shaw, J. A. (1993). Combination of multiple searches. TREC-2, NIST SP 500-215, 243-252.
    (ranx gives a run without ``d`` the score -1e9, which is the same unless a score is below -1e9.)
    """
    return np.where(ev.present, ev.scores, -np.inf).max(axis=0)


def comb_med(ev: Evidence, params: dict) -> np.ndarray:
    r"""CombMED: :math:`f(d) = \mathrm{median}_{r \in R_d} s_r` (the mean of the two middle scores when
    :math:`|R_d|` is even).

    Reference: Fox, E. A. & Shaw, J. A. (1993). Combination of multiple searches. TREC-2, NIST SP 500-215, 243-252.
    """
    srt = np.sort(np.where(ev.present, ev.scores, np.inf), axis=0)
    n = ev.present.sum(axis=0)
    cols = np.arange(srt.shape[1])
    lo = srt[np.maximum((n - 1) // 2, 0), cols]
    hi = srt[np.maximum(n // 2, 0), cols]
    return np.where(n % 2 == 1, lo, (lo + hi) / 2)


def comb_anz(ev: Evidence, params: dict) -> np.ndarray:
    r"""CombANZ: :math:`f(d) = \frac{1}{|R_d|} \sum_{r \in R_d} s_r`.

    Reference: Fox, E. A. & Shaw, J. A. (1993). Combination of multiple searches. TREC-2, NIST SP 500-215, 243-252.
    """
    return comb_sum(ev, params) / _count(ev)


def comb_mnz(ev: Evidence, params: dict) -> np.ndarray:
    r"""CombMNZ: :math:`f(d) = |R_d| \sum_{r \in R_d} s_r`.

    Reference: Fox, E. A. & Shaw, J. A. (1993). Combination of multiple searches. TREC-2, NIST SP 500-215, 243-252.
    """
    return comb_sum(ev, params) * _count(ev)


def comb_gmnz(ev: Evidence, params: dict) -> np.ndarray:
    r"""CombGMNZ: :math:`f(d) = |R_d|^{\gamma} \sum_{r \in R_d} s_r` (``gamma``; 1 is CombMNZ, 0 CombSUM).

    Reference: Lee, J. H. (1997). Analyses of multiple evidence combination. SIGIR 1997, 267-276.
    """
    return comb_sum(ev, params) * np.power(_count(ev), float(params["gamma"]))


def wsum(ev: Evidence, params: dict) -> np.ndarray:
    r"""Weighted sum (weighted CombSUM): :math:`f(d) = \sum_{r \in R_d} w_r s_r`.

    Reference: Bartell, B. T., Cottrell, G. W. & Belew, R. K. (1994). Automatic combination of multiple ranked
    retrieval systems. SIGIR 1994, 173-181.
    """
    w = np.asarray(params["weights"], dtype=np.float64)[:, None]
    return ordered_sum(np.where(ev.present, w * ev.scores, 0.0))


def wmnz(ev: Evidence, params: dict) -> np.ndarray:
    r"""Weighted CombMNZ as ranx defines it: :math:`f(d) = \left(\sum_{r \in R_d} s_r\right)\left(\sum_{r \in R_d}
    w_r\right)`, the weights of the runs that hold ``d`` standing for MNZ's count.

    Reference: Wu, S. & Crestani, F. (2002). Data fusion with estimated weights. CIKM 2002, 648-651.
    """
    w = np.asarray(params["weights"], dtype=np.float64)[:, None]
    return comb_sum(ev, params) * ordered_sum(np.where(ev.present, np.broadcast_to(w, ev.scores.shape), 0.0))


def mixed(ev: Evidence, params: dict) -> np.ndarray:
    r"""Mixed: :math:`f(d) = \sqrt{|R_d|} \sum_{r \in R_d} w_r s_r`, between the weighted sum and weighted CombMNZ.

    Reference: Wu, S. & Crestani, F. (2002). Data fusion with estimated weights. CIKM 2002, 648-651.
    """
    return wsum(ev, params) * np.sqrt(_count(ev))
