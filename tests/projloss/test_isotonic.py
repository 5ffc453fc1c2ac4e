"""Batched isotonic regression / KL isotonic optimization against independent references.

- Euclidean: scikit-learn's ``isotonic_regression``, row by row (with weights, ties, both
  directions, degenerate sizes).
- KL (v_E of Blondel et al. 2020): exhaustive search over all partitions of 1..k into
  consecutive pools (the optimum is the pool solution of its own level sets), a generic
  constrained solver (SLSQP), and the exact pool optimality conditions at extreme
  magnitudes.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import logsumexp
from sklearn.isotonic import isotonic_regression as sk_isotonic_regression

from projloss.isotonic import isotonic_kl, isotonic_regression


def sk_rows(y, weights=None, increasing=False):
    y2 = y.reshape(-1, y.shape[-1])
    w2 = (
        np.ones_like(y2) if weights is None else np.broadcast_to(weights, y.shape).reshape(y2.shape)
    )
    out = [
        sk_isotonic_regression(a, sample_weight=b, increasing=increasing)
        for a, b in zip(y2, w2, strict=True)
    ]
    return np.array(out).reshape(y.shape)


# ----------------------------------------------------------------------------- Euclidean
@pytest.mark.parametrize("k", [1, 2, 3, 10, 57])
@pytest.mark.parametrize("increasing", [False, True])
def test_euclidean_matches_sklearn(k, increasing):
    rng = np.random.default_rng(k)
    y = rng.standard_normal((200, k)) * rng.choice([0.01, 1.0, 100.0], size=(200, 1))
    y[::3] = np.round(y[::3])  # ties
    y[1::7] = np.cumsum(rng.standard_normal((len(y[1::7]), k)), axis=1)  # trends
    np.testing.assert_allclose(
        isotonic_regression(y, increasing=increasing),
        sk_rows(y, increasing=increasing),
        rtol=1e-12,
        atol=1e-12 * np.abs(y).max(),
    )


def test_euclidean_weighted_and_leading_axes():
    rng = np.random.default_rng(0)
    y = np.round(3 * rng.standard_normal((4, 5, 9)))
    w = rng.uniform(0.1, 10.0, size=(4, 5, 9))
    np.testing.assert_allclose(isotonic_regression(y, w), sk_rows(y, w), atol=1e-12)
    w1 = rng.uniform(0.1, 10.0, size=9)  # broadcast weights
    np.testing.assert_allclose(isotonic_regression(y, w1), sk_rows(y, w1), atol=1e-12)
    # weights shared along some axes only, or one weight per row
    for shape in [(1, 9), (4, 1, 9), (1, 5, 9), (4, 5, 1), (1, 1)]:
        ws = rng.uniform(0.1, 10.0, size=shape)
        np.testing.assert_allclose(
            isotonic_regression(y, ws), sk_rows(y, np.broadcast_to(ws, y.shape)), atol=1e-12
        )


def test_euclidean_degenerate_sizes():
    for shape in [(0, 4), (3, 0), (0,), (1,), (1, 1)]:
        y = np.ones(shape)
        out = isotonic_regression(y)
        assert out.shape == shape
        np.testing.assert_array_equal(out, y)
    y = np.array([1.0, 2.0, 3.0])  # fully increasing: one pool
    np.testing.assert_allclose(isotonic_regression(y), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(isotonic_regression(y, increasing=True), y)
    # worst case for parallel pooling: the pools cascade one block per round
    y = np.r_[np.zeros(99), 1.0][None].repeat(3, 0)
    np.testing.assert_allclose(isotonic_regression(y), np.full((3, 100), 0.01), atol=1e-15)


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(
        st.lists(st.integers(-3, 3), min_size=1, max_size=12), min_size=1, max_size=6
    ).filter(lambda r: len({len(x) for x in r}) == 1),
    scale=st.sampled_from([1e-3, 1.0, 1e3]),
    increasing=st.booleans(),
)
def test_euclidean_property_ties(rows, scale, increasing):
    y = scale * np.array(rows, dtype=float)
    np.testing.assert_allclose(
        isotonic_regression(y, increasing=increasing),
        sk_rows(y, increasing=increasing),
        atol=1e-12 * scale,
    )


def test_euclidean_bad_input():
    with pytest.raises(ValueError, match="NaN"):
        isotonic_regression([1.0, np.nan])
    with pytest.raises(ValueError, match="positive"):
        isotonic_regression([1.0, 2.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="broadcast"):
        isotonic_regression(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="scalar"):
        isotonic_regression(1.0)


# ----------------------------------------------------------------------------- KL
def kl_objective(v, s, w):
    return np.sum(np.exp(s - v)) + np.sum(np.exp(w) * v)


def kl_exhaustive(s, w):
    """Minimize over all partitions of 0..k-1 into consecutive pools whose pool values
    LSE(s_B) - LSE(w_B) are non-increasing (the optimum is the pool solution of its own
    maximal level sets, so it is among these candidates)."""
    k = len(s)
    value = {
        (a, b): logsumexp(s[a:b]) - logsumexp(w[a:b]) for a in range(k) for b in range(a + 1, k + 1)
    }
    best, best_v = np.inf, None
    for cuts in itertools.product([False, True], repeat=k - 1):
        pools = list(itertools.pairwise([0, *[i + 1 for i, c in enumerate(cuts) if c], k]))
        vals = [value[p] for p in pools]
        if any(x < y for x, y in itertools.pairwise(vals)):
            continue
        v = np.repeat(vals, [b - a for a, b in pools])
        f = kl_objective(v, s, w)
        if f < best:
            best, best_v = f, v
    return best_v


def kl_slsqp(s, w):
    k = len(s)
    D = np.eye(k)[:-1] - np.eye(k, k=1)[:-1]  # (D v)_i = v_i - v_{i+1} >= 0
    res = minimize(
        lambda v: (kl_objective(v, s, w), -np.exp(s - v) + np.exp(w)),
        s - w,
        jac=True,
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda v: D @ v, "jac": lambda v: D}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    return res.x


def check_kl_pool_optimality(v, s, w, atol):
    """Exact optimality conditions of a Cauchy-mean isotonic problem: v is non-increasing;
    on each maximal run B of equal values, v_B = LSE(s_B) - LSE(w_B); and no run can be
    split (every prefix P of B has value(P) <= v_B)."""
    assert np.all(np.diff(v) <= atol)
    runs = np.flatnonzero(np.r_[True, np.diff(v) != 0, True])
    for a, b in itertools.pairwise(runs):
        val = logsumexp(s[a:b]) - logsumexp(w[a:b])
        assert abs(v[a] - val) <= atol * max(1.0, abs(val))
        for j in range(a + 1, b):
            assert logsumexp(s[a:j]) - logsumexp(w[a:j]) <= val + atol * max(1.0, abs(val))


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
def test_kl_matches_exhaustive_search(k):
    rng = np.random.default_rng(10 + k)
    n = 60 if k < 8 else 20
    s = rng.standard_normal((n, k)) * rng.choice([0.1, 1.0, 5.0], size=(n, 1))
    s[::4] = np.round(s[::4])  # ties
    w = rng.standard_normal((n, k))
    w[::5] = 0.0  # all-equal weights
    v = isotonic_kl(s, w)
    for i in range(len(s)):
        np.testing.assert_allclose(v[i], kl_exhaustive(s[i], w[i]), rtol=1e-12, atol=1e-12)


def test_kl_matches_generic_solver():
    rng = np.random.default_rng(3)
    for k in (4, 9, 16):
        s = -np.sort(-rng.standard_normal(k))  # the permutahedron case: sorted scores
        w = np.log(np.arange(k, 0, -1.0))
        for ss in (s, rng.standard_normal(k)):
            np.testing.assert_allclose(isotonic_kl(ss, w), kl_slsqp(ss, w), atol=1e-6)


def test_kl_shared_weights_broadcast_and_leading_axes():
    rng = np.random.default_rng(4)
    s = rng.standard_normal((3, 4, 6))
    w = rng.standard_normal(6)
    v = isotonic_kl(s, w)
    assert v.shape == s.shape
    for i, j in itertools.product(range(3), range(4)):
        np.testing.assert_allclose(v[i, j], kl_exhaustive(s[i, j], w), atol=1e-12)


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    k=st.integers(1, 9),
    mag=st.sampled_from([1e-3, 1.0, 30.0, 1e3]),
)
def test_kl_property_ties_and_extreme_magnitudes(data, k, mag):
    s = mag * np.array(data.draw(st.lists(st.integers(-3, 3), min_size=k, max_size=k)), float)
    w = np.array(data.draw(st.lists(st.integers(-2, 2), min_size=k, max_size=k)), float)
    v = isotonic_kl(s, w)
    assert np.isfinite(v).all()
    check_kl_pool_optimality(v, s, w, atol=1e-12)


def test_kl_bad_input():
    with pytest.raises(ValueError, match="infinite"):
        isotonic_kl([1.0, 2.0], [0.0, -np.inf])
    with pytest.raises(ValueError, match="broadcast"):
        isotonic_kl(np.ones((2, 3)), np.ones(2))
