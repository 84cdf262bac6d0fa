import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankcli.core import metrics as M
from rankcli.core.metrics.specs import CORE
from rankcli.errors import ExitStatus, InputError, UsageError
from tests import reference
from tests.conftest import REPO, SAMPLE
from tests.conftest import make_ranking as random_batch

ALL_NAMES = CORE


def ref(name, k, labels, scores, offsets, conv, unranked=None, docids=None):
    ties = conv.ties
    if ties == "docid-desc":
        # trec_eval's comparator, literally: score descending, then strcmp(docno2, docno1) on the UTF-8 bytes. The
        # rows so ordered are then read in input order.
        order = []
        for a, b in zip(offsets[:-1], offsets[1:]):
            order += sorted(range(a, b), key=lambda i: (-scores[i], _Desc(docids[i].encode())))
        labels, scores, ties = labels[order], scores[order], "input"
    return reference.metric_per_query(name, k, labels, scores, offsets, gain=conv.gain, no_relevant=conv.no_relevant,
                                      ties=ties, threshold=conv.relevance_threshold,
                                      max_grade=conv.err_max_grade, unranked=unranked)


class _Desc:
    """A sort key that orders bytes descending."""

    def __init__(self, b):
        self.b = b

    def __lt__(self, other):
        return self.b > other.b

    def __eq__(self, other):
        return self.b == other.b


def row_names(offsets, rng=None):
    """A docid per row, unique within its query: ``"<j>"`` (so "10" sorts before "9" in byte order), or with ``rng``
    random names mixing ASCII, upper case, accents, CJK and 4-byte UTF-8."""
    alphabet = ["a", "B", "z", "0", "9", "-", "_", "é", "É", "ß", "文", "\U0001F600", "\uFFFD", "~"]
    names = []
    for a, b in zip(offsets[:-1], offsets[1:]):
        if rng is None:
            names += [str(j) for j in range(b - a)]
            continue
        seen = set()
        while len(seen) < b - a:
            seen.add("".join(rng.choice(alphabet, int(rng.integers(1, 4)))))
        names += list(rng.permutation(sorted(seen)))
    return np.array(names, dtype=object)


# ---------------------------------------------------------------------------------------------------------------------
# Names


def test_parse_metric_canonical_names():
    assert M.parse_metric("ndcg@10") == M.MetricSpec("ndcg", 10)
    assert str(M.parse_metric("NDCG@10")) == "ndcg@10"
    assert str(M.parse_metric("rr@5")) == "mrr@5"
    assert str(M.parse_metric("P@5")) == "precision@5"
    assert str(M.parse_metric("mrr")) == "mrr"
    assert M.parse_metric("map") == M.MetricSpec("map", None)
    assert hash(M.parse_metric("ndcg@3")) == hash(M.MetricSpec("ndcg", 3))


def test_parse_metrics_shorthand_and_dedup():
    specs = M.parse_metrics(["ndcg@1,3,5,10", "ndcg@5,map", "mrr@10"])
    assert [str(s) for s in specs] == ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "map", "mrr@10"]
    assert [str(s) for s in M.parse_metrics("err@20")] == ["err@20"]


@pytest.mark.parametrize("text, fragment", [
    ("ndgc@10", "did you mean 'ndcg'"),
    ("recal@5", "did you mean 'recall'"),
    ("ndcg@0", "positive integer"),
    ("ndcg@x", "positive integer"),
    ("zzz", "unknown metric 'zzz'"),
])
def test_unknown_metric_suggests_and_exits_2(text, fragment):
    # A usage error (exit 2), as a misspelt loss is: the command line is wrong, not the data.
    with pytest.raises(UsageError) as err:
        M.parse_metrics([text])
    assert fragment in str(err.value)
    assert err.value.exit_status == ExitStatus.USAGE


def test_bare_cutoff_without_metric_is_refused():
    with pytest.raises(M.UnknownMetricError, match="follows no metric"):
        M.parse_metrics(["5,ndcg"])


