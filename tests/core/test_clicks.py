"""Click models: exact invariants (hypothesis), probabilities within binomial bounds, and the vectorised simulators
against the literal per-impression loops of tests/reference.py in distribution (their random streams differ)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2_contingency

from rankcli.core import clicks
from rankcli.errors import InputError, UsageError
from tests import reference

PAPER = (0.05, 0.3, 0.5, 0.7, 0.95)


def dataset(sizes, seed=0, grade_p=(0.5, 0.25, 0.15, 0.07, 0.03)):
    rng = np.random.default_rng(seed)
    sizes = np.asarray(sizes)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    grades = rng.choice(len(grade_p), size=int(offsets[-1]), p=grade_p)
    return grades, offsets


def random_ranks(offsets, rng):
    """A random deterministic display order: 0-based rank of every row within its query."""
    ranks = np.empty(offsets[-1], np.int64)
    for a, b in zip(offsets[:-1], offsets[1:]):
        ranks[a:b] = rng.permutation(b - a)
    return ranks


def impressions_of(log):
    return [(int(log.query[k]), int(log.impression[k]), log.rows[a:b], log.clicks[a:b], log.positions[a:b])
            for k, (a, b) in enumerate(zip(log.offsets[:-1], log.offsets[1:]))]


def check_invariants(log, grades, offsets, impressions, *, model, keep, max_rank, display_rank):
    n_q = offsets.shape[0] - 1
    sizes = np.diff(offsets)
    assert log.n_impressions == n_q * impressions
    assert log.n_kept + log.dropped == log.n_impressions
    gid = log.query * impressions + log.impression
    assert np.all(np.diff(gid) > 0)  # impressions in (query, impression) order, each once
    total_shown = 0
    for q, _, rows, c, pos in impressions_of(log):
        a, b = offsets[q], offsets[q + 1]
        assert rows.shape[0] >= 1
        assert np.all((rows >= a) & (rows < b))
        assert np.unique(rows).shape[0] == rows.shape[0]
        assert np.array_equal(pos, np.arange(1, rows.shape[0] + 1))
        limit = sizes[q] if max_rank is None else min(sizes[q], max_rank)
        assert rows.shape[0] <= limit
        if display_rank is not None:
            assert np.array_equal(display_rank[rows], np.arange(rows.shape[0]))
        if model == "cascade":
            assert c.sum() <= 1
            if c.sum() == 1:
                assert c[-1] == 1  # the click ends the impression: nothing after the first click
            else:
                assert rows.shape[0] == limit  # no click: the scan ran to the end of the displayed list
        else:
            assert rows.shape[0] == limit
        if not keep:
            assert c.sum() >= 1
        total_shown += rows.shape[0]
    assert log.clicks_by_grade.sum() == log.clicks.sum()
    assert log.shown_by_grade.sum() == log.shown_by_position.sum()
    assert log.clicks_by_position.sum() == log.clicks.sum()
    assert log.shown_by_grade.sum() >= total_shown
    if keep:
        assert log.shown_by_grade.sum() == total_shown
        np.testing.assert_array_equal(log.shown_by_grade, np.bincount(grades[log.rows], minlength=5)[:5])


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 25), min_size=1, max_size=6),
    impressions=st.integers(1, 4),
    probs=st.lists(st.sampled_from([0.0, 0.05, 0.3, 0.5, 0.9, 1.0]), min_size=5, max_size=5),
    model=st.sampled_from(["cascade", "pbm"]),
    ranker=st.sampled_from(["random", "fixed"]),
    max_rank=st.one_of(st.none(), st.integers(1, 8)),
    keep=st.booleans(),
    steps=st.sampled_from([0, 1, 3, 16]),
    seed=st.integers(0, 2**16),
)
def test_invariants(sizes, impressions, probs, model, ranker, max_rank, keep, steps, seed):
    grades, offsets = dataset(sizes, seed)
    rng = np.random.default_rng(seed)
    ranks = random_ranks(offsets, rng) if ranker == "fixed" else None
    if model == "cascade":
        log = clicks.cascade(grades, offsets, probs, impressions, rng, display_rank=ranks, max_rank=max_rank,
                             keep_no_click=keep, scan_steps=steps)
    else:
        log = clicks.pbm(grades, offsets, probs, impressions, rng, eta=0.7, display_rank=ranks, max_rank=max_rank,
                         keep_no_click=keep)
    check_invariants(log, grades, offsets, impressions, model=model, keep=keep, max_rank=max_rank,
                     display_rank=ranks)


def test_certain_and_impossible_clicks():
    grades, offsets = dataset([7, 1, 12], 3)
    always = clicks.cascade(grades, offsets, (1.0,) * 5, 5, np.random.default_rng(0))
    assert np.array_equal(np.diff(always.offsets), np.ones(15))  # the first document shown is always clicked
    never = clicks.cascade(grades, offsets, (0.0,) * 5, 5, np.random.default_rng(0))
    assert never.n_kept == 0 and never.dropped == 15 and never.clicks_by_grade.sum() == 0
    kept = clicks.cascade(grades, offsets, (0.0,) * 5, 5, np.random.default_rng(0), keep_no_click=True)
    assert np.array_equal(np.diff(kept.offsets), np.repeat([7, 1, 12], 5))


def test_label_ranker_noise_free_clicks_top_grade_4():
    grades = np.array([0, 4, 2, 4, 1, 0, 3, 2])
    offsets = np.array([0, 5, 8])
    ranks = np.array([4, 0, 2, 1, 3, 2, 0, 1])  # label order, ties by input order
    log = clicks.cascade(grades, offsets, (0, 0, 0, 0, 1), 4, np.random.default_rng(0), display_rank=ranks)
    # Query 0 shows its first grade-4 document on top: always a one-row impression, clicked. Query 1 has no grade 4.
    assert log.n_kept == 4 and log.dropped == 4
    assert np.array_equal(log.rows, [1, 1, 1, 1]) and np.all(log.clicks == 1)


@pytest.mark.parametrize("model", ["cascade", "pbm"])
def test_click_rate_per_grade_within_binomial_bound(model):
    grades, offsets = dataset(np.full(300, 30), 1, grade_p=(0.6, 0.1, 0.1, 0.1, 0.1))
    log = clicks.simulate(model, grades, offsets, PAPER, 100, np.random.default_rng(2), eta=0.0)
    n = log.shown_by_grade
    rate = log.clicks_by_grade / n
    p = np.array(PAPER)
    z = np.abs(rate - p) / np.sqrt(p * (1 - p) / n)
    assert np.all(z < 4.5), (rate, z)
    assert n.min() > 5000


def test_pbm_examination_and_click_rate_per_position():
    eta = 1.3
    grades, offsets = dataset(np.full(200, 12), 2)
    log = clicks.pbm(grades, offsets, PAPER, 100, np.random.default_rng(5), eta=eta, keep_no_click=True)
    n = log.shown_by_position
    assert np.all(n == 200 * 100)
    exam = log.examined_by_position / n
    expect = (1.0 / np.arange(1, 13)) ** eta
    z = np.abs(exam - expect) / np.sqrt(np.maximum(expect * (1 - expect), 1e-12) / n)
    assert np.all(z < 4.5), (exam, expect)
    # Clicks only on examined documents; among examined ones the click rate per grade is p(grade).
    assert np.all(log.clicks <= log.examined)
    g = grades[log.rows][log.examined]
    c = log.clicks[log.examined]
    for grade, p in enumerate(PAPER):
        k, m = c[g == grade].sum(), (g == grade).sum()
        assert abs(k / m - p) < 4.5 * np.sqrt(p * (1 - p) / m)


def test_pbm_max_rank_truncates():
    grades, offsets = dataset([3, 9, 20], 4)
    log = clicks.pbm(grades, offsets, PAPER, 50, np.random.default_rng(1), max_rank=5, keep_no_click=True)
    assert np.array_equal(np.diff(log.offsets), np.repeat([3, 5, 5], 50))
    assert log.positions.max() == 5


def test_same_seed_same_output_different_seed_different():
    grades, offsets = dataset(np.arange(1, 60), 6)
    for model in ("cascade", "pbm"):
        a = clicks.simulate(model, grades, offsets, PAPER, 5, np.random.default_rng(11))
        b = clicks.simulate(model, grades, offsets, PAPER, 5, np.random.default_rng(11))
        c = clicks.simulate(model, grades, offsets, PAPER, 5, np.random.default_rng(12))
        for name in ("rows", "offsets", "clicks", "positions", "query", "impression"):
            assert np.array_equal(getattr(a, name), getattr(b, name))
        assert not np.array_equal(a.rows, c.rows) or not np.array_equal(a.offsets, c.offsets)


def test_chunk_size_does_not_change_the_result(monkeypatch):
    grades, offsets = dataset(np.arange(1, 80), 8)
    a = clicks.cascade(grades, offsets, (0.01, 0.02, 0.1, 0.2, 0.5), 6, np.random.default_rng(3))
    monkeypatch.setattr(clicks, "CHUNK_ENTRIES", 64)
    b = clicks.cascade(grades, offsets, (0.01, 0.02, 0.1, 0.2, 0.5), 6, np.random.default_rng(3))
    assert np.array_equal(a.rows, b.rows) and np.array_equal(a.offsets, b.offsets)


def _histograms(impressions, offsets, n_q):
    """Per query: counts of (impression length, clicked?) and of (row, position) pairs."""
    lengths = {q: {} for q in range(n_q)}
    cells = {q: {} for q in range(n_q)}
    for q, rows, c in impressions:
        key = (len(rows), int(sum(c)))
        lengths[q][key] = lengths[q].get(key, 0) + 1
        for p, r in enumerate(rows):
            cells[q][(int(r), p)] = cells[q].get((int(r), p), 0) + 1
    return lengths, cells


def _same_distribution(a: dict, b: dict, min_p=1e-4, min_cell=10, min_count=200):
    """Chi-square test that two samples (counts per category) come from one distribution. It fails when they do not,
    and also when it cannot tell: each sample must hold ``min_count`` observations and at least two categories must be
    populated. Categories with fewer than ``min_cell`` observations (both samples together) are pooled into one, so a
    difference in the rare categories still counts; a pool still below ``min_cell`` is left out."""
    keys = sorted(set(a) | set(b))
    table = np.array([[a.get(k, 0) for k in keys], [b.get(k, 0) for k in keys]], dtype=np.int64)
    assert table.sum(axis=1).min() >= min_count, f"too few observations to compare: {table.sum(axis=1)}"
    sparse = table.sum(axis=0) < min_cell
    pooled = table[:, sparse].sum(axis=1, keepdims=True)
    table = np.concatenate((table[:, ~sparse], pooled if pooled.sum() >= min_cell else pooled[:, :0]), axis=1)
    assert table.shape[1] >= 2, f"fewer than two populated categories, nothing to compare: {keys}, {table}"
    p = chi2_contingency(table)[1]
    assert p > min_p, (p, keys, table)


def test_same_distribution_rejects_what_it_should():
    """The distribution check used below can fail: on samples of different distributions, and on samples too small or
    too concentrated to compare (where it used to pass without testing anything)."""
    rng = np.random.default_rng(0)

    def sample(p, n):
        return dict(enumerate(np.bincount(rng.choice(len(p), size=n, p=p), minlength=len(p)).tolist()))

    uniform, skewed = (0.25, 0.25, 0.25, 0.25), (0.4, 0.3, 0.2, 0.1)
    _same_distribution(sample(uniform, 4000), sample(uniform, 4000))
    with pytest.raises(AssertionError):
        _same_distribution(sample(uniform, 4000), sample(skewed, 4000))
    # A difference only in rare categories: they are pooled, not dropped.
    rare_a = {0: 3000, **{k: 4 for k in range(1, 60)}}
    rare_b = {0: 3000 + 4 * 59}
    with pytest.raises(AssertionError):
        _same_distribution(rare_a, rare_b)
    with pytest.raises(AssertionError, match="too few observations"):
        _same_distribution({0: 5, 1: 3}, {0: 2, 1: 7})
    with pytest.raises(AssertionError, match="fewer than two populated categories"):
        _same_distribution({0: 500, 1: 2}, {0: 500, 2: 1})


def _assert_like_reference_cascade(log, grades, offsets, probs, n, display_rank, max_rank):
    """``log`` has the distribution of the reference loop's cascade (another seed) over two queries: the position of
    the first click (or none), and which document is clicked at which position."""
    ours = [(q, rows, c) for q, _, rows, c, _ in impressions_of(log)]
    ref = reference.cascade_clicks(grades, offsets, probs, n, np.random.default_rng(2), display_rank=display_rank,
                                   max_rank=max_rank)
    theirs = [(q, [r for r, _ in shown], [c for _, c in shown]) for q, _, shown in ref]
    la, ca = _histograms(ours, offsets, 2)
    lb, cb = _histograms(theirs, offsets, 2)
    for q in range(2):
        _same_distribution(la[q], lb[q])
        _same_distribution(ca[q], cb[q])


@pytest.mark.parametrize("steps", [16, 2, 0])
@pytest.mark.parametrize("ranker,max_rank", [("random", None), ("random", 6), ("fixed", None), ("fixed", 4)])
def test_cascade_matches_reference_loop_in_distribution(steps, ranker, max_rank):
    grades = np.array([0, 0, 1, 0, 4,   0, 0, 0, 2, 0, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    offsets = np.array([0, 5, 30])
    probs = (0.05, 0.3, 0.5, 0.7, 0.95)
    ranks = random_ranks(offsets, np.random.default_rng(9)) if ranker == "fixed" else None
    n = 1500
    log = clicks.cascade(grades, offsets, probs, n, np.random.default_rng(1), display_rank=ranks, max_rank=max_rank,
                         keep_no_click=True, scan_steps=steps)
    _assert_like_reference_cascade(log, grades, offsets, probs, n, ranks, max_rank)


def test_pbm_matches_reference_loop_in_distribution():
    grades = np.array([0, 1, 2, 3, 4, 0, 0, 1])
    offsets = np.array([0, 8])
    log = clicks.pbm(grades, offsets, PAPER, 4000, np.random.default_rng(1), eta=1.0, keep_no_click=True)
    ref = reference.pbm_clicks(grades, offsets, PAPER, 4000, np.random.default_rng(2), eta=1.0)
    ours = {}
    for _, _, rows, c, pos in impressions_of(log):
        for r, k, p in zip(rows, c, pos):
            ours[(int(r), int(p), int(k))] = ours.get((int(r), int(p), int(k)), 0) + 1
    theirs = {}
    for _, _, shown in ref:
        for p, (r, _, k) in enumerate(shown, start=1):
            theirs[(r, p, k)] = theirs.get((r, p, k), 0) + 1
    _same_distribution(ours, theirs)


def test_errors():
    grades, offsets = np.array([0, 4, 1, 2, 2, 0]), np.array([0, 3, 6])
    with pytest.raises(InputError, match="grade 4 but the 3 click probabilities cover grades 0..2 only"):
        clicks.cascade(grades, offsets, (0.1, 0.2, 0.3), 1, np.random.default_rng(0))
    with pytest.raises(UsageError, match="within \\[0, 1\\], got 1.5"):
        clicks.cascade(grades, offsets, (0.1, 1.5, 0.3, 0.4, 0.5), 1, np.random.default_rng(0))
    with pytest.raises(UsageError, match="impressions must be at least 1"):
        clicks.cascade(grades, offsets, PAPER, 0, np.random.default_rng(0))
    with pytest.raises(UsageError, match="unknown click model"):
        clicks.simulate("dbn", grades, offsets, PAPER, 1, np.random.default_rng(0))
    with pytest.raises(UsageError, match="eta must be non-negative"):
        clicks.pbm(grades, offsets, PAPER, 1, np.random.default_rng(0), eta=-1)


def test_empty_input():
    log = clicks.cascade(np.zeros(0, np.int64), np.zeros(1, np.int64), PAPER, 3, np.random.default_rng(0))
    assert log.n_kept == 0 and log.n_impressions == 0


@pytest.mark.parametrize("steps", [0, 3, 16])
@pytest.mark.parametrize("ranker,max_rank", [("random", None), ("fixed", None), ("fixed", 5), ("random", 5)])
def test_dropping_changes_nothing_but_the_dropped(steps, ranker, max_rank):
    """Same seed with and without --keep-no-click: identical statistics (counted over all impressions, the dropped
    ones included even when they are never materialised) and identical clicked impressions."""
    grades, offsets = dataset(np.arange(1, 40), 12, grade_p=(0.8, 0.1, 0.05, 0.03, 0.02))
    ranks = random_ranks(offsets, np.random.default_rng(1)) if ranker == "fixed" else None
    probs = (0.02, 0.1, 0.3, 0.5, 0.9)
    kept = clicks.cascade(grades, offsets, probs, 7, np.random.default_rng(4), display_rank=ranks, max_rank=max_rank,
                          keep_no_click=True, scan_steps=steps)
    dropped = clicks.cascade(grades, offsets, probs, 7, np.random.default_rng(4), display_rank=ranks,
                             max_rank=max_rank, scan_steps=steps)
    assert dropped.dropped > 0 and dropped.n_kept + dropped.dropped == kept.n_kept
    for name in ("shown_by_grade", "clicks_by_grade", "shown_by_position", "clicks_by_position"):
        np.testing.assert_array_equal(getattr(kept, name), getattr(dropped, name), err_msg=name)
    with_click = np.add.reduceat(kept.clicks, kept.offsets[:-1]) > 0
    gid_kept = (kept.query * 7 + kept.impression)[with_click]
    np.testing.assert_array_equal(gid_kept, dropped.query * 7 + dropped.impression)
    rows_kept = np.concatenate([kept.rows[a:b] for a, b, w in zip(kept.offsets[:-1], kept.offsets[1:], with_click)
                                if w])
    np.testing.assert_array_equal(rows_kept, dropped.rows)


# ----------------------------------------------------------------------------------------------------------------------
# Randomised logging policies: RandTop-n and the swap intervention


@pytest.mark.parametrize("model", clicks.MODELS)
@pytest.mark.parametrize("randomize", [("top", 3), ("swap", 2)])
def test_randomised_simulation_invariants_and_determinism(model, randomize):
    grades, offsets = dataset([1, 4, 6, 6, 9], seed=4)
    ranks = random_ranks(offsets, np.random.default_rng(0))

    def run(seed):
        return clicks.simulate(model, grades, offsets, PAPER, 40, np.random.default_rng(seed), display_rank=ranks,
                               max_rank=5, keep_no_click=True, randomize=randomize)

    a, b, c = run(1), run(1), run(2)
    assert np.array_equal(a.rows, b.rows) and np.array_equal(a.clicks, b.clicks)
    assert not (np.array_equal(a.rows, c.rows) and np.array_equal(a.clicks, c.clicks))
    check_invariants(a, grades, offsets, 40, model=model, keep=True, max_rank=5, display_rank=None)
    shown_rank = ranks[a.rows]
    if randomize[0] == "top":  # below the top N the ranker's order
        below = a.positions > randomize[1]
        assert np.array_equal(shown_rank[below], a.positions[below] - 1)
        assert np.all(shown_rank[~below] < randomize[1])
    else:
        assert np.count_nonzero(shown_rank != a.positions - 1) > 0
    assert np.any(shown_rank != a.positions - 1)


def test_randomize_needs_a_deterministic_ranker():
    grades, offsets = dataset([3, 4])
    with pytest.raises(UsageError, match="deterministic ranker"):
        clicks.simulate("pbm", grades, offsets, PAPER, 2, np.random.default_rng(0), randomize=("top", 2))


@pytest.mark.parametrize("max_rank", [None, 6])
def test_randomised_cascade_with_top_n_of_the_whole_list_matches_the_random_ranker_reference(max_rank):
    """RandTop-n with n the list length is a full shuffle: the dense randomised cascade must match the reference
    loop's random-ranker cascade in distribution (first-click position; document at position)."""
    grades = np.array([0, 0, 1, 0, 4,   0, 0, 0, 2, 0, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    offsets = np.array([0, 5, 30])
    ranks = random_ranks(offsets, np.random.default_rng(9))
    n = 1500
    log = clicks.simulate("cascade", grades, offsets, PAPER, n, np.random.default_rng(1), display_rank=ranks,
                          max_rank=max_rank, keep_no_click=True, randomize=("top", 25))
    _assert_like_reference_cascade(log, grades, offsets, PAPER, n, None, max_rank)
