"""projloss.torch.projection_loss / ProjectionLoss against the engine's
projloss.losses.ProjectionLoss, for every (set, geometry) pair: values, the gradient
u - phi (one projection, no backward through it), reductions, event_ndim, second
derivatives and forward mode; on the CPU, on both paths (the ``backend`` fixture)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_cases import (  # noqa: E402
    CASES,
    PAIR_IDS,
    PAIRS,
    sample_phi,
    sample_theta,
    shape_of,
    to_numpy,
    to_torch,
    tolerance,
)

import projloss.torch as pt  # noqa: E402
from projloss import SETS  # noqa: E402
from projloss.losses import ProjectionLoss as EngineLoss  # noqa: E402


def _batches(name, geometry, dtype, rng):
    case = CASES[name]
    large = case.large_kl if geometry == "kl" else case.large
    out = [(2, 3), (7,), (0,)]
    thetas = [sample_theta(rng, shape_of(name, b), scale=3.0) for b in out]
    if dtype == torch.float64:
        thetas.append(sample_theta(rng, shape_of(name, (5,)), scale=large))
        thetas.append(sample_theta(rng, shape_of(name, (5,)), offset=large))
    return thetas


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize(("name", "geometry"), PAIRS, ids=PAIR_IDS)
def test_value_and_gradient_equal_engine(name, geometry, dtype, device, backend):
    cset = CASES[name].make()
    engine = EngineLoss(cset, geometry)
    rng = np.random.default_rng(10)
    for theta in _batches(name, geometry, dtype, rng):
        phi = sample_phi(rng, cset, theta.shape)
        t = to_torch(theta, dtype, device).requires_grad_()
        f = to_torch(phi, dtype, device)
        values = pt.projection_loss(t, f, cset, geometry, reduction="none")
        assert values.shape == theta.shape[: theta.ndim - cset.event_ndim]
        assert (values.dtype, values.device) == (dtype, t.device)
        values.sum().backward()
        ev, eg, _ = engine.value_and_grad(to_numpy(t), to_numpy(f))
        np.testing.assert_allclose(
            to_numpy(values), ev, rtol=0, atol=tolerance(dtype, name, ev, theta, eg)
        )
        np.testing.assert_allclose(  # the gradient is u - phi
            to_numpy(t.grad), eg, rtol=0, atol=tolerance(dtype, name, eg)
        )


def _one(name, geometry, batch=(4,), seed=11, dtype=torch.float64):
    cset = CASES[name].make()
    rng = np.random.default_rng(seed)
    theta = sample_theta(rng, shape_of(name, batch), scale=2.0)
    phi = sample_phi(rng, cset, theta.shape)
    return cset, to_torch(theta, dtype, "cpu"), to_torch(phi, dtype, "cpu")


@pytest.mark.parametrize(("name", "geometry"), PAIRS, ids=PAIR_IDS)
def test_reductions_and_module(name, geometry, backend):
    cset, theta, phi = _one(name, geometry, batch=(2, 3))
    none = pt.projection_loss(theta, phi, cset, geometry, reduction="none")
    assert none.shape == (2, 3)
    torch.testing.assert_close(pt.projection_loss(theta, phi, cset, geometry), none.mean())
    torch.testing.assert_close(
        pt.projection_loss(theta, phi, cset, geometry, reduction="sum"), none.sum()
    )
    module = pt.ProjectionLoss(cset, geometry, reduction="none")
    torch.testing.assert_close(module(theta, phi), none)
    assert isinstance(module, torch.nn.Module) and f"geometry={geometry!r}" in repr(module)
    # one point (no leading axis): a 0-d value
    assert pt.projection_loss(theta[0, 0], phi[0, 0], cset, geometry).shape == ()


def test_gradient_is_u_minus_phi_and_mean_scales_it():
    """The gradient of the mean over n samples is (u - phi) / n, u the projection."""
    cset, theta, phi = _one("knapsack", "kl", batch=(6,))
    t = theta.clone().requires_grad_()
    pt.ProjectionLoss(cset, "kl")(t, phi).backward()
    u = pt.project(theta, cset, "kl")
    torch.testing.assert_close(t.grad, (u - phi) / 6, atol=1e-12, rtol=0)


def test_event_ndim_entrywise_set_on_matrices(backend):
    rng = np.random.default_rng(12)
    theta, phi = rng.standard_normal((4, 3, 3)), np.maximum(rng.standard_normal((4, 3, 3)), 0)
    for geometry in ("euclidean", "kl"):
        values = pt.projection_loss(
            torch.as_tensor(theta), torch.as_tensor(phi), "nonneg", geometry, "none", event_ndim=2
        )
        expected = EngineLoss("nonneg", geometry, event_ndim=2).value(theta, phi)
        np.testing.assert_allclose(values.numpy(), expected, rtol=1e-12, atol=1e-12)
    module = pt.ProjectionLoss("reals", event_ndim=2, reduction="none")
    assert "event_ndim=2" in repr(module)
    assert module(torch.as_tensor(theta), torch.as_tensor(phi)).shape == (4,)


@pytest.mark.parametrize(
    ("name", "geometry"),
    [("simplex", "kl"), ("simplex", "euclidean"), ("permutahedron", "kl"), ("birkhoff", "kl")],
)
def test_second_derivative_is_the_projection_jacobian(name, geometry, backend):
    """Hessian-vector products of the loss (create_graph=True): the Hessian of
    S(., phi) is J_P, by the differentiable projection."""
    cset, theta, phi = _one(name, geometry, batch=(3,))
    if name == "birkhoff":
        cset = CASES[name].make_tight()
    t = theta.clone().requires_grad_()
    v = torch.randn(theta.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    (g,) = torch.autograd.grad(
        pt.projection_loss(t, phi, cset, geometry, "sum"), t, create_graph=True
    )
    (hv,) = torch.autograd.grad(g, t, v)
    _, jv = torch.func.jvp(lambda x: pt.project(x, cset, geometry), (theta,), (v,))
    torch.testing.assert_close(hv, jv, atol=1e-8, rtol=0)
    torch.testing.assert_close(g, pt.project(theta, cset, geometry) - phi, atol=1e-8, rtol=0)


def test_forward_mode_and_func_grad(backend):
    cset, theta, phi = _one("simplex", "euclidean", batch=(5,))
    t = torch.randn(theta.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    u = pt.project(theta, cset)
    values, jv = torch.func.jvp(
        lambda x: pt.projection_loss(x, phi, cset, reduction="none"), (theta,), (t,)
    )
    torch.testing.assert_close(jv, ((u - phi) * t).sum(-1))
    grad = torch.func.grad(lambda x: pt.projection_loss(x, phi, cset, reduction="sum"))(theta)
    torch.testing.assert_close(grad, u - phi)
    batched = torch.func.vmap(lambda x, f: pt.projection_loss(x, f, cset))(theta, phi)
    torch.testing.assert_close(batched, values)
    one_target = torch.func.vmap(lambda x: pt.projection_loss(x, phi[0], cset))(theta)
    torch.testing.assert_close(
        one_target, pt.projection_loss(theta, phi[:1].expand_as(theta), cset, reduction="none")
    )


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_forward_mode_tangent_of_phi(geometry):
    """Forward mode gives phi a tangent too (zeros unless asked): its term is
    <grad Psi(phi) - theta, phi_t>, against central differences."""
    rng = np.random.default_rng(13)
    theta = torch.as_tensor(rng.standard_normal((3, 4)))
    phi = torch.as_tensor(rng.uniform(0.2, 0.8, (3, 4)))
    t = torch.as_tensor(rng.standard_normal((3, 4)))

    def f(p):
        return pt.projection_loss(theta, p, "nonneg", geometry, reduction="none")

    _, jv = torch.func.jvp(f, (phi,), (t,))
    h = 1e-6
    torch.testing.assert_close(jv, (f(phi + h * t) - f(phi - h * t)) / (2 * h), atol=1e-7, rtol=0)


def test_loss_overflow_is_refused_as_the_engine(backend):
    """The squared loss at |theta| = 1e20 overflows float32 (the engine: float64 at
    1e300): a one-line ValueError, not inf."""
    theta = torch.tensor([[1e20, -1e20]], dtype=torch.float32)
    with pytest.raises(ValueError, match=r"overflows float32 .*scale theta down or compute in"):
        pt.projection_loss(theta, torch.zeros_like(theta), "reals")
    assert torch.isfinite(
        pt.projection_loss(theta.double(), torch.zeros_like(theta.double()), "reals")
    )


def test_one_projection_per_loss_call(monkeypatch, backend):
    """Value and gradient come from one projection, and none in the backward pass (on
    the engine path the engine's kernel, on the other the set's tensor algorithm)."""
    cset = SETS["simplex"]()
    calls = []
    name = "_project_euclidean" if backend == "engine" else "xp_project"
    other = "xp_project" if backend == "engine" else "_project_euclidean"
    real = getattr(type(cset), name)

    def counting(self, theta, *args):
        calls.append(type(theta).__name__)
        return real(self, theta, *args)

    monkeypatch.setattr(type(cset), name, counting)
    monkeypatch.setattr(type(cset), other, lambda *a: pytest.fail(f"{other} called"))
    monkeypatch.setattr(type(cset), "xp_project_jvp", lambda *a: pytest.fail("backward"))
    theta = torch.randn(8, 4, dtype=torch.float64, requires_grad=True)
    phi = pt.encode(np.arange(8) % 4, cset, k=4, dtype=torch.float64)
    pt.projection_loss(theta, phi, cset).backward()
    kind = "ndarray" if backend == "engine" else "Tensor"
    assert calls == [kind]
    torch.func.grad(lambda x: pt.projection_loss(x, phi, cset))(theta.detach())
    assert calls == [kind] * 2  # torch.func.grad (create_graph) projects once too
