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
