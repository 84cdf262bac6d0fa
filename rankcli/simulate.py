"""Click-log simulation: a dataset with graded labels in, a dataset of simulated impressions out.

Orchestration around :mod:`rankcli.core.clicks`: maps labels to grades, turns a ranker into a display order, runs the
click model and builds the output :class:`~rankcli.dataset.Dataset` (one row per displayed document, ``label`` = the
click) plus a :class:`ClickSummary`. Never prints and never touches files (except loading a model directory).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankcli.core import clicks as core
from rankcli.core.groups import rank_within, sizes
from rankcli.core.labels import require_integer_grades, to_grades
from rankcli.core.policies import RANDOMIZATIONS
from rankcli.dataset import Dataset
from rankcli.dataset.feature_transform import FOOTER_KEY
from rankcli.errors import UsageError

#: The paper's click probabilities for grades 0..4 (Bruch 2021, Robustness 3).
PAPER_CLICK_PROBS = (0.05, 0.3, 0.5, 0.7, 0.95)
RANKERS = ("random", "label", "input")
#: The most displayed documents a simulation may produce (impressions x documents shown per impression, before
#: impressions without a click are dropped): the log takes about 30 bytes a row, plus 4 per feature in the output.
MAX_SIMULATED_ROWS = 100_000_000


@dataclass
class ClickSummary:
    """What a simulation produced. Rates are over *all* simulated impressions, dropped ones included."""

    model: str
    ranker: str
    impressions: int  # simulated
    kept: int  # impressions in the output
    clicks: int  # clicks in the output
    dropped: int  # impressions without a click that were dropped
    rows: int  # displayed documents in the output
    params: dict = field(default_factory=dict)
    shown_by_grade: list[int] = field(default_factory=list)
    clicks_by_grade: list[int] = field(default_factory=list)
    shown_by_position: list[int] = field(default_factory=list)
    clicks_by_position: list[int] = field(default_factory=list)
    examined_by_position: list[int] | None = None
    grade_values: list[float] | None = None  # with label_grades: the label value of each grade

    @property
    def click_rate_by_grade(self) -> list[float]:
        """Clicks over displayed documents per grade (NaN for a grade never shown)."""
        return [c / s if s else float("nan") for c, s in zip(self.clicks_by_grade, self.shown_by_grade)]

    @property
    def click_rate_by_position(self) -> list[float]:
        """Clicks over displayed documents per position (NaN for a position never shown)."""
        return [c / s if s else float("nan") for c, s in zip(self.clicks_by_position, self.shown_by_position)]

    def as_dict(self) -> dict:
        """The summary as ``simulate-clicks --json`` prints it (without ``output`` and ``seed``)."""
        out = {
            "model": self.model,
            "ranker": self.ranker,
            "params": self.params,
            "impressions": self.impressions,
            "kept_impressions": self.kept,
            "dropped_impressions": self.dropped,
            "clicks": self.clicks,
            "rows": self.rows,
            "by_grade": [
                {"grade": g, **({"label": self.grade_values[g]}
                                if self.grade_values is not None and g < len(self.grade_values) else {}),
                 "shown": s, "clicks": c, "click_rate": r}
                for g, (s, c, r) in enumerate(zip(self.shown_by_grade, self.clicks_by_grade,
                                                  self.click_rate_by_grade))
            ],
            "by_position": [
                {"position": i + 1, "shown": s, "clicks": c, "click_rate": r,
                 **({"examined": self.examined_by_position[i]} if self.examined_by_position is not None else {})}
                for i, (s, c, r) in enumerate(zip(self.shown_by_position, self.clicks_by_position,
                                                  self.click_rate_by_position))
            ],
        }
        return out


def parse_click_probs(text: str) -> tuple[float, ...]:
    """``text`` (``--click-probs``: comma-separated, e.g. ``"0.05,0.3,0.5"``) -> a tuple of probabilities in [0, 1];
    a :class:`UsageError` saying what is wrong otherwise."""
    parts = [p.strip() for p in str(text).split(",")]
    out = []
    for p in parts:
        try:
            v = float(p)
        except ValueError:
            raise UsageError(f"--click-probs: expected comma-separated probabilities like 0.05,0.3,0.5,0.7,0.95, "
                             f"got {p!r}") from None
        if not (0.0 <= v <= 1.0):
            raise UsageError(f"--click-probs: probabilities must be within [0, 1], got {p}")
        out.append(v)
    return tuple(out)


def parse_randomize(text: str | None) -> tuple[str, int] | None:
    """``text`` (``--randomize``): ``"top:10"`` -> ``("top", 10)`` (RandTop-n), ``"swap:3"`` -> ``("swap", 3)`` (swap
    intervention); ``None`` or ``"none"`` -> ``None``. Anything else is a :class:`UsageError` showing the grammar."""
    if text is None or str(text).strip().lower() == "none":
        return None
    kind, sep, number = str(text).strip().partition(":")
    kind = kind.strip().lower()
    try:
        value = int(number.strip())
    except ValueError:
        value = 0
    if not sep or kind not in RANDOMIZATIONS or value < 1:
        raise UsageError(f"--randomize: expected top:N (shuffle the ranker's top N per impression) or swap:K (swap "
                         f"position K with a random position), N and K positive integers, got {text!r}")
    return kind, value


def check_randomize(ranker: str | np.ndarray, randomize: tuple[str, int] | None, max_rank: int | None) -> None:
    """Refuse (:class:`UsageError`) a ``randomize`` policy over the random ``ranker`` (already fully randomised), and
    ``swap:K`` with ``K`` beyond ``max_rank`` (never displayed)."""
    if randomize is None:
        return
    if isinstance(ranker, str) and ranker == "random":
        raise UsageError("--randomize: the random ranker is already fully randomised (RandTop-n with n the list "
                         "length); give --ranker label, input or a model directory to randomise its order")
    kind, number = randomize
    if kind == "swap" and max_rank is not None and number > max_rank:
        raise UsageError(f"--randomize swap:{number}: position {number} is never displayed with "
                         f"--max-rank {max_rank}")


def policy_name(ranker: str | np.ndarray, randomize: tuple[str, int] | None) -> str:
    """The logging policy of ``ranker`` under ``randomize`` as the summary and footer record it: ``random`` (a full
    shuffle per impression), ``top:N`` (RandTop-n), ``swap:K`` (swap intervention) or ``none`` (the ranker's order,
    not randomised)."""
    if isinstance(ranker, str) and ranker == "random":
        return "random"
    if randomize is not None:
        kind, number = randomize
        return f"{kind}:{number}"
    return "none"


def display_ranks(ds: Dataset, ranker: str | np.ndarray) -> np.ndarray | None:
    """0-based display rank of every row of ``ds`` for a deterministic ranker; ``None`` for ``"random"``.

    ``label`` shows the ideal order (highest label first), ``input`` the data's order, an array of scores (or a model
    directory's predictions) the order by descending score. Ties keep the input order (stable).
    """
    if isinstance(ranker, str):
        if ranker == "random":
            return None
        if ranker == "input":
            return np.arange(ds.n_rows, dtype=np.int64) - np.repeat(ds.offsets[:-1], sizes(ds.offsets))
        if ranker == "label":
            scores = ds.labels
        else:
            raise UsageError(f"unknown ranker {ranker!r}; expected random, label, input or a model directory")
    else:
        scores = np.asarray(ranker, dtype=np.float64)
        if scores.shape != (ds.n_rows,):
            raise UsageError(f"ranker scores: expected one score per row ({ds.n_rows}), got shape {scores.shape}")
    return rank_within(scores, ds.offsets, descending=True) - 1


def _take_feature_rows(features: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``features[rows]`` column by column into a Fortran-ordered matrix (contiguous reads and writes per column;
    the Parquet writer then takes each column without a copy)."""
    out = np.empty((rows.shape[0], features.shape[1]), dtype=features.dtype, order="F")
    for j in range(features.shape[1]):
        np.take(features[:, j], rows, out=out[:, j])
    return out


