"""Probability simplex: sparsemax, softmax, argmax, encoding (beyond the generic tests)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from projloss.sets import Simplex, get_set
from projloss.sets.simplex import project_simplex, softmax


def sparsemax_bisection(theta: np.ndarray) -> np.ndarray:
    """Independent sparsemax of one vector: bisection on tau in sum max(theta - tau, 0) = 1.

    The root lies in [max(theta) - 1, max(theta)]; 200 halvings reach the float resolution.
    """
    lo, hi = theta.max() - 1.0, theta.max()
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.maximum(theta - mid, 0.0).sum() > 1.0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-16 * max(1.0, abs(mid)):
            break
    return np.maximum(theta - 0.5 * (lo + hi), 0.0)


def test_registry_and_closed_forms():
    s = get_set("simplex")
    assert isinstance(s, Simplex) and s == Simplex()
    np.testing.assert_allclose(s.project([0.5, 0.0]), [0.75, 0.25], atol=1e-15)
    np.testing.assert_allclose(s.project([3.0, 1.0, -2.0]), [1.0, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(s.project(np.full(4, 7.3)), np.full(4, 0.25), atol=1e-15)
    np.testing.assert_allclose(s.project([0.0, np.log(3.0)], "kl"), [0.25, 0.75], atol=1e-15)
    np.testing.assert_allclose(s.project(np.full(5, -2.0), "kl"), np.full(5, 0.2), atol=1e-15)
    np.testing.assert_array_equal(s.project([4.2]), [1.0])
    np.testing.assert_array_equal(s.project([-4.2], "kl"), [1.0])


def test_sparsemax_matches_bisection_on_random_inputs():
    rng = np.random.default_rng(0)
    for k in (1, 2, 3, 7, 50, 300):
        for scale in (0.01, 1.0, 10.0, 1e3):
            theta = scale * rng.standard_normal((20, k))
            u = project_simplex(theta)
            ref = np.array([sparsemax_bisection(t) for t in theta])
            np.testing.assert_allclose(u, ref, atol=1e-13 * max(1.0, scale), rtol=0)


def test_softmax_matches_direct_formula_and_is_shift_invariant():
    rng = np.random.default_rng(1)
    theta = rng.standard_normal((6, 9))
    e = np.exp(theta)
    np.testing.assert_allclose(softmax(theta), e / e.sum(axis=-1, keepdims=True), rtol=1e-14)
    np.testing.assert_allclose(softmax(theta + 900.0), softmax(theta), rtol=1e-12)
    np.testing.assert_allclose(Simplex().project(theta, "kl"), softmax(theta))


def test_extreme_magnitudes_do_not_overflow():
    theta = np.array([[1e3, -1e3, 0.0], [1e300, 1e300, -1e300], [-1e5, -1e5 + 1.0, -1e5]])
    for g in ("euclidean", "kl"):
        u = Simplex().project(theta, g)
        assert np.isfinite(u).all()
        assert (u >= 0).all()
        np.testing.assert_allclose(u.sum(axis=-1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(Simplex().project(theta[0], "kl"), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(Simplex().project(theta[1]), [0.5, 0.5, 0.0])
    e = np.exp([0.0, 1.0, 0.0])
    np.testing.assert_allclose(Simplex().project(theta[2], "kl"), e / e.sum(), rtol=1e-12)


def test_axis_argument_and_leading_axes():
    rng = np.random.default_rng(2)
    theta = rng.standard_normal((4, 5, 3))
    for f in (project_simplex, softmax):
        np.testing.assert_allclose(f(theta, axis=1), np.swapaxes(f(np.swapaxes(theta, 1, 2)), 1, 2))
        np.testing.assert_allclose(f(theta, axis=0).sum(axis=0), 1.0)
    assert Simplex().project(np.zeros((0, 4))).shape == (0, 4)
    assert Simplex().project(np.zeros((2, 0, 4)), "kl").shape == (2, 0, 4)


@st.composite
def tied_vectors(draw):
    k = draw(st.integers(1, 8))
    levels = draw(st.lists(st.floats(-3, 3, allow_nan=False), min_size=1, max_size=3))
    idx = draw(hnp.arrays(np.int64, k, elements=st.integers(0, len(levels) - 1)))
    mag = draw(st.sampled_from([1e-6, 1.0, 37.0, 1e3]))
    return mag * np.asarray(levels)[idx]


@settings(max_examples=200, deadline=None)
@given(theta=tied_vectors())
def test_property_sparsemax_with_ties_and_large_values(theta):
    u = Simplex().project(theta)
    scale = max(1.0, np.abs(theta).max())
    assert (u >= 0).all() and abs(u.sum() - 1) <= 1e-12 * scale
    np.testing.assert_allclose(u, sparsemax_bisection(theta), atol=1e-12 * scale)
    # Ties get equal mass.
    for a in np.unique(theta):
        assert np.ptp(u[theta == a]) <= 1e-12 * scale


@settings(max_examples=200, deadline=None)
@given(theta=tied_vectors())
def test_property_softmax_with_ties_and_large_values(theta):
    u = Simplex().project(theta, "kl")
    assert np.isfinite(u).all() and (u >= 0).all()
    assert abs(u.sum() - 1) <= 1e-12
    # Ratios follow exp(theta_i - theta_j) for entries that did not underflow.
    i = np.argmax(theta)
    ok = u > 1e-250
    np.testing.assert_allclose(
        np.log(u[ok]) - np.log(u[i]), theta[ok] - theta[i], atol=1e-9 * max(1.0, np.ptp(theta))
    )


def test_argmax_ties_first_index_and_batched():
    s = Simplex()
    np.testing.assert_array_equal(s.argmax([1.0, 3.0, 3.0, 0.0]), [0, 1, 0, 0])
    np.testing.assert_array_equal(s.argmax(np.zeros(3)), [1, 0, 0])
    theta = np.random.default_rng(3).standard_normal((5, 2, 6))
    v = s.argmax(theta)
    np.testing.assert_array_equal(s.decode(v), np.argmax(theta, axis=-1))


def test_encode_decode():
    s = Simplex()
    y = np.array([[0, 2, 1], [2, 2, 0]])
    v = s.encode(y, 3)
    assert v.shape == (2, 3, 3) and v.dtype == np.float64
    np.testing.assert_array_equal(v[0, 1], [0, 0, 1])
    np.testing.assert_array_equal(s.decode(v), y)
    assert s.decode(v).dtype == np.int64
    np.testing.assert_array_equal(s.encode(1, 4), [0, 1, 0, 0])
    np.testing.assert_array_equal(s.encode(np.array([1.0, 0.0]), 2), np.eye(2)[[1, 0]])
    np.testing.assert_array_equal(s.vertices(4), np.eye(4))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda s: s.encode([0, 1]), "number of classes k"),
        (lambda s: s.encode([0, 3], 3), r"labels in \[0, 3\)"),
        (lambda s: s.encode([-1], 3), r"labels in \[0, 3\)"),
        (lambda s: s.encode([0.5], 3), "non-integer"),
        (lambda s: s.encode(["a"], 3), "integer class labels"),
        (lambda s: s.encode([0], 0), "positive integer"),
        (lambda s: s.decode([0.5, 0.5]), "0/1"),
        (lambda s: s.decode([1.0, 1.0]), "one-hot"),
        (lambda s: s.decode([0.0, 0.0]), "one-hot"),
        (lambda s: s.project([np.nan, 1.0]), "NaN"),
        (lambda s: s.project(np.zeros((3, 0))), "at least 1"),
        (lambda s: s.project(2.0), "scalar"),
        (lambda s: s.argmax([np.inf, 1.0]), "infinite"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call(Simplex())
