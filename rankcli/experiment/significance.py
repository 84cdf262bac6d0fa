"""Which paired test an experiment runs between its losses, whether the protocol allows it, and how it is named in
every table, JSON document and summary.md.

Across the trials of repeated random splits the trials are not independent: every test set is drawn from the same
pool of queries and the training sets overlap, so two trials' differences are positively correlated. The paired
t-test over trials (the paper's test) ignores that and rejects far too often; the default there is the corrected
resampled t-test of Nadeau and Bengio (2003), :func:`rankcli.core.stats.corrected_ttest`, with ``n_test`` the test
queries of a trial and ``n_train`` the queries its models learned from (training plus validation: selection by
validation is learning too). The other tests of ``rankcli compare`` (permutation, Wilcoxon, bootstrap) treat their
units as independent and have no such correction, so they are refused across trials. Under the folds protocol the
units are the pooled test queries of disjoint folds, and every test of ``rankcli compare`` is offered there; the
corrected test is not (it corrects for test sets drawn from one pool).
"""

from __future__ import annotations

from rankcli.core.stats import TESTS
from rankcli.errors import UsageError

#: The tests offered across the trials of repeated random splits: the corrected resampled t-test (the default) and
#: the paper's paired t-test, which treats the trials as independent.
SPLIT_TESTS = ("corrected-ttest", "ttest")
#: The default test of each protocol: across random-split trials, and over the folds' pooled test queries.
DEFAULT_SPLIT_TEST, DEFAULT_FOLD_TEST = "corrected-ttest", "ttest"
#: How the paired t-test is labelled wherever it is printed across random-split trials.
PAPER_TEST = "the paper's test (trials treated as independent)"
#: Where the corrected test comes from.
REFERENCE = ("C. Nadeau and Y. Bengio, Inference for the generalization error, Machine Learning 52(3):239-281, "
             "2003")
#: Permutations (random sign vectors) or resamples of the random tests under the folds protocol, as compare's default.
PERMUTATIONS = 10_000

_NAMES = {"corrected-ttest": "corrected resampled t-test", "ttest": "paired t-test",
          "permutation": "paired permutation test", "wilcoxon": "Wilcoxon signed-rank test",
          "bootstrap": "studentized bootstrap test"}


def spelled_out(test: str) -> str:
    """The test's name in words (``corrected-ttest`` -> ``corrected resampled t-test``)."""
    return _NAMES[test]


def check_test(test: str, folds: bool) -> None:
    """:class:`UsageError` (exit 2, naming ``--test``) unless ``test`` is valid for the protocol: across random-split
    trials only :data:`SPLIT_TESTS` (the others treat the overlapping trials as independent), over the folds' pooled
    test queries the tests of ``rankcli compare`` (the corrected test is for test sets drawn from one pool)."""
    if test not in TESTS and test not in SPLIT_TESTS:
        raise UsageError(f"--test: expected one of {', '.join((*SPLIT_TESTS, *TESTS[1:]))}, got {test!r}")
    if folds and test not in TESTS:
        raise UsageError(f"--test {test} corrects for trials whose test sets are drawn from one pool of queries "
                         "(repeated random splits); with --folds the tests run over the pooled test queries of "
                         f"disjoint folds: choose {', '.join(TESTS)} (default {DEFAULT_FOLD_TEST})")
    if not folds and test not in SPLIT_TESTS:
        raise UsageError(f"--test {test}: across repeated random splits the units are the trials, which share test "
                         f"and training queries and so are not independent; the {test} test treats them as "
                         "independent and has no correction for the overlap (its p-values would be too small): "
                         f"choose {DEFAULT_SPLIT_TEST} (the default) or ttest, {PAPER_TEST}; with --folds it tests "
                         "the pooled test queries")


def describe_test(test: str, folds: bool, sizes=None, seed: int = 0) -> dict:
    """The test as ``summary.json`` and ``--json`` name it: ``name`` (as ``--test`` spells it), ``label`` (the
    sentence every table shows), and for the corrected test ``n_test``, ``n_train`` (training + validation queries of
    a trial), ``variance`` (the formula) and ``reference``; for the random tests under folds ``permutations`` and
    ``seed``.

    Parameters
    ----------
    test : the test's name. folds : the protocol. sizes : random splits: the (train, validation, test) query counts
        of every trial (:func:`rankcli.core.perturb.split_sizes`), which the corrected test needs to run (without
        them the record only names it).
    seed : the experiment's seed (the random tests' generators are drawn from it).
    """
    record: dict = {"name": test}
    if folds:
        record["label"] = f"{spelled_out(test)} over the pooled test queries"
        if test in ("permutation", "bootstrap"):
            record.update(permutations=PERMUTATIONS, seed=seed)
        return record
    if test == "ttest":
        record["label"] = f"paired t-test across trials, {PAPER_TEST}"
        return record
    label = ("corrected resampled t-test across trials (Nadeau & Bengio 2003): variance (1/J + n_test/n_train) s^2 "
             "over J trials")
    if sizes is None:  # what the configuration alone can say
        record["label"] = label
        return record
    train, valid, n_test = (int(x) for x in sizes)
    n_train = train + valid  # the queries the models learned from: validation selects the model
    record.update(label=f"{label}, n_test {n_test} test queries, n_train {n_train} training + validation queries",
                  n_test=n_test, n_train=n_train, variance="(1/J + n_test/n_train) s^2", reference=REFERENCE)
    return record


def corrected_ratio(record: dict) -> float | None:
    """``n_test / n_train`` of a :func:`describe_test` record of the corrected test (what
    :func:`rankcli.compare.compare_values` takes), None for the other tests."""
    if record["name"] != DEFAULT_SPLIT_TEST:
        return None
    if "n_train" not in record:
        raise UsageError("the corrected t-test needs the trials' query counts: pass the split's (train, validation, "
                         "test) sizes")
    return record["n_test"] / record["n_train"]
