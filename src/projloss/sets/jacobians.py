r"""The Jacobians of a set's projection, for second-order solvers (the Newton method of
:mod:`projloss.estimators._newton`).

A Bregman projection :math:`P = \nabla\Omega^*` is piecewise smooth; its (generalized)
Jacobian :math:`J_P(\theta)` is symmetric positive semidefinite. A set gives the
Jacobians of a batch of rows in :meth:`projloss.sets.base.ConvexSet.projection_jacobians`,
in one of three layouts (the cheapest that is exact):

- a diagonal ``(n, p)`` (separable sets: the box, the orthant, :math:`\mathbb{R}^p`);
- :class:`DiagonalMinusRankOne` (the simplex, the row simplex, the Euclidean knapsack
  polytope): ``O(n p)`` whatever ``p``;
- dense ``(n, p, p)`` matrices (the Euclidean permutahedron and order simplex).

At a kink (``theta`` on the boundary between two pieces) a set returns the element of
the generalized Jacobian with the largest rank (the curvature of the piece the sample is
about to enter): with a smaller one the Newton steps stall there (the regularizer pushes
many samples exactly onto the kink of their zero-loss region). Values within
:func:`merge_tol` of each other count as tied.

Examples
--------
>>> import numpy as np
>>> J = DiagonalMinusRankOne(np.array([[1.0, 1.0]]), np.array([[0.5, 0.5]]) ** 0.5)
>>> print(J.dense()[0])
[[ 0.5 -0.5]
 [-0.5  0.5]]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
from numpy.typing import NDArray

#: values of a projection (pools of an isotonic regression, a simplex's threshold) that
#: differ by at most this, relative to ``1 + max |theta|``, are merged in the Jacobian
#: (:func:`merge_tol`)
MERGE = 1e-9


def merge_tol(theta: NDArray[np.float64]) -> float:
    """The tie tolerance of the Jacobians at the rows ``theta``: :data:`MERGE` times
    ``1 + max |theta|``.

    Parameters
    ----------
    theta : ndarray of shape (n, p), dtype float64
        The rows the Jacobians are taken at (any shape: only ``max |theta|`` counts).

    Returns
    -------
    float
        The absolute tolerance under which two values count as tied.
    """
    return MERGE * (1.0 + float(np.abs(theta).max()))


@dataclass
class DiagonalMinusRankOne:
    r"""Jacobians :math:`J_i = \mathrm{diag}(d_i) - \sum_r v_{ir} v_{ir}^\top`, ``d`` and
    ``v`` of shape ``(n, p)``, the outputs cut into ``blocks`` consecutive blocks of equal
    size and :math:`v_{ir}` the part of :math:`v_i` on block ``r`` (zero elsewhere): the
    Euclidean knapsack polytope's (one block,
    :func:`projloss.sets.knapsack.knapsack_jacobians`), the simplex's and the row
    simplex's (one block per row, :func:`projloss.sets.simplex.simplex_jacobians`).

    Parameters
    ----------
    d : ndarray of shape (n, p), dtype float64
        The diagonals :math:`d_i`.
    v : ndarray of shape (n, p), dtype float64
        The vectors :math:`v_i`, cut into ``blocks`` blocks of ``p // blocks`` outputs.
    blocks : int, default=1
        The number of consecutive blocks of equal size (each with its own rank-one term);
        must divide ``p``.
    """

    d: NDArray[np.float64]
    v: NDArray[np.float64]
    blocks: int = 1

    def apply(self, T: NDArray[np.float64]) -> NDArray[np.float64]:
        """``J_i t_i`` for the rows ``t_i`` of ``T`` ``(n, p)``: ``O(n p)``.

        Parameters
        ----------
        T : ndarray of shape (n, p), dtype float64
            One vector :math:`t_i` per sample.

        Returns
        -------
        ndarray of shape (n, p), dtype float64
            The products :math:`J_i t_i`, row by row.
        """
        if self.blocks == 1:
            return self.d * T - self.v * np.sum(self.v * T, axis=1, keepdims=True)
        n, p = T.shape
        V = self.v.reshape(n, self.blocks, -1)
        dots = np.sum(V * T.reshape(V.shape), axis=2, keepdims=True)
        return self.d * T - (V * dots).reshape(n, p)

    def dense(self) -> NDArray[np.float64]:
        """The ``(n, p, p)`` matrices (for tests).

        Returns
        -------
        ndarray of shape (n, p, p), dtype float64
            The dense Jacobians :math:`J_i`.
        """
        n, p = self.d.shape
        J = np.zeros((n, p, p))
        J[:, np.arange(p), np.arange(p)] = self.d
        size = p // self.blocks
        for r in range(self.blocks):
            b = slice(r * size, (r + 1) * size)
            J[:, b, b] -= self.v[:, b, None] * self.v[:, None, b]
        return J


#: the Jacobians of a batch of ``n`` rows of ``p`` outputs: diagonals ``(n, p)``,
#: :class:`DiagonalMinusRankOne` or matrices ``(n, p, p)``
Jacobians: TypeAlias = "NDArray[np.float64] | DiagonalMinusRankOne"

__all__ = ["MERGE", "DiagonalMinusRankOne", "Jacobians", "merge_tol"]
