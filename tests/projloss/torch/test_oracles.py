"""projloss.torch.project / argmax against the NumPy engine, for every (set, geometry)
pair: random batches with ties, large |theta|, leading batch axes, an empty batch,
float64 and float32, the device and dtype kept; gradcheck of the projection (backward and
forward mode), its symmetric Jacobian, and torch.func. On the CPU each runs on both paths
(the ``backend`` fixture: the engine, the sets' tensor algorithms)."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_cases import (  # noqa: E402
    CASES,
    PAIR_IDS,
    PAIRS,
    sample_theta,
    shape_of,
    to_numpy,
    to_torch,
    tolerance,
)

import projloss.torch as pt  # noqa: E402
from projloss import SETS  # noqa: E402
from projloss.sets import Birkhoff, Knapsack, Permutahedron  # noqa: E402

DTYPES = [torch.float64, torch.float32]


def test_every_set_has_a_case():
    assert set(CASES) == set(SETS)
    assert len(PAIRS) == 19


def _inputs(name: str, geometry: str, dtype: torch.dtype, rng: np.random.Generator):
    """Batches of theta: ties, leading axes (2, 3), an empty batch, one point without
    leading axes; in float64 also large |theta| (a large spread, a large offset)."""
    case = CASES[name]
    out = [
        sample_theta(rng, shape_of(name, (2, 3))),
        sample_theta(rng, shape_of(name, (7,)), scale=4.0),
        sample_theta(rng, shape_of(name, (0,))),
        sample_theta(rng, shape_of(name, ()), ties=False),
    ]
    if dtype == torch.float64:
        large = case.large_kl if geometry == "kl" else case.large
        out.append(sample_theta(rng, shape_of(name, (6,)), scale=large))
        out.append(sample_theta(rng, shape_of(name, (6,)), offset=large))
        out.append(sample_theta(rng, shape_of(name, (6,)), scale=1e3 if large > 1e3 else 10.0))
    return out


@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize(("name", "geometry"), PAIRS, ids=PAIR_IDS)
def test_project_equals_engine(name, geometry, dtype, device, backend):
    cset = CASES[name].make()
    rng = np.random.default_rng(0)
    for theta in _inputs(name, geometry, dtype, rng):
        t = to_torch(theta, dtype, device)
        u = pt.project(t, cset, geometry)
        assert (u.shape, u.dtype, u.device) == (t.shape, dtype, t.device)
        expected = cset.project(to_numpy(t), geometry)  # the engine, on the same values
        got = to_numpy(u)
        np.testing.assert_allclose(got, expected, rtol=0, atol=tolerance(dtype, name, expected))


@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("name", sorted(SETS))
def test_argmax_equals_engine(name, dtype, device, backend):
    cset = CASES[name].make()
    rng = np.random.default_rng(1)
    for theta in _inputs(name, "euclidean", dtype, rng):
        t = to_torch(theta, dtype, device).requires_grad_()
        try:
            expected = cset.argmax(to_numpy(t))
        except ValueError as exc:  # R^p, R^p_+: no maximizer, the same error
            with pytest.raises(ValueError, match=re.escape(str(exc))):
                pt.argmax(t, cset)
            return
        v = pt.argmax(t, cset)
        assert (v.shape, v.dtype, v.device) == (t.shape, dtype, t.device)
        assert not v.requires_grad
        np.testing.assert_array_equal(to_numpy(v), expected)  # same vertex, same ties


@pytest.mark.parametrize(
    ("cset", "k"),
    [
        (Knapsack(upper=3), 5),
        (Knapsack(2, 2), 4),
        (Knapsack(0, 2), 5),
        (Permutahedron(w=[0.3, 2.5, 0.3, 4.0]), 4),  # unsorted, with ties
        (Birkhoff(tol=1e-12), 4),
    ],
    ids=repr,
)
@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_set_instances_with_parameters(cset, k, geometry, device, backend):
    shape = (5, k, k) if cset.matrix else (5, k)
    theta = sample_theta(np.random.default_rng(2), shape, scale=2.0)
    t = to_torch(theta, torch.float64, device)
    tol = 1e-6 if cset.matrix else 1e-9
    expected = cset.project(theta, geometry)
    np.testing.assert_allclose(to_numpy(pt.project(t, cset, geometry)), expected, atol=tol * 5)
    np.testing.assert_array_equal(to_numpy(pt.argmax(t, cset)), cset.argmax(theta))


@pytest.mark.parametrize(("name", "geometry"), PAIRS, ids=PAIR_IDS)
def test_set_by_name_is_the_default_instance(name, geometry):
    cset = type(CASES[name].make())()
    t = to_torch(sample_theta(np.random.default_rng(3), shape_of(name, (3,))), torch.float64, "cpu")
    torch.testing.assert_close(pt.project(t, name, geometry), pt.project(t, cset, geometry))


@pytest.mark.parametrize(("name", "geometry"), PAIRS, ids=PAIR_IDS)
def test_gradcheck(name, geometry, device, backend):
    """Backward (VJP) and forward mode (JVP) against finite differences, float64, at
    points away from kinks (no ties; Birkhoff solved to 1e-12)."""
    case = CASES[name]
    cset = (case.make_tight or case.make)()
    theta = sample_theta(np.random.default_rng(4), shape_of(name, (2,)), ties=False)
    t = to_torch(theta, torch.float64, device).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda x: pt.project(x, cset, geometry), (t,), check_forward_ad=True
    )


@pytest.mark.parametrize(("name", "geometry"), PAIRS, ids=PAIR_IDS)
def test_jacobian_is_symmetric_and_func_transforms(name, geometry, backend):
    """The Jacobian of a Bregman projection is the Hessian of Omega*: symmetric. Reverse
    mode (jacrev), forward mode (jacfwd) and vmap agree."""
    case = CASES[name]
    cset = (case.make_tight or case.make)()
    rng = np.random.default_rng(5)
    theta = to_torch(sample_theta(rng, shape_of(name, ()), ties=False), torch.float64, "cpu")

    def f(x):
        return pt.project(x, cset, geometry)

    p = theta.numel()
    jr = torch.func.jacrev(f)(theta).reshape(p, p)
    jf = torch.func.jacfwd(f)(theta).reshape(p, p)
    tol = case.tol64 * 10
    torch.testing.assert_close(jr, jr.T, atol=tol, rtol=0)
    torch.testing.assert_close(jf, jr, atol=tol, rtol=0)
    batch = to_torch(sample_theta(rng, shape_of(name, (4,))), torch.float64, "cpu")
    torch.testing.assert_close(torch.func.vmap(f)(batch), f(batch), atol=tol, rtol=0)
    assert torch.func.vmap(f, in_dims=1, out_dims=1)(batch.movedim(0, 1)).shape == (
        batch.movedim(0, 1).shape
    )
