"""IPS training data from a click log: the log's impressions pooled into one list per source query, labelled with each
document's IPS relevance (:mod:`rankcli.core.ips`) for a library loss. Orchestration: works on a
:class:`~rankcli.dataset.Dataset`, never prints, reads a propensity file only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rankcli.core import ips as core
from rankcli.core.losses import guard_hessian
from rankcli.core.positions import checked_positions
from rankcli.dataset import Dataset
from rankcli.errors import InputError, SchemaError, UsageError
from rankcli.formats.propensity import read_propensity
from rankcli.propensity import check_debiasable

#: Click-log columns the pooling reads besides qid, label and the features.
LOG_COLUMNS = ("source_qid", "position", "source_row")


def parse_propensity(text: str) -> tuple[str, object]:
    """The ``--propensity`` value ``text``: ``pbm:ETA`` -> ``("pbm", eta)``; ``learn`` -> ``("learn", None)``
    (LightGBM's position-bias model, lambdamart only); anything else is a propensity JSON file (``rankcli propensity
    -o``) -> ``("file", path)``."""
    t = str(text).strip()
    if t.lower().startswith("pbm:"):
        try:
            eta = float(t[4:])
        except ValueError:
            eta = float("nan")
        if not (eta >= 0) or not np.isfinite(eta):
            raise UsageError(f"--propensity pbm:ETA: expected a non-negative number, got {t!r}")
        return "pbm", eta
    if t.lower() == "learn":
        return "learn", None
    return "file", Path(t)


#: The losses ``--propensity learn`` takes: LightGBM's position-bias model is part of its lambdarank objective.
LEARN_LOSSES = ("lambdamart",)


def check_ips_loss(loss: str, kind: str | None = None) -> None:
    """``kind`` ``"learn"``: only :data:`LEARN_LOSSES`; otherwise (a propensity file, ``pbm:ETA``, or pooling without
    propensities: ``None``) only the losses whose labels carry the IPS relevance linearly
    (:data:`rankcli.core.ips.IPS_LOSSES`)."""
    if kind == "learn":
        if loss in LEARN_LOSSES:
            return
        raise UsageError(f"--propensity learn is LightGBM's position-bias model for --loss lambdamart (unbiased "
                         f"LambdaMART), not --loss {loss}; with {', '.join(core.IPS_LOSSES)} give a propensity file "
                         "(rankcli propensity) or pbm:ETA")
    if loss in core.IPS_LOSSES:
        return
    if loss == "lambdamart":
        raise UsageError("--loss lambdamart: LightGBM's per-document weights scale a document's summed lambda, which "
                         "is not pairwise IPS; use --loss ranknet (the pairwise IPS loss), or xendcg, listnet or "
                         "pointwise, or --propensity learn (LightGBM's own position-bias model for lambdamart)")
    if loss in core.IPS_REFUSED:
        raise UsageError(f"{core.IPS_REFUSED[loss]}; use {', '.join(core.IPS_LOSSES)}")
    if loss == "xendcg-native":
        raise UsageError("--loss xendcg-native: LightGBM's rank_xendcg casts labels to integers, which would round the "
                         "IPS relevance away; use --loss xendcg (the same loss, in rankcli)")
    raise UsageError(f"--loss {loss}: IPS training is implemented for {', '.join(core.IPS_LOSSES)}, not {loss}")


class RankNetIPSObjective:
    """The pairwise IPS loss (:func:`rankcli.core.ips.ranknet_ips_grad_hess`) as a LightGBM callable objective
    ``(preds, train_data) -> (grad, hess)`` on a pooled training set whose labels are the IPS relevances ``gain``
    (grouped by query, ``offsets`` the query boundaries)."""

    def __init__(self, gain: np.ndarray, offsets: np.ndarray):
        self.gain = np.asarray(gain, dtype=np.float64)
        self.offsets = np.asarray(offsets, dtype=np.int64)

    def __deepcopy__(self, memo: dict) -> RankNetIPSObjective:
        return self

    def __call__(self, preds: np.ndarray, train_data=None) -> tuple[np.ndarray, np.ndarray]:
        grad, hess = core.ranknet_ips_grad_hess(self.gain, np.asarray(preds, dtype=np.float64), self.offsets)
        # as every library loss's step: no unbounded Newton step where the curvature underflows
        return grad, guard_hessian(grad, hess, self.offsets)


def objective_for(loss: str, pooled: Dataset):
    """The callable objective that replaces ``loss``'s own in IPS training on the ``pooled`` training set, or
    ``None`` (the library loss on the transformed labels is already the IPS loss)."""
    return RankNetIPSObjective(pooled.labels, pooled.offsets) if loss == "ranknet" else None


def position_training_set(ds: Dataset, *, allow_graded: bool = False,
                          what: str = "training data") -> tuple[Dataset, np.ndarray, dict]:
    """The click log ``ds`` as it is (each impression one list) with each row's displayed position, for LightGBM's
    position-bias model (``--propensity learn``). ``allow_graded`` weights graded labels as clicks; ``what`` names
    the data in messages. Returns the training set, the positions and what ``rankcli.json`` records about them (the
    learned biases are added after training)."""
    if "position" not in ds.extra:
        raise SchemaError(f"{what}: missing column position: --propensity learn needs the position each document was "
                          "displayed at (a click log from rankcli simulate-clicks)")
    clicks = np.asarray(ds.labels, dtype=np.float64)
    _check_clicks(clicks, allow_graded, what)
    positions = _checked_positions(ds, what)
    info = {
        "mode": "learn",
        "propensity": {"source": "learn"},
        "impressions": int(ds.n_queries),
        "positions": int(np.unique(positions).shape[0]),
        "clicks": int(np.count_nonzero(clicks)),
    }
    return ds, positions, info


def _checked_positions(ds: Dataset, what: str) -> np.ndarray:
    """The log's ``position`` column checked (:func:`rankcli.core.positions.checked_positions`: whole numbers up to
    the limit, none twice within an impression), as int64; messages name ``what`` and the impression's qid."""
    try:
        return checked_positions(ds.offsets, np.asarray(ds.extra["position"]), ds.qids[ds.offsets[:-1]])
    except InputError as exc:
        raise InputError(f"{what}: {exc}") from None