def test_one_record_per_core_metric_with_its_definition():
    """Every core metric of the registry has one record holding both tie rules' kernels, and its docstring gives the
    formula and a reference (author and year); the registry's names and aliases are the only names."""
    from rankcli.core.metrics.definitions import KERNELS
    from rankcli.core.metrics.specs import BY_NAME, REGISTRY

    assert set(KERNELS) == set(CORE) == {m.name for m in REGISTRY if m.family == "core"}
    for name, record in KERNELS.items():
        assert record.name == name and record.record() is BY_NAME[name]
        assert callable(record.input) and callable(record.average)
        doc = record.__doc__
        assert "=" in doc, f"{name}: no formula"
        assert any(str(year) in doc for year in range(1990, 2030)), f"{name}: no reference year"
    for alias in ("rr", "ap", "p", "r"):
        assert M.parse_metric(alias).name in KERNELS


def test_convention_presets_and_dict():
    assert M.Convention.preset("paper") == M.Convention()
    lgb = M.Convention.preset("lightgbm")
    assert (lgb.gain, lgb.no_relevant, lgb.ties) == ("exponential", "one", "input")
    sk = M.Convention.preset("sklearn")
    assert (sk.gain, sk.no_relevant, sk.ties) == ("linear", "zero", "average")
    assert M.Convention().as_dict() == {"gain": "exponential", "no_relevant": "skip", "ties": "input",
                                        "relevance_threshold": 1.0, "max_grade": 4.0}
    trec = M.Convention.preset("trec")
    assert (trec.gain, trec.no_relevant, trec.ties, trec.relevance_threshold) == ("linear", "zero", "docid-desc", 1.0)
    with pytest.raises(UsageError, match="unknown convention preset 'trec_eval'"):
        M.Convention.preset("trec_eval")
    with pytest.raises(UsageError, match="unknown ties 'random'"):
        M.Convention(ties="random")
    assert M.Convention.preset("sklearn").with_(ties="input", gain=None).ties == "input"


# ---------------------------------------------------------------------------------------------------------------------
# Against the reference loops


@pytest.mark.parametrize("no_relevant", M.NO_RELEVANT)
@pytest.mark.parametrize("gain", M.GAINS)
def test_input_ties_match_reference_on_tie_heavy_data(gain, no_relevant):
    rng = np.random.default_rng([M.GAINS.index(gain), M.NO_RELEVANT.index(no_relevant)])
    labels, scores, offsets = random_batch(rng, n_queries=80, max_size=40, grades=3)
    for threshold in (1.0, 2.0):
        conv = M.Convention(gain=gain, no_relevant=no_relevant, relevance_threshold=threshold)
        specs = [M.MetricSpec(n, k) for n in ALL_NAMES for k in (None, 1, 3, 5, 10, 50)]
        got = M.per_query(specs, labels, scores, offsets, conv)
        for spec in specs:
            np.testing.assert_allclose(got[str(spec)], ref(spec.name, spec.k, labels, scores, offsets, conv),
                                       rtol=1e-12, atol=1e-12, err_msg=str(spec))


def test_rows_already_ranked_match_reference_with_their_ties():
    """Rows already in rank order (as TREC runs come from the C path) skip the sort: the first cells are the ranking,
    and equal scores keep their input order, as the sort would keep them."""
    rng = np.random.default_rng(11)
    labels, scores, offsets = random_batch(rng, n_queries=80, max_size=40, grades=3)
    order = np.concatenate([a + np.argsort(-scores[a:b], kind="stable") for a, b in zip(offsets[:-1], offsets[1:])])
    labels, scores = labels[order], scores[order]  # each query ranked, ties in their input order
    conv = M.Convention(gain="linear", no_relevant="zero")
    specs = [M.MetricSpec(n, k) for n in ALL_NAMES for k in (None, 1, 3, 5, 10, 50)]
    got = M.per_query(specs, labels, scores, offsets, conv)
    for spec in specs:
        np.testing.assert_allclose(got[str(spec)], ref(spec.name, spec.k, labels, scores, offsets, conv),
                                   rtol=1e-12, atol=1e-12, err_msg=str(spec))


def test_input_ties_exact_across_the_cut_in_wide_queries():
    # Wide queries (the argpartition path) where many documents tie exactly at the k-th score.
    rng = np.random.default_rng(7)
    labels, scores, offsets = random_batch(rng, n_queries=40, max_size=300, min_size=100, tie_levels=4)
    conv = M.Convention()
    specs = [M.MetricSpec(n, k) for n in ("ndcg", "err", "map", "mrr") for k in (1, 5, 10, 20)]
    got = M.per_query(specs, labels, scores, offsets, conv)
    for spec in specs:
        np.testing.assert_allclose(got[str(spec)], ref(spec.name, spec.k, labels, scores, offsets, conv),
                                   rtol=1e-12, atol=1e-12, err_msg=str(spec))


