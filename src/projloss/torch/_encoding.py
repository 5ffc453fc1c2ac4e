r"""The encodings on tensors: :math:`\varphi(y)` (the targets of the loss) and
:math:`\varphi^{-1}` on vertices (the structures a decoding returns).

:func:`decode` runs on the tensor's device for every set of the registry (an argmax, a
stable sort, a count or a cast, without validation: its input is a vertex from
:func:`~projloss.torch.argmax`); :func:`encode` validates the structures with the set's
own :meth:`~projloss.sets.base.ConvexSet.encode` on the host (it runs once per dataset,
not per step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ..sets import (
    Birkhoff,
    ConvexSet,
    Knapsack,
    MatrixCube,
    NonNegative,
    OrderSimplex,
    Permutahedron,
    Reals,
    RowSimplex,
    Simplex,
    UnitCube,
)
from ._validation import check_tensor, resolve_set


def _row_argmax(v: torch.Tensor) -> torch.Tensor:
    return torch.argmax(v, dim=-1)


def _ranking(v: torch.Tensor) -> torch.Tensor:
    return torch.argsort(-v, dim=-1, stable=True)


def _count(v: torch.Tensor) -> torch.Tensor:
    return 1 + torch.sum(v, dim=-1).to(torch.int64)


def _indicator(v: torch.Tensor) -> torch.Tensor:
    return v.to(torch.int64)


def _identity(v: torch.Tensor) -> torch.Tensor:
    return v


#: ``set.decode`` on tensors, per set class (exact classes: a subclass may decode
#: otherwise and goes through the host). Bound to the engine by the tests.
DECODERS: dict[type[ConvexSet], Callable[[torch.Tensor], torch.Tensor]] = {
    Simplex: _row_argmax,  # one-hot -> class in 0..k-1
    RowSimplex: _row_argmax,  # row one-hot -> column per row
    Birkhoff: _row_argmax,  # permutation matrix [rank, label] -> ranking y[rank] = label
    Permutahedron: _ranking,  # permuted w -> ranking (descending, ties: first index)
    OrderSimplex: _count,  # ones then zeros -> class 1 + #ones
    UnitCube: _indicator,  # 0/1 -> int64
    MatrixCube: _indicator,
    Knapsack: _indicator,
    Reals: _identity,
    NonNegative: _identity,
}


def decode(v: torch.Tensor, set: str | ConvexSet) -> torch.Tensor:
    r"""The structures :math:`\varphi^{-1}(v)` of vertices ``v``, as the set's
    :meth:`~projloss.sets.base.ConvexSet.decode` (batched, on ``v``'s device).

    Classes (int64) for the simplex and the order simplex (``1..k``), rankings
    ``y[..., rank] = label`` (int64) for the Birkhoff polytope and the permutahedron,
    column indices per row for the row-stochastic matrices, 0/1 int64 indicators for the
    cubes and the knapsack, ``v`` itself for :math:`\mathbb{R}^p` and
    :math:`\mathbb{R}^p_+`. A set outside the registry decodes on the host.

    Examples
    --------
    >>> import torch
    >>> print(decode(torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]), "simplex"))
    tensor([1, 0])
    >>> print(decode(torch.tensor([2.0, 1.0, 4.0, 3.0]), "permutahedron"))
    tensor([2, 3, 0, 1])
    """
    cset = resolve_set(set)
    check_tensor(v, "v")
    fn = DECODERS.get(type(cset))
    if fn is not None:
        return fn(v.detach())
    out = np.asarray(cset.decode(v.detach().cpu().numpy()))
    return torch.as_tensor(out, device=v.device)


def encode(
    y: Any,
    set: str | ConvexSet,
    k: int | None = None,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    r"""The encoded targets :math:`\varphi(y)`, the ``phi`` of the projection loss: the
    set's :meth:`~projloss.sets.base.ConvexSet.encode` (validated on the host), as a
    tensor.

    Parameters
    ----------
    y : array-like or torch.Tensor
        Structures in the set's form (classes, rankings ``y[..., rank] = label``, 0/1
        indicators, ...).
    set : str or ConvexSet
        The set whose encoding to use (the marginal polytope, e.g. ``"birkhoff"`` for
        rankings as permutation matrices, ``"permutahedron"`` for permuted weights).
    k : int, optional
        The size, where the set needs it (the simplex's number of classes, the order
        simplex's number of classes).
    dtype : torch.dtype, optional
        Default: ``y``'s dtype when it is a float32/float64 tensor, else
        :func:`torch.get_default_dtype`.
    device : optional
        Default: ``y``'s device when it is a tensor, else the CPU.

    Examples
    --------
    >>> import torch
    >>> print(encode(torch.tensor([1, 0, 2]), "birkhoff", dtype=torch.float64))
    tensor([[0., 1., 0.],
            [1., 0., 0.],
            [0., 0., 1.]], dtype=torch.float64)
    >>> print(encode([[1, 0, 2]], "permutahedron"))  # label y[r] gets w[r] = (3, 2, 1)[r]
    tensor([[2., 3., 1.]])
    """
    cset = resolve_set(set)
    if isinstance(y, torch.Tensor):
        if dtype is None and y.dtype in (torch.float32, torch.float64):
            dtype = y.dtype
        if device is None:
            device = y.device
        y = y.detach().cpu().numpy()
    phi = cset.encode(y, k)
    return torch.as_tensor(np.asarray(phi), dtype=dtype or torch.get_default_dtype(), device=device)
