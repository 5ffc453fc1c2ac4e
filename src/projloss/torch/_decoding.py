r"""Calibrated decoding of a batch of scores on tensors (paper §5, eq. 9).

:math:`\hat y_L(u) = \operatorname{argmin}_{\hat y}\langle\psi(\hat y), Vu + b\rangle =
\mathrm{MAP}_D(-Vu - b)`, with :math:`(V, b)` from the target loss
(:mod:`projloss.target_losses`) and :math:`D` the decoding set: the same entry points as
:mod:`projloss.decoding`, on the device of ``u``. The scores :math:`-Vu - b` are computed
on the device for every target loss of the registry (:data:`SCORES`, bound to
:meth:`TargetLoss.scores` by the tests); a target loss outside it goes through the host.
The MAP oracle is the set's (:func:`~projloss.torch.argmax`), the structures its decoding
(:func:`~projloss.torch.decode`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ..sets import ConvexSet
from ..target_losses import (
    AbsoluteLoss,
    HammingLoss,
    LossMatrix,
    NDCGLoss,
    PrecisionAtKLoss,
    RankingHammingLoss,
    SpearmanLoss,
    TargetLoss,
    ZeroOneLoss,
    get_target_loss,
)
from ._encoding import decode
from ._oracles import argmax, project
from ._validation import check_tensor, resolve_set


def _two_u_minus_one(loss: TargetLoss, u: torch.Tensor) -> torch.Tensor:
    return 2.0 * u - 1.0  # V = -2I, b = 1


def _u(loss: TargetLoss, u: torch.Tensor) -> torch.Tensor:
    return u.clone()  # V = -I, b = 0


def _zero_one(loss: TargetLoss, u: torch.Tensor) -> torch.Tensor:
    return u - torch.sum(u, dim=-1, keepdim=True)  # V = 11^T - I, b = 0


def _loss_matrix(loss: TargetLoss, u: torch.Tensor) -> torch.Tensor:
    m = torch.as_tensor(loss.matrix, dtype=u.dtype, device=u.device)
    if u.shape[-1] != m.shape[1]:
        loss.apply_V(np.zeros(u.shape[-1]))  # the engine's message
    return -(u @ m.T)  # V = M, b = 0


#: :math:`-Vu - b` on tensors, per target-loss class (exact classes).
SCORES: dict[type[TargetLoss], Callable[[TargetLoss, torch.Tensor], torch.Tensor]] = {
    HammingLoss: _two_u_minus_one,
    AbsoluteLoss: _two_u_minus_one,
    RankingHammingLoss: _u,
    SpearmanLoss: _u,
    NDCGLoss: _u,
    PrecisionAtKLoss: _u,
    ZeroOneLoss: _zero_one,
    LossMatrix: _loss_matrix,
}


def scores(u: torch.Tensor, target_loss: str | TargetLoss) -> torch.Tensor:
    r""":math:`-Vu - b`, the input of the decoding set's MAP oracle, as
    :meth:`TargetLoss.scores` (in ``u``'s dtype, on its device).

    Parameters
    ----------
    u : torch.Tensor of shape (..., p)
        Projections :math:`u = P_C^\Psi(\theta)` (the estimated expected encodings),
        float32 or float64, on any device.
    target_loss : str or TargetLoss
        The target loss :math:`L` (a registry name of :mod:`projloss.target_losses` or
        an instance), which gives :math:`(V, b)`.

    Returns
    -------
    torch.Tensor
        :math:`-Vu - b`, one point of the decoding set per point of ``u`` (for most
        target losses of ``u``'s shape), detached.

    Raises
    ------
    TypeError
        ``u`` is not a float32/float64 tensor.
    ValueError
        Unknown target loss, or ``u``'s size does not fit it.

    Examples
    --------
    >>> import torch
    >>> print(scores(torch.tensor([0.2, 0.9]), "hamming"))
    tensor([-0.6000,  0.8000])
    """
    loss = get_target_loss(target_loss)
    check_tensor(u, "u")
    u = u.detach()
    fn = SCORES.get(type(loss))
    if fn is not None:
        return fn(loss, u)
    out = loss.scores(u.cpu().numpy())
    return torch.as_tensor(np.asarray(out), dtype=u.dtype, device=u.device)


def calibrated_vertices(
    u: torch.Tensor, target_loss: str | TargetLoss, decoding_set: str | ConvexSet
) -> torch.Tensor:
    r""":math:`\psi(\hat y_L(u)) = \mathrm{MAP}_D(-Vu - b)`: the decoded vertices, as
    :func:`projloss.decoding.calibrated_vertices` (batched; ``u``'s dtype and device).

    Parameters
    ----------
    u : torch.Tensor of shape (..., p)
        Projections :math:`u = P_C^\Psi(\theta)` (the estimated expected encodings),
        float32 or float64, on any device.
    target_loss : str or TargetLoss
        The target loss :math:`L` (a registry name of :mod:`projloss.target_losses` or
        an instance), which gives :math:`(V, b)`.
    decoding_set : str or ConvexSet
        The decoding set :math:`D` (its MAP oracle, its vertices' structures).

    Returns
    -------
    torch.Tensor
        The decoded vertices :math:`\psi(\hat y)`, detached, in ``u``'s dtype.

    Raises
    ------
    TypeError
        ``u`` is not a float32/float64 tensor.
    ValueError
        Unknown target loss or set, or sizes that do not fit them.

    Examples
    --------
    >>> import torch
    >>> u = torch.tensor([[0.2, 0.9, 0.6]])
    >>> print(calibrated_vertices(u, "hamming", "unit_cube"))  # threshold at 1/2
    tensor([[0., 1., 1.]])
    """
    return argmax(scores(u, target_loss), decoding_set)


def calibrated_decode(
    u: torch.Tensor, target_loss: str | TargetLoss, decoding_set: str | ConvexSet
) -> torch.Tensor:
    r""":math:`\hat y_L(u) = \mathrm{MAP}_D(-Vu - b)` as structures (the decoding set's
    :func:`~projloss.torch.decode` of the vertices), as
    :func:`projloss.decoding.calibrated_decode`.

    Parameters
    ----------
    u : torch.Tensor of shape (..., p)
        Projections :math:`u = P_C^\Psi(\theta)` (the estimated expected encodings),
        float32 or float64, on any device.
    target_loss : str or TargetLoss
        The target loss :math:`L` (a registry name of :mod:`projloss.target_losses` or
        an instance), which gives :math:`(V, b)`.
    decoding_set : str or ConvexSet
        The decoding set :math:`D` (its MAP oracle, its vertices' structures).

    Returns
    -------
    torch.Tensor
        The decoded structures :math:`\hat y_L(u)` (as :func:`~projloss.torch.decode`:
        int64 classes, rankings or indicators), on ``u``'s device.

    Raises
    ------
    TypeError
        ``u`` is not a float32/float64 tensor.
    ValueError
        Unknown target loss or set, or sizes that do not fit them.

    Examples
    --------
    >>> import torch
    >>> u = torch.tensor([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
    >>> print(calibrated_decode(u, "zero_one", "simplex"))  # the most probable class
    tensor([1, 0])
    """
    s = resolve_set(decoding_set, "decoding_set")
    return decode(calibrated_vertices(u, target_loss, s), s)


def decode_scores(
    theta: torch.Tensor,
    projection_set: str | ConvexSet,
    geometry: str,
    target_loss: str | TargetLoss,
    decoding_set: str | ConvexSet,
) -> torch.Tensor:
    r"""The whole pipeline from model outputs, :math:`\hat y_L(P_C^\Psi(\theta))`, as
    :func:`projloss.decoding.decode_scores` (no gradient).

    Parameters
    ----------
    theta : torch.Tensor of shape (..., p) or (..., k, k)
        The model's scores, float32 or float64, on any device (detached here).
    projection_set : str or ConvexSet
        The projection set :math:`C`.
    geometry : {"euclidean", "kl"}
        The geometry :math:`\Psi` of the projection.
    target_loss : str or TargetLoss
        The target loss :math:`L` (a registry name of :mod:`projloss.target_losses` or
        an instance), which gives :math:`(V, b)`.
    decoding_set : str or ConvexSet
        The decoding set :math:`D` (its MAP oracle, its vertices' structures).

    Returns
    -------
    torch.Tensor
        The decoded structures :math:`\hat y_L(P_C^\Psi(\theta))`, on ``theta``'s
        device.

    Raises
    ------
    TypeError
        ``theta`` is not a float32/float64 tensor.
    ValueError
        Unknown set, geometry or target loss, a shape a set does not accept, or
        non-finite ``theta``.

    Examples
    --------
    >>> import torch
    >>> theta = torch.tensor([[0.8, -1.2, 2.0, 0.5]])  # multilabel: u = min(1, e^(theta - 1))
    >>> print(decode_scores(theta, "unit_cube", "kl", "hamming", "unit_cube"))
    tensor([[1, 0, 1, 1]])
    """
    if isinstance(theta, torch.Tensor):
        theta = theta.detach()
    u = project(theta, projection_set, geometry)
    return calibrated_decode(u, target_loss, decoding_set)
