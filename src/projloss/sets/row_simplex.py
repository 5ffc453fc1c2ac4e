r"""Row-stochastic matrices :math:`\triangle^{k\times k}` (paper §4, "Birkhoff polytope").

:math:`\triangle^{k\times k} = \triangle^k \times\dots\times \triangle^k =
\{P \in \mathbb{R}^{k\times k} : P\mathbf{1} = \mathbf{1}, P \ge 0\}`, the Cartesian product
of :math:`k` simplices: a strict superset of the Birkhoff polytope and a strict subset of
the cube :math:`[0,1]^{k\times k}` (Blondel et al. 2018; Nowak et al. 2019). Projections
split into one simplex projection per row:

- Euclidean: row-wise sparsemax, :math:`O(k^2\log k)`;
- KL: row-wise softmax, :math:`O(k^2)`;
- MAP: row-wise one-hot argmax (ties: first index).

The array-API oracles (PyTorch tensors, NumPy arrays) are the simplex's
(:func:`~projloss.sets.simplex.xp_sparsemax`, :func:`~projloss.sets.simplex.xp_softmax`,
their Jacobian-vector products, which act row by row -- the Jacobian is block diagonal,
one simplex block per row -- and :func:`~projloss.sets.simplex.xp_one_hot_argmax`).

A batch ``(..., k, k)`` is simply a batch ``(..., k)`` of rows for the functions of
:mod:`projloss.sets.simplex`, so everything is vectorized over samples and rows.

Encoding: ``y`` of shape ``(..., k)`` with integer entries in ``[0, k)``; row ``i`` of
:math:`\varphi(y)` has its 1 in column ``y[i]``. A permutation given as
``y[rank] = label`` thus maps to the permutation matrix ``Y[rank, label]`` (the label
ranking encoding); any map ``[k] -> [k]`` is a vertex here, not only permutations.
"""

from __future__ import annotations

import itertools
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .base import ConvexSet
from .jacobians import Jacobians
from .simplex import (
    _check_k,
    check_labels,
    decode_one_hot,
    one_hot,
    one_hot_argmax,
    project_simplex,
    simplex_jacobians,
    softmax,
    xp_one_hot_argmax,
    xp_softmax,
    xp_softmax_jvp,
    xp_sparsemax,
    xp_sparsemax_jvp,
)


