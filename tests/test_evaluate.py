"""rankcli.evaluate: TREC runs scored like trec_eval (checked against pytrec_eval when it is installed)."""

import numpy as np
import pytest

from rankcli import evaluate as E
from rankcli.core import metrics as M
from rankcli.errors import InputError


def write_trec(tmp_path, rng, n_queries=25):
    run_lines, qrels_lines, run, qrels = [], [], {}, {}
    for q in range(1, n_queries + 1):
        qid = str(300 + q)
        docs = [f"D{q}-{i}" for i in range(rng.integers(3, 30))]
        # Distinct scores (trec_eval breaks ties by docid, rankcli by file order), shuffled file order.
        scores = (rng.permutation(len(docs)) + rng.random()).tolist()
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
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(4)
    run_path, qrels_path, run, qrels = write_trec(tmp_path, rng)
    measures = {"ndcg": "ndcg", "ndcg_cut_5": "ndcg@5", "map": "map", "map_cut_10": "map@10", "recip_rank": "mrr",
                "P_5": "precision@5", "recall_10": "recall@10"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate({q: run[q] for q in qrels if q in run})
    conv = M.Convention(gain="linear", no_relevant="zero")  # trec_eval's
    report = E.evaluate_trec(run_path, qrels_path, list(measures.values()), conv)
    qids = [str(q) for q in report.qids]
    assert sorted(qids) == sorted(theirs)
    for measure, ours in measures.items():
        want = np.array([theirs[q][measure] for q in qids])
        np.testing.assert_allclose(report.result.per_query[ours], want, rtol=1e-4, atol=1e-4, err_msg=measure)
    assert report.notes == [f"1 query of the run has no judgments in {qrels_path} and was not evaluated",
                            "1 judged query is absent from the run and not evaluated (as trec_eval without -c)"]


def test_trec_query_ids_stay_strings_unless_plain_integers(tmp_path):
    (tmp_path / "r.txt").write_text("q1 Q0 a 1 2 t\nq1 Q0 b 2 1 t\n")
    (tmp_path / "j.txt").write_text("q1 0 b 1\n")
    run = E.load_trec_run(tmp_path / "r.txt", tmp_path / "j.txt")
    assert run.qids.tolist() == ["q1"] and run.labels.tolist() == [0.0, 1.0]
    (tmp_path / "r2.txt").write_text("007 Q0 a 1 2 t\n")
    (tmp_path / "j2.txt").write_text("007 0 a 1\n")
    assert E.load_trec_run(tmp_path / "r2.txt", tmp_path / "j2.txt").qids.tolist() == ["007"]


def test_duplicate_document_in_run_is_an_error(tmp_path):
    (tmp_path / "r.txt").write_text("1 Q0 a 1 2 t\n1 Q0 a 2 1 t\n")
    (tmp_path / "j.txt").write_text("1 0 a 1\n")
    with pytest.raises(InputError, match=r"r.txt:2: document a appears twice for query 1 \(first at line 1\)"):
        E.load_trec_run(tmp_path / "r.txt", tmp_path / "j.txt")


def test_run_from_arrays_errors_name_row_and_qid():
    with pytest.raises(InputError, match=r"run.parquet: column label: NaN or missing at row 2 \(qid 5\)"):
        E.run_from_arrays(np.array([4, 5, 5]), np.array([1.0, 0.0, np.nan]), np.zeros(3), "run.parquet")
