r"""The autograd Functions: the projection and the projection loss.

**Projection** :math:`u = P_C^\Psi(\theta) = \nabla\Omega^*(\theta)` with
:math:`\Omega = \Psi + I_C`. Its Jacobian is the Hessian of :math:`\Omega^*`, hence
symmetric: the Jacobian-vector product of the set
(:meth:`~projloss.sets.base.ConvexSet.xp_project_jvp`) is also the vector-Jacobian product
of the backward pass. The derivative is thus closed form (sort/threshold sets), by blocks
(the PAV sets) or by implicit differentiation of the optimality conditions (Birkhoff), as
each set writes it -- never autograd through solver iterations. Forward mode
(:func:`torch.func.jvp`, ``torch.autograd.forward_ad``) uses the same product, and
:func:`torch.func.vmap` maps a batch axis onto the sets' own batching.

**Projection loss** :math:`S(\theta, \varphi) = \Omega^*(\theta) + \Psi(\varphi) -
\langle\theta, \varphi\rangle`, whose gradient is :math:`u - \varphi` (Danskin): the
forward pass projects once and keeps :math:`u`; the backward pass multiplies
:math:`u - \varphi` by the incoming gradient, with no backward through the projection.
Second derivatives (``create_graph=True``, :func:`torch.func.hessian`) are
:math:`\nabla^2_\theta S = J_P(\theta)`: the projection's Jacobian-vector products at
the kept :math:`u`, without projecting again.

There is no gradient with respect to :math:`\varphi` (the encoded target) in reverse
mode: :func:`projloss.torch.projection_loss` refuses a ``phi`` that requires one. Forward
mode, which gives every input a tangent (zeros where none is asked for), includes the
directional derivative :math:`\langle\nabla\Psi(\varphi) - \theta, \dot\varphi\rangle`.
"""

from __future__ import annotations

from typing import Any

import torch

from ..sets import ConvexSet
from ._validation import check_finite, check_finite_loss


def _to_front(x: torch.Tensor, dim: int | None, size: int) -> torch.Tensor:
    """The vmapped axis ``dim`` of ``x`` moved first (broadcast when ``x`` has none)."""
    if dim is None:
        return x.unsqueeze(0).expand(size, *x.shape)
    return x.movedim(dim, 0)


class ProjectFunction(torch.autograd.Function):
    """``u = P_C^Psi(theta)``: forward by the set's array-API projection, backward and
    forward-mode by its Jacobian-vector product (symmetric Jacobian).

    ``apply(theta, cset, geometry, u=None)``; a given ``u`` (the projection, computed
    already) is returned instead of projecting: the derivatives of the projection at no
    extra projection (the projection loss's second derivatives)."""

    @staticmethod
    def forward(
        theta: torch.Tensor, cset: ConvexSet, geometry: str, u: torch.Tensor | None = None
    ) -> torch.Tensor:
        if u is not None:
            return u.detach()
        check_finite(theta)
        return cset.xp_project(theta.detach(), geometry)  # (the sets see plain tensors)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        theta, cset, geometry = inputs[:3]
        ctx.cset, ctx.geometry = cset, geometry
        ctx.save_for_backward(theta, output)
        ctx.save_for_forward(theta, output)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None, None]:
        theta, u = ctx.saved_tensors
        vjp = ctx.cset.xp_project_jvp(theta, u, grad.contiguous(), ctx.geometry)
        return vjp, None, None, None

    @staticmethod
    def jvp(ctx: Any, theta_t: torch.Tensor, *_: Any) -> torch.Tensor:
        theta, u = ctx.saved_tensors
        return ctx.cset.xp_project_jvp(theta, u, theta_t.contiguous(), ctx.geometry)

    @staticmethod
    def vmap(
        info: Any,
        in_dims: tuple[Any, ...],
        theta: torch.Tensor,
        cset: ConvexSet,
        geometry: str,
        u: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, int]:
        # The sets batch over every leading axis: the mapped axis becomes one of them.
        theta = _to_front(theta, in_dims[0], info.batch_size)
        if u is not None:
            u = _to_front(u, in_dims[3], info.batch_size)
        return ProjectFunction.apply(theta, cset, geometry, u), 0


def event_dims(event_ndim: int) -> tuple[int, ...]:
    """The trailing axes of one point."""
    return tuple(range(-event_ndim, 0))


