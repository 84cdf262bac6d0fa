"""``click-model fit --dask``: the E-step's sums computed per partition of sessions on a Dask cluster and added up
here for the M-step (:class:`~rankcli.core.click_models.Sums` are additive), for logs beyond one machine's cores.

The log is read and coded here; each partition of whole sessions is sent to the workers once, and every iteration
sends the current parameters (one broadcast) and receives each partition's sums. The partitions are fixed by the
log alone and added in their order, so the fit is the same whatever the number of workers.
"""

from __future__ import annotations

from contextlib import ExitStack

import numpy as np

from rankcli.core.click_models import Sessions, e_step_sums, get_model, subset
from rankcli.core.click_models.em import log_likelihood
from rankcli.distributed import parse_dask_target, require_dask, require_workers
from rankcli.distributed.cluster import client_for

#: Sessions per partition sent to a worker.
PARTITION_SESSIONS = 1 << 18


def partition_sums(sessions: Sessions, model_name: str, values, layout, e_step: str, dens: bool):
    """One partition's sums (runs on a worker)."""
    return e_step_sums(get_model(model_name), sessions.blocks(), values, layout, e_step, dens)


def add_sums(a, b):
    """Two partitions' sums added (runs on a worker)."""
    a += b
    return a


def partition_loglik(sessions: Sessions, model_name: str, values, layout) -> float:
    """One partition's log-likelihood (runs on a worker)."""
    return log_likelihood(get_model(model_name), sessions.blocks(), values, layout)


class DaskRunner:
    """A fit's runner on a Dask cluster (the methods of :class:`~rankcli.core.click_models.LocalRunner`)."""

    def __init__(self, target, model, sessions: Sessions, layout, e_step: str):
        self._stack = ExitStack()
        self.client = self._stack.enter_context(client_for(target))  # a --dask value, or a client held already
        require_workers(self.client)
        self.model_name, self.layout, self.e_step = model.name, layout, e_step
        self.n_sessions = sessions.n_sessions
        cuts = range(0, sessions.n_sessions, PARTITION_SESSIONS)
        parts = [subset(sessions, np.arange(a, min(a + PARTITION_SESSIONS, sessions.n_sessions))) for a in cuts]
        self.parts = self.client.scatter(parts)

    def _gather(self, fn, *args):
        futures = [self.client.submit(fn, part, self.model_name, *args, pure=False) for part in self.parts]
        return self.client.gather(futures)

    def sums(self, values, dens: bool):
        """The sums over every partition, added pairwise on the workers (in partition order), then fetched once:
        a partition's per-item sums are as large as the vocabulary."""
        shared = None if values is None else self.client.scatter([values], broadcast=True)[0]
        futures = [self.client.submit(partition_sums, part, self.model_name, shared, self.layout, self.e_step, dens,
                                      pure=False) for part in self.parts]
        while len(futures) > 1:
            futures = [self.client.submit(add_sums, futures[i], futures[i + 1], pure=False) if i + 1 < len(futures)
                       else futures[i] for i in range(0, len(futures), 2)]
        return futures[0].result()

    def loglik(self, values) -> float:
        """The log-likelihood over every partition."""
        shared = self.client.scatter([values], broadcast=True)[0]
        return float(sum(self._gather(partition_loglik, shared, self.layout)))

    def close(self) -> None:
        """Close the connection (and a local cluster)."""
        self._stack.close()


def runner_factory(spec: str):
    """What ``fit_log`` calls to make the runner of ``--dask spec`` (checked before the log is read)."""
    require_dask()
    parse_dask_target(spec)

    def make(model, sessions, layout, e_step):
        return DaskRunner(spec, model, sessions, layout, e_step)

    return make
