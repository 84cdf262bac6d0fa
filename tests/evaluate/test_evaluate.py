"""rankcli.evaluate: TREC runs scored like trec_eval (checked against pytrec_eval when it is installed)."""

import numpy as np
import pytest

from rankcli import evaluate as E
from rankcli.core import metrics as M
from rankcli.errors import InputError
from tests.trec_loading import load_trec_run


def write_trec(tmp_path, rng, n_queries=25):
    run_lines, qrels_lines, run, qrels = [], [], {}, {}
    for q in range(1, n_queries + 1):
        qid = str(300 + q)
        docs = [f"D{q}-{i}" for i in range(rng.integers(3, 30))] + ["é", "É", "z", "Z", "文"][:int(rng.integers(0, 6))]
        # Few score levels: ties everywhere, in shuffled file order (trec_eval breaks them by docid descending).
        scores = (rng.integers(0, 4, len(docs)) * 0.5).tolist()
        run[qid] = {d: float(s) for d, s in zip(docs, scores)}
        for rank, (d, s) in enumerate(zip(docs, scores), 1):
            run_lines.append(f"{qid} Q0 {d} {rank} {s!r} tag")
        judged = [d for d in docs if rng.random() < 0.6] + [f"U{q}-{i}" for i in range(rng.integers(0, 4))]
        qrels[qid] = {}
        for d in judged:
            rel = int(rng.integers(0, 4))
            qrels[qid][d] = rel
            qrels_lines.append(f"{qid} 0 {d} {rel}")
    qrels_lines.append("999 0 nowhere 1")  # a judged query the run lacks
    run_lines.append("777 Q0 x 1 1.0 tag")  # a run query without judgments
    (tmp_path / "run.txt").write_text("\n".join(run_lines) + "\n")
    (tmp_path / "qrels.txt").write_text("\n".join(qrels_lines) + "\n")
    return tmp_path / "run.txt", tmp_path / "qrels.txt", run, qrels