@pytest.mark.parametrize("no_relevant", M.NO_RELEVANT)
@pytest.mark.parametrize("gain", M.GAINS)
def test_average_ties_match_enumeration_of_all_permutations(gain, no_relevant):
    rng = np.random.default_rng([M.GAINS.index(gain), M.NO_RELEVANT.index(no_relevant), 1])
    labels, scores, offsets = random_batch(rng, n_queries=40, max_size=6, tie_levels=2, grades=3)
    conv = M.Convention(gain=gain, no_relevant=no_relevant, ties="average")
    specs = [M.MetricSpec(n, k) for n in ALL_NAMES for k in (None, 1, 2, 3, 5)]
    got = M.per_query(specs, labels, scores, offsets, conv)
    for spec in specs:
        np.testing.assert_allclose(got[str(spec)], ref(spec.name, spec.k, labels, scores, offsets, conv),
                                   rtol=1e-10, atol=1e-12, err_msg=str(spec))


def test_docid_ties_match_reference_on_tie_heavy_data():
    # Every metric and cutoff, wide queries too (the argpartition path), names with odd bytes.
    rng = np.random.default_rng(21)
    for max_size, min_size in ((40, 1), (300, 100)):
        labels, scores, offsets = random_batch(rng, n_queries=40, max_size=max_size, min_size=min_size, grades=3)
        docids = row_names(offsets, rng)
        conv = M.Convention.preset("trec")
        specs = [M.MetricSpec(n, k) for n in ALL_NAMES for k in (None, 1, 3, 10, 20)]
        got = M.per_query(specs, labels, scores, offsets, conv, docids=docids)
        for spec in specs:
            np.testing.assert_allclose(got[str(spec)],
                                       ref(spec.name, spec.k, labels, scores, offsets, conv, docids=docids),
                                       rtol=1e-12, atol=1e-12, err_msg=str(spec))


def test_docid_ties_do_not_depend_on_row_order():
    # A run written best first (the no-sort path) and the same rows shuffled within queries (the sorting path) agree;
    # -0.0 ties 0.0 and inf ties inf, as in trec_eval's comparisons.
    rng = np.random.default_rng(5)
    labels, scores, offsets = random_batch(rng, n_queries=50, max_size=20, grades=3)
    scores = np.choose(rng.integers(0, 4, scores.shape[0]), [scores, -scores * 0.0, scores * 0.0, scores + np.inf])
    docids = row_names(offsets, rng)
    specs = M.parse_metrics(["ndcg@1,3,10", "ndcg", "map", "mrr", "precision@5", "recall@5", "err@5"])
    conv = M.Convention.preset("trec")
    base = M.per_query(specs, labels, scores, offsets, conv, docids=docids)
    for rows in ([np.argsort(-scores[a:b], kind="stable") + a for a, b in zip(offsets[:-1], offsets[1:])],
                 [rng.permutation(np.arange(a, b)) for a, b in zip(offsets[:-1], offsets[1:])]):
        order = np.concatenate(rows)
        got = M.per_query(specs, labels[order], scores[order], offsets, conv, docids=docids[order])
        for name in base:
            np.testing.assert_array_equal(got[name], base[name], err_msg=name)


def test_tie_order_changes_the_result_as_in_trec_eval():
    # Two documents tie; "d9" > "d10" in byte order, so trec_eval ranks d9 (not relevant) first whatever the file says.
    labels, scores, offsets = np.array([1.0, 0.0]), np.array([1.0, 1.0]), np.array([0, 2])
    docids = np.array(["d10", "d9"], dtype=object)
    specs = M.parse_metrics(["precision@1", "mrr", "ndcg@1", "map"])
    trec = M.per_query(specs, labels, scores, offsets, M.Convention.preset("trec"), docids=docids)
    file_order = M.per_query(specs, labels, scores, offsets, M.Convention.preset("trec").with_(ties="input"))
    assert {k: float(v[0]) for k, v in trec.items()} == {"precision@1": 0.0, "mrr": 0.5, "ndcg@1": 0.0, "map": 0.5}
    assert {k: float(v[0]) for k, v in file_order.items()} == {"precision@1": 1.0, "mrr": 1.0, "ndcg@1": 1.0,
                                                                "map": 1.0}
    pytrec_eval = pytest.importorskip("pytrec_eval")
    theirs = pytrec_eval.RelevanceEvaluator({"q": {"d10": 1, "d9": 0}}, {"P_1", "recip_rank", "ndcg_cut_1", "map"}
                                            ).evaluate({"q": {"d10": 1.0, "d9": 1.0}})["q"]
    assert theirs == {"P_1": 0.0, "recip_rank": 0.5, "ndcg_cut_1": 0.0, "map": 0.5}


