"""Propensity estimation from a click-log file: reads the log's columns and footer, checks that the log can identify
propensities (randomised, position-based, no-click impressions kept; or several logs, one per logging policy, for
intervention harvesting), runs :mod:`rankcli.core.propensity` and writes
the result as JSON. Library code: returns result objects and raises :mod:`rankcli.errors`, never prints.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankcli.core.positions import checked_positions
from rankcli.core.propensity import MIN_CLICKS, PropensityEstimate, estimate
from rankcli.errors import InputError, UsageError

#: The position every propensity is relative to (its propensity is 1 by definition; the others may exceed 1 by chance).
REFERENCE_POSITION = 1
#: The fitted click models (simulate-clicks --model MODEL_DIR) whose examination depends on the clicks above.
CLICK_DEPENDENT = ("ubm", "dcm", "ccm", "dbn", "sdbn")
#: Logging policies whose logs identify propensities, and the estimator each one takes.
POLICY_METHODS = {"random": "click-rate", "top": "click-rate", "swap": "swap-ratio"}


@dataclass
class PropensityResult:
    """A propensity estimate with where it came from: what ``rankcli propensity`` reports and writes."""

    estimate: PropensityEstimate
    source: str
    policy: str  # random | top:N | swap:K; harvesting: the logs' rankers joined by ' + '
    click_model: str | None  # from the footer (None: stated by --policy, not recorded)
    log_params: dict  # the footer's rankcli.clicks, when present

    def as_dict(self) -> dict:
        """The propensity file's JSON object (non-finite interval ends as ``None``)."""
        e = self.estimate
        return {
            "method": e.method,
            "reference_position": REFERENCE_POSITION,
            "positions": [int(p) for p in e.positions],
            "propensity": _finite(e.propensity),
            "ci_low": _finite(e.ci_low),
            "ci_high": _finite(e.ci_high),
            "impressions": e.impressions,
            "clicks": e.clicks,
            "fitted": [bool(v) for v in e.fitted],
            "near_threshold": [bool(v) for v in e.near_threshold],
            "near_threshold_clicks": e.near_threshold_clicks,
            "clicks_by_position": [int(v) for v in e.clicks_by_position],
            "reference_clicks": [int(v) for v in e.reference_clicks],
            "impressions_by_position": [int(v) for v in e.impressions_by_position],
            "stopped_at": e.stopped_at,
            "max_position": e.max_position,
            "min_clicks": e.min_clicks,
            "fit": e.fit,
            "notes": list(e.notes),
            "confidence": e.confidence,
            "bootstrap": e.bootstrap,
            "interval": "percentile bootstrap over source queries",
            "queries": e.queries,
            "policy": self.policy,
            "click_model": self.click_model,
            "source": self.source,
            "log": self.log_params,
        }


def _finite(values) -> list[float | None]:
    """Floats for JSON; ``None`` (null) where a value is not finite (an interval no bootstrap replicate defined)."""
    values = np.asarray(values, dtype=np.float64)
    out = values.tolist()
    for i in np.flatnonzero(~np.isfinite(values)):
        out[i] = None
    return out


def parse_policy(text: str) -> tuple[str, int | None]:
    """``text`` (``--policy``): ``random`` | ``top:N`` | ``swap:K`` -> ``(kind, number)``; a :class:`UsageError`
    otherwise."""
    t = str(text).strip().lower()
    if t == "random":
        return "random", None
    kind, sep, number = t.partition(":")
    try:
        value = int(number)
    except ValueError:
        value = 0
    if not sep or kind not in ("top", "swap") or value < 1:
        raise UsageError(f"--policy: expected random, top:N or swap:K (N, K positive integers), got {text!r}")
    return kind, value


def logging_policy(path: Path | str, meta: dict[str, str], override: str | None) -> tuple[str, int | None, str | None,
                                                                                        dict]:
    """The logging policy ``(kind, number)``, click model and footer parameters of the click log at ``path`` whose
    footer keys are ``meta``; refuses (exit 3) a log that cannot identify propensities, saying why and how to make one
    that can. ``override`` (``--policy``) states the policy of a log without rankcli's footer, or replaces the
    footer's."""
    params = click_footer(path, meta)
    model = params.get("model")
    if override is not None:
        kind, number = parse_policy(override)
    elif not params:
        raise InputError(f"{path}: no rankcli.clicks footer (not written by rankcli simulate-clicks), so how it was "
                         "logged is unknown; pass --policy random|top:N|swap:K if it was randomised that way, with a "
                         "position-based click model and every impression kept, including those without a click")
    else:
        policy = params.get("policy", "random" if params.get("ranker") == "random" else "none")
        if policy == "none":
            raise InputError(
                f"{path}: logged in ranker {params.get('ranker')!r}'s own order without randomisation, so position "
                "and relevance are confounded; simulate with --randomize top:N or --randomize swap:K (or --ranker "
                "random), or give the logs of several rankers (rankcli propensity A.parquet B.parquet ...: "
                "intervention harvesting needs randomisation or several policies)")
        kind, number = _footer_policy(path, policy)
    _check_position_based(path, model, params)
    return kind, number, model, params