def model_scores(ds: Dataset, model_dir: Path | str, what: str = "data") -> np.ndarray:
    """Scores of the trained rankcli model directory ``model_dir`` on ``ds`` (rank-then-click); ``what`` names ``ds``
    in errors."""
    from rankcli.train import load_model  # the training library (~0.2 s) only for a logging ranker

    return load_model(model_dir).predict(ds, what)


def check_simulation_size(offsets: np.ndarray, impressions: int, max_rank: int | None) -> int:
    """The most rows a simulation of ``impressions`` impressions of the queries ``offsets`` can display (every
    impression shows its whole list, or ``max_rank`` documents); above :data:`MAX_SIMULATED_ROWS` it is refused
    before anything is allocated, as a :class:`UsageError` saying how to lower it."""
    shown = sizes(offsets)
    if max_rank is not None:
        shown = np.minimum(shown, max_rank)
    per_impression = int(shown.sum())
    total = int(impressions) * per_impression  # Python integers: no overflow
    if total > MAX_SIMULATED_ROWS:
        raise UsageError(
            f"--impressions {impressions}: up to {total:,} displayed documents ({impressions:,} impressions of each "
            f"of {shown.shape[0]:,} queries, {per_impression:,} documents shown per round), more than the limit of "
            f"{MAX_SIMULATED_ROWS:,}; lower --impressions or --max-rank, or simulate in several runs with different "
            "--seed values")
    return total