def test_docid_ties_need_docids():
    with pytest.raises(UsageError, match="ties=docid-desc .* orders equal scores by document id"):
        M.per_query(["ndcg"], [1.0, 0.0], [1.0, 1.0], [0, 2], M.Convention.preset("trec"))
    with pytest.raises(InputError, match="docids must have one entry per row"):
        M.per_query(["ndcg"], [1.0, 0.0], [1.0, 1.0], [0, 2], M.Convention.preset("trec"), docids=["a"])


TREC_MEASURES = {"ndcg": "ndcg", "ndcg_cut_1": "ndcg@1", "ndcg_cut_5": "ndcg@5", "ndcg_cut_10": "ndcg@10",
                 "ndcg_cut_100": "ndcg@100", "map": "map", "map_cut_10": "map@10", "P_1": "precision@1",
                 "P_5": "precision@5", "P_20": "precision@20", "recall_5": "recall@5", "recall_20": "recall@20",
                 "recall_1000": "recall@1000", "recip_rank": "mrr"}


def test_trec_preset_equals_pytrec_eval_per_query_on_tie_heavy_runs():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(2024)
    qrels, run = {}, {}
    labels, scores, docids, sizes, unranked = [], [], [], [], []
    for q in range(400):
        n = int(rng.integers(1, 40))
        names = [str(d) for d in row_names(np.array([0, n]), rng)]
        s = rng.integers(0, 4, n).astype(float) * rng.choice([1.0, 0.25])  # 4 score levels: ties everywhere
        rel = rng.choice([-1, 0, 0, 1, 2, 3, 4], n)  # -1: in the pool, unjudged (gain 0, not relevant)
        judged = rng.random(n) < 0.7
        qid = f"q{q}"
        run[qid] = {d: float(v) for d, v in zip(names, s)}
        qrels[qid] = {d: int(r) for d, r, j in zip(names, rel, judged) if j}
        extra = {f"unretrieved{i}": int(rng.integers(0, 5)) for i in range(int(rng.integers(0, 4)))}
        qrels[qid].update(extra)
        if not qrels[qid]:
            qrels[qid] = {"nowhere": 0}
        labels += [float(r) if j else 0.0 for r, j in zip(rel, judged)]
        scores += s.tolist()
        docids += names
        sizes.append(n)
        unranked.append([float(v) for d, v in qrels[qid].items() if d not in run[qid]])
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    u_off = np.concatenate(([0], np.cumsum([len(u) for u in unranked]))).astype(np.int64)
    u_lab = np.array([y for u in unranked for y in u], dtype=np.float64)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_MEASURES)).evaluate(run)
    args = (np.array(labels), np.array(scores), offsets)
    kw = dict(unranked_labels=u_lab, unranked_offsets=u_off, docids=np.array(docids, dtype=object))
    ours = M.per_query(list(TREC_MEASURES.values()), *args, M.Convention.preset("trec"), **kw)
    in_file_order = M.per_query(list(TREC_MEASURES.values()), *args, M.Convention.preset("trec").with_(ties="input"),
                                **kw)
    for measure, name in TREC_MEASURES.items():
        want = np.array([theirs[f"q{q}"][measure] for q in range(400)])
        np.testing.assert_allclose(ours[name], want, rtol=0, atol=1e-9, err_msg=measure)
        if measure != "recall_1000":  # no query is that long: the order cannot matter
            assert np.abs(in_file_order[name] - want).max() > 0.01, measure  # the tie rule is what makes them equal


