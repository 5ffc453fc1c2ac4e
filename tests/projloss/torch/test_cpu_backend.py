"""The CPU fast path of projloss.torch (set_cpu_backend): CPU tensors are projected by
the NumPy/numba engine (float32 computed in float64 and cast back), everything else by
the sets' tensor algorithms; the setting, which path runs, the errors (the same on both
paths), no aliasing of the zero-copy input, strided inputs."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import projloss.torch as pt  # noqa: E402
from projloss.losses import ProjectionLoss as EngineLoss  # noqa: E402
from projloss.sets import Knapsack, Permutahedron, Reals, Simplex, UnitCube  # noqa: E402
from projloss.torch import _autograd  # noqa: E402


def test_setting_default_set_get_and_context():
    assert pt.get_cpu_backend() == "engine"
    assert pt.set_cpu_backend("array_api") == "engine"
    try:
        assert pt.get_cpu_backend() == "array_api"
    finally:
        assert pt.set_cpu_backend("engine") == "array_api"
    with pytest.raises(RuntimeError), pt.cpu_backend("array_api"):
        assert pt.get_cpu_backend() == "array_api"
        raise RuntimeError
    assert pt.get_cpu_backend() == "engine"  # restored after an exception too
    with pytest.raises(ValueError, match=r"unknown CPU backend 'gpu'; valid backends are"):
        pt.set_cpu_backend("gpu")
    assert pt.get_cpu_backend() == "engine"


@pytest.mark.parametrize(
    ("cset", "geometry"),
    [
        (Permutahedron(), "euclidean"),
        (Permutahedron(), "kl"),
        (Knapsack(1, 3), "kl"),
        (Simplex(), "euclidean"),
    ],
    ids=repr,
)
def test_float32_is_the_engines_float64_rounded(cset, geometry):
    """On the engine path a float32 theta is projected in float64: the result is the
    engine's float64 projection rounded to float32, bit for bit (a float32 computation,
    the tensor algorithms', is not)."""
    theta32 = torch.randn(200, 7, generator=torch.Generator().manual_seed(0)) * 3
    expected = torch.from_numpy(cset.project(theta32.double().numpy(), geometry)).float()
    got = pt.project(theta32, cset, geometry)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, expected, atol=0, rtol=0)
    with pt.cpu_backend("array_api"):
        tensor = pt.project(theta32, cset, geometry)
    torch.testing.assert_close(tensor, expected, atol=1e-4, rtol=0)  # float32 accuracy
    assert not torch.equal(tensor, expected)


def _fail(name):
    def f(*args, **kwargs):
        pytest.fail(f"{name} called")

    return f


@pytest.mark.parametrize("backend", ["engine", "array_api"])
def test_each_path_runs_its_own_code(monkeypatch, backend):
    """The engine path never calls the tensor algorithms' forward, and the other path
    never the engine's kernels (both backward passes are the tensor JVP)."""
    cset = Knapsack(1, 3)
    cls = type(cset)
    if backend == "engine":
        for name in ("xp_project", "xp_argmax"):
            monkeypatch.setattr(cls, name, _fail(name))
    else:
        for name in ("_project_euclidean", "_project_kl", "_argmax"):
            monkeypatch.setattr(cls, name, _fail(name))
    theta = torch.randn(6, 5, dtype=torch.float64, requires_grad=True)
    with pt.cpu_backend(backend):
        phi = pt.argmax(torch.randn(6, 5, dtype=torch.float64), cset)
        for geometry in ("euclidean", "kl"):
            pt.project(theta, cset, geometry).sum().backward()
            pt.projection_loss(theta, phi, cset, geometry).backward()


