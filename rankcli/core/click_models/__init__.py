"""Click models fitted to click logs: the ten of Chuklin, Markov and de Rijke, *Click Models for Web Search* (2015).
Pure numpy: no files, no printing.

================  =====================================================  ==========  ===========================
name              model                                                  estimator   parameters
================  =====================================================  ==========  ===========================
``gctr``          global click-through rate (random click model)         MLE         one
``rctr``          rank-based click-through rate                          MLE         per rank
``dctr``          document-based click-through rate                      MLE         per item
``pbm``           position-based model                                   EM          per item, per rank
``cascade``       cascade model                                          MLE         per item
``ubm``           user browsing model                                    EM          per item, per (rank, prev.)
``dcm``           dependent click model                                  MLE         per item, per rank
``ccm``           click chain model                                      EM          per item, three
``dbn``           dynamic Bayesian network model                         EM          per item (two), one
``sdbn``          simplified DBN                                         MLE         per item (two)
================  =====================================================  ==========  ===========================

An *item* is a (query, document) pair, or a relevance grade when parameters are shared per grade. The log is a
:class:`Sessions` (sessions as contiguous rows); :func:`fit` estimates a model
(:mod:`~rankcli.core.click_models.em`), :mod:`~rankcli.core.click_models.evaluation` scores one on a log. PyClick
(github.com/markovi/PyClick, the book's own implementation) is the reference for parameterisation, initial values,
the EM cap, the log-likelihood and the perplexities; docs/clicks.md gives every formula.
"""

from rankcli.core.click_models.base import E_STEPS, ITEM, KINDS, RANK, RANK_PREV, SINGLE, ClickModel, Family, Prior
from rankcli.core.click_models.cascade import CM, DCM
from rankcli.core.click_models.ccm import CCM
from rankcli.core.click_models.ctr import DCTR, GCTR, RCTR
from rankcli.core.click_models.dbn import DBN, SDBN
from rankcli.core.click_models.em import FitResult, Layout, LocalRunner, Sums, e_step_sums, fit, gather
from rankcli.core.click_models.position import PBM, UBM
from rankcli.core.click_models.sessions import Block, Sessions, subset
from rankcli.errors import UsageError

_CLASSES = (GCTR, RCTR, DCTR, PBM, CM, UBM, DCM, CCM, DBN, SDBN)
#: Every model's name, in the book's order of chapter 3.
MODELS = tuple(c.name for c in _CLASSES)


def get_model(name: str) -> ClickModel:
    """The model called ``name`` (one of :data:`MODELS`); a :class:`UsageError` listing them otherwise."""
    for cls in _CLASSES:
        if cls.name == name:
            return cls()
    raise UsageError(f"unknown click model {name!r}; expected one of {', '.join(MODELS)}")


__all__ = ["CCM", "CM", "DBN", "DCM", "DCTR", "E_STEPS", "GCTR", "ITEM", "KINDS", "MODELS", "PBM", "RANK",
           "RANK_PREV", "RCTR", "SDBN", "SINGLE", "UBM", "Block", "ClickModel", "Family", "FitResult", "Layout",
           "LocalRunner", "Prior", "Sessions", "Sums", "e_step_sums", "fit", "gather", "get_model", "subset"]