def test_unranked_judgments_count_in_ideal_and_recall():
    rng = np.random.default_rng(3)
    labels, scores, offsets = random_batch(rng, n_queries=30, max_size=12, grades=3)
    extra = [list(rng.integers(0, 4, rng.integers(0, 4)).astype(float)) for _ in range(30)]
    u_off = np.concatenate(([0], np.cumsum([len(e) for e in extra]))).astype(np.int64)
    u_lab = np.array([y for e in extra for y in e], dtype=np.float64)
    docids = row_names(offsets)
    for ties in M.TIES:
        conv = M.Convention(ties=ties, no_relevant="zero")
        specs = [M.MetricSpec(n, k) for n in ("ndcg", "dcg", "map", "recall", "precision", "mrr") for k in (None, 3)]
        got = M.per_query(specs, labels, scores, offsets, conv, unranked_labels=u_lab, unranked_offsets=u_off,
                          docids=docids)
        if ties == "average":
            continue  # tie groups of up to 12 are too many permutations for the reference; input order suffices
        for spec in specs:
            np.testing.assert_allclose(got[str(spec)],
                                       ref(spec.name, spec.k, labels, scores, offsets, conv, extra, docids),
                                       rtol=1e-12, atol=1e-12, err_msg=str(spec))


def test_real_valued_labels_use_the_sorting_path():
    rng = np.random.default_rng(11)
    labels, scores, offsets = random_batch(rng, n_queries=40, max_size=20)
    labels = labels * 0.37  # not integers: the ideal DCG comes from a per-query sort, not grade counts
    conv = M.Convention(relevance_threshold=0.5)
    for spec in M.parse_metrics(["ndcg@1,5", "ndcg", "dcg@3", "recall@5"]):
        got = M.per_query([spec], labels, scores, offsets, conv)[str(spec)]
        np.testing.assert_allclose(got, ref(spec.name, spec.k, labels, scores, offsets, conv), rtol=1e-12)


def test_hand_computed_values():
    labels = np.array([0, 2, 1, 0, 0, 1.0])
    scores = np.array([3, 2, 1, 0.5, 0.9, 0.1])
    offsets = np.array([0, 4, 6])
    r = M.per_query(M.parse_metrics(["dcg@2", "ndcg@2", "mrr", "precision@2", "map", "err@2"]), labels, scores,
                    offsets)
    assert r["dcg@2"][0] == pytest.approx(3 / np.log2(3))
    assert r["ndcg@2"][0] == pytest.approx((3 / np.log2(3)) / (3 + 1 / np.log2(3)))
    assert r["mrr"].tolist() == [0.5, 0.5]
    assert r["precision@2"].tolist() == [0.5, 0.5]
    assert r["map"][0] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert r["err@2"][0] == pytest.approx(0.5 * (3 / 16))


def test_no_relevant_policies():
    labels = np.array([0, 0, 1, 0.0])
    scores = np.array([1, 2, 1, 2.0])
    offsets = np.array([0, 2, 4])
    specs = M.parse_metrics(["ndcg@2", "dcg@2", "map", "precision@1"])
    skip = M.evaluate(specs, labels, scores, offsets, M.Convention(no_relevant="skip"))
    assert np.isnan(skip.per_query["ndcg@2"][0]) and skip.queries == 1 and skip.skipped == 1
    assert skip.means["precision@1"] == 0.0
    one = M.per_query(specs, labels, scores, offsets, M.Convention(no_relevant="one"))
    assert one["ndcg@2"][0] == 1.0 and one["map"][0] == 1.0 and one["dcg@2"][0] == 0.0
    zero = M.per_query(specs, labels, scores, offsets, M.Convention(no_relevant="zero"))
    assert zero["ndcg@2"][0] == 0.0


def test_graded_and_binary_relevance_can_differ():
    # label 1 is relevant for ndcg (positive gain) but not for map at threshold 2: counts differ, stated per metric.
    labels = np.array([1, 0, 2, 0.0])
    scores = np.array([1, 0, 1, 0.0])
    offsets = np.array([0, 2, 4])
    res = M.evaluate(M.parse_metrics(["ndcg", "map"]), labels, scores, offsets, M.Convention(relevance_threshold=2))
    assert res.evaluated == {"ndcg": 2, "map": 1}
    assert (res.queries, res.skipped) == (1, 1)


def test_err_bounds_and_errors():
    labels = np.array([5.0, 0.0])
    with pytest.raises(InputError, match="label 5 at row 0 exceeds the maximum grade 4"):
        M.per_query(["err@1"], labels, np.array([1.0, 0.0]), np.array([0, 2]))
    ok = M.per_query(["err@1"], labels, np.array([1.0, 0.0]), np.array([0, 2]), M.Convention(max_grade=5))
    assert ok["err@1"][0] == pytest.approx(31 / 32)
    # Averaged over the two orders of a tie: (R(5) + (1 - R(5)) R(0) / 2 + R(0) + (1 - R(0)) R(5) / 2) / 2.
    tied = M.per_query(["err"], labels, np.array([1.0, 1.0]), np.array([0, 2]),
                       M.Convention(max_grade=5, ties="average"))
    assert tied["err"][0] == pytest.approx((31 / 32 + 31 / 32 / 2) / 2)


