"""Position bias without randomisation: the propensity file of ``rankcli propensity --from-click-model MODEL_DIR``
(the examination curve of a fitted position-based model) and of ``--model pbm --regression-em`` (Wang, Golbandi,
Bendersky, Metzler and Najork, WSDM 2018: relevance as a gradient-boosted function of the features).

Both write what ``train --propensity`` reads: ``positions`` and ``propensity`` (the examination at each position over
the examination at position 1). A position-based model fitted per relevance grade is identified whenever grades are
shown at several positions; one fitted per (query, document) pair only when its documents connect the positions
(:mod:`rankcli.core.click_models.identify`): on one fixed ranker's log every document sits at one position and any
examination curve fits, so that is refused.
"""

from __future__ import annotations

import numpy as np

from rankcli.click_model.logs import code_log, session_of_row
from rankcli.click_model.stored import load_model
from rankcli.core.click_models.pbm_bootstrap import bootstrap_exam, key_counts
from rankcli.errors import InputError


def _intervals(replicates: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    tail = (1.0 - confidence) / 2.0
    return np.quantile(replicates, tail, axis=0), np.quantile(replicates, 1.0 - tail, axis=0)


def _check_identified(loaded, model_dir) -> None:
    if loaded.model.name != "pbm":
        raise InputError(f"{model_dir}: a {loaded.model.name} model; --from-click-model takes a position-based model "
                         "(click-model fit --model pbm), whose examination depends on the position alone")
    if loaded.by == "document" and loaded.info.get("ranks_connected") is False:
        raise InputError(f"{model_dir}: a per-(query, document) PBM fitted on a log that shows each document at one "
                         "position only (one fixed ranker's log): any examination curve explains it as well, the "
                         "attractiveness absorbing the difference, so its examination is not identified; fit with "
                         "--by relevance (grades shared across queries identify it), or on a randomised log")


def propensity_from_model(model_dir, *, bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0) -> dict:
    """The propensity record of the PBM at ``model_dir``, with percentile bootstrap intervals over its log's queries
    (each query's sessions drawn together; the log is read again and must be the one it was fitted on)."""
    from rankcli.formats.click_logs import read_session_log

    loaded = load_model(model_dir)
    _check_identified(loaded, model_dir)
    info_log = loaded.info.get("log") or {}
    log = read_session_log(info_log.get("path"), info_log.get("format", "auto"), unknown_clicks="ignore")
    if log.fingerprint != info_log.get("fingerprint"):
        raise InputError(f"{info_log.get('path')}: changed since {model_dir} was fitted on it (its fingerprint "
                         "differs); the bootstrap refits the model on the log it was fitted on")
    coded = code_log(log, loaded.by)
    s = coded.sessions
    row_session = session_of_row(s.offsets)
    rank = np.arange(s.item.shape[0]) - s.offsets[:-1][row_session]
    kc = key_counts(s.item, rank, s.click, log.query[row_session], s.n_items, s.max_rank)
    options = loaded.info.get("options") or {}
    _, replicates = bootstrap_exam(kc, bootstrap, int(options.get("iterations", 50)), loaded.prior,
                                   np.random.default_rng(seed))
    exam = loaded.values["exam"][:s.max_rank]
    low, high = _intervals(replicates / replicates[:, :1], confidence)
    shown = np.bincount(rank, minlength=s.max_rank)
    clicks = np.bincount(rank, weights=s.click, minlength=s.max_rank).astype(np.int64)
    return record("pbm-em", exam / exam[0], low, high, shown, clicks, log, source=str(model_dir),
                   extra={"bootstrap": bootstrap, "confidence": confidence, "seed": seed, "by": loaded.by,
                          "interval": "percentile bootstrap over queries (each query's sessions together)",
                          "queries": int(len(log.queries)), "click_model": "pbm",
                          "examination": [float(v) for v in exam]})


def record(method, propensity, low, high, shown, clicks, log, *, source, extra) -> dict:
    """A propensity file's record: what ``train --propensity`` reads (``positions``, ``propensity``), the intervals
    (null where there is none) and the counts per position."""
    def finite(v):
        return [float(x) if np.isfinite(x) else None for x in np.asarray(v, dtype=np.float64)]

    return {"method": method, "reference_position": 1, "positions": list(range(1, len(propensity) + 1)),
            "propensity": finite(propensity), "ci_low": finite(low), "ci_high": finite(high),
            "impressions_by_position": [int(v) for v in shown], "clicks_by_position": [int(v) for v in clicks],
            "sessions": int(log.n_sessions) if hasattr(log, "n_sessions") else int(log.n_queries), "source": source,
            **extra}
