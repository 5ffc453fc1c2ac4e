r"""The unit cube :math:`[0,1]^p` (paper §4, "Unit cube").

The marginal polytope of multilabel classification (:math:`\varphi(y)` = label indicator
vector) and a cheap superset of every 0/1 polytope (knapsack, order simplex, Birkhoff).

- Euclidean: coordinate-wise clipping :math:`\min(\max(\theta, 0), 1)`.
- KL: :math:`\min(1, e^{\theta - 1})`.
- MAP: :math:`v_i = 1[\theta_i > 0]`.

:class:`UnitCube` acts on vectors ``(..., p)``; :class:`MatrixCube` is the same set for
``k x k`` matrices (``[0,1]^{k x k}``, the cheapest superset of the Birkhoff polytope in
the paper's Tables 1-2). Both are O(p), fully vectorized.

On arrays of any array-API library (PyTorch tensors, NumPy arrays) the same closed forms
run elementwise on the array's device and in its dtype, with the Jacobians
:math:`J t = 1[0 < \theta < 1] \odot t` (Euclidean) and
:math:`J t = 1[\theta < 1] \odot e^{\theta - 1} \odot t` (KL); at a kink
(:math:`\theta_i \in \{0, 1\}`, resp. :math:`\theta_i = 1`) they are the Jacobian of the
face :math:`u` lies on (the coordinate is held at its bound: 0).
"""

from __future__ import annotations

import itertools
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._fastexp import exp_fast
from .._numba import kernel
from .base import ConvexSet, check_binary, event_axes


@kernel
def _clip01(x, out):
    # out = min(max(x, 0), 1), entry by entry; returns the number of non-finite entries
    # (|x| < inf is False for inf and NaN), counted in the same vectorized pass.
    bad = 0
    for i in range(x.size):
        v = x[i]
        bad += 0 if abs(v) < np.inf else 1
        out[i] = min(max(v, 0.0), 1.0)
    return bad


@kernel
def _cube_kl(x, out):
    # out = exp(min(x - 1, 0)) (vectorized exp_fast; never overflows), non-finite count
    # as above.
    bad = 0
    for i in range(x.size):
        v = x[i]
        bad += 0 if abs(v) < np.inf else 1
        out[i] = exp_fast(min(v - 1.0, 0.0))
    return bad


def project_cube(theta: NDArray[np.float64], kl: bool) -> NDArray[np.float64] | None:
    """Euclidean (``min(max(theta, 0), 1)``) or KL (``exp(min(theta - 1, 0))``)
    projection onto the cube, entry by entry, in one compiled pass that also checks
    that every entry is finite (``None`` if one is not). The exponential is
    :func:`projloss._fastexp.exp_fast` (vectorized, within 2 ulp of the C library's)."""
    x = np.ascontiguousarray(theta).reshape(-1)
    out = np.empty(theta.shape)
    flat = out.reshape(-1)
    if (_cube_kl if kl else _clip01)(x, flat):
        return None
    return out


