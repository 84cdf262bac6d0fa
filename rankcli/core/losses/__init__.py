"""Listwise and pairwise ranking losses: value, gradient and boosting step for a whole batch of queries at once.

Every function takes ``(labels, scores, offsets)``, the argument order of :mod:`rankcli.core.metrics`: flat
per-document arrays sorted by query plus ``offsets`` (length ``n_queries + 1``; see :mod:`rankcli.core.groups`), and
never loops over queries in Python (the pairwise losses loop over memory-bounded *blocks* of queries,
:mod:`rankcli.core.losses.common`). ``<loss>_value`` returns one value per query; ``<loss>_gradient`` the exact
gradient per document; ``<loss>_grad_hess`` the ``(gradient, hessian)`` pair a booster takes (for some losses a
Newton-corrected or approximate step, said in its docstring). Scores are raw model outputs. Which loss trains how
(LightGBM's own objective or these functions as a callable objective) is recorded once per loss in
:mod:`rankcli.train.losses`.

One module per family:

- :mod:`~rankcli.core.losses.softmax`: ``xendcg`` (Bruch 2021) and ``listnet`` (Cao et al. 2007), softmax cross
  entropies, and the paper's approximate Newton step ``(I + S + S^2) D^-1`` both take.
- :mod:`~rankcli.core.losses.ranknet`: ``ranknet`` (Burges et al. 2005), every pair with different labels.
- :mod:`~rankcli.core.losses.plackett_luce`: ``listmle`` (Xia et al. 2008) and ``listmle_pa`` (Lan et al. 2014),
  the negative log Plackett-Luce likelihood of the ranking by label.
- :mod:`~rankcli.core.losses.approx`: ``approxndcg`` (Qin, Liu and Li 2010), NDCG with smoothed ranks.
- :mod:`~rankcli.core.losses.lambdaloss`: ``lambdaloss`` (Wang et al. 2018), NDCG-Loss2++ and NDCG-Loss2.

Degenerate queries: a query with one document carries no ranking information: its value, gradient and hessian are
zero (as LightGBM's ``rank_xendcg``); so is a query without gain for the losses that normalise by one (XE-NDCG with
no target mass, ApproxNDCG and LambdaLoss with every label 0).
"""

from rankcli.core.losses.approx import approxndcg_grad_hess, approxndcg_gradient, approxndcg_value
from rankcli.core.losses.common import MAX_NEWTON_STEP, MAX_PAIR_ELEMENTS, guard_hessian, ndcg_gains
from rankcli.core.losses.lambdaloss import (
    LAMBDALOSS_VARIANTS,
    lambdaloss_grad_hess,
    lambdaloss_gradient,
    lambdaloss_value,
)
from rankcli.core.losses.plackett_luce import (
    listmle_grad_hess,
    listmle_gradient,
    listmle_order,
    listmle_pa_grad_hess,
    listmle_pa_gradient,
    listmle_pa_value,
    listmle_value,
)
from rankcli.core.losses.ranknet import ranknet_grad_hess, ranknet_value
from rankcli.core.losses.softmax import (
    LISTNET_STEPS,
    GammaStrategy,
    listnet_grad_hess,
    listnet_gradient,
    listnet_target,
    listnet_value,
    parse_gamma,
    softmax_newton_step,
    xendcg_grad_hess,
    xendcg_gradient,
    xendcg_label_terms,
    xendcg_targets,
    xendcg_value,
)

__all__ = [
    "LAMBDALOSS_VARIANTS", "LISTNET_STEPS", "MAX_NEWTON_STEP", "MAX_PAIR_ELEMENTS", "GammaStrategy",
    "approxndcg_grad_hess", "approxndcg_gradient", "approxndcg_value", "guard_hessian", "lambdaloss_grad_hess",
    "lambdaloss_gradient", "lambdaloss_value", "listmle_grad_hess", "listmle_gradient", "listmle_order",
    "listmle_pa_grad_hess", "listmle_pa_gradient", "listmle_pa_value", "listmle_value", "listnet_grad_hess",
    "listnet_gradient", "listnet_target", "listnet_value", "ndcg_gains", "parse_gamma", "ranknet_grad_hess",
    "ranknet_value", "softmax_newton_step", "xendcg_grad_hess", "xendcg_gradient", "xendcg_label_terms",
    "xendcg_targets", "xendcg_value",
]
