"""Array-API oracles of the permutahedron (sort + pool adjacent violators by rounds)
against the NumPy engine: projections in both geometries, the MAP oracle, and the
block-structure Jacobian against central differences of the engine; on torch tensors
(CPU, and CUDA where present) and on NumPy arrays through array_api_compat."""

from __future__ import annotations

import numpy as np
import pytest

from projloss.sets import Permutahedron

torch = pytest.importorskip("torch")
pytest.importorskip("array_api_compat")

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
#: "numpy" runs the very same methods through array_api_compat.numpy.
BACKENDS = ["numpy", *DEVICES]
GEOMETRIES = ["euclidean", "kl"]


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


def assert_close(out, ref, tol: float) -> None:
    """``|out - ref| <= tol * max(1, max |ref|)``: the points of P(w) have the size of w."""
    out, ref = to_np(out), np.asarray(ref)
    assert out.shape == ref.shape
    err = np.abs(out - ref).max(initial=0.0)
    assert err <= tol * max(1.0, np.abs(ref).max(initial=0.0)), f"max error {err:.3g}"


def sets(k: int, geometry: str, rng: np.random.Generator) -> list[Permutahedron]:
    """The default w = (k, ..., 1), random weights (negative ones too for Euclidean), and
    weights with ties."""
    low = 0.1 if geometry == "kl" else -3.0
    tied = np.repeat(rng.uniform(max(low, 0.1), 5.0, size=(k + 1) // 2), 2)[:k]
    return [Permutahedron(), Permutahedron(rng.uniform(low, 5.0, size=k)), Permutahedron(tied)]


def thetas(k: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Random batches at several scales, exact ties (blocks of equal theta), all-equal
    rows, huge magnitudes, leading axes and an empty batch."""
    out = [s * rng.standard_normal((6, k)) for s in (0.1, 1.0, 10.0, 1e3, 1e6, 1e100)]
    ties = np.round(rng.standard_normal((8, k)))
    ties[:2] = 0.7  # all equal
    out += [ties, 1e6 * ties, rng.standard_normal((2, 3, k)), np.zeros((0, k))]
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("k", [1, 2, 5, 100])
def test_project_matches_engine_float64(k, geometry, backend):
    rng = np.random.default_rng(k)
    for s in sets(k, geometry, rng):
        for theta in thetas(k, rng):
            t = to_backend(theta, backend)
            u = s.xp_project(t, geometry)
            check_like(u, t, backend)
            assert_close(u, s.project(theta, geometry), 1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("k", [2, 10, 100])
def test_project_matches_engine_float32(k, geometry, backend):
    """Computed in float32, against the engine on the same (float32-rounded) input; the
    pools' frames keep it exact at |theta| = 1e6 (where float32 cannot form s - w)."""
    rng = np.random.default_rng(k + 1)
    for s in sets(k, geometry, rng):
        for theta in thetas(k, rng)[:-1]:
            theta32 = np.clip(theta, -1e30, 1e30).astype(np.float32)
            t = to_backend(theta32, backend, "float32")
            u = s.xp_project(t, geometry)
            check_like(u, t, backend)
            assert_close(u, s.project(theta32.astype(np.float64), geometry), 1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_project_exact_at_huge_magnitudes(backend):
    """Distinct entries far apart get exactly the weights of their ranks, tied ones the
    mean weight of their ranks (Euclidean and KL), in float32 and float64."""
    s = Permutahedron([4.0, 1.0, 2.0, 3.0])
    for dtype in ("float32", "float64"):
        t = to_backend([[1e6, -1e6, 2e6, 0.0], [1e30, 1e30, -1e30, 0.0]], backend, dtype)
        for geometry in GEOMETRIES:
            u = to_np(s.xp_project(t, geometry))
            exact = [[3.0, 1.0, 4.0, 2.0], [3.5, 3.5, 1.0, 2.0]]
            if geometry == "euclidean":
                np.testing.assert_array_equal(u, exact)
            else:  # e^{s - v}: one exponential and one logarithm of rounding
                np.testing.assert_allclose(u, exact, rtol=4 * np.finfo(dtype).eps)


@pytest.mark.parametrize("backend", BACKENDS)
def test_kl_needs_positive_weights_and_sizes_must_match(backend):
    t = to_backend(np.zeros((2, 3)), backend)
    with pytest.raises(ValueError, match="positive weights"):
        Permutahedron([1.0, 0.0, 2.0]).xp_project(t, "kl")
    Permutahedron([1.0, 0.0, 2.0]).xp_project(t)  # fine for Euclidean
    with pytest.raises(ValueError, match="lengths must match"):
        Permutahedron([1.0, 2.0]).xp_project(t)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_argmax_matches_engine_with_ties(dtype, backend):
    rng = np.random.default_rng(5)
    for k in (1, 2, 6, 100):
        for s in sets(k, "euclidean", rng):
            for theta in thetas(k, rng)[:-1]:
                theta = np.round(np.clip(theta, -1e30, 1e30))  # many ties
                t = to_backend(theta, backend, dtype)
                v = s.xp_argmax(t)
                check_like(v, t, backend)
                ref = s.argmax(theta.astype(dtype).astype(np.float64))
                np.testing.assert_array_equal(to_np(v), ref.astype(dtype))


def central_difference(f, x: np.ndarray, t: np.ndarray, h: float) -> np.ndarray:
    return (f(x + h * t) - f(x - h * t)) / (2 * h)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("k", [1, 2, 5, 100])
def test_jvp_matches_finite_differences_of_the_engine(k, geometry, backend):
    """Random points (no two pools at equal values: away from kinks) and points with
    blocks of equal theta (the tied entries pool together when w is strictly decreasing:
    the projection is differentiable there)."""
    rng = np.random.default_rng(k + 7)
    s = Permutahedron(rng.uniform(0.5, 3.0, size=k))
    theta = np.concatenate(
        [rng.standard_normal((5, k)) * 2.0, np.round(2.0 * rng.standard_normal((5, k))) / 2.0]
    )
    tan = rng.standard_normal(theta.shape)
    t, tt = to_backend(theta, backend), to_backend(tan, backend)
    for ss in (s, Permutahedron()):
        fd = central_difference(lambda x, ss=ss: ss.project(x, geometry), theta, tan, 1e-6)
        jvp = ss.xp_project_jvp(t, ss.xp_project(t, geometry), tt, geometry)
        check_like(jvp, t, backend)
        np.testing.assert_allclose(to_np(jvp), fd, atol=1e-7 * max(1.0, np.abs(fd).max()))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_jvp_is_symmetric_and_annihilates_constants(geometry, backend):
    """<J a, b> = <a, J b>; J 1 = 0 (P(theta + c 1) = P(theta)), also at ties, for leading
    axes, in float32; an empty batch gives an empty JVP."""
    rng = np.random.default_rng(11)
    s = Permutahedron(rng.uniform(0.5, 3.0, size=7))
    theta = np.round(rng.standard_normal((2, 3, 7)))
    a, b = rng.standard_normal((2, *theta.shape))
    for dtype, tol in (("float64", 1e-12), ("float32", 1e-5)):
        t = to_backend(theta, backend, dtype)
        u = s.xp_project(t, geometry)
        ja = to_np(s.xp_project_jvp(t, u, to_backend(a, backend, dtype), geometry))
        jb = to_np(s.xp_project_jvp(t, u, to_backend(b, backend, dtype), geometry))
        np.testing.assert_allclose((ja * b).sum(-1), (a * jb).sum(-1), atol=tol * 10)
        one = to_np(s.xp_project_jvp(t, u, to_backend(np.ones_like(a), backend, dtype), geometry))
        np.testing.assert_allclose(one, 0.0, atol=tol * 10)
    empty = to_backend(np.zeros((0, 7)), backend)
    assert tuple(s.xp_project_jvp(empty, empty, empty, geometry).shape) == (0, 7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jvp_closed_forms(backend):
    """k = 3, w = (3, 2, 1): distinct far-apart scores are in separate pools (J = 0,
    Euclidean; J = 0 as u = w is constant, KL); all-equal scores form one pool
    (J = I - 11^T / 3, Euclidean; diag(u) - 6 p p^T with p = 1/3, KL)."""
    s = Permutahedron()
    tan = to_backend([[1.0, -2.0, 4.0]], backend)
    far = to_backend([[100.0, 0.0, -100.0]], backend)
    for geometry in GEOMETRIES:
        jvp = to_np(s.xp_project_jvp(far, s.xp_project(far, geometry), tan, geometry))
        np.testing.assert_allclose(jvp, 0.0, atol=1e-12)
    tie = to_backend([[0.5, 0.5, 0.5]], backend)
    jvp = to_np(s.xp_project_jvp(tie, s.xp_project(tie), tan))
    np.testing.assert_allclose(jvp, [[0.0, -3.0, 3.0]], atol=1e-12)
    jvp = to_np(s.xp_project_jvp(tie, s.xp_project(tie, "kl"), tan, "kl"))
    np.testing.assert_allclose(jvp, [[0.0, -6.0, 6.0]], atol=1e-12)  # 2 t - 2 mean(t)
