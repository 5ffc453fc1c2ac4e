"""The Birkhoff MAP with near-ties broken canonically, against brute force over all k!
assignments (ties from integer and sparse scores, zeros, extreme magnitudes)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from projloss.sets import Birkhoff
from projloss.sets._assignment import (
    TIE_RTOL,
    canonical_assignment,
    lexicographic_assignment,
    second_best_gaps,
)


def brute_force(theta: np.ndarray, rtol: float) -> tuple[float, tuple[int, ...]]:
    """The gap between the two best assignments and the lexicographically smallest
    assignment within ``rtol * max|theta|`` of the best, over all k! of them."""
    k = theta.shape[0]
    perms = list(itertools.permutations(range(k)))
    scores = np.array([theta[np.arange(k), p].sum() for p in perms])
    order = np.sort(scores)[::-1]
    gap = order[0] - order[1] if k > 1 else np.inf
    floor = order[0] - rtol * np.abs(theta).max()
    return gap, min(p for p, s in zip(perms, scores, strict=True) if s >= floor)


def scores(draw_int: bool, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if draw_int:  # many exact ties
        return rng.integers(-2, 3, size=(k, k)).astype(np.float64)
    t = rng.exponential(size=(k, k)) * (rng.random((k, k)) < 0.4)  # sparse rows
    return t / np.maximum(t.sum(axis=1, keepdims=True), 1e-300)


@settings(max_examples=150, deadline=None)
@given(
    k=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
    integer=st.booleans(),
    scale=st.sampled_from([1e-150, 1e-3, 1.0, 1e8, 1e150]),
)
def test_against_brute_force(k, seed, integer, scale):
    theta = scale * scores(integer, k, seed)
    gap, lexicographic = brute_force(theta, TIE_RTOL)
    cols = np.array([linear_sum_assignment(theta, maximize=True)[1]])
    got_gap = second_best_gaps(theta[None], cols)[0]
    if np.isinf(gap):
        assert np.isinf(got_gap)
    else:
        np.testing.assert_allclose(got_gap, gap, rtol=1e-12, atol=1e-12 * np.abs(theta).max())
    assert tuple(canonical_assignment(theta[None])[0]) == lexicographic


def test_no_near_tie_keeps_the_solver_maximizer():
    """Continuous random scores: the unique maximizer, as scipy returns it."""
    theta = np.random.default_rng(0).standard_normal((500, 7, 7))
    expected = np.array([linear_sum_assignment(t, maximize=True)[1] for t in theta])
    np.testing.assert_array_equal(canonical_assignment(theta), expected)


def test_last_bits_do_not_move_the_decode():
    """Sparse row-stochastic scores (the row-simplex projection decoded by the Birkhoff
    MAP) perturbed by 1e-13 relative noise, as another machine would compute them: the
    solver's own maximizer moves for some samples, the canonical one for none."""
    rng = np.random.default_rng(1)
    theta = np.stack([scores(False, 5, s) for s in range(2000)])
    noisy = theta * (1.0 + 1e-13 * rng.standard_normal(theta.shape))

    def raw(t):
        return np.array([linear_sum_assignment(x, maximize=True)[1] for x in t])

    assert (raw(theta) != raw(noisy)).any(axis=1).sum() > 50  # the problem is real here
    np.testing.assert_array_equal(canonical_assignment(theta), canonical_assignment(noisy))


def test_degenerate_sizes_and_all_ties():
    assert canonical_assignment(np.empty((0, 3, 3))).shape == (0, 3)
    np.testing.assert_array_equal(canonical_assignment(np.ones((2, 1, 1))), [[0], [0]])
    np.testing.assert_array_equal(canonical_assignment(np.zeros((1, 4, 4))), [[0, 1, 2, 3]])
    np.testing.assert_array_equal(canonical_assignment(np.full((1, 3, 3), -5.0)), [[0, 1, 2]])
    # rtol = 0: exact ties only, still the smallest
    np.testing.assert_array_equal(canonical_assignment(np.ones((1, 3, 3)), rtol=0.0), [[0, 1, 2]])


def test_lexicographic_respects_the_floor():
    theta = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    assert lexicographic_assignment(theta, 3.0).tolist() == [1, 0, 2]
    for floor in (3.0, 1.0, -np.inf):
        cols = lexicographic_assignment(theta, floor)
        assert theta[np.arange(3), cols].sum() >= min(floor, 3.0)


def test_birkhoff_argmax_breaks_ties_canonically():
    """The Birkhoff MAP goes through it: a permutation matrix, the smallest of the tied
    assignments, for any order of the tied rows."""
    s = Birkhoff()
    theta = np.zeros((2, 4, 4))
    theta[:, 0, 2] = 1.0  # row 0 -> column 2; the rest all tie
    V = s.argmax(theta)
    assert np.array_equal(V.sum(axis=-1), np.ones((2, 4)))
    np.testing.assert_array_equal(s.decode(V), [[2, 0, 1, 3]] * 2)
    np.testing.assert_array_equal(s.decode(s.argmax(theta[:, [1, 0, 2, 3]])), [[0, 2, 1, 3]] * 2)


@pytest.mark.parametrize("k", [8, 11, 20])
def test_larger_k_within_tolerance_of_the_best(k):
    """No brute force at these sizes: the result is an assignment whose score is within
    the tolerance of the solver's optimum, and the smallest column is taken first."""
    rng = np.random.default_rng(k)
    theta = rng.integers(0, 2, size=(50, k, k)).astype(np.float64)  # heavy ties
    cols = canonical_assignment(theta)
    assert all(sorted(c) == list(range(k)) for c in cols.tolist())
    best = np.array(
        [t[np.arange(k), linear_sum_assignment(t, maximize=True)[1]].sum() for t in theta]
    )
    got = np.take_along_axis(theta, cols[:, :, None], axis=2)[..., 0].sum(axis=1)
    np.testing.assert_array_equal(got, best)  # integer scores: ties are exact