@pytest.mark.parametrize(
    ("cset", "geometry"),
    [
        (UnitCube(), "euclidean"),  # the engine checks in the projection's pass (fused)
        (UnitCube(), "kl"),
        (Simplex(), "kl"),
        (Simplex(), "euclidean"),  # a separate check
        (Permutahedron(), "kl"),
    ],
    ids=repr,
)
@pytest.mark.parametrize("bad", [float("nan"), float("inf")], ids=["nan", "inf"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
def test_non_finite_theta_same_error_on_both_paths(cset, geometry, bad, dtype, backend):
    theta = torch.zeros(3, 4, dtype=dtype)
    theta[1, 2] = bad
    word = "NaN" if bad != bad else "infinite"
    msg = re.escape(f"theta contains {word} values; projections need finite input (check")
    phi = torch.zeros_like(theta)
    with pytest.raises(ValueError, match=msg):
        pt.project(theta, cset, geometry)
    with pytest.raises(ValueError, match=msg):
        pt.projection_loss(theta, phi, cset, geometry)
    with pytest.raises(ValueError, match=msg):
        pt.argmax(theta, cset)


def test_output_never_aliases_the_zero_copy_input(backend):
    """The engine reads a float64 theta in place: its output is a new tensor, even where
    the projection is the identity (R^p)."""
    theta = torch.randn(4, 3, dtype=torch.float64)
    keep = theta.clone()
    for cset, geometry in ((Reals(), "euclidean"), (UnitCube(), "euclidean")):
        u = pt.project(theta, cset, geometry)
        assert u.data_ptr() != theta.data_ptr()
        u.add_(1.0)
        torch.testing.assert_close(theta, keep, atol=0, rtol=0)
        assert u.is_contiguous() or u.stride() == theta.stride()


def test_strided_and_inference_inputs(backend):
    """A transposed view, a slice and an inference-mode tensor: as the engine on a copy."""
    base = torch.randn(6, 5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    cset = Permutahedron()
    for theta in (base.transpose(0, 2), base[:, ::2, :], base[..., 1:]):
        expected = cset.project(theta.contiguous().numpy(), "kl")
        np.testing.assert_allclose(pt.project(theta, cset, "kl").numpy(), expected, atol=1e-12)
        loss = EngineLoss(cset, "kl").value(theta.contiguous().numpy(), cset.argmax(expected))
        got = pt.projection_loss(
            theta, pt.argmax(theta.contiguous(), cset), cset, "kl", reduction="none"
        )
        np.testing.assert_allclose(got.numpy(), loss, atol=1e-10)
    with torch.inference_mode():
        theta = base.clone()
        u = pt.project(theta, cset, "kl")
    np.testing.assert_allclose(u.numpy(), cset.project(base.numpy(), "kl"), atol=1e-12)


def test_route_predicate():
    """The engine takes plain strided CPU tensors only: not a torch.func wrapper (whose
    data the host cannot read), not a sparse tensor, not with the array-API backend."""
    x = torch.randn(3, 4, dtype=torch.float64)
    assert _autograd.on_engine(x)
    assert not _autograd.on_engine(x, x.to_sparse())
    with pt.cpu_backend("array_api"):
        assert not _autograd.on_engine(x)
    seen = []

    def f(t):
        seen.append(_autograd.on_engine(t))
        return t.sum()

    torch.func.grad(f)(x)
    assert seen == [False]
    assert not _autograd.on_engine(torch.empty(3, device="meta"))


def test_derivatives_without_requires_grad(backend):
    """A projection without a graph to record skips the autograd Function; a dual tensor
    (forward mode) that does not require grad still gets its tangent."""
    import torch.autograd.forward_ad as fwAD

    cset = Simplex()
    theta = torch.randn(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    tangent = torch.randn(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    with fwAD.dual_level():
        jvp = fwAD.unpack_dual(pt.project(fwAD.make_dual(theta, tangent), cset)).tangent
    u = pt.project(theta, cset)
    assert u.grad_fn is None and not u.requires_grad
    torch.testing.assert_close(jvp, cset.xp_project_jvp(theta, u, tangent), atol=0, rtol=0)
    with torch.no_grad():
        assert pt.project(theta.clone().requires_grad_(), cset).grad_fn is None
    assert pt.project(theta.clone().requires_grad_(), cset).grad_fn is not None
