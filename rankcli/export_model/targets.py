"""The targets: what each engine holds, compares and adds, as the engine's source defines it.

Each :class:`Target` record states the facts the exact thresholds and the ``--check`` evaluator follow; the docs
(docs/commands/export-model.md) cite the source of each.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankcli.core.trees import semantics as sem

MISSING_BRANCH, MISSING_AS_ZERO = "branch", "zero"


@dataclass(frozen=True)
class Target:
    """One engine's split and sum semantics.

    Attributes
    ----------
    name : ``--target`` (with ``--model-type`` for the LTR plugins, ``elasticsearch-ltr/ranklib``).
    precision : the type the engine holds feature values and thresholds in.
    strict : left when ``value < threshold`` (o19s ``Split.eval``: ``threshold > value``), else ``<=``.
    missing : ``branch`` (a missing value takes a per-split branch) or ``zero`` (it is 0, compared as any value).
    slack : the threshold is read plus Solr's ``1E-6f``.
    inf_is_missing : +-inf takes the missing branch (Elasticsearch's ``Numbers.isValidDouble``).
    summation : :mod:`rankcli.core.trees.semantics`' ``SUM_*``.
    normalizers : the engine has per-feature normalisers (``--engine-normalizer``).
    """

    name: str
    precision: type
    strict: bool
    missing: str
    summation: str
    slack: bool = False
    inf_is_missing: bool = False
    normalizers: bool = False

    @property
    def dtype(self) -> np.dtype:
        """``precision`` as a numpy dtype."""
        return np.dtype(self.precision)


_F32, _F64 = np.float32, np.float64
TARGETS = {
    "elasticsearch-ltr/xgboost+json": Target("elasticsearch-ltr", _F32, True, MISSING_BRANCH, sem.SUM_FLOAT32,
                                             normalizers=True),
    "elasticsearch-ltr/ranklib": Target("elasticsearch-ltr", _F32, False, MISSING_AS_ZERO, sem.SUM_RANKLIB,
                                        normalizers=True),
    "opensearch-ltr/xgboost+json": Target("opensearch-ltr", _F32, True, MISSING_BRANCH, sem.SUM_FLOAT32,
                                          normalizers=True),
    "opensearch-ltr/xgboost+json/missing-as-zero": Target("opensearch-ltr", _F32, True, MISSING_AS_ZERO,
                                                          sem.SUM_FLOAT32, normalizers=True),
    "opensearch-ltr/ranklib": Target("opensearch-ltr", _F32, False, MISSING_AS_ZERO, sem.SUM_RANKLIB,
                                     normalizers=True),
    "solr": Target("solr", _F32, False, MISSING_AS_ZERO, sem.SUM_FLOAT32, slack=True, normalizers=True),
    "solr/null-aware": Target("solr", _F32, False, MISSING_BRANCH, sem.SUM_FLOAT32, slack=True, normalizers=True),
    "elasticsearch": Target("elasticsearch", _F64, False, MISSING_BRANCH, sem.SUM_KAHAN_FLOAT32,
                            inf_is_missing=True),
    "vespa": Target("vespa", _F64, False, MISSING_BRANCH, sem.SUM_DOUBLE),
    "onnx": Target("onnx", _F64, False, MISSING_BRANCH, sem.SUM_DOUBLE_FLOAT32),
    "ranklib": Target("ranklib", _F32, False, MISSING_AS_ZERO, sem.SUM_RANKLIB),
}

#: ``--target`` values, in help order.
TARGET_NAMES = ("elasticsearch-ltr", "opensearch-ltr", "solr", "elasticsearch", "vespa", "onnx", "ranklib")
#: ``--model-type`` values of the LTR plugins.
MODEL_TYPES = ("xgboost+json", "ranklib")
