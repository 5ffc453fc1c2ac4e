r"""The encodings on tensors: :math:`\varphi(y)` (the targets of the loss) and
:math:`\varphi^{-1}` on vertices (the structures a decoding returns).

:func:`decode` runs on the tensor's device for every set with an array-API decoding (the
set's own :meth:`~projloss.sets.base.ConvexSet.xp_decode`, beside its NumPy ``decode``:
an argmax, a stable sort, a count or a cast, without validation: its input is a vertex
from :func:`~projloss.torch.argmax`); :func:`encode` validates the structures with the set's
own :meth:`~projloss.sets.base.ConvexSet.encode` on the host (it runs once per dataset,
not per step).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..sets import ConvexSet
from ._validation import check_tensor, resolve_set


def decode(v: torch.Tensor, set: str | ConvexSet) -> torch.Tensor:
    r"""The structures :math:`\varphi^{-1}(v)` of vertices ``v``, as the set's
    :meth:`~projloss.sets.base.ConvexSet.decode` (batched, on ``v``'s device).

    Classes (int64) for the simplex and the order simplex (``1..k``), rankings
    ``y[..., rank] = label`` (int64) for the Birkhoff polytope and the permutahedron,
    column indices per row for the row-stochastic matrices, 0/1 int64 indicators for the
    cubes and the knapsack, ``v`` itself for :math:`\mathbb{R}^p` and
    :math:`\mathbb{R}^p_+`. A set without an array-API decoding (or a subclass that
    redefines ``decode`` alone) decodes on the host.

    Parameters
    ----------
    v : torch.Tensor of shape (..., p) or (..., k, k)
        Vertices of the set (e.g. from :func:`~projloss.torch.argmax`), float32 or
        float64; not validated on the device path.
    set : str or ConvexSet
        The set whose encoding to invert.

    Returns
    -------
    torch.Tensor
        The structures (int64 for every set but :math:`\mathbb{R}^p` and
        :math:`\mathbb{R}^p_+`), on ``v``'s device.

    Raises
    ------
    TypeError
        ``v`` is not a float32/float64 tensor.
    ValueError
        Unknown set, or (decoding on the host) ``v`` is not a vertex the set's
        :meth:`~projloss.sets.base.ConvexSet.decode` accepts.

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
    try:  # the set's own array-API decoding (ConvexSet.xp_decode), on the device
        return cset.xp_decode(v.detach())
    except NotImplementedError:
        pass
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
    device : torch.device or str, optional
        Default: ``y``'s device when it is a tensor, else the CPU.

    Returns
    -------
    torch.Tensor of shape (..., ``*event_shape``)
        :math:`\varphi(y)`, in ``dtype`` on ``device``.

    Raises
    ------
    ValueError
        Unknown set, or structures the set's
        :meth:`~projloss.sets.base.ConvexSet.encode` refuses (wrong shape or values, a
        missing ``k``).

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
