r"""The two geometries of the paper: Euclidean and Kullback-Leibler.

A geometry is a Legendre-type generating function :math:`\Psi` (paper §3):

- Euclidean: :math:`\Psi(u) = \tfrac12\|u\|_2^2`, :math:`\nabla\Psi^*(\theta) = \theta`,
  :math:`D_\Psi(u, v) = \tfrac12\|u - v\|^2`.
- KL: :math:`\Psi(u) = \langle u, \log u\rangle` on :math:`\mathbb{R}^p_+` (with
  :math:`0 \log 0 = 0`), :math:`\nabla\Psi^*(\theta) = e^{\theta - 1}`,
  :math:`D_\Psi(u, v) = \sum_i u_i \log(u_i / v_i) - u_i + v_i`.

The Bregman projection onto a closed convex set :math:`C` is
:math:`P_C^\Psi(\theta) = \operatorname{argmin}_{u \in C} D_\Psi(u, \nabla\Psi^*(\theta))`.
All functions reduce over the trailing ``ndim_event`` axes and broadcast over the rest.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.special import xlogy

from ._validation import check_geometry


def _axes(ndim_event: int) -> tuple[int, ...]:
    return tuple(range(-ndim_event, 0))


def psi(u: NDArray[np.float64], geometry: str, ndim_event: int = 1) -> NDArray[np.float64]:
    r"""Generating function :math:`\Psi(u)`, summed over the trailing event axes.

    Parameters
    ----------
    u : ndarray of shape (..., ``*event_shape``)
        Points (nonnegative for the KL geometry).
    geometry : {"euclidean", "kl"}
        The generating function :math:`\Psi` (case-insensitive).
    ndim_event : int, default=1
        The number of trailing axes forming one point (2 for matrices), summed over.

    Returns
    -------
    ndarray of shape u.shape[:-ndim_event], dtype float64
        :math:`\tfrac12\|u\|^2` or :math:`\langle u, \log u\rangle` (:math:`0\log 0 =
        0`) per point.

    Raises
    ------
    ValueError
        If ``geometry`` is not ``"euclidean"`` or ``"kl"``.

    Examples
    --------
    >>> import numpy as np
    >>> print(psi(np.array([[3.0, 4.0]]), "euclidean"), psi(np.array([1.0, 0.0]), "kl"))
    [12.5] 0.0
    """
    g = check_geometry(geometry)
    if g == "euclidean":
        return 0.5 * np.sum(u * u, axis=_axes(ndim_event))
    return np.sum(xlogy(u, u), axis=_axes(ndim_event))


def grad_psi_conj(theta: NDArray[np.float64], geometry: str) -> NDArray[np.float64]:
    r""":math:`\nabla\Psi^*(\theta)`: the identity (Euclidean) or :math:`e^{\theta-1}` (KL).

    Parameters
    ----------
    theta : ndarray of any shape
        Scores (the map acts entry by entry).
    geometry : {"euclidean", "kl"}
        The generating function :math:`\Psi` (case-insensitive).

    Returns
    -------
    ndarray of shape theta.shape, dtype float64
        ``theta`` itself (Euclidean, not a copy) or :math:`e^{\theta - 1}` (KL).

    Raises
    ------
    ValueError
        If ``geometry`` is not ``"euclidean"`` or ``"kl"``.
    """
    g = check_geometry(geometry)
    return theta if g == "euclidean" else np.exp(theta - 1.0)


def bregman(
    u: NDArray[np.float64],
    theta: NDArray[np.float64],
    geometry: str,
    ndim_event: int = 1,
) -> NDArray[np.float64]:
    r""":math:`D_\Psi(u, \nabla\Psi^*(\theta))`, computed without forming :math:`e^{\theta-1}`
    inside a logarithm (stable for large :math:`|\theta|`).

    Parameters
    ----------
    u : ndarray of shape (..., ``*event_shape``)
        Primal points (nonnegative for the KL geometry).
    theta : ndarray of shape (..., ``*event_shape``)
        Dual points (scores), broadcast against ``u``.
    geometry : {"euclidean", "kl"}
        The generating function :math:`\Psi` (case-insensitive).
    ndim_event : int, default=1
        The number of trailing axes forming one point (2 for matrices), summed over.

    Returns
    -------
    ndarray of shape (...), dtype float64
        The divergence per point (the broadcast leading shape).

    Raises
    ------
    ValueError
        If ``geometry`` is not ``"euclidean"`` or ``"kl"``.
    """
    g = check_geometry(geometry)
    ax = _axes(ndim_event)
    if g == "euclidean":
        d = u - theta
        return 0.5 * np.sum(d * d, axis=ax)
    # KL(u, e^{theta-1}) = sum u log u - u (theta - 1) - u + e^{theta-1}
    return np.sum(xlogy(u, u) - u * theta + np.exp(theta - 1.0), axis=ax)


def divergence(
    a: NDArray[np.float64],
    b: NDArray[np.float64],
    geometry: str,
    ndim_event: int = 1,
) -> NDArray[np.float64]:
    r""":math:`D_\Psi(a, b)` between two primal points (e.g. :math:`\varphi(y)` and
    :math:`P_C^\Psi(\theta)`).

    Euclidean: :math:`\tfrac12\|a - b\|^2`. KL: :math:`\sum_i a_i \log(a_i / b_i) - a_i + b_i`
    with :math:`0 \log 0 = 0`; it is :math:`+\infty` where :math:`b_i = 0 < a_i`.

    Parameters
    ----------
    a : ndarray of shape (..., ``*event_shape``)
        First primal points (nonnegative for the KL geometry).
    b : ndarray of shape (..., ``*event_shape``)
        Second primal points, broadcast against ``a``.
    geometry : {"euclidean", "kl"}
        The generating function :math:`\Psi` (case-insensitive).
    ndim_event : int, default=1
        The number of trailing axes forming one point (2 for matrices), summed over.

    Returns
    -------
    ndarray of shape (...), dtype float64
        The divergence per point (the broadcast leading shape; ``inf`` where KL is
        infinite).

    Raises
    ------
    ValueError
        If ``geometry`` is not ``"euclidean"`` or ``"kl"``.

    Examples
    --------
    >>> import numpy as np
    >>> print(divergence(np.array([1.0, 0.0]), np.array([0.5, 0.5]), "kl").round(6))
    0.693147
    """
    g = check_geometry(geometry)
    ax = _axes(ndim_event)
    if g == "euclidean":
        d = a - b
        return 0.5 * np.sum(d * d, axis=ax)
    with np.errstate(divide="ignore"):
        return np.sum(xlogy(a, a) - xlogy(a, b) - a + b, axis=ax)
