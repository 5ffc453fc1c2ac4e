"""Array-API oracles of the Birkhoff polytope (``Birkhoff.xp_project``, ``xp_project_jvp``,
``xp_argmax``) against the NumPy engine, on torch tensors (CPU, and CUDA where present) and
on NumPy arrays through array_api_compat (the same functions)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from projloss.sets import Birkhoff
from projloss.sets._birkhoff_xp import effective_tol

torch = pytest.importorskip("torch")
pytest.importorskip("array_api_compat")

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
#: "numpy" runs the very same functions through array_api_compat.numpy.
BACKENDS = ["numpy", *DEVICES]
GEOMETRIES = ("euclidean", "kl")

#: The issue's tolerances against the float64 engine: Birkhoff 1e-6 in float64 (both
#: sides are iterative, to the marginal tolerance 1e-9), 1e-4 in float32.
F64_TOL = 1e-6
F32_TOL = 1e-4


def to_backend(x: np.ndarray, backend: str, dtype: str = "float64"):
    if backend == "numpy":
        return np.asarray(x, dtype=dtype)
    return torch.as_tensor(np.asarray(x, dtype=dtype), device=backend)


def to_np(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def check_like(out, backend: str, dtype: str, shape: tuple[int, ...]) -> None:
    """``out`` lives in ``backend`` with ``dtype`` and ``shape``."""
    assert tuple(out.shape) == shape
    if backend == "numpy":
        assert isinstance(out, np.ndarray) and out.dtype == np.dtype(dtype)
    else:
        assert isinstance(out, torch.Tensor) and out.dtype == getattr(torch, dtype)
        assert out.device.type == backend


def marginal_violation(P: np.ndarray) -> float:
    return float(max(np.abs(P.sum(-1) - 1).max(), np.abs(P.sum(-2) - 1).max()))


def batch(k: int, rng: np.random.Generator, scale: float = 2.0) -> np.ndarray:
    """Random scores, integer scores (many exact ties) and a constant matrix."""
    return np.concatenate(
        [
            scale * rng.standard_normal((4, k, k)),
            rng.integers(-2, 3, size=(2, k, k)).astype(np.float64),
            np.full((1, k, k), 0.7),
        ]
    )


def project_no_warning(S: Birkhoff, x, geometry: str):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return S.xp_project(x, geometry)


# --------------------------------------------------------------------------- projections
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("k", [1, 2, 3, 5, 11])
def test_projection_matches_engine_float64(backend, geometry, k):
    rng = np.random.default_rng(k)
    theta = batch(k, rng)
    S = Birkhoff()
    out = project_no_warning(S, to_backend(theta, backend), geometry)
    check_like(out, backend, "float64", theta.shape)
    P = to_np(out)
    np.testing.assert_allclose(P, S.project(theta, geometry), atol=F64_TOL, rtol=0)
    assert marginal_violation(P) <= S.tol and P.min() >= 0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("scale", [1e3, 1e6])
def test_large_scores_float64(backend, geometry, scale):
    """epsilon-scaling stages (a few samples only: the compacted working set), and
    vertex-like projections; mixed with small-scale samples in one batch."""
    rng = np.random.default_rng(int(scale))
    theta = np.concatenate(
        [scale * rng.standard_normal((3, 6, 6)), 2.0 * rng.standard_normal((5, 6, 6))]
    )
    theta[0] += scale  # an offset as well as a range
    S = Birkhoff()
    P = to_np(project_no_warning(S, to_backend(theta, backend), geometry))
    np.testing.assert_allclose(P, S.project(theta, geometry), atol=F64_TOL, rtol=0)
    assert marginal_violation(P) <= S.tol


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("scale", [2.0, 1e3])
def test_float32_matches_engine(backend, geometry, scale):
    """Computed in float32 to max(tol, 8 k eps32) (~1e-5 at k = 11), within 1e-4 of the
    float64 engine on the same (float32) values, also at |theta| ~ 1e3 (shifted frame)."""
    rng = np.random.default_rng(7)
    k = 11
    theta = batch(k, rng, scale).astype(np.float32)
    S = Birkhoff()
    out = project_no_warning(S, to_backend(theta, backend, "float32"), geometry)
    check_like(out, backend, "float32", theta.shape)
    P = to_np(out).astype(np.float64)
    ref = S.project(theta.astype(np.float64), geometry)
    np.testing.assert_allclose(P, ref, atol=F32_TOL, rtol=0)
    assert marginal_violation(P) <= 2 * effective_tol(np, np.float32, k, S.tol)


@pytest.mark.parametrize("backend", DEVICES)
def test_float32_shifted_frame_is_formed_exactly(backend):
    """At |theta| ~ 1e3 the shifted frame theta + alpha 1^T - 1 offset^T is formed by
    TwoSum: near-vertex projections come out within 2e-6 of the float64 engine (a plain
    float32 sum leaves 2e-5 on this batch)."""
    theta = (1e3 * np.random.default_rng(5).standard_normal((20, 11, 11))).astype(np.float32)
    S = Birkhoff()
    P = to_np(S.xp_project(to_backend(theta, backend, "float32")))
    np.testing.assert_allclose(P, S.project(theta.astype(np.float64)), atol=2e-6, rtol=0)


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_leading_axes_and_empty_batches(geometry):
    rng = np.random.default_rng(3)
    theta = 2.0 * rng.standard_normal((2, 3, 4, 4))
    S = Birkhoff()
    out = S.xp_project(torch.as_tensor(theta), geometry)
    assert out.shape == theta.shape
    np.testing.assert_allclose(to_np(out), S.project(theta, geometry), atol=F64_TOL)
    for shape in [(0, 4, 4), (2, 0, 3, 3)]:
        for backend in BACKENDS:
            empty = to_backend(np.zeros(shape), backend, "float32")
            check_like(S.xp_project(empty, geometry), backend, "float32", shape)
            check_like(S.xp_argmax(empty), backend, "float32", shape)
            u = S.xp_project(empty, geometry)
            check_like(S.xp_project_jvp(empty, u, empty, geometry), backend, "float32", shape)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_convergence_warning(backend, geometry):
    theta = 5.0 * np.random.default_rng(4).standard_normal((10, 6, 6))
    with pytest.warns(ConvergenceWarning, match=r"Birkhoff .* did not converge.*max_iter=1 "):
        Birkhoff(max_iter=1).xp_project(to_backend(theta, backend), geometry)
    # A non-finite sample is reported, and does not disturb the others.
    theta[3, 1, 2] = np.nan
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        P = to_np(Birkhoff().xp_project(to_backend(theta, backend), geometry))
    assert [str(w.message) for w in caught if w.category is ConvergenceWarning] == [
        f"Birkhoff {geometry} projection did not converge: marginal violation nan > "
        "tol=1.0e-09 on 1 of 10 samples after max_iter=200 Newton iterations; increase "
        "max_iter or tol"
    ]
    assert len(caught) == 1  # no stray RuntimeWarning (0 / 0) on the way
    keep = np.arange(10) != 3
    ref = Birkhoff().project(theta[keep], geometry)
    np.testing.assert_allclose(P[keep], ref, atol=F64_TOL)


# --------------------------------------------------------------------------- JVP
def jvp(S: Birkhoff, theta: np.ndarray, t: np.ndarray, geometry: str, backend: str = "cpu"):
    th = to_backend(theta, backend)
    u = S.xp_project(th, geometry)
    return to_np(S.xp_project_jvp(th, u, to_backend(t, backend), geometry))


def block_diagonal(rng: np.random.Generator) -> np.ndarray:
    """A projection with a disconnected support (two blocks: a 2-d null space)."""
    theta = np.full((1, 5, 5), -4.0)
    theta[0, :2, :2] = rng.standard_normal((2, 2))
    theta[0, 2:, 2:] = rng.standard_normal((3, 3))
    return theta


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_jvp_matches_finite_differences_of_the_engine(backend, geometry):
    """Central differences of the float64 engine at tol 1e-12 (the Euclidean projection
    is piecewise linear: exact where the support is stable over [-h, h], which holds at
    these seeded random points)."""
    rng = np.random.default_rng(11)
    S = Birkhoff(tol=1e-12)
    h = 1e-5
    cases = [rng.standard_normal((3, k, k)) for k in (1, 2, 3, 5)]
    cases += [2.0 * rng.standard_normal((3, 11, 11)), block_diagonal(rng)]
    cases += [30.0 * rng.standard_normal((2, 4, 4))]  # near-vertex: KL weights ~ 1e-20
    for theta in cases:
        t = rng.standard_normal(theta.shape)
        fd = (S.project(theta + h * t, geometry) - S.project(theta - h * t, geometry)) / (2 * h)
        J = jvp(S, theta, t, geometry, backend)
        np.testing.assert_allclose(J, fd, atol=1e-6, rtol=0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_jvp_is_symmetric_and_keeps_the_marginals(backend, geometry):
    rng = np.random.default_rng(12)
    S = Birkhoff()
    for theta in (2.0 * rng.standard_normal((4, 7, 7)), block_diagonal(rng)):
        a, b = rng.standard_normal((2, *theta.shape))
        Ja, Jb = jvp(S, theta, a, geometry, backend), jvp(S, theta, b, geometry, backend)
        lhs, rhs = np.sum(Ja * b, axis=(1, 2)), np.sum(a * Jb, axis=(1, 2))
        np.testing.assert_allclose(lhs, rhs, atol=1e-12, rtol=0)
        assert np.all(np.sum(Ja * a, axis=(1, 2)) >= -1e-12)  # positive semi-definite
        np.testing.assert_allclose(Ja.sum(-1), 0.0, atol=1e-12)
        np.testing.assert_allclose(Ja.sum(-2), 0.0, atol=1e-12)
        # Row and column shifts of theta do not move the projection.
        shifts = rng.standard_normal((len(theta), 7 if theta.shape[-1] == 7 else 5, 1))
        np.testing.assert_allclose(
            jvp(S, theta, shifts + np.swapaxes(shifts, 1, 2), geometry, backend), 0, atol=1e-12
        )
        if geometry == "euclidean":  # the orthogonal projector onto the face's directions
            th = to_backend(theta, backend)
            u = S.xp_project(th, geometry)
            JJa = to_np(S.xp_project_jvp(th, u, to_backend(Ja, backend), geometry))
            np.testing.assert_allclose(JJa, Ja, atol=1e-12)
            assert np.all(Ja[to_np(u) == 0] == 0)


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_jvp_float32(geometry):
    rng = np.random.default_rng(13)
    theta = 2.0 * rng.standard_normal((5, 11, 11))
    t = rng.standard_normal(theta.shape)
    S = Birkhoff()
    ref = jvp(S, theta, t, geometry)
    th32 = torch.as_tensor(theta, dtype=torch.float32)
    u32 = S.xp_project(th32, geometry)
    out = S.xp_project_jvp(th32, u32, torch.as_tensor(t, dtype=torch.float32), geometry)
    assert out.dtype == torch.float32
    np.testing.assert_allclose(to_np(out), ref, atol=F32_TOL, rtol=0)


# --------------------------------------------------------------------------- MAP
@pytest.mark.parametrize("backend", BACKENDS)
def test_argmax_equals_engine(backend):
    rng = np.random.default_rng(14)
    S = Birkhoff()
    for k in (1, 2, 3, 6):
        theta = np.concatenate(
            [
                rng.standard_normal((5, k, k)),
                rng.integers(0, 2, size=(5, k, k)).astype(np.float64),  # ties
                np.zeros((1, k, k)),
            ]
        ).reshape(11, 1, k, k)
        for dtype in ("float64", "float32"):
            x = to_backend(theta, backend, dtype)
            out = S.xp_argmax(x)
            check_like(out, backend, dtype, theta.shape)
            ref = S.argmax(theta.astype(dtype).astype(np.float64))
            np.testing.assert_array_equal(to_np(out), ref)