def loss_from_projection(
    theta: torch.Tensor, u: torch.Tensor, phi: torch.Tensor, geometry: str, event_ndim: int
) -> torch.Tensor:
    r""":math:`S_C^\Psi(\theta, \varphi)` given :math:`u = P_C^\Psi(\theta)`, one value per
    leading index, in the cancellation-free forms of
    :func:`projloss.losses.loss_from_projection`:

    - Euclidean: :math:`\langle u - \varphi, \theta - (u + \varphi)/2\rangle`;
    - KL: :math:`\langle\theta, u - \varphi\rangle - \langle u, \log u\rangle +
      \langle\varphi, \log\varphi\rangle` (:math:`0\log 0 = 0`, :func:`torch.xlogy`), and
      where a term overflows (huge :math:`u` on :math:`\mathbb{R}^p_+`),
      :math:`u(\theta - \log u) - \theta\varphi + \varphi\log\varphi` instead (selected
      elementwise, without a synchronization).
    """
    dims = event_dims(event_ndim)
    if geometry == "euclidean":
        return torch.sum((u - phi) * (theta - 0.5 * (u + phi)), dim=dims)
    plogp = torch.xlogy(phi, phi)
    terms = theta * (u - phi) - torch.xlogy(u, u) + plogp
    logu = torch.log(torch.where(u > 0, u, torch.ones_like(u)))
    safe = u * (theta - logu) - theta * phi + plogp
    return torch.sum(torch.where(torch.isfinite(terms), terms, safe), dim=dims)


def _expand_events(g: torch.Tensor, event_ndim: int) -> torch.Tensor:
    return g.reshape(*g.shape, *([1] * event_ndim))


class ProjectionLossFunction(torch.autograd.Function):
    r"""Per-sample :math:`S_C^\Psi(\theta, \varphi)`, and the projection :math:`u` (the
    second output is not differentiable: it is kept for the gradient :math:`u - \varphi`)."""

    @staticmethod
    def forward(
        theta: torch.Tensor, phi: torch.Tensor, cset: ConvexSet, geometry: str, event_ndim: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        check_finite(theta)
        theta, phi = theta.detach(), phi.detach()
        u = cset.xp_project(theta, geometry)
        values = loss_from_projection(theta, u, phi, geometry, event_ndim)
        check_finite_loss(values, theta)
        return values, u

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, ...]) -> None:
        theta, phi, cset, geometry, event_ndim = inputs
        _, u = output
        ctx.mark_non_differentiable(u)
        ctx.cset, ctx.geometry, ctx.event_ndim = cset, geometry, event_ndim
        ctx.save_for_backward(theta, phi, u)
        ctx.save_for_forward(theta, phi, u)

    @staticmethod
    def backward(
        ctx: Any, grad: torch.Tensor, _grad_u: torch.Tensor | None
    ) -> tuple[torch.Tensor | None, None, None, None, None]:
        theta, phi, u = ctx.saved_tensors
        if ctx.needs_input_grad[1]:
            raise ValueError(_PHI_GRAD)
        if torch.is_grad_enabled():
            # A graph of the gradient (create_graph=True, torch.func): d(u - phi)/dtheta =
            # J_P, through the projection's derivatives at the u computed (no projection).
            u = ProjectFunction.apply(theta, ctx.cset, ctx.geometry, u)
        return _expand_events(grad, ctx.event_ndim) * (u - phi), None, None, None, None

    @staticmethod
    def jvp(
        ctx: Any, theta_t: torch.Tensor | None, phi_t: torch.Tensor | None, *_: None
    ) -> tuple[torch.Tensor, None]:
        # <u - phi, theta_t> + <grad Psi(phi) - theta, phi_t>: forward mode materializes
        # a tangent (zeros) for phi too, so its term is computed rather than refused.
        theta, phi, u = ctx.saved_tensors
        dims = event_dims(ctx.event_ndim)
        out = torch.zeros((), dtype=u.dtype, device=u.device)
        if theta_t is not None:
            out = out + torch.sum((u - phi) * theta_t, dim=dims)
        if phi_t is not None:
            if ctx.geometry == "euclidean":
                dphi = (phi - theta) * phi_t
            else:  # d/dphi [phi log phi] = log phi + 1 (-inf at 0: only where phi_t != 0)
                dphi = torch.where(phi_t != 0, (torch.log(phi) + 1.0 - theta) * phi_t, 0.0)
            out = out + torch.sum(dphi, dim=dims)
        return out, None

    @staticmethod
    def vmap(
        info: Any,
        in_dims: tuple[Any, ...],
        theta: torch.Tensor,
        phi: torch.Tensor,
        cset: ConvexSet,
        geometry: str,
        event_ndim: int,
    ) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[int, int]]:
        theta = _to_front(theta, in_dims[0], info.batch_size)
        phi = _to_front(phi, in_dims[1], info.batch_size)
        return ProjectionLossFunction.apply(theta, phi, cset, geometry, event_ndim), (0, 0)


_PHI_GRAD = (
    "phi requires grad, but the projection loss gives no gradient with respect to phi "
    "(the encoded target): pass phi.detach()"
)
