"""Array-API oracles of the simple sets (R^p, R^p_+, unit cube, matrix cube, simplex,
row-stochastic matrices) against the NumPy engine: projections, MAP oracles, Jacobian-vector
products, on torch tensors (CPU, and CUDA where present) and on NumPy arrays."""

from __future__ import annotations

import numpy as np
import pytest

from projloss.sets import MatrixCube, NonNegative, Reals, RowSimplex, Simplex, UnitCube
from projloss.sets.simplex import (
    project_simplex,
    softmax,
    xp_softmax,
    xp_softmax_jvp,
    xp_sparsemax,
    xp_sparsemax_jvp,
)

torch = pytest.importorskip("torch")
array_api_compat = pytest.importorskip("array_api_compat")

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
#: "numpy" runs the very same functions through array_api_compat.numpy.
BACKENDS = ["numpy", *DEVICES]

PAIRS = [
    (Reals(), "euclidean"),
    (NonNegative(), "euclidean"),
    (NonNegative(), "kl"),
    (UnitCube(), "euclidean"),
    (UnitCube(), "kl"),
    (MatrixCube(), "euclidean"),
    (MatrixCube(), "kl"),
    (Simplex(), "euclidean"),
    (Simplex(), "kl"),
    (RowSimplex(), "euclidean"),
    (RowSimplex(), "kl"),
]
PAIR_IDS = [f"{s.name}-{g}" for s, g in PAIRS]
BOUNDED = (UnitCube, Simplex, RowSimplex)

F64_TOL = 1e-12
F32_TOL = 1e-5


def to_backend(x: np.ndarray, backend: str, dtype: str = "float64"):
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


def shape_of(s, batch: tuple[int, ...], k: int) -> tuple[int, ...]:
    return (*batch, *s.event_shape(k))


def thetas(s, geometry: str, rng: np.random.Generator) -> list[np.ndarray]:
    """Test batches: several sizes, leading shapes, an empty batch, ties, kinks, large |theta|
    (bounded by the float32 overflow of e^{theta - 1} for R^p_+ with KL)."""
    ks = (1, 2, 3, 7) if s.matrix else (1, 2, 3, 7, 40)
    unbounded_kl = isinstance(s, NonNegative) and geometry == "kl"
    scales = (1.0, 30.0) if unbounded_kl else (1.0, 1e3, 1e6)
    out = []
    for k in ks:
        for scale in scales:
            out.append(scale * rng.standard_normal(shape_of(s, (5,), k)))
        # Ties and kinks: a coarse grid with 0 and 1 (the cube's bounds) on it.
        out.append(np.round(2.0 * rng.standard_normal(shape_of(s, (6,), k))) / 2.0)
        out.append(np.full(shape_of(s, (2,), k), 0.5))
    out.append(rng.standard_normal(shape_of(s, (2, 3), 4)))
    out.append(np.zeros(shape_of(s, (0,), 3)))
    if isinstance(s, Simplex):  # huge |theta| with near ties at the top
        out.append(np.array([[1e6, 1e6 - 0.5, -1e6], [-1e6, -1e6 + 0.25, -1e6 + 2.0]]))
    return out


# ------------------------------------------------------------------ projections
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("s", "geometry"), PAIRS, ids=PAIR_IDS)
def test_project_matches_engine_float64(s, geometry, backend):
    rng = np.random.default_rng(0)
    for theta in thetas(s, geometry, rng):
        t = to_backend(theta, backend)
        u = s.xp_project(t, geometry)
        check_like(u, t, backend)
        ref = s.project(theta, geometry)
        np.testing.assert_allclose(to_np(u), ref, atol=F64_TOL, rtol=F64_TOL)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("s", "geometry"), PAIRS, ids=PAIR_IDS)
def test_project_matches_engine_float32(s, geometry, backend):
    """Computed in float32, against the engine on the same (float32-rounded) input."""
    rng = np.random.default_rng(1)
    for theta in thetas(s, geometry, rng):
        theta32 = theta.astype(np.float32)
        t = to_backend(theta32, backend, "float32")
        u = s.xp_project(t, geometry)
        check_like(u, t, backend)
        ref = s.project(theta32.astype(np.float64), geometry)
        rtol = 0.0 if isinstance(s, BOUNDED) else F32_TOL  # relative where unbounded
        np.testing.assert_allclose(to_np(u), ref, atol=F32_TOL, rtol=rtol)


def test_projection_is_not_the_input_and_reals_copies():
    t = torch.randn(3, 4, dtype=torch.float64)
    u = Reals().xp_project(t)
    assert torch.equal(u, t) and u.data_ptr() != t.data_ptr()