def simulate_log(ds: Dataset, *, model: str = "cascade", click_probs=PAPER_CLICK_PROBS, eta: float = 1.0,
                 max_rank: int | None = None, impressions: int = 10, ranker: str | np.ndarray = "random",
                 keep_no_click: bool = False, label_grades: bool = False, randomize: tuple[str, int] | None = None,
                 rng: np.random.Generator) -> tuple[core.ClickLog, ClickSummary]:
    """The simulation of :func:`simulate_clicks` without assembling the output rows: the click log (source rows,
    impression offsets, clicks, positions) and the summary. ``ds.features`` is not used (it may be ``None``), so a
    caller can gather the output's feature columns itself (:func:`simulate_file` takes them straight from an Arrow
    table). The parameters (``model``, ``click_probs``, ``eta``, ``max_rank``, ``impressions``, ``ranker``,
    ``keep_no_click``, ``label_grades``, ``randomize``, ``rng``) are :func:`simulate_clicks`'s."""
    if model not in core.MODELS:
        from rankcli.click_model.simulation import is_model_dir  # the click-model library only for a fitted one

        if not is_model_dir(model):
            raise UsageError(f"unknown click model {model!r}; expected one of {', '.join(core.MODELS)} or a "
                             "click-model directory (rankcli click-model fit)")
        return _simulate_fitted(ds, model, max_rank=max_rank, impressions=impressions, ranker=ranker,
                                keep_no_click=keep_no_click, randomize=randomize, rng=rng)
    check_randomize(ranker, randomize, max_rank)
    if label_grades:
        grades, values = to_grades(ds.labels)
    else:
        grades = require_integer_grades(ds.labels, "click simulation (one click probability per grade)")
        values = None
    check_simulation_size(ds.offsets, impressions, max_rank)
    ranks = display_ranks(ds, ranker)
    log = core.simulate(model, grades, ds.offsets, click_probs, impressions, rng, eta=eta, display_rank=ranks,
                        max_rank=max_rank, keep_no_click=keep_no_click, randomize=randomize)
    if randomize is not None:
        log.ranker_rank = (ranks[log.rows] + 1).astype(np.int32)
    ranker_name = ranker if isinstance(ranker, str) else "scores"
    params = {"policy": policy_name(ranker, randomize), "click_probs": [float(p) for p in click_probs],
              "impressions": int(impressions), "keep_no_click": bool(keep_no_click),
              "label_grades": bool(label_grades)}
    if model == "pbm":
        params["eta"] = float(eta)
    if max_rank is not None:
        params["max_rank"] = int(max_rank)
    summary = ClickSummary(
        model=model, ranker=ranker_name, impressions=log.n_impressions, kept=log.n_kept, clicks=int(log.clicks.sum()),
        dropped=log.dropped, rows=int(log.rows.shape[0]), params=params,
        shown_by_grade=log.shown_by_grade.tolist(), clicks_by_grade=log.clicks_by_grade.tolist(),
        shown_by_position=log.shown_by_position.tolist(), clicks_by_position=log.clicks_by_position.tolist(),
        examined_by_position=None if log.examined_by_position is None else log.examined_by_position.tolist(),
        grade_values=None if values is None else [float(v) for v in values],
    )
    return log, summary


