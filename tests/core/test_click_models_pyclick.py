"""rankcli's click models against PyClick itself (github.com/markovi/PyClick, the book's implementation), run from
../shared/reference/pyclick when it is there (GPL-3: run, never copied); skipped otherwise.

The same synthetic log (10 results per session, DBN-like clicks) is fitted by both from the same initial values and
iteration count; the fitted parameters, PyClick's log-likelihood, the perplexity and the conditional perplexity must
agree to 1e-9. DBN and CCM are compared with ``e_step="pyclick"`` (PyClick's updates, defects included); rankcli's
exact E-step is checked against an enumeration in test_click_models.py. PyClick is slow: its runs here are kept to
a few dozen sessions and iterations.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from rankcli.core import click_models as cm
from rankcli.core.click_models.evaluation import evaluate
from tests.conftest import REPO


def _pyclick_folder() -> Path:
    """``$RANKCLI_PYCLICK``, else the first ``shared/reference/pyclick`` beside the repository or above it (a
    worktree sits a level deeper than the main checkout)."""
    if os.environ.get("RANKCLI_PYCLICK"):
        return Path(os.environ["RANKCLI_PYCLICK"])
    for parent in REPO.parents:
        if (parent / "shared" / "reference" / "pyclick").is_dir():
            return parent / "shared" / "reference" / "pyclick"
    return REPO.parent / "shared" / "reference" / "pyclick"


PYCLICK = _pyclick_folder()
pytestmark = pytest.mark.skipif(not (PYCLICK / "pyclick").is_dir(), reason="PyClick is not in ../shared/reference")


@pytest.fixture(scope="module")
def pyclick():
    sys.path.insert(0, str(PYCLICK))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pyclick.click_models.Evaluation as evaluation
        from pyclick.click_models.CCM import CCM
        from pyclick.click_models.CM import CM
        from pyclick.click_models.CTR import DCTR, GCTR, RCTR
        from pyclick.click_models.DBN import DBN
        from pyclick.click_models.DCM import DCM
        from pyclick.click_models.Inference import EMInference
        from pyclick.click_models.PBM import PBM
        from pyclick.click_models.SDBN import SDBN
        from pyclick.click_models.UBM import UBM
        from pyclick.search_session.SearchResult import SearchResult
        from pyclick.search_session.SearchSession import SearchSession
    models = {"gctr": GCTR, "rctr": RCTR, "dctr": DCTR, "pbm": PBM, "cascade": CM, "ubm": UBM, "dcm": DCM,
              "ccm": CCM, "dbn": DBN, "sdbn": SDBN}
    return {"models": models, "evaluation": evaluation, "em": EMInference, "session": SearchSession,
            "result": SearchResult}


def synthetic_log(n_sessions: int, seed: int = 5, queries: int = 6, length: int = 10):
    """Sessions of 10 results from 15 documents per query in random orders, DBN clicks."""
    rng = np.random.default_rng(seed)
    q = rng.integers(0, queries, n_sessions)
    docs = rng.permuted(np.broadcast_to(np.arange(15), (n_sessions, 15)), axis=1)[:, :length] + 100 * q[:, None]
    attr = rng.uniform(0.05, 0.8, 100 * queries)
    clicks = np.zeros(docs.shape, bool)
    e = np.ones(n_sessions, bool)
    for k in range(length):
        clicks[:, k] = e & (rng.random(n_sessions) < attr[docs[:, k]])
        e &= ~(clicks[:, k] & (rng.random(n_sessions) < 0.4)) & (rng.random(n_sessions) < 0.8)
    return q, docs, clicks


def both(pyclick, n_sessions):
    q, docs, clicks = synthetic_log(n_sessions)
    sessions = []
    for s in range(n_sessions):
        session = pyclick["session"](str(q[s]))
        session.web_results = [pyclick["result"](str(d), int(c)) for d, c in zip(docs[s], clicks[s])]
        sessions.append(session)
    pairs, item = np.unique(q[:, None] * 10000 + docs, return_inverse=True)
    ours = cm.Sessions(np.arange(n_sessions + 1) * docs.shape[1], item.ravel(), clicks.ravel(), pairs.shape[0])
    return sessions, ours, q, docs


CASES = {"gctr": (200, 1), "rctr": (200, 1), "dctr": (200, 1), "cascade": (200, 1), "dcm": (200, 1),
         "sdbn": (200, 1), "pbm": (100, 20), "ubm": (100, 10), "dbn": (30, 4), "ccm": (30, 3)}


@pytest.mark.parametrize("name", list(CASES))
def test_same_fit_and_scores_as_pyclick(pyclick, name):
    n_sessions, iterations = CASES[name]
    sessions, ours, q, docs = both(pyclick, n_sessions)
    theirs = pyclick["models"][name]()
    if isinstance(theirs._inference, pyclick["em"]):
        theirs._inference = pyclick["em"](iterations)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs.train(sessions)
    model = cm.get_model(name)
    fitted = cm.fit(model, ours, iterations=iterations, e_step="pyclick")
    ev = evaluate(model, ours, fitted.values, cm.Layout(ours.n_items, ours.max_rank))
    ev_mod = pyclick["evaluation"]
    perplexity, at_rank = ev_mod.Perplexity().evaluate(theirs, sessions)
    assert abs(ev.perplexity - perplexity) < 1e-9
    assert np.max(np.abs(ev.perplexity_at_rank - np.array(at_rank))) < 1e-9
    if name != "cascade":  # PyClick's CM conditions on nothing: see the next test
        cond, cond_at_rank = ev_mod.PerplexityCond().evaluate(theirs, sessions)
        assert abs(ev.conditional_perplexity - cond) < 1e-9
        assert np.max(np.abs(ev.conditional_perplexity_at_rank - np.array(cond_at_rank))) < 1e-9
        assert abs(ev.log_likelihood_pyclick - ev_mod.LogLikelihood().evaluate(theirs, sessions)) < 1e-9
    # the per-(query, document) parameters themselves
    family = "ctr" if name.endswith("ctr") else "attr"
    if name != "gctr" and name != "rctr":
        container = theirs.params[next(p for p in theirs.params if p.name == family)]
        keys = np.unique(q[:, None] * 10000 + docs)
        for i, key in enumerate(keys[:40]):
            expected = container.get(str(key // 10000), str(key % 10000)).value()
            assert abs(fitted.values[family][i] - expected) < 1e-9


def test_pyclick_cascade_conditional_probabilities_are_its_full_ones(pyclick):
    """PyClick's CM.get_conditional_click_probs returns the unconditional P(C_k = 1) at the ranks above the first
    click (and 1e-6 below it, click or not): rankcli's are the conditional ones, attr_k above the first click."""
    sessions, ours, _, _ = both(pyclick, 50)
    theirs = pyclick["models"]["cascade"]()
    theirs.train(sessions)
    fitted = cm.fit(cm.CM(), ours)
    block = ours.blocks()[0]
    cond, full = cm.CM().probabilities(block, cm.gather(cm.CM(), fitted.values, block,
                                                        cm.Layout(ours.n_items, ours.max_rank)))
    for j in range(5):
        s = int(block.sessions[j])
        theirs_cond = theirs.get_conditional_click_probs(sessions[s])
        first = int(block.first[j])
        for k in range(min(first + 1, 10)):
            p = full[k, j] if block.click[k, j] else 1 - full[k, j]
            assert abs(theirs_cond[k] - p) < 1e-12
            attr = fitted.values["attr"][block.item[k, j]]
            assert abs(cond[k, j] - (attr if block.click[k, j] else 1 - attr)) < 1e-12
        assert all(abs(v - 1e-6) < 1e-15 for v in theirs_cond[first + 1:])


