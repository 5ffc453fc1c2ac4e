r"""The Fenchel-Young projection loss on tensors (functional and ``nn.Module``)."""

from __future__ import annotations

import torch
from torch import nn

from ..sets import ConvexSet
from ._autograd import _PHI_GRAD, ProjectionLossFunction
from ._validation import check_like, check_reduction, check_theta, resolve_set


def _event_ndim(cset: ConvexSet, event_ndim: int | None) -> int:
    if event_ndim is None:
        return cset.event_ndim
    if isinstance(event_ndim, bool) or not isinstance(event_ndim, int) or event_ndim < 1:
        raise ValueError(f"event_ndim must be an integer >= 1, got {event_ndim!r}")
    return event_ndim


def _reduce(values: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "mean":
        return values.mean()
    if reduction == "sum":
        return values.sum()
    return values


def _loss(
    theta: torch.Tensor,
    phi: torch.Tensor,
    cset: ConvexSet,
    geometry: str,
    reduction: str,
    event_ndim: int,
) -> torch.Tensor:
    check_theta(theta, cset)
    check_like(theta, phi, "phi")
    if theta.ndim < event_ndim:
        raise ValueError(
            f"theta must have at least {event_ndim} axes (one point of the set), "
            f"got shape {tuple(theta.shape)}"
        )
    if phi.requires_grad:
        raise ValueError(_PHI_GRAD)
    values, _ = ProjectionLossFunction.apply(theta, phi, cset, geometry, event_ndim)
    return _reduce(values, reduction)


def projection_loss(
    theta: torch.Tensor,
    phi: torch.Tensor,
    set: str | ConvexSet,
    geometry: str = "euclidean",
    reduction: str = "mean",
    event_ndim: int | None = None,
) -> torch.Tensor:
    r"""The projection loss :math:`S_C^\Psi(\theta, \varphi)` (paper eqs. 4-5).

    .. math::
        S_C^\Psi(\theta, \varphi) = \Omega^*(\theta) + \Psi(\varphi) - \langle\theta,
        \varphi\rangle, \qquad \nabla_\theta S_C^\Psi = P_C^\Psi(\theta) - \varphi,

    with :math:`\Omega = \Psi + I_C`. The value equals
    :meth:`projloss.losses.ProjectionLoss.value` (the same cancellation-free forms); value
    and gradient come from **one** projection (no backward through it).

    Parameters
    ----------
    theta : torch.Tensor of shape (..., p) or (..., k, k)
        Scores (the model's outputs), float32 or float64, on any device.
    phi : torch.Tensor, same shape, dtype and device as ``theta``
        The encoded targets :math:`\varphi(y)` (the set's ``encode``, see
        :func:`projloss.torch.encode`). A target: it must not require grad (no gradient
        with respect to it is given).
    set : str or ConvexSet
        The set :math:`C` (a registry name or an instance).
    geometry : {"euclidean", "kl"}
        The geometry :math:`\Psi`.
    reduction : {"mean", "sum", "none"}
        As torch's losses: the mean or the sum of the per-sample values, or the values
        themselves (one per leading index: summed over the set's event axes, 1 for
        vector sets, 2 for matrix sets).
    event_ndim : int, optional
        Trailing axes forming one point; default the set's. Pass 2 to use an entrywise
        set (``"reals"``, ``"nonneg"``, ``"unit_cube"``) on ``k x k`` matrices.

    Returns
    -------
    torch.Tensor
        A scalar, or the per-sample values (``reduction="none"``).

    Raises
    ------
    TypeError
        ``theta`` or ``phi`` is not a float32/float64 tensor.
    ValueError
        An unknown set, geometry or reduction, a bad ``event_ndim`` or a shape the set
        does not accept, ``theta`` not finite, a loss value that overflows the dtype (as
        the engine), ``phi`` on another device, of another dtype or shape, or requiring
        grad.

    Examples
    --------
    >>> import torch
    >>> theta = torch.tensor([[0.5, 1.2, -1.0]], dtype=torch.float64, requires_grad=True)
    >>> phi = torch.tensor([[0.0, 1.0, 0.0]], dtype=torch.float64)
    >>> loss = projection_loss(theta, phi, "simplex")  # the sparsemax loss
    >>> print(round(loss.item(), 6))
    0.0225
    >>> loss.backward()
    >>> print(theta.grad)  # sparsemax(theta) - phi
    tensor([[ 0.1500, -0.1500,  0.0000]], dtype=torch.float64)
    """
    cset = resolve_set(set)
    g = cset._check_geometry(geometry)
    return _loss(theta, phi, cset, g, check_reduction(reduction), _event_ndim(cset, event_ndim))


class ProjectionLoss(nn.Module):
    r"""The projection loss :math:`S_C^\Psi` as an ``nn.Module`` (see
    :func:`projection_loss`): ``forward(theta, phi)``.

    Parameters
    ----------
    set : str or ConvexSet
        The set :math:`C` (checked here, at construction).
    geometry : {"euclidean", "kl"}, default="euclidean"
        The geometry :math:`\Psi` (checked here).
    reduction : {"mean", "sum", "none"}, default="mean"
        The mean or the sum of the per-sample values, or the values themselves.
    event_ndim : int, optional
        Trailing axes forming one point; default the set's (see :func:`projection_loss`).

    Raises
    ------
    ValueError
        An unknown set, geometry or reduction, a geometry the set does not support, or an
        ``event_ndim`` that is not an integer >= 1.

    Examples
    --------
    >>> import torch
    >>> loss_fn = ProjectionLoss("unit_cube", reduction="none")
    >>> theta = torch.tensor([[2.0, -1.0], [0.5, 0.5]])  # u = clip(theta, 0, 1)
    >>> loss_fn(theta, torch.tensor([[1.0, 0.0], [1.0, 0.0]]))  # 0 when u = phi
    tensor([0.0000, 0.2500])
    >>> loss_fn
    ProjectionLoss(set=UnitCube(), geometry='euclidean', reduction='none')
    """

    def __init__(
        self,
        set: str | ConvexSet,
        geometry: str = "euclidean",
        reduction: str = "mean",
        event_ndim: int | None = None,
    ) -> None:
        super().__init__()
        self.set = resolve_set(set)
        self.geometry = self.set._check_geometry(geometry)
        self.reduction = check_reduction(reduction)
        self.event_ndim = _event_ndim(self.set, event_ndim)

    def forward(self, theta: torch.Tensor, phi: torch.Tensor) -> torch.Tensor:
        """The loss of scores ``theta`` against encoded targets ``phi``.

        Parameters
        ----------
        theta : torch.Tensor of shape (..., p) or (..., k, k)
            Scores, float32 or float64, on any device.
        phi : torch.Tensor, same shape, dtype and device as ``theta``
            The encoded targets (not requiring grad).

        Returns
        -------
        torch.Tensor
            A scalar, or the per-sample values (``reduction="none"``), differentiable in
            ``theta``.

        Raises
        ------
        TypeError
            ``theta`` or ``phi`` is not a float32/float64 tensor.
        ValueError
            As :func:`projection_loss`: a shape the set does not accept, ``theta`` not
            finite, an overflowing value, ``phi`` mismatched or requiring grad.
        """
        return _loss(theta, phi, self.set, self.geometry, self.reduction, self.event_ndim)

    def extra_repr(self) -> str:
        """The module's parameters in its repr (``event_ndim`` only if not the set's).

        Returns
        -------
        str
            ``"set=..., geometry=..., reduction=..."``.
        """
        s = f"set={self.set!r}, geometry={self.geometry!r}, reduction={self.reduction!r}"
        if self.event_ndim != self.set.event_ndim:
            s += f", event_ndim={self.event_ndim}"
        return s
