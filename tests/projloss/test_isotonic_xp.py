"""The array-API isotonic solvers (pool adjacent violators by rounds) against the numba
engine (:func:`isotonic_regression`, :func:`isotonic_kl`) on the same inputs, and their
pool-mean Jacobians against finite differences of the engine; on torch tensors (CPU, and
CUDA where present) and on NumPy arrays through array_api_compat."""

from __future__ import annotations

import numpy as np
import pytest

from projloss._xp import namespace
from projloss.isotonic import (
    isotonic_kl,
    isotonic_regression,
    xp_isotonic_kl,
    xp_isotonic_regression,
    xp_pav_euclidean,
    xp_pav_kl,
    xp_pool_mean,
)

torch = pytest.importorskip("torch")
pytest.importorskip("array_api_compat")

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
BACKENDS = ["numpy", *DEVICES]


def to_backend(x, backend: str, dtype: str = "float64"):
    if backend == "numpy":
        return np.asarray(x, dtype=dtype)
    return torch.as_tensor(np.asarray(x, dtype=dtype), device=backend)


def to_np(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def assert_close(out, ref, tol: float, scale) -> None:
    """``|out - ref| <= tol * max(1, scale)`` entrywise (``scale`` broadcasts: a row's
    magnitude), with the worst entry in the message."""
    out, ref = to_np(out), np.asarray(ref)
    assert out.shape == ref.shape
    bound = tol * np.maximum(1.0, np.broadcast_to(scale, ref.shape))
    err = np.abs(out - ref)
    assert np.all(err <= bound), (
        f"max error {err.max():.3g}, max relative {(err / bound).max():.3g} tol"
    )


def inputs(rng: np.random.Generator, k: int) -> np.ndarray:
    """Random rows at several scales, rows with ties, trends, and a cascade."""
    y = rng.standard_normal((60, k)) * rng.choice([0.01, 1.0, 100.0, 1e6], size=(60, 1))
    y[::3] = np.round(y[::3])  # ties
    y[1::7] = np.cumsum(rng.standard_normal((len(y[1::7]), k)), axis=1)  # trends
    y[2] = 0.0
    y[2, -1] = 1.0  # a cascade: one pool absorbed per round
    return y


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", [1, 2, 3, 10, 57])
def test_euclidean_matches_engine(k, backend):
    rng = np.random.default_rng(k)
    y = inputs(rng, k)
    w = rng.uniform(0.1, 10.0, size=y.shape)
    t, tw = to_backend(y, backend), to_backend(w, backend)
    xp = namespace(t)
    scale = np.abs(y).max(axis=-1, keepdims=True)
    for increasing in (False, True):
        out = xp_isotonic_regression(xp, t, increasing=increasing)
        assert type(out) is type(t) and out.dtype == t.dtype and out.shape == t.shape
        assert_close(out, isotonic_regression(y, increasing=increasing), 1e-12, scale)
        out = xp_isotonic_regression(xp, t, tw, increasing=increasing)
        assert_close(out, isotonic_regression(y, w, increasing=increasing), 1e-12, scale)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cascade_and_shapes(backend):
    """The worst case for rounds (k - 1 of them), leading axes, broadcast weights, an empty
    batch, and the pools' contract (v = ref + c, ids numbering the pools from start)."""
    y = np.r_[np.zeros(99), 1.0][None].repeat(3, 0)
    t = to_backend(y, backend)
    xp = namespace(t)
    np.testing.assert_allclose(to_np(xp_isotonic_regression(xp, t)), 0.01, atol=1e-15)
    rng = np.random.default_rng(0)
    y = np.round(3 * rng.standard_normal((4, 5, 9)))
    w = rng.uniform(0.1, 10.0, size=9)
    out = xp_isotonic_regression(xp, to_backend(y, backend), to_backend(w, backend))
    assert out.shape == (4, 5, 9)
    np.testing.assert_allclose(to_np(out), isotonic_regression(y, w), atol=1e-12)
    pools = xp_pav_euclidean(xp, to_backend(y, backend))
    start, ids = to_np(pools.start), to_np(pools.ids)
    np.testing.assert_array_equal(ids, np.cumsum(start, axis=-1) - 1)
    assert start[..., 0].all()
    v = to_np(pools.ref + pools.c)
    np.testing.assert_allclose(v, isotonic_regression(y), atol=1e-12)
    # one value per pool, and adjacent pools strictly decreasing (no violation left)
    assert np.all(np.where(start[..., 1:], True, v[..., 1:] == v[..., :-1]))
    assert np.all(np.where(start[..., 1:], v[..., :-1] >= v[..., 1:], True))
    for shape in [(0, 4), (2, 0, 3), (1, 1)]:
        e = to_backend(np.ones(shape), backend)
        assert tuple(xp_isotonic_regression(xp, e).shape) == shape
        assert tuple(xp_isotonic_kl(xp, e, e).shape) == shape


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", [1, 2, 3, 10, 57])
def test_kl_matches_engine_at_any_magnitude(k, backend):
    rng = np.random.default_rng(k)
    s = inputs(rng, k)
    for w in (rng.standard_normal(s.shape), np.log(np.arange(k, 0, -1.0)), 50 * s[::-1]):
        out = xp_isotonic_kl(
            namespace(to_backend(s, backend)), to_backend(s, backend), to_backend(w, backend)
        )
        scale = np.maximum(np.abs(s).max(-1, keepdims=True), np.abs(w).max(-1, keepdims=True))
        assert_close(out, isotonic_kl(s, w), 1e-12, scale)


@pytest.mark.parametrize("backend", BACKENDS)
def test_float32(backend):
    """Computed in float32 against the engine on the same (float32-rounded) inputs."""
    rng = np.random.default_rng(3)
    y = rng.standard_normal((200, 30)) * rng.choice([0.1, 1.0, 10.0], size=(200, 1))
    y32 = y.astype(np.float32)
    t = to_backend(y32, backend, "float32")
    xp = namespace(t)
    out = xp_isotonic_regression(xp, t)
    assert out.dtype == t.dtype
    ref = isotonic_regression(y32.astype(np.float64))
    np.testing.assert_allclose(to_np(out), ref, atol=1e-5 * np.abs(y32).max())
    w = np.log(np.arange(30, 0, -1.0))
    out = xp_isotonic_kl(xp, t, to_backend(w, backend, "float32"))
    ref = isotonic_kl(y32.astype(np.float64), w.astype(np.float32).astype(np.float64))
    np.testing.assert_allclose(to_np(out), ref, atol=1e-5 * np.abs(y32).max())


def central_difference(f, x: np.ndarray, t: np.ndarray, h: float) -> np.ndarray:
    return (f(x + h * t) - f(x - h * t)) / (2 * h)


@pytest.mark.parametrize("backend", BACKENDS)
def test_pool_means_are_the_jacobians(backend):
    """Euclidean (weighted): the weighted pool mean of the tangent; KL (v_E in s): the
    mean weighted by e^{s} within each pool -- both against central differences of the
    engine at random points (no two pools at equal values: away from kinks)."""
    rng = np.random.default_rng(4)
    y = rng.standard_normal((40, 12)) * 2.0
    lam = rng.uniform(0.5, 2.0, size=y.shape)
    tan = rng.standard_normal(y.shape)
    t, tl, tt = (to_backend(a, backend) for a in (y, lam, tan))
    xp = namespace(t)
    jvp = xp_pool_mean(xp, xp_pav_euclidean(xp, t, tl), tt, weights=tl)
    fd = central_difference(lambda a: isotonic_regression(a, lam), y, tan, 1e-6)
    np.testing.assert_allclose(to_np(jvp), fd, atol=1e-7)
    w = rng.standard_normal(y.shape)
    tw = to_backend(w, backend)
    jvp = xp_pool_mean(xp, xp_pav_kl(xp, t, tw), tt, weights=xp.exp(t))
    fd = central_difference(lambda a: isotonic_kl(a, w), y, tan, 1e-6)
    np.testing.assert_allclose(to_np(jvp), fd, atol=1e-7)
    # the unweighted mean is not the weighted one: the test can tell them apart
    plain = xp_pool_mean(xp, xp_pav_kl(xp, t, tw), tt)
    assert np.abs(to_np(plain) - fd).max() > 1e-3
