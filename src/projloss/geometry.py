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
    r"""Generating function :math:`\Psi(u)`, summed over the trailing event axes."""
    g = check_geometry(geometry)
    if g == "euclidean":
        return 0.5 * np.sum(u * u, axis=_axes(ndim_event))
    return np.sum(xlogy(u, u), axis=_axes(ndim_event))


def grad_psi_conj(theta: NDArray[np.float64], geometry: str) -> NDArray[np.float64]:
    r""":math:`\nabla\Psi^*(\theta)`: the identity (Euclidean) or :math:`e^{\theta-1}` (KL)."""
    g = check_geometry(geometry)
    return theta if g == "euclidean" else np.exp(theta - 1.0)


def bregman(
    u: NDArray[np.float64],
    theta: NDArray[np.float64],
    geometry: str,
    ndim_event: int = 1,
) -> NDArray[np.float64]:
    r""":math:`D_\Psi(u, \nabla\Psi^*(\theta))`, computed without forming :math:`e^{\theta-1}`
    inside a logarithm (stable for large :math:`|\theta|`)."""
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
    """
    g = check_geometry(geometry)
    ax = _axes(ndim_event)
    if g == "euclidean":
        d = a - b
        return 0.5 * np.sum(d * d, axis=ax)
    with np.errstate(divide="ignore"):
        return np.sum(xlogy(a, a) - xlogy(a, b) - a + b, axis=ax)