def _simulate_fitted(ds: Dataset, model_dir: str, *, max_rank, impressions, ranker, keep_no_click, randomize,
                     rng) -> tuple[core.ClickLog, ClickSummary]:
    """:func:`simulate_log` with a fitted click model (:mod:`rankcli.click_model.simulation`)."""
    from rankcli.click_model.simulation import simulate_with_model  # as in simulate_log

    check_randomize(ranker, randomize, max_rank)
    check_simulation_size(ds.offsets, impressions, max_rank)
    ranks = display_ranks(ds, ranker)
    log, fitted, values = simulate_with_model(ds, model_dir, impressions=impressions, display_rank=ranks,
                                              randomize=randomize, max_rank=max_rank, keep_no_click=keep_no_click,
                                              rng=rng)
    if randomize is not None:
        log.ranker_rank = (ranks[log.rows] + 1).astype(np.int32)
    params = {"policy": policy_name(ranker, randomize), "impressions": int(impressions),
              "keep_no_click": bool(keep_no_click), "label_grades": True, **fitted}
    summary = ClickSummary(
        model=fitted["fitted_model"], ranker=ranker if isinstance(ranker, str) else "scores",
        impressions=log.n_impressions, kept=log.n_kept, clicks=int(log.clicks.sum()), dropped=log.dropped,
        rows=int(log.rows.shape[0]), params=params, shown_by_grade=log.shown_by_grade.tolist(),
        clicks_by_grade=log.clicks_by_grade.tolist(), shown_by_position=log.shown_by_position.tolist(),
        clicks_by_position=log.clicks_by_position.tolist(),
        examined_by_position=log.examined_by_position.tolist(), grade_values=[float(v) for v in values])
    return log, summary


def simulate_clicks(ds: Dataset, *, model: str = "cascade", click_probs=PAPER_CLICK_PROBS, eta: float = 1.0,
                    max_rank: int | None = None, impressions: int = 10, ranker: str | np.ndarray = "random",
                    keep_no_click: bool = False, label_grades: bool = False,
                    randomize: tuple[str, int] | None = None,
                    rng: np.random.Generator) -> tuple[Dataset, ClickSummary]:
    """Simulate ``impressions`` impressions per query and return them as a dataset plus a summary.

    The returned dataset has one row per displayed document, impressions in source-query order: ``qids`` a new id per
    impression (1, 2, ...), ``labels`` the click (0.0/1.0), the features and docids of the shown documents, and
    ``extra`` columns ``source_qid``, ``position`` (1-based), ``relevance`` (the original label) and, when the data has
    no docids, ``source_row`` (0-based row in ``ds``).

    Parameters
    ----------
    ds : Dataset
        The queries, with graded labels (integers ``0..len(click_probs) - 1`` unless ``label_grades``).
    model : "cascade" or "pbm"
        The click model (:mod:`rankcli.core.clicks`: Craswell et al. 2008; Richardson et al. 2007).
    click_probs : sequence of float
        The probability of a click on an examined document, per grade (default: the paper's, Bruch 2021).
    eta : float
        PBM: position ``r`` is examined with probability ``(1/r)**eta``.
    max_rank : int, optional
        Only the top ``max_rank`` documents of each list are displayed.
    impressions : int
        Impressions simulated per query.
    ranker : str or (n_rows,) array
        ``"random"`` (a fresh shuffle per impression), ``"label"`` (ideal order), ``"input"`` (the data's order) or
        one score per row (rank by descending score; ties keep input order).
    keep_no_click : bool
        Keep the impressions without a click (dropped by default; the summary counts them either way).
    label_grades : bool
        Map the distinct label values to grades ``0..n-1`` in increasing order (for real-valued labels).
    randomize : ("top", N) or ("swap", K), optional
        RandTop-n or the swap intervention applied per impression to a deterministic ranker's order
        (:func:`rankcli.core.policies.randomized_orders`); the output then has a ``ranker_rank`` column, the
        displayed document's 1-based rank in the ranker's own order.
    rng : numpy.random.Generator
        The randomness: the same inputs and generator state give the same output.
    """
    log, summary = simulate_log(ds, model=model, click_probs=click_probs, eta=eta, max_rank=max_rank,
                                impressions=impressions, ranker=ranker, keep_no_click=keep_no_click,
                                label_grades=label_grades, randomize=randomize, rng=rng)
    return _click_dataset(ds, log, summary), summary


