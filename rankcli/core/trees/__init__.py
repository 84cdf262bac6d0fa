"""Tree ensembles for ``export-model``, pure numpy: the ensemble as flat arrays with LightGBM's decision rule
(:mod:`~rankcli.core.trees.ensemble`), the float steps of exact thresholds (:mod:`~rankcli.core.trees.floats`), the
engines' split and sum semantics (:mod:`~rankcli.core.trees.semantics`) and the parity analysis of an export
(:mod:`~rankcli.core.trees.parity`)."""
