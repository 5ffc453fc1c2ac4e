r"""Fenchel-Young projection losses (paper §3).

For a closed convex set :math:`C \supseteq \varphi(\mathcal{Y})` and a geometry
:math:`\Psi` (Euclidean or KL, see :mod:`projloss.geometry`), let
:math:`\Omega = \Psi + I_C` and :math:`u = P_C^\Psi(\theta) = \nabla\Omega^*(\theta)`.
The projection loss (paper eqs. 4-5) is

.. math::
    S_C^\Psi(\theta, y) = \Omega^*(\theta) + \Omega(\varphi(y)) - \langle\theta, \varphi(y)\rangle,
    \qquad \Omega^*(\theta) = \langle\theta, u\rangle - \Psi(u),

with gradient :math:`\nabla_\theta S_C^\Psi(\theta, y) = u - \varphi(y)`. It is convex,
non-negative, zero iff :math:`P_C^\Psi(\theta) = \varphi(y)`, smaller for smaller sets
(Proposition 1), and upper-bounds the compositional loss
:math:`\ell_C^\Psi(\theta, y) = D_\Psi(\varphi(y), P_C^\Psi(\theta))`.
With :math:`C = \mathbb{R}^p` and the Euclidean geometry it is the squared loss.

Both the value and the gradient come from **one** projection
(:meth:`ProjectionLoss.value_and_grad`), batched over the leading axes. The value is
computed in forms that avoid cancellation for large :math:`|\theta|`:

- Euclidean: :math:`S = \langle u - \varphi, \theta - (u + \varphi)/2\rangle`
  (:math:`= \tfrac12\|\theta - \varphi\|^2 - \tfrac12\|\theta - u\|^2`);
- KL: :math:`S = \langle\theta, u - \varphi\rangle - \langle u, \log u\rangle +
  \langle\varphi, \log\varphi\rangle` with :math:`0 \log 0 = 0`; no exponential of
  :math:`\theta` is formed, so it is finite whenever the projection is.

Huge :math:`|\theta|`: a projection that is not representable raises (see the sets), and
so does a loss value that overflows float64 (e.g. the squared loss at
:math:`|\theta| = 10^{300}`): :class:`ProjectionLoss` never returns ``inf`` or ``NaN``.

The term :math:`\Omega(\varphi(y))` is evaluated as :math:`\Psi(\varphi(y))`, i.e. the
indicator :math:`I_C(\varphi(y))` is dropped: this matters only if a label lies outside
``C`` (e.g. a multilabel sample with more labels than a knapsack's upper bound, as in the
paper's multilabel experiments), where the loss stays convex and smooth but may become
negative.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import xlogy

from ._validation import check_array, check_geometry
from .geometry import divergence, psi
from .sets import ConvexSet, get_set


def _resolve_set(projection_set: str | ConvexSet) -> ConvexSet:
    if isinstance(projection_set, ConvexSet):
        return projection_set
    if isinstance(projection_set, str):
        return get_set(projection_set)
    raise ValueError(
        f"projection_set must be a set name or a ConvexSet, got {type(projection_set).__name__}"
    )


def loss_from_projection(
    theta: NDArray[np.float64],
    u: NDArray[np.float64],
    phi: NDArray[np.float64],
    geometry: str,
    event_ndim: int = 1,
) -> NDArray[np.float64]:
    r""":math:`S_C^\Psi(\theta, y)` given the projection :math:`u = P_C^\Psi(\theta)`.

    Sums over the trailing ``event_ndim`` axes; no validation (internal hot path).

    Parameters
    ----------
    theta : ndarray of shape (..., ``*event_shape``)
        Model outputs :math:`\theta`, float64.
    u : ndarray of shape (..., ``*event_shape``)
        Their projections :math:`P_C^\Psi(\theta)` onto the set.
    phi : ndarray of shape (..., ``*event_shape``)
        Encoded labels :math:`\varphi(y)` (non-negative for the KL geometry).
    geometry : {"euclidean", "kl"}
        The geometry :math:`\Psi` the projection was computed with.
    event_ndim : int, default=1
        Number of trailing axes forming one point.

    Returns
    -------
    values : ndarray of shape (...)
        The loss for each leading index (may be ``inf`` or ``NaN`` on overflow: the
        callers check).
    """
    ax = tuple(range(-event_ndim, 0))
    if geometry == "euclidean":
        d = u - phi
        return np.sum(d * (theta - 0.5 * (u + phi)), axis=ax)
    with np.errstate(over="ignore", invalid="ignore"):
        terms = theta * (u - phi) - xlogy(u, u) + xlogy(phi, phi)
    bad = ~np.isfinite(terms)
    if bad.any():
        # <theta, u> and <u, log u> overflow separately for huge u (R^p_+ near its limit,
        # theta ~ 704-711: inf - inf = NaN); u (theta - log u) does not.
        t, v, f = theta[bad], u[bad], phi[bad]
        with np.errstate(over="ignore", invalid="ignore"):
            terms[bad] = v * (t - np.log(np.where(v > 0, v, 1.0))) - t * f + xlogy(f, f)
    return np.sum(terms, axis=ax)


def _check_finite(values: NDArray[np.float64], theta: NDArray[np.float64]) -> None:
    """Refuse a loss value that overflowed float64 (rather than return inf or NaN)."""
    if not np.all(np.isfinite(values)):
        raise ValueError(
            "the projection loss overflows float64 at this theta (max |theta| = "
            f"{np.abs(theta).max():.3g}): its value is not representable; scale theta down"
        )


class ProjectionLoss:
    r"""The projection loss :math:`S_C^\Psi` for one set and one geometry.

    Parameters
    ----------
    projection_set : str or ConvexSet
        The set :math:`C` (a registry name, see :func:`projloss.sets.get_set`, or an
        instance).
    geometry : {"euclidean", "kl"}, default="euclidean"
        The geometry :math:`\Psi`.
    event_ndim : int, optional
        Number of trailing axes forming one point. Defaults to the set's (1 for vector
        sets, 2 for matrix sets); pass 2 to use an entrywise set such as ``"reals"`` or
        ``"nonneg"`` on ``k x k`` matrices.

    Attributes
    ----------
    set : ConvexSet
        The resolved set :math:`C`.
    geometry : str
        The validated geometry.
    event_ndim : int
        Number of trailing axes forming one point.

    Raises
    ------
    ValueError
        If ``projection_set`` is not a set name or a ``ConvexSet``, the geometry is unknown
        or not defined on the set, or ``event_ndim < 1``.

    See Also
    --------
    projection_loss : The functional form of :meth:`value`.

    Notes
    -----
    All methods take ``theta`` of shape ``(..., *event_shape)`` and ``phi`` (the encoded
    labels :math:`\varphi(y)`) of the same shape, and return one value per leading index.

    Examples
    --------
    >>> import numpy as np
    >>> loss = ProjectionLoss("unit_cube", "euclidean")
    >>> float(loss(np.array([2.0, -1.0]), np.array([1.0, 0.0])))  # theta beyond the vertex
    0.0
    """

    def __init__(
        self,
        projection_set: str | ConvexSet,
        geometry: str = "euclidean",
        event_ndim: int | None = None,
    ) -> None:
        self.set = _resolve_set(projection_set)
        self.geometry = self.set._check_geometry(check_geometry(geometry))
        self.event_ndim = self.set.event_ndim if event_ndim is None else int(event_ndim)
        if self.event_ndim < 1:
            raise ValueError(f"event_ndim must be >= 1, got {event_ndim}")

    def _check(
        self, theta: ArrayLike, phi: ArrayLike
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        theta = check_array(theta, name="theta")
        phi = check_array(phi, name="phi")
        if theta.shape != phi.shape:
            raise ValueError(
                f"theta and phi(y) must have the same shape, got {theta.shape} and {phi.shape}"
            )
        if theta.ndim < self.event_ndim:
            raise ValueError(
                f"theta must have at least {self.event_ndim} axes (one point of the set), "
                f"got shape {theta.shape}"
            )
        return theta, phi

    def project(self, theta: ArrayLike) -> NDArray[np.float64]:
        r""":math:`P_C^\Psi(\theta)`, the gradient of :math:`\Omega^*`.

        Parameters
        ----------
        theta : array-like of shape (..., ``*event_shape``)
            Model outputs :math:`\theta`, batched over leading axes.

        Returns
        -------
        u : ndarray of shape (..., ``*event_shape``)
            The projections onto the set, float64.

        Raises
        ------
        ValueError
            If ``theta`` is not a finite numeric array of the set's shape, or a projection
            is not representable in float64.
        """
        return self.set.project(theta, self.geometry)

    def value(self, theta: ArrayLike, phi: ArrayLike) -> NDArray[np.float64]:
        r""":math:`S_C^\Psi(\theta, y)`, one value per leading index.

        ``loss(theta, phi)`` is the same.

        Parameters
        ----------
        theta : array-like of shape (..., ``*event_shape``)
            Model outputs :math:`\theta`, batched over leading axes.
        phi : array-like of shape (..., ``*event_shape``)
            Encoded labels :math:`\varphi(y)`, same shape as ``theta``.

        Returns
        -------
        values : ndarray of shape (...)
            The loss for each leading index, float64, finite and (for labels in the set)
            non-negative.

        Raises
        ------
        ValueError
            If ``theta`` or ``phi`` is not a finite numeric array, their shapes differ, ``theta``
            has fewer than ``event_ndim`` axes, the projection is not representable, or the loss
            value overflows float64.
        """
        theta, phi = self._check(theta, phi)
        u = self.project(theta)
        with np.errstate(over="ignore", invalid="ignore"):
            values = loss_from_projection(theta, u, phi, self.geometry, self.event_ndim)
        _check_finite(values, theta)
        return values

    __call__ = value

    def value_and_grad(
        self, theta: ArrayLike, phi: ArrayLike
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        r"""Value, gradient :math:`u - \varphi(y)` and projection :math:`u`, from one projection.

        Parameters
        ----------
        theta : array-like of shape (..., ``*event_shape``)
            Model outputs :math:`\theta`, batched over leading axes.
        phi : array-like of shape (..., ``*event_shape``)
            Encoded labels :math:`\varphi(y)`, same shape as ``theta``.

        Returns
        -------
        values : ndarray of shape (...)
            The loss for each leading index, as :meth:`value`.
        grad : ndarray of shape (..., ``*event_shape``)
            Its gradient with respect to ``theta``, :math:`u - \varphi(y)`.
        u : ndarray of shape (..., ``*event_shape``)
            The projections :math:`P_C^\Psi(\theta)`.

        Raises
        ------
        ValueError
            If ``theta`` or ``phi`` is not a finite numeric array, their shapes differ, ``theta``
            has fewer than ``event_ndim`` axes, the projection is not representable, or the loss
            value overflows float64.
        """
        theta, phi = self._check(theta, phi)
        u = self.project(theta)
        with np.errstate(over="ignore", invalid="ignore"):
            values = loss_from_projection(theta, u, phi, self.geometry, self.event_ndim)
        _check_finite(values, theta)
        return values, u - phi, u

    def conjugate(self, theta: ArrayLike) -> NDArray[np.float64]:
        r"""The conjugate :math:`\Omega^*(\theta) = \langle\theta, u\rangle - \Psi(u)`.

        Evaluated at the projection :math:`u = P_C^\Psi(\theta)`.

        Parameters
        ----------
        theta : array-like of shape (..., ``*event_shape``)
            Model outputs :math:`\theta`, batched over leading axes.

        Returns
        -------
        values : ndarray of shape (...)
            The conjugate :math:`\Omega^*(\theta)` for each leading index, float64.

        Raises
        ------
        ValueError
            If ``theta`` is not a finite numeric array, the projection is not representable,
            or the value overflows float64.
        """
        theta = check_array(theta, name="theta")
        u = self.project(theta)
        ax = tuple(range(-self.event_ndim, 0))
        with np.errstate(over="ignore", invalid="ignore"):
            values = np.sum(theta * u, axis=ax) - psi(u, self.geometry, self.event_ndim)
            if self.geometry == "kl" and not np.all(np.isfinite(values)):
                # <theta, u> - <u, log u> = <u, theta - log u>: no inf - inf for huge u
                logu = np.log(np.where(u > 0, u, 1.0))
                values = np.sum(u * (theta - logu), axis=ax)
        _check_finite(values, theta)
        return values

    def compositional(self, theta: ArrayLike, phi: ArrayLike) -> NDArray[np.float64]:
        r"""The compositional loss :math:`\ell_C^\Psi = D_\Psi(\varphi(y), P_C^\Psi(\theta))`.

        Non-convex in general; for diagnostics. Lower-bounds :meth:`value`.

        Parameters
        ----------
        theta : array-like of shape (..., ``*event_shape``)
            Model outputs :math:`\theta`, batched over leading axes.
        phi : array-like of shape (..., ``*event_shape``)
            Encoded labels :math:`\varphi(y)`, same shape as ``theta``.

        Returns
        -------
        values : ndarray of shape (...)
            The divergence for each leading index, float64.

        Raises
        ------
        ValueError
            If ``theta`` or ``phi`` is not a finite numeric array, their shapes differ, or
            ``theta`` has fewer than ``event_ndim`` axes.
        """
        theta, phi = self._check(theta, phi)
        return divergence(phi, self.project(theta), self.geometry, self.event_ndim)

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters (for reprs, configs and logging).

        Returns
        -------
        params : dict
            ``{'projection_set': set, 'geometry': geometry}``.
        """
        return {"projection_set": self.set, "geometry": self.geometry}

    def __repr__(self) -> str:
        return f"ProjectionLoss({self.set!r}, geometry={self.geometry!r})"