def test_exact_e_step_differs_from_pyclicks_dbn(pyclick):
    """The default E-step is not PyClick's: on a log with sessions without clicks the continuation differs."""
    _, ours, _, _ = both(pyclick, 30)
    exact = cm.fit(cm.DBN(), ours, iterations=4).values["cont"][0]
    pyclick_like = cm.fit(cm.DBN(), ours, iterations=4, e_step="pyclick").values["cont"][0]
    assert abs(exact - pyclick_like) > 1e-3


def _sessions_of_lengths(pyclick, lengths, seed=3):
    """Sessions of the given lengths (queries 0..2, documents of 12, clicks at 0.35), for both libraries."""
    rng = np.random.default_rng(seed)
    sessions, keys, clicks = [], [], []
    for n in lengths:
        q, docs, c = int(rng.integers(0, 3)), rng.choice(12, n, replace=False), rng.random(n) < 0.35
        session = pyclick["session"](str(q))
        session.web_results = [pyclick["result"](str(d), int(x)) for d, x in zip(docs, c)]
        sessions.append(session)
        keys.append(q * 1000 + docs)
        clicks.append(c)
    pairs, item = np.unique(np.concatenate(keys), return_inverse=True)
    ours = cm.Sessions(np.concatenate(([0], np.cumsum(lengths))), item.ravel(), np.concatenate(clicks),
                       pairs.shape[0])
    return sessions, ours, pairs


def test_pyclick_ubm_files_no_click_above_under_the_sessions_last_rank(pyclick):
    """PyClick's UBM examines a result with no click above it under "previous click at rank M - 1" (0-based, M the
    session's length): on a log of one session length that slot is never a real previous click and the fits agree
    (rankcli's slot is previous click rank 0); with sessions of several lengths a short session's slot is a longer
    session's real click, and PyClick's estimates mix the two."""
    def fits(lengths):
        sessions, ours, pairs = _sessions_of_lengths(pyclick, lengths)
        theirs = pyclick["models"]["ubm"]()
        theirs._inference = pyclick["em"](5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs.train(sessions)
        mine = cm.fit(cm.get_model("ubm"), ours, iterations=5).values
        names = {p.name: theirs.params[p] for p in theirs.params}
        attr = np.array([names["attr"].get(str(k // 1000), str(k % 1000)).value() for k in pairs])
        return mine, names["exam"], attr, ours.max_rank

    mine, exam, attr, R = fits([5] * 25)
    assert np.max(np.abs(mine["attr"] - attr)) < 1e-9
    for k in range(R):
        assert abs(mine["exam"][k * R] - exam.get(k, R - 1).value()) < 1e-9  # no click above
        for j in range(1, k + 1):
            assert abs(mine["exam"][k * R + j] - exam.get(k, j - 1).value()) < 1e-9
    mine, _, attr, _ = fits([int(n) for n in np.random.default_rng(4).integers(1, 11, 25)])
    assert np.max(np.abs(mine["attr"] - attr)) > 1e-3
