"""The knapsack set's array-API oracles (``xp_project``, ``xp_project_jvp``, ``xp_argmax``)
against the NumPy/numba engine (paper Prop. 3).

Bound to the engine on the same inputs: float64 to 1e-9 (and an exact rational reference
where the engine itself rounds), float32 to 1e-5 (computed in float32, compared with the
engine on the same float32 inputs); the JVP against central finite differences of the
engine's float64 projection away from kinks, and its symmetry; the MAP oracle exactly,
ties included. The same functions run on NumPy arrays (the array_api_compat namespace).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from projloss.sets import Knapsack  # noqa: E402
from projloss.sets.knapsack import (  # noqa: E402
    _xp_capped_euclidean,
    _xp_capped_kl,
    kl_project_capped_simplex,
    project_capped_simplex,
)

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
GEOMETRIES = ["euclidean", "kl"]
K = 6
# (lower, upper) at k = 6: lower = 0, lower = upper (incl. the single-vertex 0 and k),
# upper = k (None), the whole cube, and a general band.
BOUNDS = [(0, 2), (1, 3), (2, 2), (3, None), (0, None), (1, 1), (0, 0), (6, 6), (0, 6)]


def _thetas(rng, n, k):
    """Rows hitting every branch: several scales, exact ties, rounded values (ties at
    0 and 1, the Euclidean kinks), and large offsets (|theta| up to 1e6)."""
    blocks = []
    for scale in (0.3, 1.0, 3.0, 30.0):
        blocks.append(rng.normal(size=(n, k)) * scale + rng.normal(size=(n, 1)))
    tied = rng.normal(size=(n, k))
    tied[:, : k // 2] = tied[:, :1]  # a tie among the largest, smallest or middle entries
    blocks.append(tied)
    blocks.append(np.round(rng.normal(size=(n, k)) * 2) / 2)
    for offset in (1e3, -1e3, 1e6, -1e6):
        blocks.append(offset + rng.normal(size=(n, k)))
    return np.concatenate(blocks)


def _engine(s, theta, geometry):
    return s.project(np.asarray(theta, dtype=np.float64), geometry)


# ---------------------------------------------------------------------- projections
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("bounds", BOUNDS)
def test_project_float64_matches_engine(bounds, geometry, device):
    s = Knapsack(*bounds)
    rng = np.random.default_rng(BOUNDS.index(bounds))
    theta = _thetas(rng, 40, K)
    ref = _engine(s, theta, geometry)
    out = s.xp_project(torch.tensor(theta, device=device), geometry)
    assert out.dtype == torch.float64 and out.device.type == device
    np.testing.assert_allclose(out.cpu().numpy(), ref, rtol=0, atol=1e-9)
    if geometry == "kl":  # tiny coordinates keep their relative precision
        small = theta[np.abs(theta).max(axis=1) < 1e3]
        ref = _engine(s, small, geometry)
        got = s.xp_project(torch.tensor(small, device=device), geometry).cpu().numpy()
        np.testing.assert_allclose(got, ref, rtol=1e-11, atol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("bounds", [(0, 2), (2, 2), (3, None), (1, 4)])
def test_project_float32_matches_engine(bounds, geometry, device):
    s = Knapsack(*bounds)
    rng = np.random.default_rng(7)
    theta = _thetas(rng, 40, K).astype(np.float32)
    ref = _engine(s, theta, geometry)
    out = s.xp_project(torch.tensor(theta, device=device), geometry)
    assert out.dtype == torch.float32 and out.device.type == device
    np.testing.assert_allclose(out.cpu().numpy(), ref, rtol=0, atol=1e-5)


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_batch_shapes_and_degenerate_sizes(geometry):
    rng = np.random.default_rng(3)
    s = Knapsack(1, 3)
    theta = rng.normal(size=(2, 3, 5))
    out = s.xp_project(torch.tensor(theta), geometry)
    assert out.shape == (2, 3, 5)
    np.testing.assert_allclose(out.numpy(), _engine(s, theta, geometry), atol=1e-9)
    empty = s.xp_project(torch.zeros(0, 5, dtype=torch.float64), geometry)
    assert empty.shape == (0, 5) and empty.dtype == torch.float64
    for k, sets in [
        (1, [Knapsack(1, 1), Knapsack(0, 0), Knapsack(0, 1)]),
        (2, [Knapsack(1, 1), Knapsack(0, 1), Knapsack(1, 2), Knapsack(2, 2)]),
    ]:
        theta = rng.normal(size=(50, k)) * 2
        for s in sets:
            out = s.xp_project(torch.tensor(theta), geometry).numpy()
            np.testing.assert_allclose(out, _engine(s, theta, geometry), atol=1e-12)


def _exact_capped(theta, m):
    """The Euclidean capped-simplex projection in rationals (f(tau) = m solved exactly on
    the piece between consecutive breakpoints)."""
    t = [Fraction(float(x)) for x in theta]
    m = Fraction(float(m))

    def f(tau):
        return sum(min(max(x - tau, 0), 1) for x in t)

    points = sorted({*t, *(x - 1 for x in t)}, reverse=True)
    for a, b in itertools.pairwise(points):
        if f(b) >= m:
            tau = a - (m - f(a)) * (a - b) / (f(b) - f(a))
            return np.array([float(min(max(x - tau, 0), 1)) for x in t])
    raise AssertionError("no root")


def test_euclidean_exact_at_large_spread():
    """|theta| ~ 1e6 spread out (no common offset): the breakpoint sums of f are exact
    here, while the engine's partial sums (of size k * 1e6) round at ~1e-9."""
    rng = np.random.default_rng(11)
    theta = rng.normal(size=(12, 8)) * 1e6
    theta[:, 1] = theta[:, 0] + 0.25  # a free pair in the capped region
    for s in (Knapsack(0, 3), Knapsack(5, 8), Knapsack(2, 2)):
        out = s.xp_project(torch.tensor(theta)).numpy()
        nu = np.clip(theta, 0, 1).sum(axis=1)
        lo, hi = s._bounds(8)
        assert ((nu > hi) | (nu < lo)).sum() > 6
        for row, got, total in zip(theta, out, nu, strict=True):
            if lo <= total <= hi:
                np.testing.assert_array_equal(got, np.clip(row, 0, 1))
            else:
                m = hi if total > hi else lo
                np.testing.assert_allclose(got, _exact_capped(row, m), rtol=0, atol=1e-12)
        np.testing.assert_allclose(out, _engine(s, theta, "euclidean"), atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("k", [1, 3, 40])
def test_capped_simplex_with_real_budgets(k, device):
    """The capped-simplex building blocks for any budget m in [0, k] (0 and k included)
    against project_capped_simplex / kl_project_capped_simplex."""
    import array_api_compat.torch as xt

    rng = np.random.default_rng(k)
    theta = np.concatenate([rng.normal(size=(60, k)) * c for c in (0.5, 3.0, 100.0)])
    theta[::4, : (k + 1) // 2] = theta[::4, :1]
    m = rng.uniform(0, k, size=len(theta))
    m[::5] = np.round(m[::5])
    m[1::7], m[2::7] = 0.0, float(k)
    for fn, ref in [
        (_xp_capped_euclidean, project_capped_simplex),
        (_xp_capped_kl, kl_project_capped_simplex),
    ]:
        got = fn(xt, torch.tensor(theta, device=device), torch.tensor(m, device=device))
        np.testing.assert_allclose(got.cpu().numpy(), ref(theta, m), rtol=0, atol=1e-9)
    # the KL search limited to the m_max largest entries (m <= m_max, as u bounds m)
    m_max = max(1, k // 3)
    small = np.minimum(m, m_max)
    got = _xp_capped_kl(
        xt, torch.tensor(theta, device=device), torch.tensor(small, device=device), m_max
    )
    np.testing.assert_allclose(
        got.cpu().numpy(), kl_project_capped_simplex(theta, small), rtol=0, atol=1e-9
    )


@pytest.mark.parametrize("device", DEVICES)
def test_kl_no_overflow_at_huge_theta(device):
    s = Knapsack(2, 3)
    for dtype in (torch.float64, torch.float32):
        theta = torch.tensor(
            [[1e6, 1e6, 1e6, 1e6, -1e6], [1e6, -1e6, 0.0, 5.0, 1e6 - 0.5], [-1e6] * 5],
            dtype=dtype,
            device=device,
        )
        out = s.xp_project(theta, "kl")
        assert bool(torch.isfinite(out).all())
        ref = _engine(s, theta.cpu().numpy(), "kl")
        np.testing.assert_allclose(
            out.cpu().numpy(), ref, atol=1e-9 if dtype == torch.float64 else 1e-6
        )


# ---------------------------------------------------------------------- JVP
def _away_from_kinks(s, theta, t, geometry, h):
    """Rows whose face (free set, and branch of Prop. 3) is the same at theta -+ 4 h t."""
    lo, hi = s._bounds(theta.shape[-1])

    def face(x):
        u = s.project(x, geometry)
        nu = np.clip(x, 0, 1) if geometry == "euclidean" else np.exp(np.minimum(x - 1, 0))
        total = nu.sum(axis=-1, keepdims=True)
        free = (u < 1) & ((u > 0) | (geometry == "kl"))
        return np.concatenate([free, total > hi, total < lo], axis=-1)

    return (face(theta - 4 * h * t) == face(theta + 4 * h * t)).all(axis=-1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("bounds", [(0, 2), (1, 3), (2, 2), (3, None), (0, None), (0, 0)])
def test_jvp_matches_finite_differences_and_is_symmetric(bounds, geometry, device):
    s = Knapsack(*bounds)
    rng = np.random.default_rng(5)
    theta = np.concatenate([rng.normal(size=(80, K)) * c for c in (0.5, 2.0)])
    t, b = rng.normal(size=(2, *theta.shape))
    h = 1e-6
    fd = (_engine(s, theta + h * t, geometry) - _engine(s, theta - h * t, geometry)) / (2 * h)
    keep = _away_from_kinks(s, theta, t, geometry, h)
    assert keep.mean() > 0.9
    th = torch.tensor(theta, device=device)
    u = s.xp_project(th, geometry)
    jt = s.xp_project_jvp(th, u, torch.tensor(t, device=device), geometry).cpu().numpy()
    jb = s.xp_project_jvp(th, u, torch.tensor(b, device=device), geometry).cpu().numpy()
    np.testing.assert_allclose(jt[keep], fd[keep], rtol=0, atol=1e-7)
    np.testing.assert_allclose((jt * b).sum(-1), (jb * t).sum(-1), rtol=0, atol=1e-12)
    # float32: the same JVP computed in float32
    th32 = th.float()
    j32 = s.xp_project_jvp(
        th32,
        s.xp_project(th32, geometry),
        torch.tensor(t, dtype=torch.float32, device=device),
        geometry,
    )
    assert j32.dtype == torch.float32
    np.testing.assert_allclose(j32.cpu().numpy()[keep], jt[keep], rtol=0, atol=1e-5)


def test_jvp_closed_form_on_a_known_face():
    """Knapsack(2, 2) at theta = (3, 0.5, 0.3, -2) (Euclidean): entry 0 capped, entries
    1, 2 free on sum = 2, entry 3 at 0; J = [[0, 0, 0, 0], [0, .5, -.5, 0],
    [0, -.5, .5, 0], [0, 0, 0, 0]]. KL at theta = (9, 0, 0, log 2): J = diag(w) - w w^T/sum w
    on the free entries w = u_F = (1/4, 1/4, 1/2)."""
    s = Knapsack(2, 2)
    eye = torch.eye(4, dtype=torch.float64)
    theta = torch.tensor([3.0, 0.5, 0.3, -2.0], dtype=torch.float64).expand(4, 4)
    jac = s.xp_project_jvp(theta, s.xp_project(theta), eye).numpy()
    expected = np.zeros((4, 4))
    expected[1:3, 1:3] = [[0.5, -0.5], [-0.5, 0.5]]
    np.testing.assert_allclose(jac, expected, atol=1e-15)
    theta = torch.tensor([9.0, 0.0, 0.0, np.log(2.0)], dtype=torch.float64).expand(4, 4)
    u = s.xp_project(theta, "kl")
    np.testing.assert_allclose(u[0].numpy(), [1.0, 0.25, 0.25, 0.5], atol=1e-15)
    jac = s.xp_project_jvp(theta, u, eye, "kl").numpy()
    w = np.array([0.0, 0.25, 0.25, 0.5])
    np.testing.assert_allclose(jac, np.diag(w) - np.outer(w, w), atol=1e-15)


# ---------------------------------------------------------------------- MAP
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("bounds", BOUNDS)
def test_argmax_matches_engine_with_ties(bounds, device):
    s = Knapsack(*bounds)
    rng = np.random.default_rng(2)
    theta = np.round(rng.normal(size=(400, K)) * 1.5)  # many ties, zeros and negatives
    theta[::3] = rng.normal(size=(len(theta[::3]), K))
    ref = s.argmax(theta)
    for dtype in (torch.float64, torch.float32):
        got = s.xp_argmax(torch.tensor(theta, dtype=dtype, device=device))
        assert got.dtype == dtype and got.device.type == device
        np.testing.assert_array_equal(got.cpu().numpy(), ref)
    batch = s.xp_argmax(torch.tensor(theta[:24].reshape(2, 3, 4, K)))
    np.testing.assert_array_equal(batch.numpy().reshape(24, K), ref[:24])
    assert s.xp_argmax(torch.zeros(0, K)).shape == (0, K)


def test_argmax_ties_go_to_the_first_index():
    s = Knapsack(1, 2)
    theta = torch.tensor([[1.0, 2.0, 2.0, 2.0], [-1.0, -3.0, -1.0, -2.0], [0.0, 0.0, 5.0, 0.0]])
    np.testing.assert_array_equal(
        s.xp_argmax(theta).numpy(), [[0, 1, 1, 0], [1, 0, 0, 0], [0, 0, 1, 0]]
    )


# ---------------------------------------------------------------------- NumPy namespace
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("bounds", [(1, 3), (2, 2), (0, None), (0, 0), (6, 6)])
def test_numpy_namespace(bounds, geometry):
    s = Knapsack(*bounds)
    rng = np.random.default_rng(4)
    theta = _thetas(rng, 10, K)
    with np.errstate(over="raise", divide="raise", invalid="raise"):  # (underflow is fine)
        u = s.xp_project(theta, geometry)
        t = rng.normal(size=theta.shape)
        jt = s.xp_project_jvp(theta, u, t, geometry)
        v = s.xp_argmax(theta)
    assert isinstance(u, np.ndarray) and u.dtype == np.float64
    np.testing.assert_allclose(u, _engine(s, theta, geometry), atol=1e-9)
    th = torch.tensor(theta)
    ref = s.xp_project_jvp(th, s.xp_project(th, geometry), torch.tensor(t), geometry)
    np.testing.assert_allclose(jt, ref.numpy(), atol=1e-12)
    np.testing.assert_array_equal(v, s.argmax(theta))
    u32 = s.xp_project(theta.astype(np.float32), geometry)
    assert u32.dtype == np.float32
    np.testing.assert_allclose(u32, _engine(s, theta.astype(np.float32), geometry), atol=1e-5)
