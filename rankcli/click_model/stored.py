"""A fitted click model to and from its directory (:mod:`rankcli.formats.click_model_dir`): the parameter tables
written, and the parameters read back for scoring or simulating another log."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankcli.click_model.logs import session_of_row
from rankcli.core.click_models import ITEM, RANK, RANK_PREV, SINGLE, ClickModel, FitResult, Layout, Prior, get_model
from rankcli.errors import InputError, UsageError


def parameter_tables(model: ClickModel, coded, result: FitResult) -> dict[str, dict]:
    """The tables of the model directory: family kind -> column -> values (see the format's docstring)."""
    from rankcli.formats.click_model_dir import item_strings

    tables: dict[str, dict] = {}
    kinds = {f.kind for f in model.families}
    if ITEM in kinds:
        keys = ({"relevance": coded.item_relevance} if coded.by == "relevance" else
                {"query": item_strings(coded.log.queries, coded.item_query),
                 "document": item_strings(coded.log.documents, coded.item_document)})
        tables["item"] = {**keys, **{f.name: result.values[f.name] for f in model.families if f.kind == ITEM},
                          "impressions": coded.impressions(), "clicks": coded.clicks()}
    R = coded.sessions.max_rank
    if RANK in kinds:
        shown = _shown_per_rank(coded.sessions.lengths, R)
        tables["rank"] = {"rank": np.arange(1, R + 1), **{f.name: result.values[f.name][:R]
                                                          for f in model.families if f.kind == RANK},
                          "impressions": shown, "clicks": _clicks_per_rank(coded.sessions, R)}
    if RANK_PREV in kinds:
        f = next(f for f in model.families if f.kind == RANK_PREV)
        k, j = np.tril_indices(R)  # rank k (0-based), previous click j in 0..k
        slot = k * R + j
        tables["rank_prev"] = {"rank": k + 1, "previous_click_rank": j, "distance": k + 1 - j,
                               f.name: result.values[f.name][slot],
                               "observations": result.denominators[f.name][slot].round().astype(np.int64)}
    singles = [f for f in model.families if f.kind == SINGLE]
    if singles:
        from rankcli.formats.arrow import strings_array

        tables["single"] = {"parameter": strings_array([f.name.encode() for f in singles]),
                            "value": np.array([float(result.values[f.name][0]) for f in singles])}
    return tables


def _shown_per_rank(lengths: np.ndarray, R: int) -> np.ndarray:
    """Sessions with a result at each rank."""
    per_length = np.bincount(lengths, minlength=R + 1)
    return per_length[::-1].cumsum()[::-1][1:R + 1].astype(np.int64)


def _clicks_per_rank(sessions, R: int) -> np.ndarray:
    rank = np.arange(sessions.offsets[-1]) - sessions.offsets[:-1][session_of_row(sessions.offsets)]
    return np.bincount(rank, weights=sessions.click, minlength=R)[:R].astype(np.int64)


@dataclass
class LoadedModel:
    """A click-model directory read back: the model, how its items are keyed, its prior and parameters."""

    stored: object  # rankcli.formats.click_model_dir.StoredModel
    model: ClickModel
    by: str
    prior: Prior
    values: dict[str, np.ndarray]  # family -> values, sized by (n_items, max_rank)
    n_items: int
    max_rank: int

    @property
    def per_item(self) -> bool:
        """Whether the model has per-item parameters (gctr and rctr have none: no document is looked up)."""
        return any(f.kind == ITEM for f in self.model.families)

    @property
    def info(self) -> dict:
        """The directory's model.json."""
        return self.stored.info

    def extended(self, max_rank: int) -> tuple[dict[str, np.ndarray], Layout]:
        """The parameters for a log whose sessions run to ``max_rank``, with one more item (index ``n_items``) at the
        prior's value for the items the model has no parameters for; ranks beyond the model's at the prior too."""
        R0, R = self.max_rank, max(self.max_rank, max_rank)
        mean = self.prior.mean
        out = {}
        for f in self.model.families:
            v = self.values[f.name]
            if f.kind == ITEM:
                out[f.name] = np.append(v, mean)
            elif f.kind == RANK:
                out[f.name] = np.concatenate((v[:R0], np.full(R - R0, mean)))
            elif f.kind == RANK_PREV:
                grid = np.full((R, R), mean)
                grid[:R0, :R0] = v.reshape(R0, R0)
                out[f.name] = grid.ravel()
            else:
                out[f.name] = v
        return out, Layout(self.n_items + 1, R)


def load_model(path) -> LoadedModel:
    """Read the click-model directory at ``path``."""
    from rankcli.formats.click_model_dir import read_click_model

    stored = read_click_model(path)
    info = stored.info
    try:
        model = get_model(str(info.get("model")))
    except UsageError as exc:  # model.json is input: a damaged or newer directory
        raise InputError(f"{stored.path}/model.json: {exc}") from None
    options = info.get("options") or {}
    try:
        num, den = options.get("prior", [1.0, 2.0])
        prior = Prior(float(num), float(den), float(options.get("cap", 1e-6)))
        R = int(info["log"]["max_rank"])
    except (TypeError, ValueError, KeyError) as exc:
        raise InputError(f"{stored.path}/model.json: incomplete ({exc})") from None
    values: dict[str, np.ndarray] = {}
    n_items = stored.tables["item"].num_rows if "item" in stored.tables else 0
    for f in model.families:
        kind = {ITEM: "item", RANK: "rank", RANK_PREV: "rank_prev", SINGLE: "single"}[f.kind]
        if kind not in stored.tables:
            raise InputError(f"{stored.path}: missing the {kind} parameters of a {model.name} model")
        if f.kind == SINGLE:
            names = stored.tables["single"].column("parameter").to_pylist()
            values[f.name] = np.array([stored.column("single", "value")[names.index(f.name)]])
        elif f.kind == RANK_PREV:
            grid = np.full(R * R, prior.mean)
            k, j = stored.column("rank_prev", "rank") - 1, stored.column("rank_prev", "previous_click_rank")
            grid[k * R + j] = stored.column("rank_prev", f.name)
            values[f.name] = grid
        else:
            values[f.name] = stored.column(kind, f.name).astype(np.float64)
    return LoadedModel(stored, model, str(info.get("by", "document")), prior, values, n_items, R)