def test_trec_run_matches_pytrec_eval(tmp_path):
    """A TREC run with ties, read with the default convention (trec), equals trec_eval per query to 1e-9."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(4)
    run_path, qrels_path, run, qrels = write_trec(tmp_path, rng)
    measures = {"ndcg": "ndcg", "ndcg_cut_5": "ndcg@5", "ndcg_cut_10": "ndcg@10", "map": "map",
                "map_cut_10": "map@10", "recip_rank": "mrr", "P_5": "precision@5", "P_10": "precision@10",
                "recall_5": "recall@5", "recall_10": "recall@10"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate({q: run[q] for q in qrels if q in run})
    report = E.evaluate_trec(run_path, qrels_path, list(measures.values()))
    assert report.result.convention == M.Convention.preset("trec")
    qids = [str(q) for q in report.qids]
    assert sorted(qids) == sorted(theirs)
    for measure, ours in measures.items():
        want = np.array([theirs[q][measure] for q in qids])
        np.testing.assert_allclose(report.result.per_query[ours], want, rtol=0, atol=1e-9, err_msg=measure)
        assert report.result.means[ours] == pytest.approx(want.mean(), abs=1e-12)
    # The paper convention, asked for, is honoured on the same files (and gives other numbers).
    paper = E.evaluate_trec(run_path, qrels_path, ["ndcg@5"], M.Convention.preset("paper"))
    assert paper.result.convention == M.Convention() and paper.result.means["ndcg@5"] != report.result.means["ndcg@5"]
    assert report.notes == [f"1 query of the run has no judgments in {qrels_path} and was not evaluated",
                            "1 judged query is absent from the run and not evaluated (as trec_eval without -c)"]


def test_trec_query_ids_stay_strings_unless_plain_integers(tmp_path):
    (tmp_path / "r.txt").write_text("q1 Q0 a 1 2 t\nq1 Q0 b 2 1 t\n")
    (tmp_path / "j.txt").write_text("q1 0 b 1\n")
    run = load_trec_run(tmp_path / "r.txt", tmp_path / "j.txt")
    assert run.qids.tolist() == ["q1"] and run.labels.tolist() == [0.0, 1.0]
    (tmp_path / "r2.txt").write_text("007 Q0 a 1 2 t\n")
    (tmp_path / "j2.txt").write_text("007 0 a 1\n")
    assert load_trec_run(tmp_path / "r2.txt", tmp_path / "j2.txt").qids.tolist() == ["007"]


def test_run_sharing_no_document_with_the_qrels_is_an_error(tmp_path):
    (tmp_path / "r.txt").write_text("q1 Q0 7 1 2 t\nq1 Q0 8 2 1 t\nq2 Q0 9 1 1 t\n")
    (tmp_path / "j.txt").write_text("q1 0 q1-7 1\nq2 0 q2-9 1\nq3 0 7 1\n")  # "7" is judged, but for q3
    with pytest.raises(InputError) as err:
        load_trec_run(tmp_path / "r.txt", tmp_path / "j.txt")
    assert str(err.value) == (f"{tmp_path / 'r.txt'} and {tmp_path / 'j.txt'} share no document id: none of the 3 "
                              "documents the run ranks for its 2 judged queries is in the qrels (query q1: the run "
                              "has '7', the qrels 'q1-7'); were they written from the same data?")
    assert err.value.exit_status == 3


def test_queries_without_a_judged_document_are_counted(tmp_path):
    (tmp_path / "r.txt").write_text("1 Q0 a 1 2 t\n1 Q0 b 2 1 t\n2 Q0 c 1 1 t\n3 Q0 d 1 1 t\n")
    (tmp_path / "j.txt").write_text("1 0 b 1\n2 0 x 1\n3 0 y 0\n")
    run = load_trec_run(tmp_path / "r.txt", tmp_path / "j.txt", ranked=True)
    assert run.queries_without_judged == 2
    report = E.evaluate_run(run, ["ndcg"], M.Convention.preset("trec"))
    assert report.as_dict()["queries_without_judged"] == 2
    assert list(report.as_dict()) == ["convention", "queries", "skipped", "queries_without_judged", "metrics"]
    assert report.notes[-1].startswith("2 of the 3 evaluated queries have no judged document among those the run "
                                       "ranks")
    assert report.result.per_query["ndcg"].tolist() == pytest.approx([1 / np.log2(3), 0.0, 0.0])


def test_duplicate_document_in_run_is_an_error(tmp_path):
    (tmp_path / "r.txt").write_text("1 Q0 a 1 2 t\n1 Q0 a 2 1 t\n")
    (tmp_path / "j.txt").write_text("1 0 a 1\n")
    with pytest.raises(InputError, match=r"r.txt:2: document a appears twice for query 1 \(first at line 1\)"):
        load_trec_run(tmp_path / "r.txt", tmp_path / "j.txt")


def test_both_files_bad_names_the_run_first_and_rows_come_in_rank_order(tmp_path):
    # the two files are read at the same time: an error in the run is still the one reported
    (tmp_path / "r.txt").write_text("1 Q0 a 1 x t\n")
    (tmp_path / "j.txt").write_text("1 0 a\n")
    with pytest.raises(InputError, match=r"r.txt:1: score must be a number"):
        load_trec_run(tmp_path / "r.txt", tmp_path / "j.txt")
    # rows ranked once, by the rank stage, under the convention's tie rule: trec_eval's (c before a) or the run's order
    (tmp_path / "r.txt").write_text("1 Q0 a 1 2 t\n1 Q0 b 2 3 t\n1 Q0 c 3 2 t\n2 Q0 d 1 1 t\n2 Q0 e 2 5 t\n")
    (tmp_path / "j.txt").write_text("1 0 a 1\n1 0 c 0\n2 0 d 1\n")
    for ranked, judged in ((True, [False, True, True, False, True]), (False, [False, True, True, False, True])):
        run = load_trec_run(tmp_path / "r.txt", tmp_path / "j.txt", ranked=ranked)
        assert run.scores.tolist() == [3.0, 2.0, 2.0, 5.0, 1.0] and run.judged.tolist() == judged
    run = load_trec_run(tmp_path / "r.txt", tmp_path / "j.txt", ranked=True)
    assert run.labels.tolist() == [0.0, 0.0, 1.0, 0.0, 1.0]  # b, c, a: the docid rule put c before a
    report = E.evaluate_run(run, ["recip_rank", "P_2"], M.Convention.preset("trec"))
    assert report.result.per_query["mrr"].tolist() == pytest.approx([1 / 3, 0.5])
    assert report.result.per_query["precision@2"].tolist() == pytest.approx([0.0, 0.5])
    run = load_trec_run(tmp_path / "r.txt", tmp_path / "j.txt")
    assert run.labels.tolist() == [0.0, 1.0, 0.0, 0.0, 1.0]  # b, a, c: the run's order among equal scores


def test_run_from_arrays_errors_name_row_and_qid():
    with pytest.raises(InputError, match=r"run.parquet: column label: NaN or missing at row 2 \(qid 5\)"):
        E.run_from_arrays(np.array([4, 5, 5]), np.array([1.0, 0.0, np.nan]), np.zeros(3), "run.parquet")


def test_max_docs_keeps_the_top_in_trec_evals_order(tmp_path):
    # d10 (relevant) and d9 tie on score: trec_eval ranks d9 first (docid descending in byte order), so -M 1 keeps d9
    # whatever the file order; d1 scores highest in query 2.
    (tmp_path / "r.txt").write_text("1 Q0 d10 1 1.0 t\n1 Q0 d9 2 1.0 t\n2 Q0 d2 1 0.5 t\n2 Q0 d1 2 0.9 t\n")
    (tmp_path / "j.txt").write_text("1 0 d10 1\n2 0 d1 1\n")
    report = E.evaluate_trec(tmp_path / "r.txt", tmp_path / "j.txt", ["num_ret", "num_rel_ret"], max_docs=1)
    assert report.result.per_query["num_ret"].tolist() == [1, 1]
    assert report.result.per_query["num_rel_ret"].tolist() == [0, 1]
    full = E.evaluate_trec(tmp_path / "r.txt", tmp_path / "j.txt", ["num_ret", "num_rel_ret"])
    assert full.result.means == {"num_ret": 4.0, "num_rel_ret": 2.0}