class RowSimplex(ConvexSet):
    r""":math:`\triangle^{k\times k}`: row-stochastic ``k x k`` matrices.

    Examples
    --------
    >>> import numpy as np
    >>> s = RowSimplex()
    >>> theta = np.array([[1.0, 0.0, 0.2], [0.0, 3.0, 0.0], [0.4, 0.5, 0.6]])
    >>> print(np.round(s.project(theta), 6))  # one sparsemax per row
    [[0.9      0.       0.1     ]
     [0.       1.       0.      ]
     [0.233333 0.333333 0.433333]]
    >>> print(s.decode(s.argmax(theta)))  # the column of each row's maximum
    [0 1 2]
    """

    name: ClassVar[str] = "row_simplex"
    matrix: ClassVar[bool] = True
    encodings: ClassVar[tuple[str, ...]] = ("permutation_matrix",)
    decodes: ClassVar[tuple[str, ...]] = ("permutation_matrix",)

    def projection_jacobians(
        self,
        theta: NDArray[np.float64],
        u: NDArray[np.float64],
        geometry: str,
        event_shape: tuple[int, ...],
    ) -> Jacobians | None:
        """One simplex per row: :func:`~projloss.sets.simplex.simplex_jacobians`.

        Parameters
        ----------
        theta : ndarray of shape (n, k * k), dtype float64
            The scores, one flattened ``k x k`` matrix per row.
        u : ndarray of shape (n, k * k), dtype float64
            Their projections, flattened the same way.
        geometry : {"euclidean", "kl"}
            The geometry of the projection.
        event_shape : tuple of int
            ``(k, k)``.

        Returns
        -------
        DiagonalMinusRankOne
            Block diagonal: ``k`` blocks (one per row of the matrix), each the simplex's
            diagonal minus rank one.
        """
        return simplex_jacobians(theta, u, event_shape[-1], geometry)

    def cheap_jacobians(self, geometry: str) -> bool:
        """Always: one diagonal-minus-rank-one block per row, ``O(k^2)`` per sample.

        Parameters
        ----------
        geometry : {"euclidean", "kl"}
            The geometry of the projection (either).

        Returns
        -------
        bool
            True.
        """
        return True

    def _project_euclidean(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return project_simplex(theta, axis=-1)

    def _project_kl(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return softmax(theta, axis=-1)

    def _argmax(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return one_hot_argmax(theta)

    def _xp_project(self, theta: Any, geometry: str, xp: Any) -> Any:
        if geometry == "euclidean":
            return xp_sparsemax(xp, theta, axis=-1)
        return xp_softmax(xp, theta, axis=-1)

    def _xp_project_jvp(self, theta: Any, u: Any, tangent: Any, geometry: str, xp: Any) -> Any:
        if geometry == "euclidean":
            return xp_sparsemax_jvp(xp, u, tangent, axis=-1)
        return xp_softmax_jvp(xp, u, tangent, axis=-1)

    def _xp_argmax(self, theta: Any, xp: Any) -> Any:
        return xp_one_hot_argmax(xp, theta)

    def encode(self, y: ArrayLike, k: int | None = None) -> NDArray[np.float64]:
        """Row one-hot matrices ``(..., k, k)`` from ``y`` of shape ``(..., k)``.

        Parameters
        ----------
        y : array-like of int, shape (..., k)
            The column ``y[..., i]`` in ``[0, k)`` of row ``i``'s 1 (a permutation
            ``y[rank] = label`` gives its permutation matrix).
        k : int or None, default=None
            The size; ``None``: ``y.shape[-1]``, which it must equal otherwise.

        Returns
        -------
        ndarray of shape (..., k, k), dtype float64
            The row one-hot matrices.

        Raises
        ------
        ValueError
            If ``y`` is a scalar or has an empty last axis, if ``k`` is given and differs
            from ``y.shape[-1]`` (or is not a positive integer), or if ``y`` holds
            non-integer values or entries outside ``[0, k)``.
        """
        arr = np.asarray(y)
        if arr.ndim < 1:
            raise ValueError("y must have shape (..., k) (one column index per row), got a scalar")
        size = arr.shape[-1]
        if size < 1:
            raise ValueError(f"y must have at least one entry on its last axis, got {arr.shape}")
        if k is not None and _check_k(k) != size:
            raise ValueError(f"y must have shape (..., k) with k = {k}, got shape {arr.shape}")
        return one_hot(check_labels(arr, size), size)

    def _xp_decode(self, v: Any, xp: Any) -> Any:
        """Row one-hot -> column per row (int64), on ``v``'s device."""
        return xp.argmax(v, axis=-1)

    def decode(self, v: ArrayLike) -> NDArray[np.int64]:
        """Column of the 1 of each row: ``(..., k, k)`` row one-hot matrices -> ``(..., k)``.

        Parameters
        ----------
        v : array-like of shape (..., k, k)
            Row one-hot 0/1 matrices (exactly one 1 per row).

        Returns
        -------
        ndarray of shape (..., k), dtype int64
            The column of each row's 1 (any map ``[k] -> [k]``, not only permutations).

        Raises
        ------
        ValueError
            If ``v`` is not of shape ``(..., k, k)`` or a row is not one-hot.
        """
        arr = np.asarray(v)
        if arr.ndim < 2 or arr.shape[-1] != arr.shape[-2]:
            raise ValueError(f"v must have shape (..., k, k), got {arr.shape}")
        return decode_one_hot(arr)

    def vertices(self, k: int) -> NDArray[np.float64]:
        """All ``k**k`` row one-hot matrices, shape ``(k**k, k, k)``.

        Parameters
        ----------
        k : int
            The side of the matrices (``k**k`` vertices: small ``k`` only).

        Returns
        -------
        ndarray of shape (k**k, k, k), dtype float64
            The vertices, in lexicographic order of their column indices.

        Raises
        ------
        ValueError
            If ``k`` is not a positive integer.
        """
        k = _check_k(k)
        cols = np.array(list(itertools.product(range(k), repeat=k)), dtype=np.int64)
        return one_hot(cols, k)

    def _contains(self, u: NDArray[np.float64], atol: float) -> NDArray[np.bool_]:
        rows_ok = np.all(u >= -atol, axis=-1) & (np.abs(u.sum(axis=-1) - 1.0) <= atol)
        return np.all(rows_ok, axis=-1)
