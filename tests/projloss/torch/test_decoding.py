"""Calibrated decoding on tensors against the engine (projloss.decoding): the scores
-Vu - b of every target loss, the decoded vertices and structures for every valid
composition of every task, decode / encode of every set."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_cases import sample_theta  # noqa: E402

import projloss.torch as pt  # noqa: E402
from projloss import SETS, decoding  # noqa: E402
from projloss.sets import Knapsack, Permutahedron  # noqa: E402
from projloss.target_losses import TARGET_LOSSES, HammingLoss, get_target_loss  # noqa: E402
from projloss.tasks import TASKS, valid_compositions  # noqa: E402


def _target_loss(name: str, k: int):
    if name == "loss_matrix":
        return get_target_loss(name, matrix=np.random.default_rng(0).uniform(0, 1, (k + 1, k)))
    return get_target_loss(name)


@pytest.mark.parametrize("name", sorted(TARGET_LOSSES))
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
def test_scores_equal_engine(name, dtype, device):
    k = 4
    loss = _target_loss(name, k)
    shape = (2, 3, k, k) if loss.event_ndim == 2 else (2, 3, k)
    u = torch.as_tensor(np.random.default_rng(1).uniform(0, 1, shape), dtype=dtype, device=device)
    got = pt.scores(u, loss)
    assert (got.dtype, got.device) == (dtype, u.device)
    expected = loss.scores(u.cpu().double().numpy())
    np.testing.assert_allclose(
        got.cpu().double().numpy(), expected, rtol=0, atol=1e-15 if dtype == torch.float64 else 1e-6
    )


def test_scores_of_a_loss_outside_the_registry_go_through_the_host():
    class Shifted(HammingLoss):
        def b(self, u):
            return 0.25

    u = torch.rand(3, 4, dtype=torch.float64)
    np.testing.assert_array_equal(pt.scores(u, Shifted()).numpy(), Shifted().scores(u.numpy()))


def _compositions():
    out = []
    for task in TASKS:
        for proj, g, dec, tl in valid_compositions(task):
            out.append(pytest.param(task, proj, g, dec, tl, id=f"{task}-{proj}-{g}-{dec}-{tl}"))
    return out


def _shape(task: str, dec: str) -> tuple[int, ...]:
    if SETS[dec].matrix:
        return (6, 3, 3)
    return {"label_ranking": (6, 4), "ordinal": (6, 4), "multilabel": (6, 5)}.get(task, (6, 4))


@pytest.mark.parametrize(("task", "proj", "geometry", "dec", "tl"), _compositions())
def test_calibrated_decoding_equals_engine(task, proj, geometry, dec, tl):
    pset, dset = SETS[proj](), SETS[dec]()
    shape = _shape(task, dec)
    rng = np.random.default_rng(2)
    theta = sample_theta(rng, shape, scale=2.0, ties=False)
    loss = _target_loss(tl, shape[-1])
    t = torch.as_tensor(theta)
    # the whole pipeline against the engine's
    got = pt.decode_scores(t, pset, geometry, loss, dset)
    expected = decoding.decode_scores(theta, pset, geometry, loss, dset)
    np.testing.assert_array_equal(got.numpy(), expected)
    # the same u in both: vertices and structures (ties in u included)
    u = pt.project(t, pset, geometry)
    u = torch.where(u.abs() < 1e-3, torch.zeros_like(u), u)  # exact ties in u
    un = u.numpy()
    np.testing.assert_array_equal(
        pt.calibrated_vertices(u, loss, dset).numpy(),
        decoding.calibrated_vertices(un, loss, dset),
    )
    np.testing.assert_array_equal(
        pt.calibrated_decode(u, loss, dset).numpy(), decoding.calibrated_decode(un, loss, dset)
    )


def test_every_task_decodes():
    assert {c.values[0] for c in _compositions()} == set(TASKS)


@pytest.mark.parametrize(
    ("cset", "k"),
    [(SETS[n](), 3) for n in sorted(SETS) if n not in ("reals", "nonneg")]
    + [(Knapsack(1, 2), 4), (Permutahedron([0.3, 2.5, 0.3, 4.0]), 4)],
    ids=repr,
)
def test_decode_vertices_equals_engine(cset, k, device):
    verts = cset.vertices(k)
    got = pt.decode(torch.as_tensor(verts, device=device), cset)
    expected = cset.decode(verts)
    assert (got.dtype, got.device.type) == (torch.int64, device.type)
    np.testing.assert_array_equal(got.cpu().numpy(), expected)


@pytest.mark.parametrize("name", ["reals", "nonneg"])
def test_decode_unbounded_is_identity(name):
    v = torch.rand(2, 3, dtype=torch.float64)
    np.testing.assert_array_equal(pt.decode(v, name).numpy(), SETS[name]().decode(v.numpy()))


def test_decode_outside_the_registry_goes_through_the_host():
    class Reversed(Permutahedron):
        def decode(self, v):
            return super().decode(v)[..., ::-1].copy()

    v = torch.tensor([[2.0, 1.0, 4.0, 3.0]])
    np.testing.assert_array_equal(pt.decode(v, Reversed()).numpy(), [[1, 0, 3, 2]])


def test_encode_equals_engine():
    y = np.array([[1, 0, 2], [2, 1, 0]])
    for name in ("birkhoff", "permutahedron", "row_simplex"):
        phi = pt.encode(torch.as_tensor(y), name, dtype=torch.float64)
        np.testing.assert_array_equal(phi.numpy(), SETS[name]().encode(y))
    phi = pt.encode([3, 1], "order_simplex", k=4)
    assert phi.dtype == torch.get_default_dtype()
    np.testing.assert_array_equal(phi.numpy(), [[1, 1, 0], [0, 0, 0]])
    assert pt.encode(torch.tensor([0.0, 1.0], dtype=torch.float64), "unit_cube").dtype == (
        torch.float64
    )
    with pytest.raises(ValueError, match="permutation"):
        pt.encode([[0, 0, 1]], "birkhoff")