def _check_clicks(clicks: np.ndarray, allow_graded: bool, what: str) -> None:
    if not allow_graded:
        bad = np.flatnonzero((clicks != 0) & (clicks != 1))
        if bad.shape[0]:
            raise InputError(f"{what}: label of row {int(bad[0])} is {clicks[bad[0]]:g}, not a click (0 or 1); IPS "
                             "weights clicks. Pass --allow-graded to weight graded labels the same way")
    if clicks.shape[0] and not np.any(clicks != 0):
        raise InputError(f"{what}: column label holds no click (every label is 0): there is nothing to learn "
                         "position biases or relevance from")


def _propensities(spec: tuple[str, object] | None, max_position: int) -> tuple[np.ndarray, dict]:
    if spec is None:
        return np.ones(max_position), {"source": None}
    kind, value = spec
    if kind == "values":  # propensities estimated in memory (experiment --position-bias): position r at [r - 1]
        return np.asarray(value, dtype=np.float64), {"source": "estimate"}
    if kind == "pbm":
        return core.pbm_propensities(float(value), max_position), {"source": f"pbm:{float(value):g}"}

    data = read_propensity(value)
    return np.asarray(data["propensity"], dtype=np.float64), {"source": str(value), "method": data.get("method")}


def pooled_training_set(ds: Dataset, *, loss: str, propensity: tuple[str, object] | None,
                        clip: float = core.DEFAULT_CLIP, allow_graded: bool = False,
                        what: str = "training data") -> tuple[Dataset, dict]:
    """The click log ``ds`` (with ``extra`` columns ``source_qid``, ``position`` and ``docids`` or ``source_row``)
    pooled per source query, labelled for ``loss``; ``propensity`` ``None`` pools the naive click-through rates
    (``--pool-impressions``), ``("values", array)`` takes propensities computed in memory (position ``r`` at
    ``array[r - 1]``). ``clip`` floors the propensities; ``allow_graded`` weights graded labels as clicks; ``what``
    names the data in messages. Returns the training set and what ``rankcli.json`` records about it.

    With propensities the log must be one they can debias (:func:`rankcli.propensity.check_debiasable`, the check
    ``rankcli propensity`` makes: not a cascade log, no-click impressions kept); positions are checked in every mode
    (:func:`rankcli.core.positions.checked_positions`). The gains are divided by :func:`rankcli.core.ips.target_scale`
    before they become labels, naive and IPS alike, so that the two differ only in the propensities."""
    check_ips_loss(loss)
    for name in ("source_qid", "position"):
        if name not in ds.extra:
            raise SchemaError(f"{what}: missing column {name}: IPS training needs a click log from rankcli "
                              "simulate-clicks (source_qid, position)")
    if ds.docids is not None:
        doc_key = ds.docids.astype(str)
    elif "source_row" in ds.extra:
        doc_key = np.asarray(ds.extra["source_row"], dtype=np.int64)
    else:
        raise SchemaError(f"{what}: missing column docid (or source_row): IPS training pools each document's clicks")
    if propensity is not None:  # IPS: the log must be one whose clicks propensities can debias, as propensity checks
        check_debiasable(what, ds.metadata)
    clicks = np.asarray(ds.labels, dtype=np.float64)
    _check_clicks(clicks, allow_graded, what)
    positions = _checked_positions(ds, what)
    top = int(positions.max()) if positions.shape[0] else 1
    p, source = _propensities(propensity, top)
    try:
        weights = core.inverse_weights(positions, p, clip)
    except InputError as exc:
        raise InputError(f"{what}: {exc} (propensities from {source['source'] or 'all 1'})") from None
    impression = np.repeat(np.arange(ds.n_queries, dtype=np.int64), np.diff(ds.offsets))
    pooled = core.pool(np.asarray(ds.extra["source_qid"]), doc_key, impression, clicks, weights)
    sizes = np.diff(pooled.offsets)
    scale = core.target_scale(pooled.gain)
    out = Dataset(
        qids=np.repeat(np.asarray(pooled.query_keys, dtype=np.int64), sizes),
        labels=core.training_labels(loss, pooled.gain / scale),
        features=None if ds.features is None else ds.features[pooled.rows],
        feature_names=list(ds.feature_names),
        docids=None if ds.docids is None else ds.docids[pooled.rows],
        offsets=pooled.offsets,
        metadata=dict(ds.metadata),
    )
    info = {
        "mode": "ips" if propensity is not None else "pooled-click-through-rate",
        "propensity": {**source, "values": [float(v) for v in p[:top]], "clip": float(clip)},
        "impressions": int(ds.n_queries),
        "queries": int(sizes.shape[0]),
        "documents": int(pooled.rows.shape[0]),
        "labels": core.IPS_LABELS[loss].formula,
        "target_scale": {"rule": core.TARGET_SCALE, "divisor": scale},
    }
    return out, info