def _footer_policy(path: Path | str, policy: object) -> tuple[str, int | None]:
    """The policy a click log's footer records, parsed; a value no rankcli wrote is the log's fault (exit 3), not a
    --policy option's (none was given)."""
    try:
        return parse_policy(policy if isinstance(policy, str) else repr(policy))
    except UsageError:
        raise InputError(f"{path}: footer key rankcli.clicks records the logging policy {policy!r}, which is none of "
                         "random, top:N, swap:K; pass --policy to state how the log was randomised") from None


def click_footer(path: Path | str, meta: dict[str, str]) -> dict:
    """The ``rankcli.clicks`` footer of a click log as a dict (empty for a log rankcli did not write)."""
    if "clicks" not in meta:
        return {}
    try:
        params = json.loads(meta["clicks"])
    except ValueError:
        raise InputError(f"{path}: footer key rankcli.clicks is not JSON") from None
    if not isinstance(params, dict):
        raise InputError(f"{path}: footer key rankcli.clicks is not a JSON object")
    return params


def _check_position_based(path: Path | str, model: str | None, params: dict) -> None:
    """Refuse a log whose clicks cannot identify examination propensities: a cascade log, or one without its no-click
    impressions."""
    if model == "cascade":
        raise InputError(
            f"{path}: made with the cascade click model, whose examination depends on the clicks above (the scan "
            "stops at the first click), which breaks the position-based assumption behind propensities; simulate "
            "with --model pbm")
    if model in CLICK_DEPENDENT:
        raise InputError(
            f"{path}: simulated from a fitted {model} click model, whose examination depends on the clicks above, "
            "which breaks the position-based assumption behind propensities; simulate from a fitted pbm")
    if params.get("keep_no_click") is False:
        raise InputError(
            f"{path}: impressions without a click were dropped (footer keep_no_click false), which inflates the "
            "click rate of every position unevenly; simulate again with --keep-no-click")


def check_debiasable(path: Path | str, meta: dict[str, str]) -> tuple[str | None, dict]:
    """The click model and footer parameters of the click log at ``path`` (footer keys ``meta``), refusing (exit 3) a
    log whose clicks cannot be debiased by examination propensities: a cascade log, or one without its no-click
    impressions. The one check behind ``rankcli propensity`` (every log) and IPS training (``train --propensity``);
    a log without rankcli's footer passes (its click model is not recorded)."""
    params = click_footer(path, meta)
    model = params.get("model")
    _check_position_based(path, model, params)
    return model, params


def _policy_name(params: dict) -> str:
    """A log's logging policy in words, from its footer: the ranker, and its randomisation if any."""
    if not params:
        return "unrecorded"
    ranker = str(params.get("ranker", "unrecorded"))
    policy = params.get("policy", "none")
    return ranker if policy in (None, "none") or ranker == "random" else f"{ranker} {policy}"


def estimate_harvest(paths: list[Path | str], *, bootstrap: int = 1000, confidence: float = 0.95,
                     min_clicks: int = MIN_CLICKS, fit: str = "none", rng: np.random.Generator) -> PropensityResult:
    """Intervention harvesting (:func:`rankcli.core.propensity.estimate`, method ``harvest``) over the logs at
    ``paths``, each the log of one logging policy on the same dataset: a document is the same document in every log
    when its ``source_qid`` and ``docid`` (or ``source_row`` when the data has no docid) agree. ``bootstrap``,
    ``confidence``, ``min_clicks``, ``fit`` and ``rng`` are :func:`~rankcli.core.propensity.estimate`'s."""
    from rankcli.formats.clicks import document_codes, read_click_columns, read_document_column
    from rankcli.formats.parquet import read_metadata

    models, footers, parts, doc_cols = [], [], [], []
    for path in paths:
        model, params = check_debiasable(path, read_metadata(path))
        models.append(model)
        footers.append(params)
        cols = read_click_columns(path, swap=False)
        if cols["offsets"].shape[0] == 1:
            raise InputError(f"{path}: the click log holds no impressions")
        try:  # named per log here: the estimate sees the logs concatenated
            cols["position"] = checked_positions(cols["offsets"], cols["position"], cols["impression_qid"])
        except InputError as exc:
            raise InputError(f"{path}: {exc}") from None
        parts.append(cols)
        doc_cols.append(read_document_column(path))
    if len(paths) == 1 and footers[0] and footers[0].get("ranker") != "random" \
            and footers[0].get("policy", "none") in (None, "none"):
        raise InputError(
            f"{paths[0]}: one log in ranker {footers[0].get('ranker')!r}'s own order shows every document of a query "
            "at one position only, so no document is an intervention; intervention harvesting needs randomisation "
            "or several policies: give the logs of several rankers (rankcli propensity A.parquet B.parquet ...)")
    offsets, shift = [np.zeros(1, np.int64)], 0
    for cols in parts:
        offsets.append(cols["offsets"][1:] + shift)
        shift += int(cols["offsets"][-1])
    offsets = np.concatenate(offsets)
    cat = {k: np.concatenate([c[k] for c in parts]) for k in ("position", "label", "source_qid")}
    doc_index = document_codes(doc_cols)
    source_row_q = cat["source_qid"]
    _, query_row = np.unique(source_row_q, return_inverse=True)
    query_row = query_row.reshape(-1)
    _, document = np.unique(query_row * (int(doc_index.max()) + 1) + doc_index, return_inverse=True)
    query = query_row[offsets[:-1]]
    try:
        est = estimate(offsets, query, cat["position"], cat["label"], method="harvest",
                       document=document.reshape(-1), bootstrap=bootstrap, confidence=confidence,
                       min_clicks=min_clicks, fit=fit, rng=rng)
    except InputError as exc:
        raise InputError(f"{', '.join(map(str, paths))}: {exc}") from None
    known = {m for m in models if m is not None}
    return PropensityResult(estimate=est, source=", ".join(map(str, paths)),
                            policy=" + ".join(_policy_name(p) for p in footers),
                            click_model=known.pop() if len(known) == 1 else None, log_params={"logs": footers})


