r"""The order simplex, for ordinal regression with ``k`` classes (paper §4, Prop. 4).

.. math:: \mathcal M = \operatorname{conv}(0, e_1, e_1 + e_2, \dots, e_1 + \dots + e_{k-1})
          = \{\mu \in \mathbb R^{k-1} : 1 \ge \mu_1 \ge \dots \ge \mu_{k-1} \ge 0\},

with the all-threshold encoding :math:`\varphi(y) = \sum_{i < y} e_i` of the classes
:math:`y \in \{1, \dots, k\}`. **Size convention**: the size ``k`` of ``vertices(k)``,
``encode(y, k)`` and ``event_shape(k)`` is the number of classes; points (and ``theta``)
have ``k - 1`` coordinates.

Oracles (``iso`` = decreasing Euclidean isotonic regression, :mod:`projloss.isotonic`):

- Euclidean: :math:`P(\theta) = \operatorname{clip}(\operatorname{iso}(\theta), 0, 1)`
  (isotonic regression with bounds, Best & Chakravarti 1990). *Why clipping is exact*, for
  any separable objective :math:`\sum_i f_i(\mu_i)` with :math:`f_i` convex: let
  :math:`\mu^\star` be the minimizer over the decreasing cone :math:`K`, with pools
  :math:`B` on which :math:`\sum_{i\in B} f_i'(\mu^\star_i) = 0`, and let
  :math:`g = \nabla f(\mu^\star)`. Since :math:`K` is a cone, optimality
  (:math:`\langle g, x - \mu^\star\rangle \ge 0` for :math:`x \in K`, with
  :math:`x = 0, 2\mu^\star`) gives :math:`\langle g, x\rangle \ge 0` on :math:`K`. Let
  :math:`u = \operatorname{clip}(\mu^\star, 0, 1) \in \mathcal M` and :math:`z \in \mathcal
  M`. Then :math:`\langle \nabla f(u), z - u\rangle = \langle g, z\rangle - \langle g,
  u\rangle + \langle \nabla f(u) - g, z - u\rangle`: the first term is :math:`\ge 0`; the
  second is 0 because :math:`u` is constant on each pool; in the third, each coordinate
  is 0 where :math:`u = \mu^\star`, and where :math:`\mu^\star_i > 1` (resp. :math:`< 0`),
  :math:`f_i'(u_i) - f_i'(\mu^\star_i) \le 0` and :math:`z_i - u_i = z_i - 1 \le 0` (resp.
  both :math:`\ge 0`). So :math:`u` satisfies the optimality condition on
  :math:`\mathcal M`.
- KL, :math:`\operatorname{argmin}_{\mu \in \mathcal M} \sum_i \mu_i \log \mu_i -
  \mu_i\theta_i` (= :math:`KL(\mu, e^{\theta - 1})` + const): on a pool :math:`B` the
  minimizer of :math:`\sum_{i\in B} \mu\log\mu - \mu\theta_i` is
  :math:`\mu_B = e^{\bar\theta_B - 1}` (:math:`\bar\theta_B` the mean), a strictly
  increasing function of the Euclidean pool value :math:`\bar\theta_B`. Pool adjacent
  violators only compares pool values, so it forms the same pools as for
  :math:`\operatorname{iso}(\theta)`: the minimizer over the decreasing cone is
  :math:`e^{\operatorname{iso}(\theta) - 1} > 0` (no lower bound active). By the clipping
  argument above, :math:`P(\theta) = \min(1, e^{\operatorname{iso}(\theta) - 1}) =
  e^{\min(\operatorname{iso}(\theta) - 1, 0)}` (no overflow).
- MAP: the scores :math:`s_y = \langle\theta, \varphi(y)\rangle = \sum_{i<y}\theta_i` for
  :math:`y = 1..k` are cumulative sums; return :math:`\varphi(\operatorname{argmax}_y s_y)`
  (ties: the smallest :math:`y`).

All oracles are :math:`O(k)`, batched without a Python loop over samples: the
projections run pool adjacent violators (:mod:`projloss.isotonic`) and the clipping in
one compiled pass per row (:mod:`projloss._numba`).

Array-API oracles (PyTorch tensors on the CPU or a GPU, float32 or float64, NumPy
arrays; :meth:`~projloss.sets.base.ConvexSet.xp_project`): the same formulas, with
:math:`\operatorname{iso}` solved by pool adjacent violators *by rounds*
(:func:`projloss.isotonic.xp_pav_euclidean`: every round merges all adjacent violating
pools of every row at once; a few rounds on random inputs, 6-7 measured at
:math:`k = 10` and 11-12 at :math:`k = 100` on :math:`n = 10^5` normal rows, 3 and 6
per row on average; at most :math:`k - 2`, so :math:`O(k^2)` per row in the worst case
against :math:`O(k)` for the engine's stack). Float32 keeps the accuracy of float32 pool
means, about :math:`10^{-7}\max(1, |\theta|)`. The Jacobian is the block structure of
the pools (Blondel, Teboul, Berthet & Djolonga 2020, "Fast differentiable sorting and
ranking", §4): :math:`\operatorname{iso}` averages a tangent :math:`t` over each pool,
and the clipping keeps the pools strictly inside the bounds,

.. math:: (J_P t)_i = 1[0 < v_i < 1]\, \operatorname{mean}_{B(i)}(t)
          \quad\text{(Euclidean)},\qquad
          (J_P t)_i = 1[v_i < 1]\, u_i \operatorname{mean}_{B(i)}(t)\quad\text{(KL)},

with :math:`v = \operatorname{iso}(\theta)` and :math:`B(i)` the pool of :math:`i`
(symmetric: :math:`u` and the mask are constant on a pool). At a kink (a pool exactly at a
bound) it is the Jacobian of the face :math:`u` lies on (the pool held at the bound: 0).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._numba import kernel
from .._validation import check_array
from .._xp import device
from ..isotonic import pav_decreasing, xp_pav_euclidean, xp_pool_mean
from .base import ConvexSet, check_binary
from .jacobians import Jacobians, merge_tol
from .simplex import as_rows


def _phi(y: NDArray[np.int64], k: int) -> NDArray[np.float64]:
    """:math:`\\varphi(y) = \\sum_{i<y} e_i \\in \\{0,1\\}^{k-1}` for labels in 1..k."""
    return (np.arange(1, k) < y[..., None]).astype(np.float64)


@kernel
def _project_rows(x, kl, out):
    # out[r] = clip(iso(x[r]), 0, 1) or exp(min(iso(x[r]) - 1, 0)), iso decreasing.
    n, k = x.shape
    ones = np.ones(k)
    v = np.empty(k)
    s1 = np.empty(k)
    s2 = np.empty(k)
    val = np.empty(k)
    start = np.empty(k, dtype=np.int64)
    for r in range(n):
        pav_decreasing(x[r], ones, v, s1, s2, val, start)
        for i in range(k):
            if kl:
                out[r, i] = np.exp(min(v[i] - 1.0, 0.0))
            else:
                out[r, i] = min(max(v[i], 0.0), 1.0)


def _project(theta: NDArray[np.float64], kl: bool) -> NDArray[np.float64]:
    x, shape = as_rows(theta)
    out = np.empty_like(x)
    if x.size:
        _project_rows(x, kl, out)
    return out.reshape(shape)


class OrderSimplex(ConvexSet):
    """The order simplex :math:`\\{1 \\ge \\mu_1 \\ge \\dots \\ge \\mu_{k-1} \\ge 0\\}`
    (``k`` classes, points in :math:`\\mathbb R^{k-1}`).

    Examples
    --------
    >>> import numpy as np
    >>> s = OrderSimplex()  # k = 4 classes: points in R^3
    >>> theta = np.array([0.8, 1.2, -0.5])
    >>> print(np.round(s.project(theta), 6))
    [1. 1. 0.]
    >>> print(np.round(s.project(theta, "kl"), 6))
    [1.      1.      0.22313]
    >>> print(s.argmax(theta), s.decode(s.argmax(theta)), s.encode(3, k=4))
    [1. 1. 0.] 3 [1. 1. 0.]

    The array-API oracles (here on NumPy; the same on torch tensors, CPU or GPU): the
    first two coordinates form one pool inside the bounds, so the Jacobian averages them.

    >>> theta = np.array([0.2, 0.6, 0.1])
    >>> u = s.xp_project(theta)
    >>> print(u, s.xp_project_jvp(theta, u, np.array([1.0, 0.0, 0.0])), s.xp_argmax(theta))
    [0.4 0.4 0.1] [0.5 0.5 0. ] [1. 1. 1.]
    """

    name: ClassVar[str] = "order_simplex"
    encodings: ClassVar[tuple[str, ...]] = ("cumulative",)
    decodes: ClassVar[tuple[str, ...]] = ("cumulative",)

    def projection_jacobians(
        self,
        theta: NDArray[np.float64],
        u: NDArray[np.float64],
        geometry: str,
        event_shape: tuple[int, ...],
    ) -> Jacobians | None:
        """Euclidean: :func:`order_simplex_jacobians` (exact, ``(n, p, p)``); KL: none.

        Parameters
        ----------
        theta : ndarray of shape (n, k - 1), dtype float64
            The scores, one point per row.
        u : ndarray of shape (n, k - 1), dtype float64
            Their projections.
        geometry : {"euclidean", "kl"}
            The geometry of the projection.
        event_shape : tuple of int
            ``(k - 1,)``.

        Returns
        -------
        ndarray of shape (n, k - 1, k - 1), dtype float64, or None
            Euclidean: the dense Jacobians (pool averaging inside the bounds, ties within
            :func:`~projloss.sets.jacobians.merge_tol` merged); KL: ``None`` (finite
            differences).
        """
        if geometry != "euclidean":
            return None
        return order_simplex_jacobians(theta, u, merge_tol(theta))

    def event_shape(self, k: int) -> tuple[int, ...]:
        """Points of the order simplex for ``k`` classes have ``k - 1`` coordinates.

        Parameters
        ----------
        k : int
            The number of classes (at least 2).

        Returns
        -------
        tuple of int
            ``(k - 1,)``.

        Raises
        ------
        ValueError
            If ``k`` is not an integer of at least 2.
        """
        self._check_classes(k)
        return (k - 1,)

    @staticmethod
    def _check_classes(k: int) -> None:
        if int(k) != k or k < 2:
            raise ValueError(f"the order simplex needs k >= 2 classes, got k = {k}")

    # ------------------------------------------------------------------ oracles
    def _project_euclidean(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return _project(theta, kl=False)

    def _project_kl(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return _project(theta, kl=True)

    def _argmax(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        scores = np.cumsum(theta, axis=-1)  # s_2, ..., s_k (s_1 = 0)
        best = np.argmax(scores, axis=-1)  # first maximum: the smallest y among ties
        y = np.where(np.take_along_axis(scores, best[..., None], -1)[..., 0] > 0, best + 2, 1)
        return _phi(y, theta.shape[-1] + 1)

    # ------------------------------------------------------------------ array-API oracles
    def _xp_project(self, theta: Any, geometry: str, xp: Any) -> Any:
        r""":math:`\operatorname{clip}(\operatorname{iso}(\theta), 0, 1)` or
        :math:`e^{\min(\operatorname{iso}(\theta) - 1, 0)}`, ``iso`` by rounds."""
        pools = xp_pav_euclidean(xp, theta)
        v = pools.ref + pools.c
        if geometry == "euclidean":
            return xp.clip(v, min=0.0, max=1.0)
        return xp.exp(xp.clip(v - 1.0, max=0.0))

    def _xp_project_jvp(self, theta: Any, u: Any, tangent: Any, geometry: str, xp: Any) -> Any:
        r"""The pool means of the tangent where the pool is strictly inside the bounds
        (module docstring); the pools are recomputed from ``theta``."""
        pools = xp_pav_euclidean(xp, theta)
        v = pools.ref + pools.c
        mean = xp_pool_mean(xp, pools, tangent)
        if geometry == "euclidean":
            return xp.where((v > 0.0) & (v < 1.0), mean, xp.zeros_like(mean))
        u = xp.exp(xp.clip(v - 1.0, max=0.0))
        return xp.where(v < 1.0, u * mean, xp.zeros_like(mean))

    def _xp_argmax(self, theta: Any, xp: Any) -> Any:
        r""":math:`\varphi(y^\star)` with :math:`y^\star` maximizing the cumulative sums
        (:math:`s_1 = 0`; ties: the smallest :math:`y`, as in the engine)."""
        scores = xp.cumulative_sum(theta, axis=-1)  # s_2, ..., s_k
        best = xp.argmax(scores, axis=-1, keepdims=True)  # first maximum
        positive = xp.take_along_axis(scores, best, axis=-1) > 0
        idx = xp.arange(theta.shape[-1], device=device(theta))
        return xp.astype((idx <= best) & positive, theta.dtype)

    # ------------------------------------------------------------------ encoding
    def encode(self, y: ArrayLike, k: int | None = None) -> NDArray[np.float64]:
        """:math:`\\varphi(y)` for labels ``y`` in ``{1, ..., k}`` (any shape); shape
        ``(*y.shape, k - 1)``.

        Parameters
        ----------
        y : array-like of int, any shape
            Class labels in ``{1, ..., k}`` (1-based; integer-valued floats accepted).
        k : int
            The number of classes (required, at least 2).

        Returns
        -------
        ndarray of shape (``*y.shape``, k - 1), dtype float64
            The all-threshold encodings: ``y - 1`` ones, then zeros.

        Raises
        ------
        ValueError
            If ``k`` is None or not an integer of at least 2, or if ``y`` holds
            non-numeric or non-integer values or labels outside ``{1, ..., k}``.
        """
        if k is None:
            raise ValueError("encode needs k, the number of classes of the order simplex")
        self._check_classes(k)
        arr = np.asarray(y)
        if not np.issubdtype(arr.dtype, np.number) or not np.all(arr == np.round(arr)):
            raise ValueError("y must contain integer class labels in {1, ..., k}")
        if arr.size and (arr.min() < 1 or arr.max() > k):
            raise ValueError(
                f"labels must lie in {{1, ..., {k}}} (k = {k} classes); got values in "
                f"[{arr.min()}, {arr.max()}]"
            )
        return _phi(arr.astype(np.int64), int(k))

    def _xp_decode(self, v: Any, xp: Any) -> Any:
        """Ones then zeros -> class ``1 + #ones`` (int64), on ``v``'s device."""
        return 1 + xp.astype(xp.sum(v, axis=-1), xp.int64)

    def decode(self, v: ArrayLike) -> NDArray[np.int64]:
        """The class :math:`1 + \\#\\{i : v_i = 1\\}` of a vertex ``v`` (shape ``(..., k-1)``).

        Parameters
        ----------
        v : array-like of shape (..., k - 1)
            Vertices of the order simplex: 0/1 vectors, ones then zeros.

        Returns
        -------
        ndarray of shape v.shape[:-1], dtype int64
            The classes, in ``{1, ..., k}``.

        Raises
        ------
        ValueError
            If ``v`` is not a finite numeric array of at least one axis, is not 0/1, or
            has a 1 after a 0.
        """
        arr = check_array(v, name="v")
        check_binary(arr, name="v")
        if np.any(np.diff(arr, axis=-1) > 0):
            raise ValueError("v must be a vertex of the order simplex: ones, then zeros")
        return 1 + np.sum(arr, axis=-1).astype(np.int64)

    def vertices(self, k: int) -> NDArray[np.float64]:
        """The ``k`` encodings :math:`\\varphi(1), \\dots, \\varphi(k)`.

        Parameters
        ----------
        k : int
            The number of classes (at least 2).

        Returns
        -------
        ndarray of shape (k, k - 1), dtype float64
            Row ``y - 1`` is :math:`\\varphi(y)`: ``y - 1`` ones, then zeros.

        Raises
        ------
        ValueError
            If ``k`` is not an integer of at least 2.
        """
        self._check_classes(k)
        return np.tril(np.ones((k, k - 1)), -1)

    def _contains(self, u: NDArray[np.float64], atol: float) -> NDArray[np.bool_]:
        in_box = np.all((u >= -atol) & (u <= 1 + atol), axis=-1)
        return in_box & np.all(np.diff(u, axis=-1) <= atol, axis=-1)