def test_average_ties_equal_input_order_without_ties():
    rng = np.random.default_rng(12)
    labels, _, offsets = random_batch(rng, n_queries=30, max_size=200, min_size=50)
    scores = rng.permutation(labels.shape[0]).astype(np.float64)  # all distinct
    specs = M.parse_metrics(["ndcg@10", "ndcg", "err@10", "err", "map@20", "mrr", "precision@7", "recall@30"])
    a = M.per_query(specs, labels, scores, offsets, M.Convention(ties="input"))
    b = M.per_query(specs, labels, scores, offsets, M.Convention(ties="average"))
    for name in a:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-12, atol=1e-15, err_msg=name)


def test_bad_inputs():
    with pytest.raises(InputError, match="score is NaN at row 1"):
        M.per_query(["ndcg"], np.array([1.0, 0.0]), np.array([1.0, np.nan]), np.array([0, 2]))
    with pytest.raises(InputError, match="empty"):
        M.per_query(["ndcg"], np.array([1.0, 0.0]), np.array([1.0, 0.0]), np.array([0, 0, 2]))


def test_infinite_scores_and_single_document_queries():
    labels = np.array([1, 0, 2, 3.0])
    scores = np.array([-np.inf, -np.inf, np.inf, 0.0])
    offsets = np.array([0, 2, 3, 4])
    conv = M.Convention()
    for spec in M.parse_metrics(["ndcg@1", "ndcg", "mrr", "map@1"]):
        got = M.per_query([spec], labels, scores, offsets, conv)[str(spec)]
        np.testing.assert_allclose(got, ref(spec.name, spec.k, labels, scores, offsets, conv))


def test_core_imports_no_cli_or_io_libraries():
    code = ("import sys, rankcli.core.metrics; "
            "print(','.join(m for m in ('typer', 'rich', 'pyarrow', 'lightgbm') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == ""


# ---------------------------------------------------------------------------------------------------------------------
# Parity with independent implementations


def _sample_ranker_scores():
    lgb = pytest.importorskip("lightgbm")
    from sklearn.datasets import load_svmlight_file

    d = SAMPLE / "lightgbm"
    x_tr, y_tr = load_svmlight_file(str(d / "train.txt"), n_features=50)
    x_va, y_va = load_svmlight_file(str(d / "vali.txt"), n_features=50)
    g_tr = np.loadtxt(d / "train.txt.query", dtype=np.int64)
    g_va = np.loadtxt(d / "vali.txt.query", dtype=np.int64)
    params = {"objective": "lambdarank", "metric": "ndcg", "eval_at": [1, 3, 5, 10], "num_leaves": 7,
              "learning_rate": 0.1, "min_data_in_leaf": 5, "verbose": -1, "num_threads": 1, "seed": 1,
              "deterministic": True}
    train = lgb.Dataset(x_tr, y_tr, group=g_tr)
    valid = lgb.Dataset(x_va, y_va, group=g_va, reference=train)
    history: dict = {}
    booster = lgb.train(params, train, num_boost_round=15, valid_sets=[valid], valid_names=["valid"],
                        callbacks=[lgb.record_evaluation(history)])
    scores = booster.predict(x_va)
    offsets = np.concatenate(([0], np.cumsum(g_va))).astype(np.int64)
    return y_va.astype(np.float64), scores, offsets, history["valid"]


def test_lightgbm_parity():
    labels, scores, offsets, history = _sample_ranker_scores()
    conv = M.Convention.preset("lightgbm")
    res = M.evaluate(M.parse_metrics(["ndcg@1,3,5,10"]), labels, scores, offsets, conv)
    for k in (1, 3, 5, 10):
        assert res.means[f"ndcg@{k}"] == pytest.approx(history[f"ndcg@{k}"][-1], abs=1e-6)


def test_lightgbm_parity_on_ties():
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(5)
    labels, scores, offsets = random_batch(rng, n_queries=40, max_size=30, tie_levels=2, min_size=2)
    groups = np.diff(offsets)
    x = rng.normal(size=(labels.shape[0], 2))
    # init_score makes LightGBM's validation scores exactly our tie-heavy scores; evaluating before any boosting
    # round measures its metric on them (its stable sort keeps input order among ties, as ties="input" does).
    params = {"objective": "lambdarank", "metric": "ndcg", "eval_at": [1, 3, 5, 10], "verbose": -1,
              "num_threads": 1, "min_data_in_leaf": 1}
    train = lgb.Dataset(x, labels, group=groups, init_score=scores)
    valid = lgb.Dataset(x, labels, group=groups, init_score=scores, reference=train)
    booster = lgb.Booster(params, train)
    booster.add_valid(valid, "v")
    reported = {name: value for _, name, value, _ in booster.eval_valid()}
    res = M.evaluate(M.parse_metrics(["ndcg@1,3,5,10"]), labels, scores, offsets, M.Convention.preset("lightgbm"))
    for k in (1, 3, 5, 10):
        assert res.means[f"ndcg@{k}"] == pytest.approx(reported[f"ndcg@{k}"], abs=1e-6)


def test_sklearn_ndcg_score_parity():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(9)
    labels, scores, offsets = random_batch(rng, n_queries=50, max_size=25, tie_levels=3, min_size=2)
    conv = M.Convention.preset("sklearn")
    for k in (None, 1, 3, 5, 10):
        spec = M.MetricSpec("ndcg", k)
        got = M.per_query([spec], labels, scores, offsets, conv)[str(spec)]
        want = [sklearn_metrics.ndcg_score([labels[a:b]], [scores[a:b]], k=k)
                for a, b in zip(offsets[:-1], offsets[1:])]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=str(spec))


