r"""The oracles on tensors: the differentiable projection and the MAP oracle."""

from __future__ import annotations

import torch
import torch.autograd.forward_ad as fwAD

from ..sets import ConvexSet
from ._autograd import ProjectFunction, engine_argmax, on_engine
from ._validation import check_finite, check_theta, resolve_set


def project(theta: torch.Tensor, set: str | ConvexSet, geometry: str = "euclidean") -> torch.Tensor:
    r"""The Bregman projection :math:`P_C^\Psi(\theta)`, differentiable.

    Parameters
    ----------
    theta : torch.Tensor of shape (..., p) or (..., k, k)
        Scores, float32 or float64, on any device; batched over every leading axis.
    set : str or ConvexSet
        The set :math:`C`: a registry name (:data:`projloss.SETS`, default parameters) or
        an instance, e.g. ``Knapsack(upper=3)`` or ``Permutahedron(w=...)``.
    geometry : {"euclidean", "kl"}
        Euclidean: :math:`\operatorname{argmin}_{u\in C}\tfrac12\|u - \theta\|^2`; KL:
        :math:`\operatorname{argmin}_{u\in C} \mathrm{KL}(u, e^{\theta - 1})` (the engine's
        conventions).

    Returns
    -------
    torch.Tensor
        Same shape, dtype and device as ``theta``: on the CPU computed by the NumPy/numba
        engine (float32 in float64, cast back), elsewhere by the set's tensor algorithm
        (see :func:`projloss.torch.set_cpu_backend`). Its backward pass is the set's
        Jacobian-vector product (the Jacobian is symmetric), as is its forward-mode
        derivative.

    Raises
    ------
    TypeError
        ``theta`` is not a float32/float64 tensor.
    ValueError
        Unknown set or geometry, a shape the set does not accept, or non-finite entries.

    Examples
    --------
    >>> import torch
    >>> theta = torch.tensor([0.5, 1.2, -1.0], dtype=torch.float64, requires_grad=True)
    >>> u = project(theta, "simplex")  # sparsemax
    >>> print(u.detach().numpy().round(6))
    [0.15 0.85 0.  ]
    >>> u[0].backward()  # row 0 of the Jacobian diag(s) - s s^T / |S|, s = 1[u > 0]
    >>> print(theta.grad.numpy() + 0.0)
    [ 0.5 -0.5  0. ]
    """
    cset = resolve_set(set)
    g = cset._check_geometry(geometry)
    check_theta(theta, cset)
    if not needs_derivatives(theta):  # no graph to record: skip autograd.Function's cost
        return ProjectFunction.forward(theta, cset, g)
    return ProjectFunction.apply(theta, cset, g)


def needs_derivatives(theta: torch.Tensor) -> bool:
    """Whether a projection of ``theta`` must go through the autograd Function: reverse
    mode (``requires_grad`` under grad mode), forward mode (a dual tensor), or a
    :mod:`torch.func` transform. Otherwise the forward alone is called
    (``Function.apply`` binds its arguments by :mod:`inspect`: tens of microseconds)."""
    return (
        (theta.requires_grad and torch.is_grad_enabled())
        or torch._C._are_functorch_transforms_active()
        or fwAD.unpack_dual(theta).tangent is not None
    )


def argmax(theta: torch.Tensor, set: str | ConvexSet) -> torch.Tensor:
    r"""The MAP oracle :math:`\operatorname{argmax}_{v\in C}\langle\theta, v\rangle`: a
    maximizing vertex, equal to :meth:`ConvexSet.argmax` (same tie-breaking).

    Not differentiable (piecewise constant): the result is detached. Same shape, dtype
    and device as ``theta``; batched over the leading axes. On the CPU, the engine's
    oracle (see :func:`projloss.torch.set_cpu_backend`; float32 is exact in float64, so
    ties are kept). The Birkhoff polytope's assignments may be solved on the host (see
    :class:`~projloss.sets.Birkhoff`); :math:`\mathbb{R}^p` and :math:`\mathbb{R}^p_+` have
    no maximizer and raise.

    Parameters
    ----------
    theta : torch.Tensor of shape (..., p) or (..., k, k)
        Scores, float32 or float64, on any device; batched over every leading axis.
    set : str or ConvexSet
        The set :math:`C`: a registry name or an instance.

    Returns
    -------
    torch.Tensor of shape theta.shape
        A maximizing vertex per point, detached, in ``theta``'s dtype and on its device.

    Raises
    ------
    TypeError
        ``theta`` is not a float32/float64 tensor.
    ValueError
        Unknown set, a shape the set does not accept, non-finite entries, or a set
        without a maximizer (``"reals"``, ``"nonneg"``).

    Examples
    --------
    >>> import torch
    >>> print(argmax(torch.tensor([[0.5, 1.2, -1.0], [2.0, 2.0, 0.0]]), "simplex"))
    tensor([[0., 1., 0.],
            [1., 0., 0.]])
    """
    cset = resolve_set(set)
    check_theta(theta, cset)
    theta = theta.detach()
    if on_engine(theta):  # the CPU fast path (see set_cpu_backend)
        return engine_argmax(cset, theta)
    check_finite(theta)
    with torch.no_grad():
        v = cset.xp_argmax(theta)
    return v.to(dtype=theta.dtype, device=theta.device)
