r"""Calibrated decoding (paper §5, eq. 9) and rounding for the ridge baseline.

The pipeline of the paper (eq. 10) is

.. math::
    x \xrightarrow{g} \theta \xrightarrow{P_C^\Psi} u \xrightarrow{\hat y_L} \hat y,
    \qquad \hat y_L(u) = \operatorname{argmin}_{\hat y}\langle\psi(\hat y), Vu + b\rangle
    = \mathrm{MAP}_D(-Vu - b),

where :math:`(V, b)` come from the target loss (:mod:`projloss.target_losses`) and the
decoding set :math:`D` is the convex hull of :math:`\psi(\mathcal{O})` — often the
projection set :math:`C`, but not necessarily (the paper's tables project on the cube and
decode on the Birkhoff polytope, or project on :math:`\mathbb{R}^p` and decode on the order
simplex). When :math:`u = \mathbb{E}[\varphi(Y)]`, the decoded output minimizes the expected
target loss (the Bayes decision); Proposition 4 bounds the excess risk otherwise.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .sets import ConvexSet, get_set
from .target_losses import TargetLoss, get_target_loss


def _resolve(decoding_set: str | ConvexSet) -> ConvexSet:
    return decoding_set if isinstance(decoding_set, ConvexSet) else get_set(decoding_set)


def calibrated_vertices(
    u: ArrayLike,
    target_loss: str | TargetLoss,
    decoding_set: str | ConvexSet,
) -> NDArray[np.float64]:
    r""":math:`\psi(\hat y_L(u)) = \mathrm{LMO}_D(-Vu - b)`: the decoded vertices (batched)."""
    loss = get_target_loss(target_loss)
    return _resolve(decoding_set).argmax(loss.scores(u))


def calibrated_decode(
    u: ArrayLike,
    target_loss: str | TargetLoss,
    decoding_set: str | ConvexSet,
) -> NDArray:
    r""":math:`\hat y_L(u) = \mathrm{MAP}_D(-Vu - b)` as structures (the decoding set's
    ``decode`` of the maximizing vertices), batched over leading axes."""
    s = _resolve(decoding_set)
    return s.decode(calibrated_vertices(u, target_loss, s))


def decode_scores(
    theta: ArrayLike,
    projection_set: str | ConvexSet,
    geometry: str,
    target_loss: str | TargetLoss,
    decoding_set: str | ConvexSet,
) -> NDArray:
    r"""The whole pipeline from model outputs: :math:`\hat y_L(P_C^\Psi(\theta))`."""
    u = _resolve(projection_set).project(theta, geometry)
    return calibrated_decode(u, target_loss, decoding_set)


def round_to_class(z: ArrayLike, n_classes: int) -> NDArray[np.int64]:
    """Round real predictions to the nearest class in ``1..n_classes`` (halves round up),
    clipped to the range: the decoding of the ridge-regression baseline for ordinal
    regression (paper Table 4, column "Round")."""
    if int(n_classes) < 1:
        raise ValueError(f"n_classes must be >= 1, got {n_classes}")
    z = np.asarray(z, dtype=np.float64)
    if not np.all(np.isfinite(z)):
        raise ValueError("cannot round NaN or infinite predictions to a class")
    return np.clip(np.floor(z + 0.5), 1, int(n_classes)).astype(np.int64)


__all__ = ["calibrated_decode", "calibrated_vertices", "decode_scores", "round_to_class"]
