"""Order-simplex-specific tests (the generic ones run on the specimens in specimens.py).

The order simplex has only k vertices, so the vertex certificate works at any k. The
Euclidean projection is checked against scikit-learn's bounded isotonic regression, and
both projections against a generic constrained solver on the H-representation
{1 >= mu_1 >= ... >= mu_{k-1} >= 0} (the KL closed form min(1, exp(iso(theta) - 1)) is a
claim that must be tested, not trusted).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import optimality_gap
from scipy.optimize import minimize
from sklearn.isotonic import isotonic_regression as sk_isotonic_regression

from projloss.sets import OrderSimplex, get_set


def objective(mu, theta, geometry):
    """The projection objective (up to constants) and its gradient."""
    if geometry == "euclidean":
        return 0.5 * np.sum((mu - theta) ** 2), mu - theta
    lm = np.log(np.maximum(mu, 1e-300))
    return np.sum(mu * lm - mu * theta), lm + 1.0 - theta


def generic_projection(theta, geometry):
    """SLSQP on mu in R^{k-1}: bounds [0, 1], constraints mu_i - mu_{i+1} >= 0, from a
    strictly feasible start."""
    p = len(theta)
    D = np.eye(p)[:-1] - np.eye(p, k=1)[:-1]
    res = minimize(
        objective,
        np.linspace(0.9, 0.1, p),
        args=(theta, geometry),
        jac=True,
        method="SLSQP",
        bounds=[(1e-300 if geometry == "kl" else 0.0, 1.0)] * p,
        constraints=[{"type": "ineq", "fun": lambda mu: D @ mu, "jac": lambda mu: D}]
        if p > 1
        else [],
        options={"ftol": 1e-15, "maxiter": 2000},
    )
    return res.x


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
@pytest.mark.parametrize("k", [2, 3, 6, 12])
def test_projection_matches_generic_solver(geometry, k):
    s = OrderSimplex()
    rng = np.random.default_rng(k)
    for scale in (0.3, 1.0, 3.0):
        for _ in range(4):
            theta = scale * rng.standard_normal(k - 1) + rng.choice([-1.0, 0.0, 1.0])
            theta[: (k - 1) // 2] = np.round(theta[: (k - 1) // 2])  # ties
            u = s.project(theta, geometry)
            ref = generic_projection(theta, geometry)
            np.testing.assert_allclose(u, ref, atol=1e-6)
            # and never worse than the generic solver's point (up to SLSQP's ~1e-12
            # constraint slack, which buys it objective values ~1e-11 too low)
            assert objective(u, theta, geometry)[0] <= objective(ref, theta, geometry)[0] + 1e-9


@pytest.mark.parametrize("k", [2, 5, 30, 101])
def test_euclidean_matches_sklearn_bounded_isotonic_regression(k):
    rng = np.random.default_rng(k)
    theta = rng.standard_normal((30, k - 1)) * rng.choice([0.1, 1.0, 1e3], size=(30, 1)) + 0.5
    u = OrderSimplex().project(theta)
    ref = [sk_isotonic_regression(t, y_min=0.0, y_max=1.0, increasing=False) for t in theta]
    np.testing.assert_allclose(u, np.array(ref), atol=1e-12)


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
@pytest.mark.parametrize("k", [30, 101])
def test_large_k_vertex_certificate(geometry, k):
    s = OrderSimplex()
    verts = s.vertices(k)
    assert verts.shape == (k, k - 1)
    rng = np.random.default_rng(k)
    theta = 2.0 * rng.standard_normal((10, k - 1)) + 1.0
    u = s.project(theta, geometry)
    for t, x in zip(theta, u, strict=True):
        assert s.contains(x, atol=1e-12)
        assert optimality_gap(x, t, verts, geometry) >= -1e-10 * k


def test_kl_limits_and_magnitudes():
    s = OrderSimplex()
    # large theta: the all-ones vertex (class k); very negative: tiny but positive, no NaN
    np.testing.assert_allclose(s.project(np.full(4, 50.0), "kl"), np.ones(4))
    u = s.project(np.full(4, -1e3), "kl")
    assert np.all(u >= 0) and np.isfinite(u).all()
    u = s.project(1e3 * np.random.default_rng(0).standard_normal((20, 6)), "kl")
    assert np.isfinite(u).all() and s.contains(u, atol=1e-12).all()
    # increasing theta pools into its mean
    np.testing.assert_allclose(s.project([-1.0, 0.0, 1.0], "kl"), np.full(3, np.exp(-1.0)))
    np.testing.assert_allclose(s.project([-1.0, 0.0, 1.0]), np.full(3, 0.0), atol=1e-15)


def test_encode_decode_semantics():
    s = OrderSimplex()
    k = 5
    for y in range(1, k + 1):
        phi = np.zeros(k - 1)
        for i in range(1, k):
            if i < y:
                phi[i - 1] = 1.0
        np.testing.assert_array_equal(s.encode(y, k), phi)
        assert s.decode(phi) == y
        assert s.decode(phi).dtype == np.int64
    ys = np.array([[1, 5], [3, 2]])
    assert s.encode(ys, k).shape == (2, 2, k - 1)
    np.testing.assert_array_equal(s.decode(s.encode(ys, k)), ys)
    np.testing.assert_array_equal(s.encode([1.0, 2.0], 3), [[0, 0], [1, 0]])  # integral floats


def test_argmax_by_brute_force_scores_and_ties():
    s = OrderSimplex()
    rng = np.random.default_rng(3)
    for k in (2, 4, 9):
        theta = np.round(rng.standard_normal((200, k - 1)))  # many ties
        v = s.argmax(theta)
        verts = s.vertices(k)
        scores = theta @ verts.T  # score of class y = row y - 1
        y_best = 1 + np.argmax(scores, axis=1)  # first maximum: smallest y
        np.testing.assert_array_equal(s.decode(v), y_best)
    np.testing.assert_array_equal(s.argmax(np.zeros(3)), np.zeros(3))  # tie: class 1
    np.testing.assert_array_equal(s.argmax([1.0, -1.0]), [1.0, 0.0])  # tie 2 vs 3: class 2


def test_labels_out_of_range_and_bad_input():
    s = OrderSimplex()
    for y, k, match in [
        (0, 4, r"\{1, \.\.\., 4\}"),
        ([1, 5], 4, r"\{1, \.\.\., 4\}"),
        ([-2], 3, r"\{1, \.\.\., 3\}"),
        ([1.5], 3, "integer"),
        (["a"], 3, "integer"),
        (2, None, "needs k"),
        (1, 1, "k >= 2"),
    ]:
        with pytest.raises(ValueError, match=match):
            s.encode(y, k)
    with pytest.raises(ValueError, match="vertex"):
        s.decode([0.0, 1.0])
    with pytest.raises(ValueError, match="0/1"):
        s.decode([0.5, 0.0])
    with pytest.raises(ValueError, match="k >= 2"):
        s.vertices(1)
    with pytest.raises(ValueError, match="k >= 2"):
        s.event_shape(1)
    with pytest.raises(ValueError, match="at least 1"):
        s.project(np.zeros((3, 0)))


def test_registry_and_event_shape():
    s = get_set("order_simplex")
    assert isinstance(s, OrderSimplex)
    assert s.event_shape(4) == (3,)
    assert s == OrderSimplex()


@settings(max_examples=80, deadline=None)
@given(
    levels=st.lists(st.integers(-3, 3), min_size=1, max_size=9),
    mag=st.sampled_from([1e-3, 0.5, 1.0, 10.0, 1e3]),
    shift=st.sampled_from([0.0, 1.0]),
    geometry=st.sampled_from(["euclidean", "kl"]),
)
def test_property_matches_generic_solver_with_ties(levels, mag, shift, geometry):
    theta = mag * np.array(levels, dtype=float) + shift
    u = OrderSimplex().project(theta, geometry)
    # SLSQP is not reliable to 1e-6 on KL beyond |theta| ~ 1 (it was off by 1.1e-6 at
    # theta = 10 * [1, 1, 0, 0, -1, -1]); the optimality certificate below covers all cases.
    if mag <= (10.0 if geometry == "euclidean" else 1.0):
        np.testing.assert_allclose(u, generic_projection(theta, geometry), atol=1e-6)
    verts = OrderSimplex().vertices(len(levels) + 1)
    keep = u > 1e-200
    assert optimality_gap(u[keep], theta[keep], verts[:, keep], geometry) >= -1e-9 * max(1.0, mag)