def order_simplex_jacobians(
    theta: NDArray[np.float64], u: NDArray[np.float64], tol: float
) -> NDArray[np.float64]:
    r"""Jacobians of the Euclidean projection onto the order simplex, ``(n, p, p)``.

    :math:`P(\theta) = \mathrm{clip}(v, 0, 1)` with :math:`v` the decreasing isotonic
    regression of :math:`\theta` (``projloss.sets.order_simplex``): :math:`v` is the mean
    of :math:`\theta` on each pool of consecutive coordinates, so :math:`\partial P` is
    the averaging over each pool whose mean lies in :math:`[0, 1]` and 0 on the others
    (clipped). Pools are read from :math:`u = P(\theta)` (equal on a pool; neighbours
    within ``tol`` merged), a pool's mean from :math:`\theta`; a mean within ``tol`` of 0
    or 1 (a kink) counts as inside: the element of the generalized Jacobian with the
    largest rank, as for the box. Replaces ``p + 1`` projections and an
    eigendecomposition per sample (finite differences: the Newton solver's
    ``projloss.estimators._newton._BasisProblem.difference_jacobians``).

    Examples
    --------
    >>> import numpy as np
    >>> theta = np.array([[1.4, 0.3, 0.5, -0.2]])  # pools {0}, {1, 2}, {3}
    >>> u = np.array([[1.0, 0.4, 0.4, 0.0]])
    >>> print(order_simplex_jacobians(theta, u, 1e-9)[0])
    [[0.  0.  0.  0. ]
     [0.  0.5 0.5 0. ]
     [0.  0.5 0.5 0. ]
     [0.  0.  0.  0. ]]
    """
    n = theta.shape[0]
    new_pool = np.abs(np.diff(u, axis=1)) > tol
    pool = np.concatenate([np.zeros((n, 1), dtype=np.intp), np.cumsum(new_pool, axis=1)], 1)
    same = pool[:, :, None] == pool[:, None, :]
    size = same.sum(axis=2)
    mean = np.einsum("iab,ib->ia", same, theta) / size
    inside = (mean >= -tol) & (mean <= 1.0 + tol)
    return same * (inside / size)[:, :, None]
