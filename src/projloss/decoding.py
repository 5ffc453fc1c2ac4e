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
    r""":math:`\psi(\hat y_L(u)) = \mathrm{LMO}_D(-Vu - b)`: the decoded vertices (batched).

    Parameters
    ----------
    u : array-like of shape (..., ``*event_shape``)
        Points in the space of the encoded labels, e.g. the projections
        :math:`P_C^\Psi(\theta)` of model outputs, batched over leading axes.
    target_loss : str or TargetLoss
        The target loss :math:`L` (a registry name, see
        :func:`projloss.target_losses.get_target_loss`, or an instance): gives :math:`V`
        and :math:`b`.
    decoding_set : str or ConvexSet
        The decoding set :math:`D` (a registry name or an instance), whose vertices are
        :math:`\psi(\mathcal{O})`.

    Returns
    -------
    vertices : ndarray of shape (..., ``*event_shape``)
        The maximizing vertices of :math:`D`, i.e. the encoded outputs
        :math:`\psi(\hat y_L(u))`, float64.

    Raises
    ------
    ValueError
        If the target loss or the decoding set is not registered, or ``u`` does not fit
        the decoding set.

    See Also
    --------
    calibrated_decode : The same decoding, as structures.
    """
    loss = get_target_loss(target_loss)
    return _resolve(decoding_set).argmax(loss.scores(u))


def calibrated_decode(
    u: ArrayLike,
    target_loss: str | TargetLoss,
    decoding_set: str | ConvexSet,
) -> NDArray:
    r""":math:`\hat y_L(u) = \mathrm{MAP}_D(-Vu - b)` as structures, batched over leading axes.

    The structures are the decoding set's ``decode`` of the maximizing vertices
    (:func:`calibrated_vertices`).

    Parameters
    ----------
    u : array-like of shape (..., ``*event_shape``)
        Points in the space of the encoded labels, e.g. the projections
        :math:`P_C^\Psi(\theta)` of model outputs, batched over leading axes.
    target_loss : str or TargetLoss
        The target loss :math:`L` (a registry name, see
        :func:`projloss.target_losses.get_target_loss`, or an instance): gives :math:`V`
        and :math:`b`.
    decoding_set : str or ConvexSet
        The decoding set :math:`D` (a registry name or an instance), whose vertices are
        :math:`\psi(\mathcal{O})`.

    Returns
    -------
    yhat : ndarray of shape (..., ``*structure_shape``)
        The decoded outputs (e.g. class indices, rankings, 0/1 vectors).

    Raises
    ------
    ValueError
        If the target loss or the decoding set is not registered, or ``u`` does not fit
        the decoding set.

    Examples
    --------
    >>> import numpy as np
    >>> from projloss.decoding import calibrated_decode
    >>> u = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])  # class probabilities
    >>> calibrated_decode(u, "zero_one", "simplex")  # the most probable class
    array([1, 0])
    """
    s = _resolve(decoding_set)
    return s.decode(calibrated_vertices(u, target_loss, s))


def decode_scores(
    theta: ArrayLike,
    projection_set: str | ConvexSet,
    geometry: str,
    target_loss: str | TargetLoss,
    decoding_set: str | ConvexSet,
) -> NDArray:
    r"""The whole pipeline from model outputs: :math:`\hat y_L(P_C^\Psi(\theta))`.

    Parameters
    ----------
    theta : array-like of shape (..., ``*event_shape``)
        Model outputs :math:`\theta`, batched over leading axes.
    projection_set : str or ConvexSet
        The projection set :math:`C` (a registry name or an instance).
    geometry : {"euclidean", "kl"}
        The geometry :math:`\Psi` of the projection.
    target_loss : str or TargetLoss
        The target loss :math:`L` (a registry name, see
        :func:`projloss.target_losses.get_target_loss`, or an instance): gives :math:`V`
        and :math:`b`.
    decoding_set : str or ConvexSet
        The decoding set :math:`D` (a registry name or an instance), whose vertices are
        :math:`\psi(\mathcal{O})`.

    Returns
    -------
    yhat : ndarray of shape (..., ``*structure_shape``)
        The decoded outputs.

    Raises
    ------
    ValueError
        If a set or the target loss is not registered, the geometry is not defined on
        the projection set, or ``theta`` is not a finite array of the set's shape.
    """
    u = _resolve(projection_set).project(theta, geometry)
    return calibrated_decode(u, target_loss, decoding_set)


def round_to_class(z: ArrayLike, n_classes: int) -> NDArray[np.int64]:
    """Round real predictions to the nearest class in ``1..n_classes`` (halves round up).

    Clipped to the range: the decoding of the ridge-regression baseline for ordinal
    regression (paper Table 4, column "Round").

    Parameters
    ----------
    z : array-like of shape (...)
        Real-valued predictions.
    n_classes : int
        Number of ordinal classes ``k``.

    Returns
    -------
    labels : ndarray of shape (...)
        Classes in ``1..n_classes``, int64.

    Raises
    ------
    ValueError
        If ``n_classes < 1`` or ``z`` holds NaN or infinite values.

    Examples
    --------
    >>> from projloss.decoding import round_to_class
    >>> round_to_class([-3.0, 1.5, 2.49, 9.0], n_classes=4)
    array([1, 2, 2, 4])
    """
    if int(n_classes) < 1:
        raise ValueError(f"n_classes must be >= 1, got {n_classes}")
    z = np.asarray(z, dtype=np.float64)
    if not np.all(np.isfinite(z)):
        raise ValueError("cannot round NaN or infinite predictions to a class")
    return np.clip(np.floor(z + 0.5), 1, int(n_classes)).astype(np.int64)


__all__ = ["calibrated_decode", "calibrated_vertices", "decode_scores", "round_to_class"]
