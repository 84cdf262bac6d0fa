"""The corrected resampled t-test of Nadeau and Bengio (2003), for differences measured over repeated random splits
of one pool of data.

Repeated random splits ("trials") draw every test set from the same pool and train on overlapping training sets, so
the trials' differences ``d_j`` (``j = 1..J``: the difference of the two models' test means in trial ``j``) are
positively correlated. The paired t-test takes them as independent and estimates the variance of their mean as
``s^2 / J``, which misses the covariance: it rejects far too often. Nadeau and Bengio correct the variance to

    ``(1/J + n_test/n_train) s^2``

where ``s^2`` is the sample variance of the ``d_j`` (``ddof=1``), ``n_test`` the size of each test set and
``n_train`` the size of the data each model learned from. Then ``t = mean(d) / sqrt((1/J + n_test/n_train) s^2)``
with ``J - 1`` degrees of freedom, ``p = 2 P(T_{J-1} >= |t|)``, and the interval ``mean +- t_{J-1, 1 - alpha/2} se``
with ``se = sqrt((1/J + n_test/n_train) s^2)``. The term ``n_test/n_train`` is their heuristic for the correlation
``rho = n_test / (n_test + n_train)`` between two trials' differences, ``rho / (1 - rho) = n_test / n_train``; for
differences that are a fixed per-item effect averaged over a test set drawn without replacement from a pool of
``n_train + n_test`` items it is exact (the variance of the pool's mean is ``s^2 n_test / n_train`` in expectation).
With ``n_test/n_train = 0`` it is the paired t-test.

The degenerate cases are those of the paired t-test (:mod:`rankcli.core.stats`): fewer than two trials, or every
difference equal (no variance), is not testable; all differences zero gives ``p = 1``.

Reference: C. Nadeau and Y. Bengio, "Inference for the generalization error", Machine Learning 52(3), 239-281, 2003
(the "corrected resampled t-test"); R. R. Bouckaert and E. Frank, "Evaluating the replicability of
significance tests for comparing learning algorithms", PAKDD 2004.
"""

from __future__ import annotations

import math

import numpy as np

from rankcli.core.stats.paired import PairedTestBatch, PairedTestResult, paired_tests
from rankcli.errors import UsageError

#: The name of the corrected resampled t-test, as results and reports carry it.
CORRECTED_TTEST = "corrected-ttest"


def _check_ratio(test_train_ratio: float) -> float:
    ratio = float(test_train_ratio)
    if not (math.isfinite(ratio) and ratio >= 0.0):
        raise UsageError(f"the corrected t-test needs n_test/n_train >= 0 (finite), got {test_train_ratio!r}")
    return ratio


def corrected_ttest(a, b, test_train_ratio: float, *, confidence: float = 0.95,
                    alpha: float | None = None) -> PairedTestResult:
    """Corrected resampled t-test of ``a`` against ``b``: one value per trial each, ``a[j]`` and ``b[j]`` measured in
    the same trial (see the module docstring).

    Parameters
    ----------
    a, b : array of shape (J,)
        Per-trial values (test means) of the two models, finite.
    test_train_ratio : float
        ``n_test / n_train``: the test set's size over the size of the data a model learned from, per trial.
    confidence, alpha : as :func:`rankcli.core.stats.paired_test` (the interval's level).

    Examples
    --------
    >>> r = corrected_ttest([0.52, 0.55, 0.50, 0.56], [0.50, 0.51, 0.51, 0.52], 0.25)
    >>> round(r.mean_diff, 4), round(r.stderr, 4), round(r.statistic, 4), round(r.p_value, 4)
    (0.0225, 0.0167, 1.3466, 0.2708)
    """
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise UsageError(f"paired test needs two vectors of the same length, got {a.shape[0]} and {b.shape[0]}")
    return corrected_ttests(a[None, :], b[None, :], test_train_ratio, confidence=confidence, alpha=alpha).result(0)


def corrected_ttests(a, b, test_train_ratio: float, *, confidence: float = 0.95,
                     alpha: float | None = None) -> PairedTestBatch:
    """:func:`corrected_ttest` on every row of two ``(experiments, J)`` matrices, vectorised over the rows (what a
    calibration simulation runs); row ``i`` equals ``corrected_ttest(a[i], b[i], test_train_ratio)``."""
    from scipy import special

    ratio = _check_ratio(test_train_ratio)
    # the paired t-test, its checks and degenerate cases decided there; then its variance corrected
    out = paired_tests(a, b, "ttest", confidence=confidence, alpha=alpha)
    alpha = 1.0 - float(confidence) if alpha is None else float(alpha)
    out.test = CORRECTED_TTEST
    J = out.n
    if J < 2:
        return out
    # se_corrected = sqrt((1/J + ratio) s^2) = se_paired * sqrt(1 + J ratio): one factor for every row
    factor = math.sqrt(1.0 + J * ratio)
    tested = ~np.isnan(out.p_value) & (out.stderr > 0)     # not the zero rows (p = 1) nor the untestable ones
    with np.errstate(over="ignore", invalid="ignore"):     # a stderr beyond float64 (values near 1e308) is inf
        out.stderr = out.stderr * factor
        t = out.statistic / factor
        half = float(special.stdtrit(J - 1, 1.0 - alpha / 2.0)) * out.stderr
        p = np.minimum(2.0 * special.stdtr(J - 1, -np.abs(t)), 1.0)
        out.statistic = np.where(tested, t, out.statistic)
        out.p_value = np.where(tested, p, out.p_value)
        out.ci_low = np.where(tested, out.mean_diff - half, out.ci_low)
        out.ci_high = np.where(tested, out.mean_diff + half, out.ci_high)
    return out