def _click_dataset(ds: Dataset, log: core.ClickLog, summary: ClickSummary) -> Dataset:
    """The click log as a dataset of the shown documents (:func:`simulate_clicks` describes its columns)."""
    rows = log.rows
    n_imp = log.n_kept
    out = Dataset(
        qids=np.repeat(np.arange(1, n_imp + 1, dtype=np.int64), np.diff(log.offsets)),
        labels=log.clicks.astype(np.float64),
        features=None if ds.features is None else _take_feature_rows(ds.features, rows),
        feature_names=list(ds.feature_names),
        docids=None if ds.docids is None else ds.docids[rows],
        offsets=log.offsets,
        # the log's own footer key (as the file gets it), not the source's: IPS training reads the click model from it
        metadata={**ds.metadata, "clicks": json.dumps({"model": summary.model, "ranker": summary.ranker,
                                                       **summary.params})},
        extra={k: v[rows] for k, v in ds.extra.items()},
    )
    extra = {
        "source_qid": ds.qids[rows],
        "position": log.positions.astype(np.int32),
        "relevance": ds.labels[rows],
    }
    if ds.docids is None:
        extra["source_row"] = rows
    if log.ranker_rank is not None:
        extra["ranker_rank"] = log.ranker_rank
    out.extra = {**extra, **{k: v for k, v in out.extra.items() if k not in extra}}
    return out


def simulate_file(data: Path | str, output: Path | str, *, ranker: str = "random", seed: int = 0,
                  overwrite: bool = False, **options) -> ClickSummary:
    """Simulate a click log from the dataset file ``data`` and write it to ``output``
    (:mod:`rankcli.formats.clicks` describes the file); what ``rankcli simulate-clicks`` does.

    Parameters
    ----------
    data : path
        A Parquet dataset with graded labels.
    output : path
        The click log to write, atomically (``-``: standard output).
    ranker : str
        ``random``, ``label``, ``input`` or a model directory (its scores rank the documents).
    seed : int
        The simulation's seed: the same inputs and seed give the same file, byte for byte.
    overwrite : bool
        Replace an existing output that rankcli wrote.
    **options
        ``model``, ``click_probs``, ``eta``, ``max_rank``, ``impressions``, ``keep_no_click``, ``label_grades`` and
        ``randomize``, as :func:`simulate_clicks` takes them.

    Returns
    -------
    ClickSummary
        Its ``ranker`` is ``ranker`` as given (a model directory's path).
    """
    from rankcli.formats.clicks import click_batches, write_click_log
    from rankcli.formats.parquet import query_aligned_groups

    ds, click_log, source, summary = _simulate_from_file(data, ranker, seed, options)
    summary.ranker = ranker
    meta = {
        "kind": "dataset",
        "num_features": len(ds.feature_names),
        "source": str(data),
        "clicks": {"model": summary.model, "ranker": ranker, "seed": seed, **summary.params},
        "seed": seed,
    }

    for key in (FOOTER_KEY, "feature_dtype"):  # the log's features are the dataset's: so are their transform
        if key in ds.metadata:  # and their precision
            meta[key] = ds.metadata[key]
    feature_names = list(ds.feature_names)
    pieces = click_batches(ds, click_log, source, query_aligned_groups(click_log.offsets))
    # Only the pieces generator holds the input and the log from here on: they are freed as soon as the last piece
    # is gathered, while the writer thread still encodes, instead of after the write.
    del ds, click_log, source
    write_click_log(output, pieces, meta, feature_names, overwrite=overwrite)
    return summary


def _simulate_from_file(data: Path | str, ranker: str, seed: int, options: dict):
    """``(dataset, click log, source table or None, summary)``. With a named ranker the simulation needs only qid and
    label: they are read first, then the feature (and docid) columns are read as Arrow in a thread while the
    simulation runs, to be gathered with Arrow's take (no numpy feature matrix)."""
    from rankcli.formats.clicks import read_source_columns
    from rankcli.formats.parquet import read_dataset

    reader = None
    got: dict = {}
    if ranker in RANKERS:
        ds = read_dataset(data, features=False)
        wanted = list(ds.feature_names) + (["docid"] if ds.docids is not None else [])

        def read_source() -> None:
            try:
                got["table"] = read_source_columns(data, wanted)
            except BaseException as exc:  # re-raised in the main thread
                got["error"] = exc

        reader = threading.Thread(target=read_source, daemon=True)
        reader.start()
        scores_or_name = ranker
    else:
        ds = read_dataset(data)
        scores_or_name = model_scores(ds, ranker, what=str(data))
    try:
        click_log, summary = simulate_log(ds, ranker=scores_or_name, rng=np.random.default_rng(seed), **options)
    finally:
        if reader is not None:
            reader.join()
    if "error" in got:
        raise got["error"]
    return ds, click_log, got.pop("table", None), summary
