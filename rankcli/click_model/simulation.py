"""``simulate-clicks --model MODEL_DIR``: click logs drawn from a fitted click model, with the logging policies of
:mod:`rankcli.simulate`, in the same click-log format (so ``propensity`` and ``train --propensity`` take them).

A model fitted per relevance grade gives every row of the dataset its grade's parameters (the dataset's labels are
the grades); a model fitted per (query, document) pair gives a row the parameters of its (qid, docid) pair (the
dataset the log was simulated from, or logged on), and the prior's value to a pair it never saw (counted).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rankcli.click_model.stored import load_model
from rankcli.core.click_models.simulation import simulate
from rankcli.core.labels import to_grades
from rankcli.errors import InputError, UsageError


def is_model_dir(text: str) -> bool:
    """Whether ``simulate-clicks --model`` names a click-model directory (rather than ``cascade`` or ``pbm``)."""
    p = Path(str(text))
    return p.is_dir() and (p / "model.json").is_file()


def _items(loaded, ds) -> np.ndarray:
    from rankcli.formats.click_model_dir import match_dataset, match_grades

    if not loaded.per_item:  # gctr, rctr: every row has the model's parameters
        return np.full(ds.n_rows, loaded.n_items, dtype=np.int64)
    if loaded.by == "relevance":
        found = match_grades(loaded.stored, ds.labels)
    else:
        found = match_dataset(loaded.stored, ds.qids, ds.offsets, ds.docids)
    if ds.n_rows and (found < 0).all():
        what = "label" if loaded.by == "relevance" else "(qid, docid) pair"
        raise InputError(f"no {what} of the dataset has parameters in the click model {loaded.stored.path} (fitted "
                         f"per {loaded.by} on {loaded.info.get('log', {}).get('path')}); "
                         + ("its grades are other values" if loaded.by == "relevance" else
                            "fit the model on a log of this dataset's documents, or --by relevance"))
    return found


def simulate_with_model(ds, model_dir, *, impressions: int, display_rank, randomize, max_rank: int | None,
                        keep_no_click: bool, rng: np.random.Generator):
    """``(click log, parameters for the summary, grade values)`` of ``impressions`` impressions per query of ``ds``
    drawn from the click model at ``model_dir`` (``display_rank``: the ranker's 0-based rank per row, None for a
    fresh random order per impression)."""
    loaded = load_model(model_dir)
    if max_rank is not None and max_rank > loaded.max_rank:
        raise UsageError(f"--max-rank {max_rank}: the click model {model_dir} has parameters for ranks 1 to "
                         f"{loaded.max_rank} only")
    shown = max_rank if max_rank is not None else loaded.max_rank
    found = _items(loaded, ds)
    item_of_row = np.where(found < 0, loaded.n_items, found)
    values, layout = loaded.extended(shown)
    grades, grade_values = to_grades(ds.labels)
    log = simulate(loaded.model, values, layout, item_of_row, grades, ds.offsets, impressions, rng,
                   display_rank=display_rank, max_rank=shown, keep_no_click=keep_no_click, randomize=randomize)
    shown_rows = np.zeros(ds.n_rows, bool)
    shown_rows[log.rows] = True
    params = {"click_model": str(model_dir), "fitted_model": loaded.model.name, "by": loaded.by,
              "fitted_on": (loaded.info.get("log") or {}).get("path"), "max_rank": int(shown),
              "rows_without_parameters": int((found < 0).sum())}
    return log, params, grade_values
