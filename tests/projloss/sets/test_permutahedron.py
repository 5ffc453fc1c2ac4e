"""Permutahedron-specific tests (the generic ones run on the specimens in specimens.py).

Large-k references do not enumerate the k! vertices: the variational-inequality
certificate min_v <grad Psi(u) - theta, v - u> is computed exactly by sorting in the test
(the minimizing vertex puts the largest weight on the smallest gradient entry), and
membership by majorization.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import optimality_gap, reference_projection
from sklearn.isotonic import isotonic_regression as sk_isotonic_regression

from projloss.sets import Permutahedron, get_set


def certificate(u, theta, w, geometry):
    """min over the vertices of P(w) of <g, v - u>, g = grad Psi(u) - theta, by sorting."""
    g = u - theta if geometry == "euclidean" else np.log(u) + 1.0 - theta
    best = np.sort(g) @ np.sort(w)[::-1]  # rearrangement inequality
    return best - g @ u


def majorized(u, w, atol):
    top_u = np.cumsum(np.sort(u)[::-1])
    top_w = np.cumsum(np.sort(w)[::-1])
    return np.all(top_u <= top_w + atol) and abs(top_u[-1] - top_w[-1]) <= atol


def euclidean_by_sklearn(theta, w):
    """The paper's own route (appendix, label ranking): sort, sklearn isotonic, un-sort."""
    order = np.argsort(-theta)
    s = theta[order]
    u = np.empty_like(theta)
    u[order] = s - sk_isotonic_regression(s - np.sort(w)[::-1], increasing=False)
    return u


@pytest.mark.parametrize("k", [10, 30, 100])
def test_large_k_euclidean_matches_sklearn_route_and_certificate(k):
    rng = np.random.default_rng(k)
    w = rng.uniform(-2.0, 5.0, size=k)
    s = Permutahedron(w)
    theta = rng.standard_normal((20, k)) * rng.choice([0.1, 1.0, 10.0, 1e3], size=(20, 1))
    u = s.project(theta)
    for t, x in zip(theta, u, strict=True):
        np.testing.assert_allclose(x, euclidean_by_sklearn(t, w), atol=1e-9 * max(1, abs(t).max()))
        assert majorized(x, w, 1e-9 * k * max(1, abs(t).max()))
        assert certificate(x, t, w, "euclidean") >= -1e-9 * k * max(1, abs(t).max()) ** 2


@pytest.mark.parametrize("k", [10, 30, 100])
def test_large_k_kl_certificate(k):
    rng = np.random.default_rng(k)
    w = rng.uniform(0.1, 5.0, size=k)
    s = Permutahedron(w)
    theta = rng.standard_normal((20, k)) * rng.choice([0.1, 1.0, 10.0], size=(20, 1))
    u = s.project(theta, "kl")
    assert np.all(u > 0)
    for t, x in zip(theta, u, strict=True):
        assert majorized(x, w, 1e-9 * k)
        assert certificate(x, t, w, "kl") >= -1e-9 * k * max(1, abs(t).max())


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_ties_in_w_match_reference(geometry):
    rng = np.random.default_rng(7)
    for w in ([2.0, 2.0, 1.0, 1.0], [3.0, 1.0, 3.0, 3.0, 0.5], [1.0, 1.0, 1.0]):
        s = Permutahedron(w)
        verts = s.vertices(len(w))
        assert len(verts) == len(set(itertools.permutations(w)))  # distinct permutations
        for _ in range(4):
            theta = 2.0 * rng.standard_normal(len(w))
            u = s.project(theta, geometry)
            ref = reference_projection(verts, theta, geometry)
            np.testing.assert_allclose(u, ref, atol=1e-6)
            assert optimality_gap(u, theta, verts, geometry) >= -1e-9


def test_all_equal_w_is_a_point():
    s = Permutahedron([1.5, 1.5, 1.5])
    for geometry in ("euclidean", "kl"):
        np.testing.assert_allclose(s.project([3.0, -1.0, 7.0], geometry), [1.5, 1.5, 1.5])