# ---------------------------------------------------------------------------------------------------------------------
# Properties

query = st.lists(st.tuples(st.integers(0, 4), st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0, 3.5])), min_size=1,
                 max_size=12)
batches = st.lists(query, min_size=1, max_size=8)


def _arrays(batch):
    labels = np.array([y for q in batch for y, _ in q], dtype=np.float64)
    scores = np.array([s for q in batch for _, s in q], dtype=np.float64)
    offsets = np.concatenate(([0], np.cumsum([len(q) for q in batch]))).astype(np.int64)
    return labels, scores, offsets


def _ids(batch):
    """Docids for the docid-desc tie rule (ignored by the others): the j-th document of a query is "<j>", so a
    query keeps its names when the queries are reordered."""
    return row_names(_arrays(batch)[2])


PROPERTY_SPECS = M.parse_metrics(["ndcg@1,3,10", "ndcg", "mrr", "map@5", "precision@3", "recall@3", "err@5"])


@settings(max_examples=60, deadline=None)
@given(batches, st.sampled_from(M.TIES), st.sampled_from(M.NO_RELEVANT))
def test_values_in_unit_interval(batch, ties, no_relevant):
    labels, scores, offsets = _arrays(batch)
    conv = M.Convention(ties=ties, no_relevant=no_relevant)
    for name, v in M.per_query(PROPERTY_SPECS, labels, scores, offsets, conv, docids=_ids(batch)).items():
        v = v[~np.isnan(v)]
        assert np.all(v >= -1e-12) and np.all(v <= 1 + 1e-12), name


@settings(max_examples=60, deadline=None)
@given(batches, st.sampled_from(M.TIES))
def test_ideal_ranking_scores_one(batch, ties):
    labels, _, offsets = _arrays(batch)
    res = M.per_query(M.parse_metrics(["ndcg@1,3,10", "ndcg"]), labels, labels, offsets, M.Convention(ties=ties),
                      docids=_ids(batch))
    for v in res.values():
        np.testing.assert_allclose(v[~np.isnan(v)], 1.0)


@settings(max_examples=60, deadline=None)
@given(batches, st.sampled_from(M.TIES))
def test_invariant_to_strictly_increasing_transforms(batch, ties):
    labels, scores, offsets = _arrays(batch)
    conv = M.Convention(ties=ties)
    a = M.per_query(PROPERTY_SPECS, labels, scores, offsets, conv, docids=_ids(batch))
    b = M.per_query(PROPERTY_SPECS, labels, np.exp(scores) * 3 - 7, offsets, conv, docids=_ids(batch))
    for name in a:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-12, err_msg=name)


