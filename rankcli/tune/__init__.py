"""Hyperparameter search per loss on an equal budget (``rankcli tune``), with Optuna's TPE sampler.

Each loss gets its own Optuna study in ``DIR/<loss>/`` and the same budget of trainings, scored by ``select_by`` on
the validation set (early stopping as in ``train``). Trial 0 of every study is ``rankcli train``'s own parameters, so
the gain of tuning is measured from the model ``train`` would give. The studies live in Optuna journal files: a rerun
continues them, a larger budget extends them, and any number of processes may share them with the budget kept exact.

Modules: :mod:`~rankcli.tune.space` (the search space and ``--space`` files), :mod:`~rankcli.tune.study` (one
loss's study: claims, budget, dead workers, seeds), :mod:`~rankcli.tune.trial` (one trial's training),
:mod:`~rankcli.tune.runner` (running a tune), :mod:`~rankcli.tune.parallel` (``--jobs``, ``--dask``),
:mod:`~rankcli.tune.results` (the files and the JSON summary), :mod:`~rankcli.tune.inline` (tuning inside an
experiment unit). Optuna is an optional dependency (``pip install "rankcli[tune]"``): :func:`require_optuna` says so.
"""

from __future__ import annotations

import importlib.util

from rankcli.errors import UsageError

INSTALL_HINT = 'pip install "rankcli[tune]"'


def require_optuna(what: str = "rankcli tune") -> None:
    """:class:`~rankcli.errors.UsageError` (exit 2) naming the extra to install when Optuna is missing."""
    if importlib.util.find_spec("optuna") is None:
        raise UsageError(f"{what} needs Optuna, which is not installed; install the optional extra: {INSTALL_HINT}")