def test_default_w_and_limits():
    s = Permutahedron()
    k = 6
    w = np.arange(k, 0, -1.0)
    rng = np.random.default_rng(0)
    theta = rng.standard_normal(k)
    for geometry in ("euclidean", "kl"):
        # constant theta: the centroid; shifting theta by a constant changes nothing
        np.testing.assert_allclose(s.project(np.full(k, 0.3), geometry), np.full(k, w.mean()))
        np.testing.assert_allclose(
            s.project(theta + 5.0, geometry), s.project(theta, geometry), atol=1e-12
        )
        # widely spread theta: the vertex that sorts like theta
        spread = 1e3 * theta
        np.testing.assert_allclose(s.project(spread, geometry), s.argmax(spread), atol=1e-9)


def test_kl_stable_at_extreme_magnitudes():
    s = Permutahedron()
    rng = np.random.default_rng(1)
    theta = 1e3 * rng.standard_normal((50, 7))
    theta[::2, :3] = theta[::2, [0]]  # ties at large magnitude
    u = s.project(theta, "kl")
    assert np.isfinite(u).all()
    np.testing.assert_allclose(u.sum(axis=-1), 28.0, rtol=1e-12)
    assert s.contains(u, atol=1e-9).all()


def test_kl_requires_positive_w():
    for w in ([3.0, 0.0, 1.0], [2.0, -1.0, 1.0]):
        s = Permutahedron(w)
        s.project(np.zeros(3))  # the Euclidean projection is fine
        with pytest.raises(ValueError, match="positive"):
            s.project(np.zeros(3), "kl")


def test_w_of_the_wrong_length():
    s = Permutahedron([3.0, 2.0, 1.0])
    for call in (
        lambda: s.project(np.zeros(4)),
        lambda: s.project(np.zeros((2, 4)), "kl"),
        lambda: s.argmax(np.zeros(2)),
        lambda: s.encode([0, 1, 2, 3]),
        lambda: s.vertices(4),
        lambda: s.contains(np.zeros(4)),
    ):
        with pytest.raises(ValueError, match=r"length 3.*k = [24]"):
            call()


@pytest.mark.parametrize(
    ("w", "match"),
    [([[1.0, 2.0]], "1-D"), ([], "non-empty"), ([1.0, np.nan], "finite"), ([np.inf], "finite")],
)
def test_bad_w(w, match):
    with pytest.raises(ValueError, match=match):
        Permutahedron(w)


def test_encode_decode_and_argmax_semantics():
    w = np.array([0.5, 4.0, 2.0, 1.0])
    s = Permutahedron(w)
    w_desc = np.sort(w)[::-1]
    for perm in itertools.permutations(range(4)):
        y = np.array(perm)
        phi = np.zeros(4)
        for rank, label in enumerate(y):
            phi[label] = w_desc[rank]
        np.testing.assert_array_equal(s.encode(y), phi)
        np.testing.assert_array_equal(s.decode(phi), y)
        assert s.decode(phi).dtype == np.int64
    rng = np.random.default_rng(2)
    theta = rng.standard_normal((10, 4))
    v = s.argmax(theta)
    ranking = np.argsort(-theta, axis=-1)  # labels from the highest score down
    np.testing.assert_array_equal(s.decode(v), ranking)
    np.testing.assert_array_equal(v, s.encode(ranking))
    # highest theta gets the largest weight
    np.testing.assert_array_equal(v[np.arange(10), ranking[:, 0]], np.full(10, w.max()))


def test_encode_rejects_non_permutations():
    s = Permutahedron()
    for y, match in [
        ([0, 0, 1], "permutation"),
        ([0, 1, 3], "permutation"),
        ([[0, 1, 2], [2, 2, 0]], "permutation"),
        ([0.0, 1.5, 2.0], "integer"),
        (["a", "b"], "integer"),
        (1, "scalar"),
    ]:
        with pytest.raises(ValueError, match=match):
            s.encode(y)
    with pytest.raises(ValueError, match="k = 4"):
        s.encode([0, 1, 2], k=4)


