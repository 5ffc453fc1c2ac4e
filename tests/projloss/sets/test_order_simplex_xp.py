"""Array-API oracles of the order simplex (bounded isotonic regression by pool adjacent
violators by rounds) against the NumPy engine: projections in both geometries, the MAP
oracle (cumulative sums), and the block-structure Jacobian (clipped pools held) against
central differences of the engine; on torch tensors (CPU, and CUDA where present) and on
NumPy arrays through array_api_compat."""

from __future__ import annotations

import numpy as np
import pytest

from projloss.sets import OrderSimplex

torch = pytest.importorskip("torch")
pytest.importorskip("array_api_compat")

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
#: "numpy" runs the very same methods through array_api_compat.numpy.
BACKENDS = ["numpy", *DEVICES]
GEOMETRIES = ["euclidean", "kl"]
SET = OrderSimplex()


def to_backend(x, backend: str, dtype: str = "float64"):
    if backend == "numpy":
        return np.asarray(x, dtype=dtype)
    return torch.as_tensor(np.asarray(x, dtype=dtype), device=backend)


def to_np(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def check_like(out, ref, backend: str) -> None:
    """``out`` has ``ref``'s library, dtype, device and shape."""
    if backend == "numpy":
        assert isinstance(out, np.ndarray) and out.dtype == ref.dtype
    else:
        assert isinstance(out, torch.Tensor)
        assert out.dtype == ref.dtype and out.device == ref.device
    assert tuple(out.shape) == tuple(ref.shape)


def thetas(p: int, rng: np.random.Generator, scales=(0.3, 1.0, 10.0, 1e3, 1e6)) -> list:
    """Random batches at several scales (``p = k - 1`` coordinates), rows of increasing
    entries (one pool) and of ties on a grid holding the bounds 0 and 1, leading axes and
    an empty batch."""
    out = [s * rng.standard_normal((6, p)) for s in scales]
    out.append(0.5 + 0.3 * np.cumsum(rng.standard_normal((4, p)), axis=-1))  # trends
    out.append(np.round(4.0 * rng.uniform(-0.5, 1.5, size=(8, p))) / 4.0)  # ties, bounds
    out += [rng.standard_normal((2, 3, p)), np.zeros((0, p))]
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("p", [1, 2, 5, 99])
def test_project_matches_engine_float64(p, geometry, backend):
    rng = np.random.default_rng(p)
    for theta in thetas(p, rng):
        t = to_backend(theta, backend)
        u = SET.xp_project(t, geometry)
        check_like(u, t, backend)
        # the pool means of theta carry rounding of the size of |theta|
        tol = 1e-12 * max(1.0, np.abs(theta).max(initial=0.0))
        np.testing.assert_allclose(to_np(u), SET.project(theta, geometry), rtol=0, atol=tol)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("p", [2, 9, 99])
def test_project_matches_engine_float32(p, geometry, backend):
    """Computed in float32, against the engine on the same (float32-rounded) input; the
    error is that of float32 pool means, ~ eps * |theta| (1e-4 up to |theta| ~ 1e2)."""
    rng = np.random.default_rng(p + 1)
    for theta in thetas(p, rng, scales=(0.3, 1.0, 10.0, 100.0))[:-1]:
        theta32 = theta.astype(np.float32)
        t = to_backend(theta32, backend, "float32")
        u = SET.xp_project(t, geometry)
        check_like(u, t, backend)
        ref = SET.project(theta32.astype(np.float64), geometry)
        np.testing.assert_allclose(to_np(u), ref, rtol=0, atol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_argmax_matches_engine_with_ties(dtype, backend):
    """Integer scores make the cumulative sums exact in both dtypes, so ties between
    classes are real ties (the engine takes the smallest class; a zero score is not
    positive, class 1)."""
    rng = np.random.default_rng(5)
    for p in (1, 2, 6, 99):
        for theta in thetas(p, rng)[:-1]:
            theta = np.round(np.clip(theta, -1e6, 1e6))
            t = to_backend(theta, backend, dtype)
            v = SET.xp_argmax(t)
            check_like(v, t, backend)
            np.testing.assert_array_equal(to_np(v), SET.argmax(theta).astype(dtype))
    t = to_backend([[0.0, 0.0], [1.0, -1.0], [-1.0, 1.0], [2.0, -2.0]], backend, dtype)
    np.testing.assert_array_equal(to_np(SET.xp_argmax(t)), [[0, 0], [1, 0], [0, 0], [1, 0]])


def central_difference(f, x: np.ndarray, t: np.ndarray, h: float) -> np.ndarray:
    return (f(x + h * t) - f(x - h * t)) / (2 * h)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("p", [1, 2, 5, 99])
def test_jvp_matches_finite_differences_of_the_engine(p, geometry, backend):
    """Random points (pools inside and outside the bounds, none at a bound or at the
    value of a neighbour: away from kinks) and increasing rows with blocks of equal theta
    (one pool, strictly inside: differentiable)."""
    rng = np.random.default_rng(p + 7)
    theta = np.concatenate(
        [
            0.5 + rng.standard_normal((6, p)),
            np.sort(np.round(8.0 * rng.uniform(0.0, 0.8, size=(4, p))) / 8.0 + 1 / 16, axis=-1),
        ]
    )
    tan = rng.standard_normal(theta.shape)
    fd = central_difference(lambda x: SET.project(x, geometry), theta, tan, 1e-7)
    t, tt = to_backend(theta, backend), to_backend(tan, backend)
    jvp = SET.xp_project_jvp(t, SET.xp_project(t, geometry), tt, geometry)
    check_like(jvp, t, backend)
    np.testing.assert_allclose(to_np(jvp), fd, atol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_jvp_is_symmetric(geometry, backend):
    """<J a, b> = <a, J b> at ties and kinks, for leading axes, in float32 and float64;
    an empty batch gives an empty JVP."""
    rng = np.random.default_rng(11)
    theta = np.round(4.0 * rng.uniform(-0.5, 1.5, size=(2, 3, 9))) / 4.0
    a, b = rng.standard_normal((2, *theta.shape))
    for dtype, tol in (("float64", 1e-12), ("float32", 1e-5)):
        t = to_backend(theta, backend, dtype)
        u = SET.xp_project(t, geometry)
        ja = to_np(SET.xp_project_jvp(t, u, to_backend(a, backend, dtype), geometry))
        jb = to_np(SET.xp_project_jvp(t, u, to_backend(b, backend, dtype), geometry))
        np.testing.assert_allclose((ja * b).sum(-1), (a * jb).sum(-1), atol=tol * 10)
    empty = to_backend(np.zeros((0, 4)), backend)
    assert tuple(SET.xp_project_jvp(empty, empty, empty, geometry).shape) == (0, 4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jvp_closed_forms_and_faces(backend):
    """One pool inside the bounds averages the tangent (times u for KL); pools clipped at
    a bound, or exactly at it (a kink: the face u lies on), are held (0): here the pools
    {1, 2} at v = 1, {3} at 0.5 and {4} at v = 0."""
    tan = to_backend([[1.0, -2.0, 4.0, 3.0]], backend)
    inside = to_backend([[0.2, 0.3, 0.4, 0.5]], backend)  # one pool, v = 0.35
    jvp = to_np(SET.xp_project_jvp(inside, None, tan))
    np.testing.assert_allclose(jvp, np.full((1, 4), 1.5), atol=1e-12)
    jvp = to_np(SET.xp_project_jvp(inside, None, tan, "kl"))
    np.testing.assert_allclose(jvp, np.full((1, 4), 1.5 * np.exp(0.35 - 1.0)), atol=1e-12)
    # pools {1, 2} at v = 1 exactly, {3} at 0.5, {4} at 0 exactly (Euclidean kinks)
    kinks = to_backend([[0.5, 1.5, 0.5, 0.0]], backend)
    jvp = to_np(SET.xp_project_jvp(kinks, None, tan))
    np.testing.assert_allclose(jvp, [[0.0, 0.0, 4.0, 0.0]], atol=1e-12)
    jvp = to_np(SET.xp_project_jvp(kinks, None, tan, "kl"))  # no lower bound for KL
    np.testing.assert_allclose(jvp, [[0.0, 0.0, 4.0, 3.0]] * np.exp([-0.5, -0.5, -0.5, -1.0]))
