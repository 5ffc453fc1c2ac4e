r"""The non-negative orthant :math:`\mathbb{R}^p_+` (the KL baseline).

- Euclidean: :math:`P(\theta) = \max(\theta, 0)`.
- KL: :math:`P(\theta) = e^{\theta - 1}` (:math:`\mathbb{R}^p_+ = \operatorname{dom}\Psi`,
  so the KL projection is :math:`\nabla\Psi^*` itself; paper §3 and Table 2, column
  :math:`\mathbb{R}^{k\times k}_+`).

Unbounded: no vertices and no MAP. Points may have any trailing shape.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_array
from .base import ConvexSet


class NonNegative(ConvexSet):
    """:math:`\\mathbb{R}^p_+`."""

    name: ClassVar[str] = "nonneg"

    def _project_euclidean(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.maximum(theta, 0.0)

    def _project_kl(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        # Overflows to inf only when theta > ~710: the orthant is unbounded, so the
        # projection itself is that large.
        with np.errstate(over="ignore"):
            return np.exp(theta - 1.0)

    def _argmax(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        raise ValueError(
            "R^p_+ has no bounded maximizer (the linear maximization is unbounded): "
            "decode with a polytope instead"
        )

    def encode(self, y: ArrayLike, k: int | None = None) -> NDArray[np.float64]:
        arr = check_array(y, name="y")
        if np.any(arr < 0):
            raise ValueError("y must be non-negative to lie in R^p_+")
        return arr

    def decode(self, v: ArrayLike) -> NDArray[np.float64]:
        return check_array(v, name="v")

    def vertices(self, k: int) -> NDArray[np.float64]:
        raise ValueError("R^p_+ is unbounded and has no vertices other than 0")

    def _contains(self, u: NDArray[np.float64], atol: float) -> NDArray[np.bool_]:
        return np.all(u >= -atol, axis=-1)
