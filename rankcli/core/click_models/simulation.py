"""Click logs drawn from a fitted click model: impressions of a dataset's queries shown by a logging policy, clicked as
the model says. Pure numpy.

Every query of equal list size is simulated at once (chunks of at most :data:`CHUNK_CELLS` displayed results): the
display orders are those of :mod:`rankcli.core.clicks` (a fresh shuffle per impression, a ranker's order, or a
randomised one, :func:`rankcli.core.policies.randomized_orders`), each displayed result takes its item's parameters
(``item_of_row``) and its position's, and the model's own walk (:meth:`ClickModel.simulate`) draws the clicks. The
output is a :class:`~rankcli.core.click_log.ClickLog`, as the hand-set models' simulations give.
"""

from __future__ import annotations

import numpy as np

from rankcli.core.click_log import ClickLog, ListCollector
from rankcli.core.click_models.base import ITEM, RANK, RANK_PREV, ClickModel
from rankcli.core.click_models.em import Layout
from rankcli.core.clicks import display_orders, groups_by_size


def list_parameters(model: ClickModel, values: dict[str, np.ndarray], items: np.ndarray, layout: Layout) -> dict:
    """The parameters of ``(L, m)`` displayed results showing ``items``, as :meth:`ClickModel.simulate` takes them."""
    L = items.shape[0]
    out = {}
    for f in model.families:
        v = values[f.name]
        if f.kind == ITEM:
            out[f.name] = np.take(v, items)
        elif f.kind == RANK:
            out[f.name] = v[:L][:, None]
        elif f.kind == RANK_PREV:
            out[f"{f.name}:grid"] = v.reshape(-1, layout.max_rank, layout.max_rank)
        else:
            out[f.name] = v[0]
    return out


def simulate(model: ClickModel, values: dict[str, np.ndarray], layout: Layout, item_of_row: np.ndarray,
             grades: np.ndarray, offsets: np.ndarray, impressions: int, rng: np.random.Generator, *,
             display_rank: np.ndarray | None = None, max_rank: int | None = None, keep_no_click: bool = False,
             randomize=None) -> ClickLog:
    """Simulate ``impressions`` impressions of every query of ``offsets`` from ``model``.

    Parameters
    ----------
    model, values, layout
        The fitted model, its parameters and their sizes (``layout.max_rank`` at least the longest displayed list).
    item_of_row : (n_rows,) int
        The item whose parameters each source row takes.
    grades : (n_rows,) int
        Small non-negative grades, for the log's counts per grade.
    offsets : (n_queries + 1,) int64
        The source queries.
    impressions, rng, display_rank, max_rank, keep_no_click, randomize
        As :func:`rankcli.core.clicks.simulate` takes them.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    n_max = int(sizes.max()) if sizes.size else 0
    width = n_max if max_rank is None else min(n_max, max_rank)
    n_grades = int(grades.max()) + 1 if grades.size else 1
    coll = ListCollector(sizes.shape[0], impressions, n_grades, width)
    for qs, n in groups_by_size(sizes, impressions):
        shown = n if max_rank is None else min(n, max_rank)
        order = display_orders(qs, n, shown, offsets, impressions, display_rank, randomize, rng)
        src = np.repeat(offsets[qs], impressions)[:, None] + order  # (M, shown) source row at each position
        p = list_parameters(model, values, np.ascontiguousarray(item_of_row[src].T), layout)
        clicks, examined = model.simulate(p, (shown, src.shape[0]), rng)
        coll.add(qs, src, grades[src], np.ascontiguousarray(clicks.T), np.ascontiguousarray(examined.T))
    return coll.finish(keep_no_click)