def test_registry_and_params():
    s = get_set("permutahedron", w=[1.0, 3.0, 2.0])
    assert isinstance(s, Permutahedron)
    assert s == Permutahedron([1.0, 3.0, 2.0])
    assert s != Permutahedron()
    assert "w=(1.0, 3.0, 2.0)" in repr(s)
    assert hash(s) == hash(Permutahedron((1, 3, 2)))


@settings(max_examples=60, deadline=None)
@given(
    levels=st.lists(st.integers(-2, 2), min_size=1, max_size=7),
    mag=st.sampled_from([1e-3, 1.0, 1e3]),
    geometry=st.sampled_from(["euclidean", "kl"]),
)
def test_property_large_k_certificate_with_ties(levels, mag, geometry):
    k = len(levels)
    theta = mag * np.array(levels, dtype=float)
    w = np.arange(k, 0, -1.0)
    u = Permutahedron().project(theta, geometry)
    assert np.isfinite(u).all()
    assert majorized(u, w, 1e-9 * k * max(1.0, mag))
    if geometry == "kl" and np.any(u < 1e-200):
        return
    assert certificate(u, theta, w, geometry) >= -1e-9 * k * max(1.0, mag) ** 2


@pytest.mark.parametrize("k", [4, 10, 40])
def test_kl_linear_and_log_domain_paths_agree_across_the_range_threshold(k):
    """Rows of range <= 600 use exponentials relative to the max, wider rows log-domain
    pools: both must give the certified projection, and agree on a row scaled across the
    threshold (the projection is continuous in theta)."""
    rng = np.random.default_rng(40 + k)
    w = rng.uniform(0.5, 3.0, size=k)
    s = Permutahedron(w)
    base = rng.standard_normal((30, k))
    base /= np.ptp(base, axis=1, keepdims=True)  # range 1
    for width in (1.0, 300.0, 599.0, 601.0, 900.0):
        theta = width * base
        u = s.project(theta, "kl")
        assert np.isfinite(u).all()
        for t, x in zip(theta, u, strict=True):
            assert majorized(x, w, 1e-9 * k)
            assert certificate(np.maximum(x, 1e-300), t, w, "kl") >= -1e-9 * k * width
    below, above = s.project(599.999 * base, "kl"), s.project(600.001 * base, "kl")
    np.testing.assert_allclose(below, above, atol=1e-5 * k)


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_plain_and_shifted_paths_agree_across_the_scale_threshold(geometry):
    """Euclidean rows above 1e6 max(1, max|w|) (and KL rows of range > 600) keep each pool
    relative to its largest entry; just below and above the threshold, both paths give
    the projection of the exactly representable unshifted row (translation invariance:
    P(theta + c 1) = P(theta))."""
    rng = np.random.default_rng(7)
    w = rng.uniform(0.5, 3.0, size=8)
    s = Permutahedron(w)
    theta = rng.standard_normal((25, 8))
    for c in (0.99e6 * w.max(), 1.01e6 * w.max(), 1e9):
        shifted = theta + c
        exact = shifted - c  # Sterbenz: exact
        np.testing.assert_allclose(
            s.project(shifted, geometry), s.project(exact, geometry), atol=1e-9
        )


def test_weights_cannot_be_edited_through_what_weights_returns() -> None:
    """``weights(k)`` hands out the set's own sorted array: writing into it would change
    later projections while ``get_params()`` (and so ``==``, ``hash``) kept the old ``w``."""
    P = Permutahedron(w=[3.0, 2.0, 1.0])
    theta = np.array([[0.3, -0.2, 1.0]])
    before = P.project(theta)
    with pytest.raises(ValueError, match="read-only"):
        P.weights(3)[0] = 100.0
    np.testing.assert_array_equal(P.project(theta), before)
    assert P == Permutahedron(w=[3.0, 2.0, 1.0])