def test_huge_simplex_scores_in_float32():
    """The shifted frame keeps the "- 1" of the threshold for |theta| = 1e6 in float32."""
    t = torch.tensor([[1e6, 1e6 - 0.5, -1e6], [3e7, 3e7, 3e7]], dtype=torch.float32)
    u = Simplex().xp_project(t)
    np.testing.assert_allclose(to_np(u), [[0.75, 0.25, 0.0], [1 / 3, 1 / 3, 1 / 3]], atol=1e-7)
    u = Simplex().xp_project(t, "kl")
    assert torch.isfinite(u).all()
    np.testing.assert_allclose(to_np(u).sum(-1), 1.0, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("axis", [0, 1, -2])
def test_simplex_functions_along_any_axis(axis, backend):
    """xp_sparsemax / xp_softmax and their JVPs along another axis (the Birkhoff solvers'
    columns) equal the last-axis versions on the moved array, and the engine's."""
    rng = np.random.default_rng(2)
    theta = rng.standard_normal((4, 5, 3))
    tangent = rng.standard_normal(theta.shape)
    t, tt = to_backend(theta, backend), to_backend(tangent, backend)
    xp = array_api_compat.array_namespace(t)
    for proj, jvp, ref in (
        (xp_sparsemax, xp_sparsemax_jvp, project_simplex),
        (xp_softmax, xp_softmax_jvp, softmax),
    ):
        u = proj(xp, t, axis=axis)
        np.testing.assert_allclose(to_np(u), ref(theta, axis=axis), atol=F64_TOL)
        moved = jvp(xp, xp.moveaxis(u, axis, -1), xp.moveaxis(tt, axis, -1))
        np.testing.assert_allclose(
            to_np(jvp(xp, u, tt, axis=axis)), np.moveaxis(to_np(moved), -1, axis), atol=1e-15
        )


# ------------------------------------------------------------------ MAP oracles
MAP_SETS = [UnitCube(), MatrixCube(), Simplex(), RowSimplex()]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("s", MAP_SETS, ids=lambda s: s.name)
def test_argmax_matches_engine_with_ties(s, backend, dtype):
    rng = np.random.default_rng(3)
    cases = [np.round(rng.standard_normal(shape_of(s, (20,), k))) for k in (1, 2, 3, 6)]
    cases += [
        1e6 * rng.standard_normal(shape_of(s, (4,), 5)),
        np.zeros(shape_of(s, (3,), 4)),  # all tied, and theta = 0 for the cube
        np.full(shape_of(s, (1,), 3), -0.0),
        rng.standard_normal(shape_of(s, (2, 3), 4)),
        np.zeros(shape_of(s, (0,), 3)),
    ]
    n_tied = 0
    for theta in cases:
        theta = theta.astype(dtype)
        t = to_backend(theta, backend, dtype)
        v = s.xp_argmax(t)
        check_like(v, t, backend)
        np.testing.assert_array_equal(to_np(v), s.argmax(theta.astype(np.float64)))
        top = theta.max(axis=-1, keepdims=True) if theta.size else theta
        n_tied += int(((theta == top).sum(axis=-1) > 1).sum()) if theta.size else 0
    assert n_tied > 10  # the ties are there, and resolved as the engine does


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("s", [Reals(), NonNegative()], ids=lambda s: s.name)
def test_unbounded_sets_have_no_map_like_the_engine(s, backend):
    theta = np.ones((2, 3))
    with pytest.raises(ValueError) as engine_error:
        s.argmax(theta)
    with pytest.raises(ValueError) as xp_error:
        s.xp_argmax(to_backend(theta, backend))
    assert str(xp_error.value) == str(engine_error.value)


def test_reals_refuses_kl_like_the_engine():
    with pytest.raises(ValueError, match="KL geometry is undefined on R\\^p"):
        Reals().xp_project(torch.zeros(2, 3), "kl")


# ------------------------------------------------------------------ Jacobians
def face(u: np.ndarray) -> np.ndarray:
    """The face pattern of a projection onto these sets: which entries are at a bound."""
    return np.stack([u > 0, u < 1])


def smooth_points(s, geometry, rng, n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Points whose projection stays on one face within 1e-3 in a random direction (away
    from the kinks), and those directions; at least half of the candidates."""
    kept_theta, kept_dir = [], []
    for k in (1, 2, 3, 6):
        theta = 1.5 * rng.standard_normal(shape_of(s, (n,), k)) + 0.5
        direction = rng.standard_normal(theta.shape)
        faces = [face(s.project(theta + d * direction, geometry)) for d in (-1e-3, 0, 1e-3)]
        axes = tuple(range(-s.event_ndim, 0))
        same = np.all((faces[0] == faces[1]) & (faces[2] == faces[1]), axis=(0, *axes))
        assert same.mean() > 0.5
        kept_theta.append(theta[same].reshape(-1, *theta.shape[1:]))
        kept_dir.append(direction[same].reshape(-1, *theta.shape[1:]))
    return kept_theta, kept_dir


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("s", "geometry"), PAIRS, ids=PAIR_IDS)
def test_jvp_matches_finite_differences_of_the_engine(s, geometry, backend):
    rng = np.random.default_rng(4)
    eps = 1e-6
    largest = 0.0
    for theta, direction in zip(*smooth_points(s, geometry, rng), strict=True):
        fd = (
            s.project(theta + eps * direction, geometry)
            - s.project(theta - eps * direction, geometry)
        ) / (2 * eps)
        t = to_backend(theta, backend)
        u = s.xp_project(t, geometry)
        jvp = s.xp_project_jvp(t, u, to_backend(direction, backend), geometry)
        check_like(jvp, t, backend)
        np.testing.assert_allclose(to_np(jvp), fd, atol=1e-7, rtol=1e-7)
        largest = max(largest, np.abs(fd).max())
    assert largest > 0.1  # a Jacobian that is not zero (it is for the simplex at k = 1)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("s", "geometry"), PAIRS, ids=PAIR_IDS)
def test_jvp_is_symmetric_also_at_kinks(s, geometry, backend):
    """<J a, b> == <a, J b>, on random points and on ties (kinks: the face's Jacobian)."""
    rng = np.random.default_rng(5)
    for theta in (
        rng.standard_normal(shape_of(s, (30,), 5)),
        np.round(2.0 * rng.standard_normal(shape_of(s, (30,), 5))) / 2.0,
    ):
        a, b = rng.standard_normal((2, *theta.shape))
        t = to_backend(theta, backend)
        u = s.xp_project(t, geometry)
        ja = to_np(s.xp_project_jvp(t, u, to_backend(a, backend), geometry))
        jb = to_np(s.xp_project_jvp(t, u, to_backend(b, backend), geometry))
        axes = tuple(range(-s.event_ndim, 0))
        np.testing.assert_allclose((ja * b).sum(axes), (a * jb).sum(axes), atol=1e-12)
        assert np.abs(ja).max() > 0.1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("s", "geometry"), PAIRS, ids=PAIR_IDS)
def test_jvp_float32_matches_float64(s, geometry, backend):
    rng = np.random.default_rng(6)
    theta = rng.standard_normal(shape_of(s, (2, 7), 5)).astype(np.float32)
    tangent = rng.standard_normal(theta.shape).astype(np.float32)
    outs = []
    for dtype in ("float64", "float32"):
        t = to_backend(theta, backend, dtype)
        u = s.xp_project(t, geometry)
        outs.append(s.xp_project_jvp(t, u, to_backend(tangent, backend, dtype), geometry))
    check_like(outs[1], to_backend(theta, backend, "float32"), backend)
    np.testing.assert_allclose(to_np(outs[1]), to_np(outs[0]), atol=F32_TOL, rtol=F32_TOL)


def test_sparsemax_jvp_closed_form():
    """J t = s * (t - <s, t>/|S|) on the support of [0.15, 0.85, 0]."""
    theta = torch.tensor([0.5, 1.2, -1.0], dtype=torch.float64)
    u = Simplex().xp_project(theta)
    np.testing.assert_allclose(to_np(u), [0.15, 0.85, 0.0], atol=1e-15)
    jvp = Simplex().xp_project_jvp(theta, u, torch.tensor([1.0, 0.0, 5.0], dtype=torch.float64))
    np.testing.assert_allclose(to_np(jvp), [0.5, -0.5, 0.0], atol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jvp_at_kinks_is_the_jacobian_of_the_face(backend):
    """An entry exactly at a bound (cube: theta in {0, 1}, resp. theta = 1 in KL; R^p_+:
    theta = 0; simplex: theta_i at the threshold, u_i = 0) is held there: its row of J is 0."""
    t = to_backend(np.array([[0.0, 1.0, 0.5, -1.0, 2.0]]), backend)
    ones = to_backend(np.ones((1, 5)), backend)
    cube = UnitCube()
    np.testing.assert_array_equal(
        to_np(cube.xp_project_jvp(t, cube.xp_project(t), ones)), [[0, 0, 1, 0, 0]]
    )
    u = cube.xp_project(t, "kl")
    expected = np.where(to_np(t) < 1, np.exp(to_np(t) - 1), 0.0)
    np.testing.assert_allclose(to_np(cube.xp_project_jvp(t, u, ones, "kl")), expected, rtol=1e-15)
    nonneg = NonNegative()
    np.testing.assert_array_equal(
        to_np(nonneg.xp_project_jvp(t, nonneg.xp_project(t), ones)), [[0, 1, 1, 0, 1]]
    )
    # sparsemax of [1, 0, -5]: tau = 0, so the second entry sits at the threshold.
    t = to_backend(np.array([1.0, 0.0, -5.0]), backend)
    u = Simplex().xp_project(t)
    np.testing.assert_array_equal(to_np(u), [1.0, 0.0, 0.0])
    jvp = Simplex().xp_project_jvp(t, u, to_backend(np.array([0.0, 1.0, 0.0]), backend))
    np.testing.assert_array_equal(to_np(jvp), [0.0, 0.0, 0.0])