@settings(max_examples=60, deadline=None)
@given(batches, st.randoms(use_true_random=False), st.sampled_from(M.TIES))
def test_invariant_to_query_order(batch, rnd, ties):
    labels, scores, offsets = _arrays(batch)
    perm = list(range(len(batch)))
    rnd.shuffle(perm)
    l2, s2, o2 = _arrays([batch[i] for i in perm])
    conv = M.Convention(ties=ties)
    a = M.evaluate(PROPERTY_SPECS, labels, scores, offsets, conv, docids=_ids(batch))
    b = M.evaluate(PROPERTY_SPECS, l2, s2, o2, conv, docids=_ids([batch[i] for i in perm]))
    for name in a.per_query:
        np.testing.assert_allclose(a.per_query[name][perm], b.per_query[name], rtol=1e-12)
        np.testing.assert_allclose(a.means[name], b.means[name], rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(batches, st.sampled_from(M.TIES), st.sampled_from(M.GAINS))
def test_dcg_non_decreasing_in_k(batch, ties, gain):
    labels, scores, offsets = _arrays(batch)
    specs = [M.MetricSpec("dcg", k) for k in range(1, 14)]
    res = M.per_query(specs, labels, scores, offsets, M.Convention(ties=ties, gain=gain, no_relevant="zero"),
                      docids=_ids(batch))
    stacked = np.stack([res[str(s)] for s in specs])
    assert np.all(np.diff(stacked, axis=0) >= -1e-12)


def test_labels_whose_exponential_gain_overflows_are_refused_not_nan():
    # 2^1024 is inf in float64: NDCG was inf/inf (NaN, counted as 'skipped') with a numpy warning on stderr.
    labels = np.array([0.0, 1500.0, 3.0, 0.0])
    scores = np.array([0.1, 0.2, 0.3, 0.4])
    offsets = np.array([0, 2, 4])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError, match=r"label 1500 at row 1: the exponential gain .*--gain linear"):
            M.evaluate(["ndcg@10"], labels, scores, offsets, M.Convention.preset("paper"))
        linear = M.evaluate(["ndcg@10"], labels, scores, offsets, M.Convention.preset("sklearn"))
        assert np.isfinite(linear.means["ndcg@10"])
        # Metrics without a gain take such labels as they are.
        assert np.isfinite(M.evaluate(["map"], labels, scores, offsets, M.Convention.preset("paper")).means["map"])
        # At the limit the DCG sums stay finite, and the value is the brute-force one.
        at_limit = np.array([1000.0, 999.0])
        got = M.evaluate(["ndcg"], at_limit, np.array([0.0, 1.0]), np.array([0, 2]), M.Convention.preset("paper"))
        gains = np.exp2(at_limit) - 1
        want = (gains[1] + gains[0] / np.log2(3)) / (gains[0] + gains[1] / np.log2(3))
        assert got.means["ndcg"] == pytest.approx(want, rel=1e-12)


def test_infinite_labels_are_refused():
    with pytest.raises(InputError, match="label is infinite at row 2"):
        M.evaluate(["map"], np.array([0.0, 1.0, np.inf]), np.array([1.0, 2.0, 3.0]), np.array([0, 3]),
                 M.Convention.preset("sklearn"))


@pytest.mark.parametrize("k", [1, 3, 10])
def test_f1_at_k_is_the_harmonic_mean_of_precision_and_recall_at_k(make_ranking, k):
    """ranx's f1@k, brute force per query: 2 P@k R@k / (P@k + R@k), 0 when no relevant document is in the top k."""
    import dataclasses

    labels, scores, offsets = make_ranking(80, 25, tie_levels=None)
    labels[offsets[1]:offsets[2]] = 0  # a query without a relevant document scores 0 under no_relevant=zero
    convention = dataclasses.replace(M.Convention.preset("paper"), no_relevant="zero")
    got = M.per_query([f"f1@{k}"], labels, scores, offsets, convention)[f"f1@{k}"]
    expected = []
    for a, b in zip(offsets[:-1], offsets[1:]):
        relevant = labels[a:b] >= convention.relevance_threshold
        top = np.argsort(-scores[a:b], kind="stable")[:k]
        hits = relevant[top].sum()
        precision, recall = hits / k, (hits / relevant.sum() if relevant.any() else 0.0)
        expected.append(0.0 if hits == 0 else 2 * precision * recall / (precision + recall))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert (np.asarray(expected) > 0).any()