def projection_loss(
    theta: ArrayLike,
    phi: ArrayLike,
    projection_set: str | ConvexSet,
    geometry: str = "euclidean",
    event_ndim: int | None = None,
) -> NDArray[np.float64]:
    r"""Functional form of :meth:`ProjectionLoss.value`: :math:`S_C^\Psi(\theta, y)`.

    Parameters
    ----------
    theta : array-like of shape (..., ``*event_shape``)
        Model outputs :math:`\theta`, batched over leading axes.
    phi : array-like of shape (..., ``*event_shape``)
        Encoded labels :math:`\varphi(y)`, same shape as ``theta``.
    projection_set : str or ConvexSet
        The set :math:`C` (a registry name or an instance).
    geometry : {"euclidean", "kl"}, default="euclidean"
        The geometry :math:`\Psi`.
    event_ndim : int, optional
        Number of trailing axes forming one point (default: the set's).

    Returns
    -------
    values : ndarray of shape (...)
        The loss for each leading index, float64.

    Raises
    ------
    ValueError
        As :class:`ProjectionLoss` and :meth:`ProjectionLoss.value`.

    Examples
    --------
    >>> import numpy as np
    >>> from projloss.losses import projection_loss
    >>> theta, phi = np.array([0.5, 0.5]), np.array([1.0, 0.0])
    >>> float(projection_loss(theta, phi, "reals"))  # the squared loss on R^p
    0.25
    """
    return ProjectionLoss(projection_set, geometry, event_ndim).value(theta, phi)