class UnitCube(ConvexSet):
    """:math:`[0,1]^p`.

    Examples
    --------
    >>> import numpy as np
    >>> s = UnitCube()
    >>> theta = np.array([-0.5, 0.3, 1.7])
    >>> print(s.project(theta), np.round(s.project(theta, "kl"), 6))
    [0.  0.3 1. ] [0.22313  0.496585 1.      ]
    >>> print(s.argmax(theta), s.decode(s.argmax(theta)))
    [0. 1. 1.] [0 1 1]
    """

    name: ClassVar[str] = "unit_cube"
    separable: ClassVar[bool] = True
    encodings: ClassVar[tuple[str, ...]] = ("cumulative", "indicator", "one_hot")
    decodes: ClassVar[tuple[str, ...]] = ("indicator",)
    fused_check: ClassVar[tuple[str, ...]] = ("euclidean", "kl")

    def _project_fused(self, theta: NDArray[np.float64], geometry: str) -> NDArray | None:
        return project_cube(theta, geometry == "kl")

    def _project_euclidean(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.clip(theta, 0.0, 1.0)

    def _project_kl(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        # exp(min(theta - 1, 0)) == min(1, exp(theta - 1)) without overflow.
        return np.exp(np.minimum(theta - 1.0, 0.0))

    def _argmax(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return (theta > 0).astype(np.float64)

    def _xp_project(self, theta: Any, geometry: str, xp: Any) -> Any:
        if geometry == "euclidean":
            return xp.clip(theta, min=0.0, max=1.0)
        # exp(min(theta - 1, 0)) == min(1, exp(theta - 1)) without overflow.
        return xp.exp(xp.minimum(theta - 1.0, 0.0))

    def _xp_project_jvp(self, theta: Any, u: Any, tangent: Any, geometry: str, xp: Any) -> Any:
        free = (theta > 0) & (theta < 1) if geometry == "euclidean" else theta < 1
        return xp.where(free, u * tangent if geometry == "kl" else tangent, xp.zeros_like(u))

    def _xp_argmax(self, theta: Any, xp: Any) -> Any:
        # 1[theta > 0]: an entry at 0 is not taken, as in the engine.
        return xp.astype(theta > 0, theta.dtype)

    def encode(self, y: ArrayLike, k: int | None = None) -> NDArray[np.float64]:
        """The identity on 0/1 indicators: a 0/1 vector (matrix) is its own encoding.

        Parameters
        ----------
        y : array-like of shape (..., p) or (..., k, k)
            0/1 indicators (label indicator vectors; 0/1 matrices for the
            :class:`MatrixCube`).
        k : int or None, default=None
            Ignored: the size is ``y``'s.

        Returns
        -------
        ndarray of shape y.shape, dtype float64
            ``y`` as float64.

        Raises
        ------
        ValueError
            If ``y`` is a scalar or holds values other than 0 and 1, or (matrix cube) is
            not of shape ``(..., k, k)``.
        """
        arr = check_binary(y)
        if self.matrix and (arr.ndim < 2 or arr.shape[-1] != arr.shape[-2]):
            raise ValueError(f"y must have shape (..., k, k), got {arr.shape}")
        return arr

    def _xp_decode(self, v: Any, xp: Any) -> Any:
        """0/1 -> int64 indicators, on ``v``'s device."""
        return xp.astype(v, xp.int64)

    def decode(self, v: ArrayLike) -> NDArray[np.int64]:
        """The indicators of 0/1 vertices, as integers.

        Parameters
        ----------
        v : array-like of shape (..., p) or (..., k, k)
            Vertices of the cube (0/1 entries).

        Returns
        -------
        ndarray of shape v.shape, dtype int64
            The 0/1 indicators.

        Raises
        ------
        ValueError
            If ``v`` is a scalar or holds values other than 0 and 1.
        """
        return check_binary(v, name="v").astype(np.int64)

    def vertices(self, k: int) -> NDArray[np.float64]:
        """All ``2**p`` 0/1 points, ``p = k`` (``k * k`` for the :class:`MatrixCube`).

        Parameters
        ----------
        k : int
            The size (small: ``2**p`` vertices).

        Returns
        -------
        ndarray of shape (``2**p``, ``*event_shape(k)``), dtype float64
            The vertices, in lexicographic order of their flattened entries.
        """
        p = k * k if self.matrix else k
        verts = np.array(list(itertools.product([0.0, 1.0], repeat=p)))
        return verts.reshape((-1, *self.event_shape(k)))

    def _contains(self, u: NDArray[np.float64], atol: float) -> NDArray[np.bool_]:
        ax = event_axes(self.matrix)
        return np.all((u >= -atol) & (u <= 1 + atol), axis=ax)


class MatrixCube(UnitCube):
    """:math:`[0,1]^{k\\times k}`: the unit cube for ``k x k`` matrices.

    Examples
    --------
    >>> import numpy as np
    >>> s = MatrixCube()
    >>> print(s.project(np.array([[2.0, -1.0], [0.5, 0.25]])))
    [[1.   0.  ]
     [0.5  0.25]]
    >>> print(s.vertices(2).shape)
    (16, 2, 2)
    """

    name: ClassVar[str] = "cube"
    matrix: ClassVar[bool] = True
    encodings: ClassVar[tuple[str, ...]] = ("permutation_matrix",)
    decodes: ClassVar[tuple[str, ...]] = ("permutation_matrix",)
