"""One-line errors of projloss.torch, naming the remedy: not a tensor, dtypes, devices,
shapes (the set's checks), non-finite theta, unknown set / geometry / reduction (the
engine's messages), phi requiring grad."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import projloss.torch as pt  # noqa: E402
from projloss import get_set  # noqa: E402
from projloss.losses import ProjectionLoss as EngineLoss  # noqa: E402


def _engine_message(fn, *args) -> str:
    with pytest.raises(ValueError) as info:
        fn(*args)
    return str(info.value)


def _assert_one_line(info: pytest.ExceptionInfo) -> None:
    assert "\n" not in str(info.value)


THETA = torch.tensor([[0.5, 1.2, -1.0]], dtype=torch.float64)
PHI = torch.tensor([[0.0, 1.0, 0.0]], dtype=torch.float64)


@pytest.mark.parametrize(
    "call",
    [
        lambda x: pt.project(x, "simplex"),
        lambda x: pt.argmax(x, "simplex"),
        lambda x: pt.projection_loss(x, PHI, "simplex"),
    ],
    ids=["project", "argmax", "loss"],
)
def test_theta_type_and_dtype(call):
    with pytest.raises(TypeError, match=r"theta must be a torch.Tensor, got ndarray: convert"):
        call(np.zeros((1, 3)))
    for dtype in (torch.int64, torch.float16, torch.bfloat16, torch.bool):
        with pytest.raises(TypeError, match=r"theta must be float32 or float64, got torch\.") as e:
            call(torch.zeros((1, 3), dtype=dtype))
        _assert_one_line(e)


def test_phi_device_dtype_shape_and_grad():
    with pytest.raises(
        ValueError,
        match=r"^theta is on cpu but phi on meta: move both to one "
        r"device$",
    ):
        pt.projection_loss(THETA, PHI.to("meta"), "simplex")
    with pytest.raises(
        ValueError,
        match=r"^theta is torch.float64 but phi torch.float32: cast "
        r"both to one dtype$",
    ):
        pt.projection_loss(THETA, PHI.float(), "simplex")
    with pytest.raises(ValueError, match=r"same shape, got \(1, 3\) and \(3,\)"):
        pt.projection_loss(THETA, PHI[0], "simplex")
    with pytest.raises(TypeError, match="phi must be a torch.Tensor"):
        pt.projection_loss(THETA, [[0.0, 1.0, 0.0]], "simplex")
    with pytest.raises(ValueError, match=r"phi requires grad.*pass phi\.detach\(\)"):
        pt.projection_loss(THETA, PHI.clone().requires_grad_(), "simplex")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_mixed_cuda_and_cpu():
    with pytest.raises(ValueError, match=r"theta is on cuda:0 but phi on cpu: move both"):
        pt.projection_loss(THETA.cuda(), PHI, "simplex")


@pytest.mark.parametrize(
    ("set_name", "shape"),
    [("birkhoff", (2, 3, 4)), ("birkhoff", (3,)), ("simplex", ()), ("order_simplex", (2, 0))],
)
def test_shape_errors_are_the_sets(set_name, shape):
    theta = torch.zeros(shape, dtype=torch.float64)
    cset = get_set(set_name)
    expected = _engine_message(cset._xp_check, theta)
    for call in (pt.project, pt.argmax):
        with pytest.raises(ValueError, match=re.escape(expected)):
            call(theta, set_name)


def test_parameter_size_errors():
    from projloss.sets import Knapsack, Permutahedron

    with pytest.raises(ValueError, match="upper bound u = 3 exceeds the size k = 2"):
        pt.project(torch.zeros(4, 2), Knapsack(upper=3))
    with pytest.raises(ValueError, match="w has length 3 but the input has size k = 4"):
        pt.projection_loss(torch.zeros(1, 4), torch.zeros(1, 4), Permutahedron([3, 2, 1]))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize(
    "call",
    [
        lambda x: pt.project(x, "birkhoff"),
        lambda x: pt.argmax(x, "simplex"),
        lambda x: pt.projection_loss(x, torch.zeros_like(x), "unit_cube"),
    ],
    ids=["project", "argmax", "loss"],
)
def test_non_finite_theta(call, bad):
    theta = torch.zeros(2, 3, 3, dtype=torch.float64)
    theta[1, 2, 0] = bad
    kind = "NaN" if bad != bad else "infinite"
    with pytest.raises(
        ValueError,
        match=rf"^theta contains {kind} values; projections need "
        r"finite input \(check the model's outputs",
    ) as e:
        call(theta)
    _assert_one_line(e)


def test_unknown_set_geometry_reduction():
    msg = _engine_message(get_set, "simplx")
    for call in (
        lambda: pt.project(THETA, "simplx"),
        lambda: pt.argmax(THETA, "simplx"),
        lambda: pt.ProjectionLoss("simplx"),
        lambda: pt.calibrated_decode(THETA, "zero_one", "simplx"),
    ):
        with pytest.raises(ValueError, match=re.escape(msg)):
            call()
    msg = _engine_message(EngineLoss, "simplex", "l2")
    with pytest.raises(ValueError, match=re.escape(msg)):
        pt.project(THETA, "simplex", "l2")
    msg = _engine_message(EngineLoss, "reals", "kl")
    with pytest.raises(ValueError, match=re.escape(msg)):
        pt.ProjectionLoss("reals", "kl")
    with pytest.raises(ValueError, match=r"^unknown reduction 'avg'; valid reductions are "):
        pt.ProjectionLoss("simplex", reduction="avg")
    with pytest.raises(ValueError, match="set must be a set name .* got int"):
        pt.project(THETA, 3)
    with pytest.raises(ValueError, match="event_ndim must be an integer >= 1, got 0"):
        pt.ProjectionLoss("reals", event_ndim=0)