def projection_loss_and_grad(
    theta: ArrayLike,
    phi: ArrayLike,
    projection_set: str | ConvexSet,
    geometry: str = "euclidean",
    event_ndim: int | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Value and gradient :math:`P_C^\Psi(\theta) - \varphi(y)` from one projection.

    Parameters
    ----------
    theta : array-like of shape (..., ``*event_shape``)
        Model outputs :math:`\theta`, batched over leading axes.
    phi : array-like of shape (..., ``*event_shape``)
        Encoded labels :math:`\varphi(y)`, same shape as ``theta``.
    projection_set : str or ConvexSet
        The set :math:`C` (a registry name or an instance).
    geometry : {"euclidean", "kl"}, default="euclidean"
        The geometry :math:`\Psi`.
    event_ndim : int, optional
        Number of trailing axes forming one point (default: the set's).

    Returns
    -------
    values : ndarray of shape (...)
        The loss for each leading index, float64.
    grad : ndarray of shape (..., ``*event_shape``)
        Its gradient with respect to ``theta``.

    Raises
    ------
    ValueError
        As :class:`ProjectionLoss` and :meth:`ProjectionLoss.value_and_grad`.
    """
    values, grad, _ = ProjectionLoss(projection_set, geometry, event_ndim).value_and_grad(
        theta, phi
    )
    return values, grad


def compositional_loss(
    theta: ArrayLike,
    phi: ArrayLike,
    projection_set: str | ConvexSet,
    geometry: str = "euclidean",
    event_ndim: int | None = None,
) -> NDArray[np.float64]:
    r""":math:`\ell_C^\Psi(\theta, y) = D_\Psi(\varphi(y), P_C^\Psi(\theta))`.

    Functional form of :meth:`ProjectionLoss.compositional`.

    Parameters
    ----------
    theta : array-like of shape (..., ``*event_shape``)
        Model outputs :math:`\theta`, batched over leading axes.
    phi : array-like of shape (..., ``*event_shape``)
        Encoded labels :math:`\varphi(y)`, same shape as ``theta``.
    projection_set : str or ConvexSet
        The set :math:`C` (a registry name or an instance).
    geometry : {"euclidean", "kl"}, default="euclidean"
        The geometry :math:`\Psi`.
    event_ndim : int, optional
        Number of trailing axes forming one point (default: the set's).

    Returns
    -------
    values : ndarray of shape (...)
        The divergence for each leading index, float64.

    Raises
    ------
    ValueError
        As :class:`ProjectionLoss` and :meth:`ProjectionLoss.compositional`.
    """
    return ProjectionLoss(projection_set, geometry, event_ndim).compositional(theta, phi)


__all__ = [
    "ProjectionLoss",
    "compositional_loss",
    "loss_from_projection",
    "projection_loss",
    "projection_loss_and_grad",
]
