"""Properties of the projection loss S_C^Psi for every (set, geometry) of the registry."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import make_set
from reference import reference_projection
from scipy.special import logsumexp, xlogy
from specimens import BOUNDED, SPECIMENS

from projloss.geometry import divergence
from projloss.losses import (
    ProjectionLoss,
    compositional_loss,
    projection_loss,
    projection_loss_and_grad,
)
from projloss.sets import NonNegative, Reals


def _size(spec):
    """The largest test size of a specimen with at most ~30 vertices (and >= 2 if any)."""
    sizes = sorted(spec.sizes)
    ok = [k for k in sizes if k >= 2] or sizes
    if spec.bounded:
        ok = [k for k in ok if len(spec.make(k).vertices(k)) <= 30] or ok[:1]
    return ok[-1]


CASES = [(s, g) for s in SPECIMENS for g in s.make(_size(s)).geometries]
IDS = [f"{s.id}-{g}" for s, g in CASES]
BOUNDED_CASES = [(s, g) for s, g in CASES if s.bounded]
BOUNDED_IDS = [f"{s.id}-{g}" for s, g in BOUNDED_CASES]


def _labels(spec, s, k, rng, n):
    """Encoded labels phi(y): random vertices (bounded sets) or random points of the set."""
    shape = s.event_shape(k)
    if spec.bounded:
        verts = s.vertices(k)
        return verts[rng.integers(len(verts), size=n)]
    return rng.uniform(0.0, 1.0, size=(n, *shape))  # inside R^p and R^p_+


def _loss(spec, s, g, k):
    return ProjectionLoss(s, g, event_ndim=len(s.event_shape(k)))


@pytest.mark.parametrize(("spec", "geometry"), CASES, ids=IDS)
def test_non_negative_and_bounded_by_the_compositional_loss(spec, geometry):
    k = _size(spec)
    s = spec.make(k)
    loss = _loss(spec, s, geometry, k)
    rng = np.random.default_rng(0)
    for scale in (0.1, 1.0, 10.0, 100.0):
        theta = scale * rng.standard_normal((20, *s.event_shape(k)))
        phi = _labels(spec, s, k, rng, 20)
        S = loss.value(theta, phi)
        ell = loss.compositional(theta, phi)
        tol = 1e-7 * max(1.0, scale) + spec.tol
        assert np.all(np.isfinite(S))
        assert np.all(S >= -tol)
        assert np.all(ell >= -tol)
        assert np.all(ell <= S + tol + 1e-12 * np.abs(S))


@pytest.mark.parametrize(("spec", "geometry"), BOUNDED_CASES, ids=BOUNDED_IDS)
def test_value_matches_an_independent_projection(spec, geometry):
    """S from the set's oracle equals <theta, u - phi> - Psi(u) + Psi(phi) at the projection
    computed by the generic reference solver over the vertices."""
    k = _size(spec)
    s = spec.make(k)
    verts = s.vertices(k)
    loss = _loss(spec, s, geometry, k)
    rng = np.random.default_rng(1)
    for _ in range(4):
        theta = rng.standard_normal(s.event_shape(k))
        phi = verts[rng.integers(len(verts))]
        u = reference_projection(verts, theta, geometry)
        if geometry == "euclidean":
            ref = np.sum(theta * (u - phi)) - 0.5 * np.sum(u * u) + 0.5 * np.sum(phi * phi)
        else:
            ref = np.sum(theta * (u - phi)) - np.sum(xlogy(u, u)) + np.sum(xlogy(phi, phi))
        np.testing.assert_allclose(loss.value(theta, phi), ref, atol=1e-5)


@pytest.mark.parametrize(("spec", "geometry"), BOUNDED_CASES, ids=BOUNDED_IDS)
def test_zero_exactly_at_the_label(spec, geometry):
    """If theta is in the normal cone at phi (phi = MAP(d), theta = phi + t d), the Euclidean
    projection is phi and S = 0; for KL, S -> 0 as t grows. Away from it, S > 0."""
    k = _size(spec)
    s = spec.make(k)
    loss = _loss(spec, s, geometry, k)
    rng = np.random.default_rng(2)
    for _ in range(5):
        d = rng.standard_normal(s.event_shape(k))
        phi = s.argmax(d)
        if geometry == "euclidean":
            for t in (0.0, 1.0, 10.0):
                theta = phi + t * d
                np.testing.assert_allclose(loss.project(theta), phi, atol=spec.tol)
                assert abs(float(loss.value(theta, phi))) <= 10 * spec.tol * max(1.0, t)
        else:
            # scale d so that min_{v != phi} <d, phi - v> / |v - phi|_1 is 1: S ~ exp(-t)
            verts = s.vertices(k).reshape(-1, d.size)
            gaps = verts @ d.reshape(-1)
            others = np.abs(verts - phi.reshape(1, -1)).max(axis=1) > 0
            if not others.any():
                assert abs(float(loss.value(d, phi))) <= spec.tol  # a single point
                continue
            # per unit of l1 distance: the entropy of a move towards v grows with |v - phi|_1
            dist = np.abs(verts - phi.reshape(1, -1)).sum(axis=1)
            margin = float(np.min((np.max(gaps) - gaps[others]) / dist[others]))
            if margin < 1e-6:
                continue  # tie between vertices: phi is not uniquely selected
            thetas = [t * d / margin for t in (1.0, 10.0, 40.0)]
            vals = [float(loss.value(theta, phi)) for theta in thetas]
            # iterative projections are accurate to ~tol, which the loss multiplies by |theta|
            tol = spec.tol * (1.0 + np.abs(thetas[-1]).max())
            assert vals[0] >= vals[1] - tol and vals[1] >= vals[2] - tol
            assert vals[-1] <= 1e-6 + tol
        # a point whose projection is far from phi has a positive loss
        theta = -5.0 * d
        u = loss.project(theta)
        if np.abs(u - phi).max() > 1e-3:
            assert float(loss.value(theta, phi)) > 1e-6


@pytest.mark.parametrize(("spec", "geometry"), CASES, ids=IDS)
def test_gradient_matches_central_finite_differences(spec, geometry):
    """Directional derivatives by central differences. The loss is only C^1 (piecewise
    smooth), so the step is small: the error is O(eps |d|^2) near a kink."""
    k = _size(spec)
    s = spec.make(k)
    loss = _loss(spec, s, geometry, k)
    rng = np.random.default_rng(3)
    shape = s.event_shape(k)
    eps = 1e-6
    for _ in range(5):
        theta = rng.standard_normal(shape)
        phi = _labels(spec, s, k, rng, 1)[0]
        _, grad, u = loss.value_and_grad(theta, phi)
        np.testing.assert_allclose(grad, u - phi)
        for _ in range(3):
            d = rng.standard_normal(shape)
            fd = (loss.value(theta + eps * d, phi) - loss.value(theta - eps * d, phi)) / (2 * eps)
            np.testing.assert_allclose(fd, np.sum(grad * d), atol=1e-5 * (1 + np.sum(d * d)))


@pytest.mark.parametrize(("spec", "geometry"), CASES, ids=IDS)
def test_convex_along_random_lines(spec, geometry):
    k = _size(spec)
    s = spec.make(k)
    loss = _loss(spec, s, geometry, k)
    rng = np.random.default_rng(4)
    shape = s.event_shape(k)
    ts = np.linspace(-3.0, 3.0, 41)
    for _ in range(4):
        theta, d = rng.standard_normal(shape), rng.standard_normal(shape)
        phi = _labels(spec, s, k, rng, 1)[0]
        line = theta[None] + ts.reshape(-1, *([1] * len(shape))) * d[None]
        f = loss.value(line, np.broadcast_to(phi, line.shape))
        second = f[:-2] - 2 * f[1:-1] + f[2:]
        assert np.all(second >= -1e-8 - 10 * spec.tol)


@pytest.mark.parametrize(("spec", "geometry"), CASES, ids=IDS)
def test_batched_equals_per_sample_and_one_projection_per_call(spec, geometry):
    k = _size(spec)
    s = spec.make(k)
    rng = np.random.default_rng(5)
    theta = 2.0 * rng.standard_normal((3, 4, *s.event_shape(k)))
    phi = _labels(spec, s, k, rng, 12).reshape(theta.shape)
    calls = []

    class Counting(type(s)):
        def project(self, t, g="euclidean"):
            calls.append(np.shape(t))
            return super().project(t, g)

    counting = Counting.__new__(Counting)
    counting.__dict__.update(s.__dict__)
    loss = ProjectionLoss(counting, geometry, event_ndim=len(s.event_shape(k)))
    values, grad, _u = loss.value_and_grad(theta, phi)
    assert calls == [theta.shape]
    assert values.shape == (3, 4) and grad.shape == theta.shape
    for i in range(3):
        for j in range(4):
            v1 = loss.value(theta[i, j], phi[i, j])
            np.testing.assert_allclose(values[i, j], v1, atol=1e-10)


@pytest.mark.parametrize(("spec", "geometry"), CASES, ids=IDS)
def test_stable_for_large_theta(spec, geometry):
    """No overflow or NaN for |theta| up to 1e3 (KL is computed without exp(theta))."""
    k = _size(spec)
    s = spec.make(k)
    loss = _loss(spec, s, geometry, k)
    rng = np.random.default_rng(6)
    theta = 1e3 * rng.choice([-1.0, 1.0], size=(10, *s.event_shape(k)))
    phi = _labels(spec, s, k, rng, 10)
    if not spec.bounded and geometry == "kl":  # exp(theta - 1) is not representable: refused
        with pytest.raises(ValueError, match=r"overflows float64 for theta > 710\.78"):
            loss.value_and_grad(theta, phi)
        return
    S, grad, _ = loss.value_and_grad(theta, phi)
    assert np.all(np.isfinite(S)) and np.all(np.isfinite(grad))
    assert np.all(S >= -1e-9 * 1e3 - spec.tol)


def test_closed_forms_of_the_unbounded_sets():
    rng = np.random.default_rng(7)
    theta = rng.standard_normal((6, 4))
    phi = rng.uniform(0, 2, size=(6, 4))
    phi[0, 0] = 0.0  # 0 log 0 = 0
    # R^p, Euclidean: the squared loss
    np.testing.assert_allclose(
        projection_loss(theta, phi, "reals"), 0.5 * np.sum((theta - phi) ** 2, axis=1)
    )
    # R^p_+, KL: KL(phi, exp(theta - 1)) (generalized KL)
    kl = np.sum(xlogy(phi, phi) - phi * (theta - 1) - phi + np.exp(theta - 1), axis=1)
    np.testing.assert_allclose(projection_loss(theta, phi, NonNegative(), "kl"), kl)
    # matrices with an entrywise set: sum over both trailing axes
    T = rng.standard_normal((5, 3, 3))
    P = np.eye(3)[rng.permuted(np.tile(np.arange(3), (5, 1)), axis=1)]
    np.testing.assert_allclose(
        projection_loss(T, P, Reals(), event_ndim=2), 0.5 * np.sum((T - P) ** 2, axis=(1, 2))
    )


def test_simplex_losses_are_logistic_and_sparsemax():
    """KL on the simplex is the logistic loss; Euclidean on the simplex is the sparsemax
    loss (checked against its definition with the reference projection)."""
    s = make_set("simplex")
    rng = np.random.default_rng(8)
    theta = 3 * rng.standard_normal((10, 5))
    y = rng.integers(5, size=10)
    phi = np.eye(5)[y]
    logistic = logsumexp(theta, axis=1) - theta[np.arange(10), y]
    np.testing.assert_allclose(projection_loss(theta, phi, s, "kl"), logistic, rtol=1e-10)
    verts = np.eye(5)
    for i in range(10):
        u = reference_projection(verts, theta[i], "euclidean")
        ref = 0.5 * np.sum((theta[i] - phi[i]) ** 2) - 0.5 * np.sum((theta[i] - u) ** 2)
        np.testing.assert_allclose(projection_loss(theta[i], phi[i], s), ref, atol=1e-8)


def _chain(names, geometry, phi, theta, params=None, event_ndim=1):
    params = params or {}
    sets = [make_set(n, **params.get(n, {})) for n in names]
    return [ProjectionLoss(s, geometry, event_ndim=event_ndim).value(theta, phi) for s in sets]


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_proposition_1_knapsack_cube_reals(geometry):
    """S_knapsack <= S_cube <= S_{R^p} (Euclidean) or S_{R^p_+} (KL), labels in the knapsack."""
    rng = np.random.default_rng(9)
    k = 6
    lo, up = 1, 3
    n = 200
    sizes = rng.integers(lo, up + 1, size=n)
    phi = np.zeros((n, k))
    for i, m in enumerate(sizes):
        phi[i, rng.choice(k, m, replace=False)] = 1.0
    theta = 2.0 * rng.standard_normal((n, k))
    outer = "reals" if geometry == "euclidean" else "nonneg"
    vals = _chain(
        ["knapsack", "unit_cube", outer],
        geometry,
        phi,
        theta,
        {"knapsack": {"lower": lo, "upper": up}},
    )
    for small, big in itertools.pairwise(vals):
        assert np.all(small <= big + 1e-8)
    assert np.any(vals[0] < vals[1] - 1e-6) and np.any(vals[1] < vals[2] - 1e-6)


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_proposition_1_birkhoff_row_simplex_cube_reals(geometry):
    rng = np.random.default_rng(10)
    k, n = 4, 100
    perms = rng.permuted(np.tile(np.arange(k), (n, 1)), axis=1)
    phi = np.eye(k)[perms]
    theta = 2.0 * rng.standard_normal((n, k, k))
    outer = "reals" if geometry == "euclidean" else "nonneg"
    vals = _chain(["birkhoff", "row_simplex", "cube", outer], geometry, phi, theta, event_ndim=2)
    tol = 1e-5  # Birkhoff projections are iterative
    for small, big in itertools.pairwise(vals):
        assert np.all(small <= big + tol)
    for small, big in itertools.pairwise(vals):
        assert np.any(small < big - 1e-4)


@pytest.mark.parametrize(
    ("inner", "k", "encode"),
    [
        ("simplex", 5, lambda y, k: np.eye(k)[y]),
        ("order_simplex", 6, lambda y, k: (np.arange(1, k)[None] < (y[:, None] + 1)) * 1.0),
    ],
    ids=["simplex", "order_simplex"],
)
@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_proposition_1_other_chains(inner, k, encode, geometry):
    """simplex ⊆ cube and order simplex ⊆ cube (both ⊆ R^p / R^p_+)."""
    rng = np.random.default_rng(11)
    y = rng.integers(k, size=100)
    phi = encode(y, k)
    theta = 2.0 * rng.standard_normal(phi.shape)
    outer = "reals" if geometry == "euclidean" else "nonneg"
    vals = _chain([inner, "unit_cube", outer], geometry, phi, theta)
    for small, big in itertools.pairwise(vals):
        assert np.all(small <= big + 1e-8)


@pytest.mark.parametrize(("spec", "geometry"), [c for c in CASES if c[1] == "euclidean"], ids=str)
def test_compositional_le_loss_le_squared_loss_euclidean(spec, geometry):
    """l_C <= S_C <= S_sq = 1/2 ||phi - theta||^2 (corollary of Proposition 1)."""
    k = _size(spec)
    s = spec.make(k)
    rng = np.random.default_rng(12)
    theta = 2 * rng.standard_normal((50, *s.event_shape(k)))
    phi = _labels(spec, s, k, rng, 50)
    nd = len(s.event_shape(k))
    S = projection_loss(theta, phi, s, event_ndim=nd)
    ell = compositional_loss(theta, phi, s, event_ndim=nd)
    sq = 0.5 * np.sum((theta - phi) ** 2, axis=tuple(range(1, 1 + nd)))
    tol = 10 * spec.tol
    assert np.all(ell <= S + tol) and np.all(S <= sq + tol)


def test_functional_forms_and_validation():
    rng = np.random.default_rng(13)
    theta = rng.standard_normal((4, 3))
    phi = (rng.uniform(size=(4, 3)) > 0.5) * 1.0
    v, g = projection_loss_and_grad(theta, phi, "unit_cube", "kl")
    np.testing.assert_allclose(v, projection_loss(theta, phi, "unit_cube", "kl"))
    np.testing.assert_allclose(g, np.exp(np.minimum(theta - 1, 0)) - phi)
    u = ProjectionLoss("unit_cube").project(theta)
    np.testing.assert_allclose(
        compositional_loss(theta, phi, "unit_cube"), divergence(phi, u, "euclidean")
    )
    with pytest.raises(ValueError, match="same shape"):
        projection_loss(theta, phi[:, :2], "unit_cube")
    with pytest.raises(ValueError, match="NaN"):
        projection_loss(np.full((2, 3), np.nan), np.zeros((2, 3)), "unit_cube")
    with pytest.raises(ValueError, match="KL geometry is undefined"):
        ProjectionLoss("reals", "kl")
    with pytest.raises(ValueError, match="unknown set"):
        ProjectionLoss("spam")
    with pytest.raises(ValueError, match="unknown geometry"):
        ProjectionLoss("unit_cube", "hellinger")
    # conjugate: Omega*(theta) = sup_{u in C} <theta, u> - Psi(u); cube KL closed form
    conj = ProjectionLoss("unit_cube", "kl").conjugate(theta)
    ref = np.sum(np.where(theta >= 1, theta, np.exp(theta - 1)), axis=1)
    np.testing.assert_allclose(conj, ref)


def test_every_bounded_specimen_is_covered():
    """Guard: the parametrized tests above cover every bounded specimen of the harness."""
    assert {s.id for s, _ in BOUNDED_CASES} == {s.id for s in BOUNDED}
