"""Generic tests run on every set in specimens.SPECIMENS, for every geometry it supports."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import brute_force_argmax, optimality_gap, reference_projection
from specimens import BOUNDED, SPECIMENS

CASES = [(spec, g, k) for spec in BOUNDED for k in spec.sizes for g in spec.make(k).geometries]
CASE_IDS = [f"{s.id}-{g}-k{k}" for s, g, k in CASES]


def random_theta(s, k, rng, scale=1.0, batch=()):
    return scale * rng.standard_normal((*batch, *s.event_shape(k)))


@pytest.mark.parametrize(("spec", "geometry", "k"), CASES, ids=CASE_IDS)
def test_projection_matches_reference_solver(spec, geometry, k):
    s = spec.make(k)
    verts = s.vertices(k)
    rng = np.random.default_rng(k)
    for scale in (0.5, 2.0):
        for _ in range(3):
            theta = random_theta(s, k, rng, scale)
            u = s.project(theta, geometry)
            ref = reference_projection(verts, theta, geometry)
            np.testing.assert_allclose(u, ref, atol=spec.tol, rtol=0)


@pytest.mark.parametrize(("spec", "geometry", "k"), CASES, ids=CASE_IDS)
def test_projection_optimality_conditions(spec, geometry, k):
    s = spec.make(k)
    verts = s.vertices(k)
    rng = np.random.default_rng(100 + k)
    for scale in (0.3, 1.0, 5.0):
        for _ in range(5):
            theta = random_theta(s, k, rng, scale)
            u = s.project(theta, geometry)
            assert u.shape == theta.shape
            assert s.contains(u, atol=spec.tol).all()
            assert optimality_gap(u, theta, verts, geometry) >= -(spec.tol ** (4 / 3)) * max(
                1.0, scale
            )


@pytest.mark.parametrize("spec", BOUNDED, ids=str)
def test_argmax_is_a_maximizing_vertex(spec):
    rng = np.random.default_rng(1)
    for k in spec.sizes:
        s = spec.make(k)
        verts = s.vertices(k)
        flat = verts.reshape(len(verts), -1)
        for theta in [random_theta(s, k, rng) for _ in range(10)] + [
            np.round(random_theta(s, k, rng)),  # ties
            np.zeros(s.event_shape(k)),
        ]:
            v = s.argmax(theta)
            assert v.shape == theta.shape
            assert (np.abs(flat - v.reshape(1, -1)).max(axis=1) == 0).any(), "not a vertex"
            np.testing.assert_allclose(
                np.sum(v * theta), brute_force_argmax(verts, theta), atol=1e-12
            )


@pytest.mark.parametrize("spec", BOUNDED, ids=str)
def test_encode_decode_roundtrip_on_vertices(spec):
    for k in spec.sizes:
        s = spec.make(k)
        verts = s.vertices(k)
        ys = s.decode(verts)  # batched decode of every vertex
        np.testing.assert_array_equal(s.encode(ys, k), verts)
        for v, y in zip(verts, ys, strict=True):
            np.testing.assert_array_equal(s.decode(v), y)
            np.testing.assert_array_equal(s.encode(y, k), v)


@pytest.mark.parametrize("spec", SPECIMENS, ids=str)
def test_batched_equals_per_sample(spec):
    rng = np.random.default_rng(2)
    k = max(spec.sizes)
    s = spec.make(k)
    theta = random_theta(s, k, rng, 2.0, batch=(3, 4))
    for g in s.geometries:
        u = s.project(theta, g)
        assert u.shape == theta.shape
        for i in range(3):
            for j in range(4):
                np.testing.assert_allclose(u[i, j], s.project(theta[i, j], g), atol=1e-12)
    if spec.bounded:
        v = s.argmax(theta)
        for i in range(3):
            for j in range(4):
                np.testing.assert_array_equal(v[i, j], s.argmax(theta[i, j]))


@st.composite
def theta_with_ties(draw, shape):
    """Entries drawn from a few values (ties) times a magnitude up to 1e3."""
    size = int(np.prod(shape))
    levels = draw(st.lists(st.integers(-3, 3), min_size=1, max_size=3))
    idx = draw(st.lists(st.integers(0, len(levels) - 1), min_size=size, max_size=size))
    mag = draw(st.sampled_from([1e-3, 0.5, 1.0, 10.0, 1e3]))
    noise = draw(st.booleans())
    theta = mag * np.array([levels[i] for i in idx], dtype=float).reshape(shape)
    if noise:
        rng = np.random.default_rng(draw(st.integers(0, 2**16)))
        theta = theta + 1e-3 * rng.standard_normal(shape)
    return theta


@pytest.mark.parametrize(
    ("spec", "geometry"),
    [(s, g) for s in SPECIMENS for g in s.make(2).geometries],
    ids=lambda x: str(x),
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_property_ties_and_extreme_magnitudes(spec, geometry, data):
    k = data.draw(st.sampled_from(spec.sizes))
    s = spec.make(k)
    theta = data.draw(theta_with_ties(s.event_shape(k)))
    if not spec.bounded and geometry == "kl" and theta.max() > 710.78:
        # exp(theta - 1) is not representable: refused (it used to be inf, silently)
        with pytest.raises(ValueError, match="overflows float64"):
            s.project(theta, geometry)
        return
    u = s.project(theta, geometry)
    assert u.shape == theta.shape
    assert not np.isnan(u).any()
    if not spec.bounded:
        assert np.isfinite(u).all()
        return
    assert np.isfinite(u).all()
    assert s.contains(u, atol=spec.tol).all()
    verts = s.vertices(k)
    if geometry == "kl":
        # Coordinates that underflow to 0 cannot be checked through log(u): drop them, and
        # keep only the vertices that are 0 there too (the condition <g, v - u> >= 0 then
        # does not involve them). Keeping vertices with a 1 on a dropped coordinate would be
        # wrong for sets whose coordinates are coupled (simplex, knapsack, ...).
        keep = u.reshape(-1) > 1e-200
        flat = verts.reshape(len(verts), -1)
        verts = flat[np.all(flat[:, ~keep] == 0, axis=1)][:, keep]
        u, theta = u.reshape(-1)[keep], theta.reshape(-1)[keep]
        if len(verts) == 0:
            return
    scale = max(1.0, float(np.abs(theta).max(initial=0.0)))
    assert optimality_gap(u, theta, verts, geometry) >= -1e-7 * scale


@pytest.mark.parametrize("spec", SPECIMENS, ids=str)
def test_bad_input_raises_value_error_naming_the_problem(spec):
    k = max(spec.sizes)
    s = spec.make(k)
    theta = np.zeros(s.event_shape(k))
    bad = theta.copy()
    bad.reshape(-1)[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        s.project(bad)
    bad.reshape(-1)[0] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        s.project(bad)
    with pytest.raises(ValueError, match="geometry"):
        s.project(theta, geometry="hellinger")
    with pytest.raises(ValueError, match="shape|scalar"):
        s.project(np.float64(1.0))
    if s.matrix:
        with pytest.raises(ValueError, match=r"\(\.\.\., k, k\)"):
            s.project(np.zeros((k, k + 1)))
