r"""The whole space :math:`\mathbb{R}^p` (no projection): the squared-loss baseline.

With the Euclidean geometry, :math:`P_{\mathbb{R}^p}(\theta) = \theta` and the projection
loss is the squared loss :math:`\tfrac12\|\varphi(y) - \theta\|^2` (paper §3). The KL
geometry is undefined here (:math:`\operatorname{dom}\Psi = \mathbb{R}^p_+`): use
:class:`~projloss.sets.nonneg.NonNegative` instead. :math:`\mathbb{R}^p` has no vertices, so
it cannot decode; pair it with a decoding set (paper Tables 1, 4, 6).
Points may have any trailing shape (vectors or ``k x k`` matrices): the set acts entrywise.

On arrays of any array-API library (PyTorch tensors, NumPy arrays), the projection is a
copy of :math:`\theta`, its Jacobian the identity; the MAP oracle raises as
:meth:`Reals.argmax` does.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_array
from .base import ConvexSet

_NO_VERTICES = (
    "R^p has no vertices (the linear maximization is unbounded): "
    "decode with a polytope instead (e.g. decoder=birkhoff)"
)


class Reals(ConvexSet):
    """:math:`\\mathbb{R}^p`: identity projection (Euclidean only).

    Examples
    --------
    >>> import numpy as np
    >>> s = Reals()
    >>> print(s.project(np.array([-1.5, 0.0, 2.0])))  # the identity
    [-1.5  0.   2. ]
    >>> print(s.contains(np.array([[1e6, -1e6]])))
    [ True]
    """

    name: ClassVar[str] = "reals"
    separable: ClassVar[bool] = True
    #: a superset of every encoding's labels; unbounded: no decoding
    encodings: ClassVar[tuple[str, ...]] = (
        "permutation_matrix",
        "permutahedron",
        "cumulative",
        "indicator",
        "one_hot",
    )
    geometries: ClassVar[tuple[str, ...]] = ("euclidean",)
    geometry_hint: ClassVar[str] = (
        ". The KL geometry is undefined on R^p (the domain of Psi(u) = <u, log u> is R^p_+): "
        "use the 'nonneg' set (R^p_+) for a KL projection without constraints"
    )

    def _project_euclidean(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return theta.copy()

    def _argmax(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        raise ValueError(_NO_VERTICES)

    def _xp_project(self, theta: Any, geometry: str, xp: Any) -> Any:
        # A copy, as the engine returns one (the caller may write into the result).
        return xp.asarray(theta, copy=True)

    def _xp_project_jvp(self, theta: Any, u: Any, tangent: Any, geometry: str, xp: Any) -> Any:
        return xp.asarray(tangent, copy=True)

    def _xp_argmax(self, theta: Any, xp: Any) -> Any:
        raise ValueError(_NO_VERTICES)

    def encode(self, y: ArrayLike, k: int | None = None) -> NDArray[np.float64]:
        """The identity (the set's structures are its points).

        Parameters
        ----------
        y : array-like of shape (..., p)
            Points.
        k : int or None, default=None
            Ignored: the size is ``y``'s.

        Returns
        -------
        ndarray of shape y.shape, dtype float64
            ``y`` as a float64 array.

        Raises
        ------
        ValueError
            If ``y`` is not a finite numeric array of at least one axis.
        """
        return check_array(y, name="y")

    def _xp_decode(self, v: Any, xp: Any) -> Any:
        """The identity (the set's structures are its points)."""
        return v

    def decode(self, v: ArrayLike) -> NDArray[np.float64]:
        """The identity (no decoding: :math:`\\mathbb{R}^p` has no MAP oracle).

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
        """Not available: :math:`\\mathbb{R}^p` has no vertices.

        Parameters
        ----------
        k : int
            The size (unused).

        Raises
        ------
        ValueError
            Always.
        """
        raise ValueError("R^p has no vertices")

    def _contains(self, u: NDArray[np.float64], atol: float) -> NDArray[np.bool_]:
        return np.ones(u.shape[:-1], dtype=bool)
