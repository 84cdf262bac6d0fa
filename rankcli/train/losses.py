"""The losses rankcli trains with: one record per loss, the single place that knows how each one trains.

A :class:`Loss` names the loss, says which labels it takes, and either names LightGBM's own objective (``lightgbm``)
or holds the library's value and boosting step (:mod:`rankcli.core.losses`, passed to LightGBM as a callable
objective by :class:`rankcli.train.objective.LibraryObjective`). Its ``doc`` gives the formula and the reference, its
``options`` the parameters of its own (:class:`rankcli.train.loss_options.LossOption`: ``--loss-option``, with the
range a hyperparameter search tries).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankcli.core import losses as core
from rankcli.core.labels import require_integer_grades, to_grades
from rankcli.errors import InputError, UsageError
from rankcli.train.loss_options import LossOption, parse_option_texts, resolve, unknown_option

#: What a loss's labels may be: ``grades`` (integers >= 0; LightGBM casts labels to int), ``float32`` (any real
#: value a 32-bit float holds; LightGBM keeps labels as float32), ``non-negative`` (any real ``y >= 0``, for
#: ``2^y - gamma``), ``real`` (any finite value).
LABEL_KINDS = ("grades", "float32", "non-negative", "real")
REAL_LABEL_HINT = "--loss xendcg or --loss listnet, which take real-valued labels"
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: The smallest positive normal numbers: a label between 0 and these keeps only some of the type's digits (and in
#: float32, below 1.4e-45, becomes 0).
FLOAT32_TINY = float(np.finfo(np.float32).tiny)
FLOAT64_TINY = float(np.finfo(np.float64).tiny)

#: ``step(labels, offsets, options)`` -> ``f(scores, gamma, rng) -> (gradient, hessian)``: the label-only terms
#: computed once; ``options`` the loss's options resolved (:meth:`Loss.resolve_options`), ``gamma`` XE-NDCG's draw
#: and ``rng`` the generator of the iteration's random steps (ListMLE's order among equal labels).
StepFactory = Callable[[np.ndarray, np.ndarray, dict], Callable[..., tuple]]


@dataclass(frozen=True)
class Loss:
    """One loss: how it trains and what it takes.

    Attributes
    ----------
    name : the ``--loss`` name.
    doc : the loss in one paragraph: its formula and the reference paper.
    labels : one of :data:`LABEL_KINDS`.
    lightgbm : LightGBM's objective for a native loss; ``None`` for the library's (``value`` and ``step`` set).
    value : the per-query value ``(labels, scores, offsets[, gamma]) -> values`` of a library loss.
    step : the boosting step of a library loss (:data:`StepFactory`).
    takes_gamma : XE-NDCG's gamma is drawn for it (``--gamma``).
    max_grade : for ``grades`` losses, the largest grade LightGBM can take and why (``None``: no limit).
    search : the loss's own parameters that ``rankcli tune`` searches, name -> range (:mod:`rankcli.tune.space`
        reads it: ``low``/``high``/``log``/``int`` or ``choices``, and ``default``, the value ``train`` uses); the
        search ranges of ``options`` are added to it.
    options : the loss's own parameters (``--loss-option``), each with its default, range and search range.
    unit : for a library loss, ``unit(options)``: the score difference its pair or softmax terms see as one
        (ApproxNDCG's temperature ``T``, LambdaLoss's ``1 / sigma``; 1 when ``None``). Under Newton boosting such a
        scale only rescales the model (see :meth:`score_unit`); the hessian guard is measured in it.
    """

    name: str
    doc: str
    labels: str
    lightgbm: str | None = None
    value: Callable[..., np.ndarray] | None = None
    step: StepFactory | None = None
    takes_gamma: bool = False
    max_grade: tuple[int, str] | None = None
    search: dict[str, dict] = field(default_factory=dict, compare=False)
    options: tuple[LossOption, ...] = ()
    unit: Callable[[dict], float] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # the options' search ranges join ``search``: what rankcli tune searches for the loss is declared once
        if self.options:
            object.__setattr__(self, "search", {**self.option_search(), **self.search})

    def resolve_options(self, given: dict | None = None) -> dict:
        """Every option of the loss with its value: ``given`` (checked; an unknown name is a :class:`UsageError`)
        or the default."""
        return resolve(self.name, self.options, dict(given or {}))

    def option_search(self) -> dict[str, dict]:
        """The search ranges of the loss's options, name -> :meth:`LossOption.search_entry` (what ``rankcli tune``
        searches for it; a chosen value goes into ``TrainConfig.loss_options``)."""
        return {o.name: entry for o in self.options if (entry := o.search_entry()) is not None}

    def score_unit(self, options: dict | None = None) -> float:
        """The loss's score unit under ``options`` (checked values; an option left out takes its default).

        A loss that sees the scores only as ``s / unit`` has its gradient scale as ``1 / unit`` and its hessian as
        ``1 / unit^2``, so each Newton step ``-sum g / sum h``, hence every leaf and every score of the model, scales
        as ``unit``: with ``lambda_l1 = lambda_l2 = 0``, ``max_delta_step = 0`` and ``min_sum_hessian_in_leaf = 0``
        two trainings whose units differ by a factor ``c`` give the same trees with leaf values times ``c``, the
        same rankings and the same validation curve (the split gains ``(sum g)^2 / sum h`` do not change). Only those
        four parameters, which set an absolute scale on the sums of gradients, hessians or leaf values, make the unit
        matter.
        """
        values = {**{o.name: o.default for o in self.options}, **(options or {})}
        return 1.0 if self.unit is None else float(self.unit(values))

    @property
    def native(self) -> bool:
        """Whether LightGBM's own objective trains it (else the library's callable objective)."""
        return self.lightgbm is not None

    @property
    def consumer(self) -> str:
        """How messages name the loss: ``--loss lambdamart (LightGBM lambdarank)``."""
        return f"--loss {self.name}" + (f" (LightGBM {self.lightgbm})" if self.native else "")


def _xendcg_step(labels: np.ndarray, offsets: np.ndarray, options: dict):
    terms = core.xendcg_label_terms(labels, offsets)  # constant over the iterations: computed once
    return lambda scores, gamma, rng: core.xendcg_grad_hess(labels, scores, offsets, gamma, label_terms=terms)


def _listnet_step(labels: np.ndarray, offsets: np.ndarray, options: dict):
    phi = core.listnet_target(labels, offsets)
    return lambda scores, gamma, rng: core.listnet_grad_hess(labels, scores, offsets, label_softmax=phi,
                                                             step=options["step"])


def _ranknet_step(labels: np.ndarray, offsets: np.ndarray, options: dict):
    return lambda scores, gamma, rng: core.ranknet_grad_hess(labels, scores, offsets)


def _listmle_step(labels: np.ndarray, offsets: np.ndarray, options: dict):
    # the order among equal labels is redrawn every iteration from the iteration's generator
    return lambda scores, gamma, rng: core.listmle_grad_hess(labels, scores, offsets,
                                                             core.listmle_order(labels, offsets, rng))


def _listmle_pa_step(labels: np.ndarray, offsets: np.ndarray, options: dict):
    return lambda scores, gamma, rng: core.listmle_pa_grad_hess(labels, scores, offsets,
                                                                core.listmle_order(labels, offsets, rng))


def _approxndcg_step(labels: np.ndarray, offsets: np.ndarray, options: dict):
    gains = core.ndcg_gains(labels, offsets)
    return lambda scores, gamma, rng: core.approxndcg_grad_hess(labels, scores, offsets, options["temperature"],
                                                                gains=gains)


def _lambdaloss_step(labels: np.ndarray, offsets: np.ndarray, options: dict):
    gains = core.ndcg_gains(labels, offsets)
    return lambda scores, gamma, rng: core.lambdaloss_grad_hess(labels, scores, offsets, options["variant"],
                                                                options["mu"], options["sigma"], gains=gains)


LISTNET_STEP = LossOption(
    "step", "choice", "paper", choices=core.LISTNET_STEPS, search=core.LISTNET_STEPS, flag="--step",
    before="diagonal",
    doc="the boosting step: paper (the approximate inverse Hessian (I + S + S^2) D^-1 XE-NDCG takes, Bruch 2021) "
        "or diagonal (the gradient and the Hessian's diagonal rho (1 - rho))")
APPROX_TEMPERATURE = LossOption(
    "temperature", "float", 0.1, low=1e-4, high=1e4, search=(0.01, 1.0, "log"),
    doc="T of the approximate ranks 1 + sum_j sigmoid((s_j - s_i) / T); 0.1 is TF-Ranking's (alpha = 10). Under "
        "Newton boosting T only rescales the model (steps and scores scale as T, the trees and rankings stay) unless "
        "lambda_l2, min_sum_hessian_in_leaf, lambda_l1 or max_delta_step sets an absolute scale")
LAMBDALOSS_OPTIONS = (
    LossOption("variant", "choice", "ndcg-loss2++", choices=core.LAMBDALOSS_VARIANTS,
               search=core.LAMBDALOSS_VARIANTS,
               doc="ndcg-loss2++ (weights rho + mu delta) or ndcg-loss2 (delta alone)"),
    LossOption("mu", "float", 10.0, low=0.0, high=1e6, search=(0.1, 100.0, "log"),
               only_with=("variant", "ndcg-loss2++"),
               doc="the weight of delta in NDCG-Loss2++ (10, as allRank)"),
    LossOption("sigma", "float", 1.0, low=1e-4, high=1e4, search=(0.25, 4.0, "log"),
               doc="the scale of the score differences, sigmoid(sigma (s_i - s_j)) (1, as allRank). Under Newton "
                   "boosting it only rescales the model (scores scale as 1 / sigma) unless lambda_l2, "
                   "min_sum_hessian_in_leaf, lambda_l1 or max_delta_step sets an absolute scale"),
)


_LOSSES = (
    Loss("lambdamart", labels="grades", lightgbm="lambdarank",
         # lambdamart's gain table 2^g - 1 must stay finite in the sums of DCG over a query (2^1000 times any query
         # size below 2^23 documents is within float64's range)
         max_grade=(1000, "its gains 2^grade - 1 overflow the DCG sums beyond that"),
         # LightGBM's defaults (truncation 30, sigma 1) inside ranges around them (LightGBM's parameter docs)
         search={"lambdarank_truncation_level": {"low": 5, "high": 100, "log": True, "int": True, "default": 30},
                 "sigmoid": {"low": 0.5, "high": 4.0, "log": True, "default": 1.0}},
         doc="LambdaMART: boosted trees on the RankNet gradient of each pair (i, j) with y_i > y_j, "
             "lambda_ij = -sigma / (1 + exp(sigma (s_i - s_j))), scaled by |delta NDCG_ij|, the change of NDCG when "
             "the two documents swap places (LightGBM's lambdarank). sigma (--param sigmoid) only rescales the model "
             "(scores as 1 / sigma) with lambdarank_norm=false, as the paper presets set it; LightGBM's default "
             "normalisation weighs each query by log2(1 + S) / S of its lambdas' sum S and each pair by 1 / (0.01 + "
             "|s_i - s_j|), which the scale changes. C. J. C. Burges, From RankNet to LambdaRank to LambdaMART: An "
             "Overview, Microsoft Research Technical Report MSR-TR-2010-82, 2010."),
    Loss("xendcg", labels="non-negative", value=core.xendcg_value, step=_xendcg_step, takes_gamma=True,
         search={"gamma": {"choices": ["uniform", "mean"], "default": "uniform"}},
         doc="XE-NDCG: per query -sum_i phi_i log rho_i with rho = softmax(s) and phi_i = (2^y_i - gamma_i) / "
             "sum_j (2^y_j - gamma_j), gamma drawn uniformly per document and tree; boosted with the paper's "
             "Newton-corrected step (rankcli.core.losses.xendcg_grad_hess), real-valued labels allowed. S. Bruch, An "
             "Alternative Cross Entropy Loss for Learning-to-Rank, The Web Conference (WWW) 2021."),
    Loss("xendcg-native", labels="grades", lightgbm="rank_xendcg",
         # LightGBM's rank_xendcg computes 2^label in a 32-bit integer (Common::Pow(2, int)), exact up to 2^30
         max_grade=(30, "LightGBM's rank_xendcg computes 2^label in a 32-bit integer"),
         doc="XE-NDCG as LightGBM implements it (rank_xendcg): the same loss and step as xendcg, labels cast to "
             "integers. S. Bruch, An Alternative Cross Entropy Loss for Learning-to-Rank, WWW 2021."),
    Loss("listnet", labels="real", value=core.listnet_value, step=_listnet_step, options=(LISTNET_STEP,),
         doc="ListNet (top-one probability): per query -sum_i softmax(y)_i log softmax(s)_i, gradient softmax(s) - "
             "softmax(y); boosted with the paper's approximate Newton step (I + S + S^2) D^-1 as XE-NDCG (--step "
             "paper, the default) or the Hessian's diagonal softmax(s) (1 - softmax(s)) (--step diagonal). Z. Cao, "
             "T. Qin, T.-Y. Liu, M.-F. Tsai, H. Li, Learning to Rank: From Pairwise Approach to Listwise Approach, "
             "ICML 2007."),
    Loss("ranknet", labels="real", value=core.ranknet_value, step=_ranknet_step,
         doc="RankNet: per query sum over pairs (i, j) with y_i > y_j of log(1 + exp(-(s_i - s_j))) (sigma 1, no "
             "normalisation), exact gradient and Hessian diagonal. C. Burges, T. Shaked, E. Renshaw, A. Lazier, "
             "M. Deeds, N. Hamilton, G. Hullender, Learning to Rank using Gradient Descent, ICML 2005."),
    Loss("listmle", labels="real", value=core.listmle_value, step=_listmle_step,
         doc="ListMLE: per query the negative log Plackett-Luce likelihood of the ranking by label, sum_p (log "
             "sum_{k >= p} exp(s_(k)) - s_(p)), equal labels in a random order redrawn every tree from the seed; "
             "exact gradient and Hessian diagonal. F. Xia, T.-Y. Liu, J. Wang, W. Zhang, H. Li, Listwise Approach "
             "to Learning to Rank: Theory and Algorithm, ICML 2008."),
    Loss("listmle-pa", labels="real", value=core.listmle_pa_value, step=_listmle_pa_step,
         doc="Position-Aware ListMLE: ListMLE with position p of n weighted by 2^(n - p) - 1, divided by the "
             "query's first weight 2^(n - 1) - 1 so that they stay finite: each query by its own length n, where "
             "TF-Ranking weighs 2^(L - p) - 1 with one list size L per batch (at equal scores a 3-document query's "
             "loss is 0.388 of a 7-document query's here, 0.420 in TF-Ranking with L = 7); exact gradient and "
             "Hessian diagonal. Y. Lan, Y. Zhu, J. Guo, S. Niu, X. Cheng, Position-Aware ListMLE: A Sequential "
             "Learning Process for Ranking, UAI 2014."),
    Loss("approxndcg", labels="non-negative", value=core.approxndcg_value, step=_approxndcg_step,
         options=(APPROX_TEMPERATURE,), unit=lambda options: options["temperature"],
         doc="ApproxNDCG: per query -sum_i (2^y_i - 1) / log2(1 + pi_i) / maxDCG with the approximate rank pi_i = 1 "
             "+ sum_{j != i} sigmoid((s_j - s_i) / T); exact gradient, hessian a bound (>= 0) of the curvature "
             "with the rank weights held fixed; T only rescales the model (scores as T). T. Qin, T.-Y. Liu, H. Li, A "
             "General Approximation Framework for Direct Optimization of Information Retrieval Measures, Information "
             "Retrieval 13(4), 2010."),
    Loss("lambdaloss", labels="non-negative", value=core.lambdaloss_value, step=_lambdaloss_step,
         options=LAMBDALOSS_OPTIONS, unit=lambda options: 1.0 / options["sigma"],
         doc="LambdaLoss: per query -sum_{y_i > y_j} w_ij log2 sigmoid(sigma (s_i - s_j)), NDCG-Loss2++ weights "
             "w_ij = (rho_ij + mu delta_ij) |G_i - G_j| (or NDCG-Loss2, delta alone) at the ranks of the current "
             "scores, held fixed within a tree; exact gradient and Hessian diagonal; sigma only rescales the model "
             "(scores as 1 / sigma). X. Wang, C. Li, N. Golbandi, M. Bendersky, M. Najork, The LambdaLoss Framework "
             "for Ranking Metric Optimization, CIKM 2018."),
    Loss("pointwise", labels="float32", lightgbm="regression",
         doc="Pointwise regression: sum_i (s_i - y_i)^2 / 2 over every document, queries ignored (LightGBM's "
             "regression objective, L2 loss)."),
)

#: Every loss by ``--loss`` name, in the order the help lists them.
LOSSES: dict[str, Loss] = {loss.name: loss for loss in _LOSSES}


#: Other tools' names for objectives rankcli trains, and the rankcli loss of each: a LightGBM or XGBoost user types
#: these, and a spelling suggestion would mislead (``rank_xendcg`` is closest to ``xendcg``, the paper's loss as
#: rankcli implements it, where LightGBM's own implementation is ``xendcg-native``).
FOREIGN_LOSS_NAMES = {
    "lambdarank": ("LightGBM's", "lambdamart"),
    "rank_xendcg": ("LightGBM's", "xendcg-native"),
    "xendcg_mart": ("LightGBM's", "xendcg-native"),
    "xe_ndcg": ("LightGBM's", "xendcg-native"),
    "xe_ndcg_mart": ("LightGBM's", "xendcg-native"),
    "regression": ("LightGBM's", "pointwise"),
    "regression_l2": ("LightGBM's", "pointwise"),
    "l2": ("LightGBM's", "pointwise"),
    "mse": ("LightGBM's", "pointwise"),
    "rank:ndcg": ("XGBoost's", "lambdamart"),
    "rank:pairwise": ("XGBoost's", "ranknet"),
    "reg:squarederror": ("XGBoost's", "pointwise"),
}


def check_loss(name: str) -> str:
    """``name`` if it is a loss of :data:`LOSSES`, else :class:`UsageError` suggesting the closest one, or naming
    the rankcli loss of another tool's objective name (:data:`FOREIGN_LOSS_NAMES`).

    Parameters
    ----------
    name : the ``--loss`` value; a name in another case (``XENDCG``) is suggested in lower case.
    """
    if name in LOSSES:
        return name
    folded = str(name).strip().lower()
    if folded in FOREIGN_LOSS_NAMES:
        whose, ours = FOREIGN_LOSS_NAMES[folded]
        raise UsageError(f"unknown loss {name!r}: {whose} {folded} objective is rankcli's {ours!r}"
                         + (" (rankcli's 'xendcg' is the paper's loss, implemented in rankcli)"
                            if ours == "xendcg-native" else "") + f" (choose from {', '.join(LOSSES)})")
    close = [folded] if folded in LOSSES else difflib.get_close_matches(folded, list(LOSSES), n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise UsageError(f"unknown loss {name!r}{hint} (choose from {', '.join(LOSSES)})")


def check_grade_range(loss: str, grades: np.ndarray, label_grades: bool = False) -> None:
    """:class:`InputError` when an integer-label loss cannot take the largest of ``grades`` (``Loss.max_grade``).

    Parameters
    ----------
    loss : the loss name.
    grades : the labels (or the distinct label values).
    label_grades : whether the grades come from ``--label-grades`` (the message then says how many values there are).
    """
    record = LOSSES[check_loss(loss)]
    if record.max_grade is None or np.asarray(grades).shape[0] == 0:
        return
    limit, why = record.max_grade
    top = float(np.max(grades))
    if top <= limit:
        return
    fix = (f"the data have {int(top) + 1} distinct label values" if label_grades else
           "pass --label-grades to map the distinct label values to grades 0..n-1")
    raise InputError(f"--loss {loss} takes grades up to {limit} ({why}), got a label of {top:g}; {fix}, or use "
                     "--loss xendcg, which takes any label >= 0")


def check_training_labels(loss: str, labels: np.ndarray, label_grades: bool = False) -> np.ndarray:
    """The finite ``labels`` as the loss takes them (float64), or :class:`InputError` saying why it cannot.

    Parameters
    ----------
    loss : the loss name; its ``labels`` kind (:data:`LABEL_KINDS`) decides the check.
    labels : finite labels (after ``--label-grades``, if given), or just their distinct values.
    label_grades : whether ``labels`` are grades from ``--label-grades`` (for the messages).
    """
    record = LOSSES[check_loss(loss)]
    labels = np.asarray(labels, dtype=np.float64)
    if record.labels == "grades":
        # the range first: a label of 1e300 is an integer value that no int64 holds (the cast warned and wrapped)
        check_grade_range(loss, labels, label_grades)
        return require_integer_grades(labels, record.consumer, REAL_LABEL_HINT).astype(np.float64)
    if record.labels == "float32" and labels.shape[0] and np.abs(labels).max() > FLOAT32_MAX:
        # LightGBM keeps labels as float32: a larger one became inf (with a numpy warning) and trained on it
        top = float(labels[np.argmax(np.abs(labels))])
        raise InputError(f"{record.consumer} keeps labels as 32-bit floats, which end at {FLOAT32_MAX:.4g}, got a "
                         f"label of {top:g}; rescale the labels, pass --label-grades to map the distinct label values "
                         "to grades 0..n-1, or use --loss xendcg, which takes any label >= 0")
    if record.labels == "non-negative" and (labels < 0).any():
        gain = "2^label - gamma" if record.takes_gamma else "2^label - 1"
        raise InputError(f"--loss {loss} needs non-negative labels ({gain}), got {labels.min():g}; "
                         "pass --label-grades to map the distinct label values to grades 0..n-1")
    _check_tiny_labels(record, labels)
    return labels


def _check_tiny_labels(record: Loss, labels: np.ndarray) -> None:
    """:class:`InputError` for a label that is not 0 but too small for the loss to compute with: below float32's
    normal range where LightGBM keeps labels as float32 (``pointwise``: 1e-46 became 0), below float64's where the
    gain ``2^y - 1`` is what the loss learns from (``approxndcg``, ``lambdaloss``: a gain keeps a few digits)."""
    tiny = FLOAT32_TINY if record.labels == "float32" else FLOAT64_TINY
    if record.labels not in ("float32", "non-negative") or (record.labels == "non-negative" and record.takes_gamma):
        return
    small = (labels != 0) & (np.abs(labels) < tiny)
    if small.any():
        where = "LightGBM keeps labels as 32-bit floats" if record.labels == "float32" else \
            "its gain 2^label - 1 is computed in float64"
        raise InputError(f"{record.consumer}: a label of {float(labels[np.argmax(small)]):g} is below {tiny:.3g}, "
                         f"the smallest normal number where {where}, so it keeps only some of its digits (or "
                         "becomes 0); rescale the labels, or pass --label-grades to map the distinct label values "
                         "to grades 0..n-1")


def trainable_labels(labels: np.ndarray, config: Any) -> tuple[np.ndarray, list[float] | None]:
    """The labels LightGBM trains on under ``config`` and, with ``config.label_grades``, each grade's label value.

    Parameters
    ----------
    labels : finite labels, of every training row or only their sorted distinct values (whose grades are then
        ``0 .. n-1``, what the rows would get).
    config : a :class:`rankcli.train.TrainConfig` (its ``loss`` and ``label_grades``).

    Raises :class:`InputError` for labels the loss cannot take (:func:`check_training_labels`).
    """
    labels = np.asarray(labels, dtype=np.float64)
    values = None
    if config.label_grades:
        grades, vals = to_grades(labels)
        labels, values = grades.astype(np.float64), [float(v) for v in vals]
    return check_training_labels(config.loss, labels, config.label_grades), values


def options_by_loss(texts: list[str], losses: list[str], step: str | None = None,
                    option: str = "--loss") -> dict[str, dict[str, str]]:
    """The ``--loss-option [LOSS:]NAME=VALUE`` texts (and ``--step``, ListNet's) as the options set per loss of
    ``losses`` (values still text; :meth:`Loss.resolve_options` checks them).

    A ``LOSS:`` prefix names one of ``losses``; without it the option goes to every loss of ``losses`` that declares
    it. ``option`` names the command's loss option in messages (``--loss``, ``--losses``). Raises
    :class:`UsageError` for a loss that is not trained, an option no trained loss has, one given twice with two
    values, or ``--step`` without ListNet.
    """
    out: dict[str, dict[str, str]] = {}

    def put(loss: str, name: str, value: str, text: str) -> None:
        previous = out.setdefault(loss, {}).get(name)
        if previous is not None and previous != value:
            raise UsageError(f"{text}: {loss}'s {name} is given twice, as {previous!r} and {value!r}")
        out[loss][name] = value

    for loss, name, value in parse_option_texts(texts):
        text = f"--loss-option {'' if loss is None else loss + ':'}{name}={value}"
        if loss is not None:
            if loss not in losses:
                raise UsageError(f"{text}: {loss} is not trained here ({option} {','.join(losses)})")
            if name not in {o.name for o in LOSSES[loss].options}:
                raise UsageError(unknown_option(loss, name, [o.name for o in LOSSES[loss].options]))
            put(loss, name, value, text)
            continue
        takers = [x for x in losses if name in {o.name for o in LOSSES[x].options}]
        if not takers:
            if len(losses) == 1:
                raise UsageError(unknown_option(losses[0], name, [o.name for o in LOSSES[losses[0]].options]))
            raise UsageError(f"{text}: no loss of {option} {','.join(losses)} has an option {name!r}")
        for x in takers:
            put(x, name, value, text)
    if step is not None:
        if "listnet" not in losses:
            trained = f"not {option} {losses[0]}'s" if len(losses) == 1 else f"and {option} {','.join(losses)} has none"
            raise UsageError(f"--step is ListNet's boosting step (listnet), {trained}")
        put("listnet", "step", step, "--step")
    for loss, given in out.items():
        LOSSES[loss].resolve_options(given)  # every value checked now, before any training
    return out
