r"""The non-negative orthant :math:`\mathbb{R}^p_+` (the KL baseline).

- Euclidean: :math:`P(\theta) = \max(\theta, 0)`.
- KL: :math:`P(\theta) = e^{\theta - 1}` (:math:`\mathbb{R}^p_+ = \operatorname{dom}\Psi`,
  so the KL projection is :math:`\nabla\Psi^*` itself; paper §3 and Table 2, column
  :math:`\mathbb{R}^{k\times k}_+`).

Unbounded: no vertices and no MAP. Points may have any trailing shape.

The KL projection :math:`e^{\theta - 1}` is not representable in float64 for
:math:`\theta > 1 + \log(\text{max float}) \approx 710.78` (:data:`KL_THETA_MAX`): such
input is refused with a ``ValueError`` naming the limit rather than returned as ``inf``.

On arrays of any array-API library (PyTorch tensors, NumPy arrays) the same closed forms
run elementwise on the array's device and in its dtype; there, checking for overflow would
cost a device-to-host synchronization, so :math:`e^{\theta - 1}` is returned as ``inf``
beyond the dtype's limit (:math:`\theta > 1 + \log(\text{max float})`: about 710.78 in
float64, 89.72 in float32). Jacobians: :math:`J t = 1[\theta > 0] \odot t` (Euclidean;
0 at the kink :math:`\theta_i = 0`, the face :math:`u_i = 0`) and
:math:`J t = e^{\theta - 1} \odot t` (KL).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_array
from .base import ConvexSet

#: Largest theta whose KL projection e^{theta - 1} is a finite float64 (~710.78).
KL_THETA_MAX = 1.0 + float(np.log(np.finfo(np.float64).max))

_NO_MAXIMIZER = (
    "R^p_+ has no bounded maximizer (the linear maximization is unbounded): "
    "decode with a polytope instead"
)


class NonNegative(ConvexSet):
    """:math:`\\mathbb{R}^p_+`.

    Examples
    --------
    >>> import numpy as np
    >>> s = NonNegative()
    >>> print(s.project(np.array([-1.5, 0.0, 2.0])))
    [0. 0. 2.]
    >>> print(np.round(s.project(np.array([-1.5, 0.0, 2.0]), "kl"), 6))  # exp(theta - 1)
    [0.082085 0.367879 2.718282]
    """

    name: ClassVar[str] = "nonneg"
    separable: ClassVar[bool] = True
    #: a superset of every encoding's labels (all are nonnegative); unbounded: no decoding
    encodings: ClassVar[tuple[str, ...]] = (
        "permutation_matrix",
        "permutahedron",
        "cumulative",
        "indicator",
        "one_hot",
    )

    def _project_euclidean(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.maximum(theta, 0.0)

    def _project_kl(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        # The orthant is unbounded: the projection itself is e^{theta - 1}, which overflows
        # float64 beyond KL_THETA_MAX -- refuse rather than return inf.
        if theta.size and theta.max() > KL_THETA_MAX:
            raise ValueError(
                f"the KL projection onto R^p_+ is exp(theta - 1), which overflows float64 "
                f"for theta > {KL_THETA_MAX:.2f}; got max theta = {theta.max():.6g}: scale "
                "theta down, or project onto a bounded set (e.g. 'unit_cube')"
            )
        with np.errstate(over="ignore"):  # (theta - 1 can round up to the limit)
            out = np.exp(theta - 1.0)
        if not np.all(np.isfinite(out)):
            raise ValueError(
                f"the KL projection onto R^p_+ overflows float64 for theta > "
                f"{KL_THETA_MAX:.2f}; scale theta down"
            )
        return out

    def _argmax(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        raise ValueError(_NO_MAXIMIZER)

    def _xp_project(self, theta: Any, geometry: str, xp: Any) -> Any:
        if geometry == "euclidean":
            return xp.maximum(theta, 0.0)
        return xp.exp(theta - 1.0)

    def _xp_project_jvp(self, theta: Any, u: Any, tangent: Any, geometry: str, xp: Any) -> Any:
        if geometry == "euclidean":
            return xp.where(theta > 0, tangent, xp.zeros_like(tangent))
        return u * tangent

    def _xp_argmax(self, theta: Any, xp: Any) -> Any:
        raise ValueError(_NO_MAXIMIZER)

    def encode(self, y: ArrayLike, k: int | None = None) -> NDArray[np.float64]:
        """The identity on nonnegative points (the set's structures are its points).

        Parameters
        ----------
        y : array-like of shape (..., p)
            Nonnegative points.
        k : int or None, default=None
            Ignored: the size is ``y``'s.

        Returns
        -------
        ndarray of shape y.shape, dtype float64
            ``y`` as a float64 array.

        Raises
        ------
        ValueError
            If ``y`` is not a finite numeric array of at least one axis, or has a
            negative entry.
        """
        arr = check_array(y, name="y")
        if np.any(arr < 0):
            raise ValueError("y must be non-negative to lie in R^p_+")
        return arr

    def _xp_decode(self, v: Any, xp: Any) -> Any:
        """The identity (the set's structures are its points)."""
        return v

    def decode(self, v: ArrayLike) -> NDArray[np.float64]:
        """The identity (no decoding: the orthant is unbounded and has no MAP oracle).

        Parameters
        ----------
        v : array-like of shape (..., p)
            Points.

        Returns
        -------
        ndarray of shape v.shape, dtype float64
            ``v`` as a float64 array.

        Raises
        ------
        ValueError
            If ``v`` is not a finite numeric array of at least one axis.
        """
        return check_array(v, name="v")

    def vertices(self, k: int) -> NDArray[np.float64]:
        """Not available: :math:`\\mathbb{R}^p_+` is unbounded (its only vertex is 0).

        Parameters
        ----------
        k : int
            The size (unused).

        Raises
        ------
        ValueError
            Always.
        """
        raise ValueError("R^p_+ is unbounded and has no vertices other than 0")

    def _contains(self, u: NDArray[np.float64], atol: float) -> NDArray[np.bool_]:
        return np.all(u >= -atol, axis=-1)
