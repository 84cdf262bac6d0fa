"""Tree ensembles for ``export-model``: the ensemble as flat arrays with LightGBM's decision rule
(:mod:`~rankcli.core.trees.ensemble`), the float steps of exact thresholds (:mod:`~rankcli.core.trees.floats`), the
engines' split and sum semantics (:mod:`~rankcli.core.trees.semantics`), the parity analysis of an export
(:mod:`~rankcli.core.trees.parity`), all pure numpy, and each row's leaf in each tree by LightGBM's rule
(:mod:`~rankcli.core.trees.leaves`), walked by the one compiled module of core (``leaf_walk``, optional)."""