def estimate_propensity(path: Path | str, *, policy: str | None = None, bootstrap: int = 1000,
                        confidence: float = 0.95, min_clicks: int = MIN_CLICKS, fit: str = "none",
                        rng: np.random.Generator) -> PropensityResult:
    """Estimate examination propensities per position from the randomised click log at ``path``, by the estimator
    its logging policy takes (:data:`POLICY_METHODS`); ``policy`` states the policy when the footer does not (see
    :func:`logging_policy`). ``bootstrap``, ``confidence``, ``min_clicks``, ``fit`` and ``rng`` are
    :func:`rankcli.core.propensity.estimate`'s."""
    from rankcli.formats.clicks import read_click_columns
    from rankcli.formats.parquet import read_metadata

    kind, number, model, params = logging_policy(path, read_metadata(path), policy)
    cols = read_click_columns(path, swap=kind == "swap")
    offsets = cols["offsets"]
    if offsets.shape[0] == 1:
        raise InputError(f"{path}: the click log holds no impressions")
    source = cols["source_qid"][offsets[:-1]]
    _, query = np.unique(source, return_inverse=True)
    kw = {}
    if kind == "swap":
        kw = {"tracked": cols["ranker_rank"] == number, "swap_position": number}
    try:
        est = estimate(offsets, query.reshape(-1), cols["position"], cols["label"], method=POLICY_METHODS[kind],
                       max_position=number if kind == "top" else None, bootstrap=bootstrap, confidence=confidence,
                       min_clicks=min_clicks, fit=fit, rng=rng, impression_ids=cols["impression_qid"], **kw)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    policy_text = "random" if kind == "random" else f"{kind}:{number}"
    return PropensityResult(estimate=est, source=str(path), policy=policy_text, click_model=model, log_params=params)


def estimate_logs(paths: list[Path | str], *, harvest: bool = False, policy: str | None = None, bootstrap: int = 1000,
                  confidence: float = 0.95, min_clicks: int = MIN_CLICKS, fit: str = "none",
                  seed: int = 0) -> PropensityResult:
    """What ``rankcli propensity`` estimates from the click logs at ``paths``: intervention harvesting over all of them
    (:func:`estimate_harvest`) when ``harvest``, else one randomised log's propensities (:func:`estimate_propensity`,
    ``policy`` stating its logging policy when its footer does not).

    Parameters
    ----------
    paths : list of path
        Click logs; one unless ``harvest``.
    harvest : bool
        Intervention harvesting (the command's choice: ``--method harvest`` or several logs).
    policy : str, optional
        ``random``, ``top:N`` or ``swap:K``: the single log's policy (:func:`logging_policy`).
    bootstrap, confidence, min_clicks, fit
        As :func:`rankcli.core.propensity.estimate` takes them.
    seed : int
        The bootstrap's seed.
    """
    rng = np.random.default_rng(seed)
    if harvest:
        return estimate_harvest(paths, bootstrap=bootstrap, confidence=confidence, min_clicks=min_clicks, fit=fit,
                                rng=rng)
    return estimate_propensity(paths[0], policy=policy, bootstrap=bootstrap, confidence=confidence,
                               min_clicks=min_clicks, fit=fit, rng=rng)
