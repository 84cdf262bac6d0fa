"""The TREC stages up to the joined, ranked run (:func:`rankcli.evaluate.runs.load_trec`), as the tests call them."""

from __future__ import annotations

from rankcli.core.metrics import Convention
from rankcli.evaluate.runs import load_trec


def load_trec_run(run_path, qrels_path, *, ranked: bool = False, threads: int = 1, **options):
    """``ranked``: equal scores in trec_eval's order (the C join when it is built and takes the input); otherwise in
    the run's line order (the ``input`` tie rule: the numpy join)."""
    convention = Convention.preset("trec") if ranked else Convention(ties="input")
    return load_trec(run_path, qrels_path, convention, threads=threads, **options)
