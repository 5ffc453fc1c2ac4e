"""Input checks of :mod:`projloss.torch`: one-line errors that name the remedy.

Type and dtype problems raise ``TypeError``; values, shapes, devices and mismatched dtypes
raise ``ValueError`` (as the engine's checks do). The only check that reads the data,
:func:`check_finite`, is one reduction and one device-to-host synchronization.
"""

from __future__ import annotations

from typing import Any

import torch

from ..sets import ConvexSet, get_set

#: The floating dtypes the oracles compute in.
DTYPES = (torch.float32, torch.float64)


def resolve_set(cset: str | ConvexSet, name: str = "set") -> ConvexSet:
    """A :class:`~projloss.sets.base.ConvexSet` from a registry name or an instance (the
    engine's message for an unknown name)."""
    if isinstance(cset, ConvexSet):
        return cset
    if isinstance(cset, str):
        return get_set(cset)
    raise ValueError(
        f"{name} must be a set name (see projloss.SETS) or a ConvexSet, got {type(cset).__name__}"
    )


def check_tensor(x: Any, name: str = "theta") -> torch.Tensor:
    """``x`` must be a float32 or float64 :class:`torch.Tensor`."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor, got {type(x).__name__}: convert it with "
            f"torch.as_tensor({name})"
        )
    if x.dtype not in DTYPES:
        raise TypeError(
            f"{name} must be float32 or float64, got {x.dtype}: cast it, e.g. {name}.float()"
        )
    return x


def check_theta(theta: Any, cset: ConvexSet, name: str = "theta") -> torch.Tensor:
    """Type, dtype and shape of ``theta`` for the set (shape: the set's ``_xp_check``)."""
    check_tensor(theta, name)
    cset._xp_check(theta, name)
    return theta


def check_like(theta: torch.Tensor, other: Any, name: str = "phi") -> torch.Tensor:
    """``other`` must be a tensor on ``theta``'s device, in its dtype and of its shape."""
    check_tensor(other, name)
    if other.device != theta.device:
        raise ValueError(
            f"theta is on {theta.device} but {name} on {other.device}: move both to one device"
        )
    if other.dtype != theta.dtype:
        raise ValueError(f"theta is {theta.dtype} but {name} {other.dtype}: cast both to one dtype")
    if other.shape != theta.shape:
        raise ValueError(
            f"theta and {name} must have the same shape, got {tuple(theta.shape)} and "
            f"{tuple(other.shape)}"
        )
    return other


def check_finite(theta: torch.Tensor, name: str = "theta") -> None:
    """Refuse NaN or infinite entries (one reduction, one synchronization; the error path
    takes a second to tell NaN from infinity)."""
    if not bool(torch.isfinite(theta).all()):
        bad = "NaN" if bool(torch.isnan(theta).any()) else "infinite"
        raise ValueError(
            f"{name} contains {bad} values; projections need finite input (check the "
            "model's outputs: e.g. lower the learning rate or clip the gradients)"
        )


def check_finite_loss(values: torch.Tensor, theta: torch.Tensor) -> None:
    """Refuse a loss value that overflowed its dtype (as the engine does for float64)."""
    if not bool(torch.isfinite(values).all()):
        top = float(theta.abs().max())
        dtype = str(theta.dtype).removeprefix("torch.")
        raise ValueError(
            f"the projection loss overflows {dtype} at this theta (max |theta| = {top:.3g}): "
            "its value is not representable; scale theta down"
            + (" or compute in float64" if theta.dtype == torch.float32 else "")
        )


REDUCTIONS = ("mean", "sum", "none")


def check_reduction(reduction: str) -> str:
    """``reduction`` must be one of ``"mean"``, ``"sum"``, ``"none"`` (as torch's losses)."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"unknown reduction {reduction!r}; valid reductions are {REDUCTIONS}")
    return reduction
