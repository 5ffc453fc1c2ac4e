r"""The permutahedron induced by :math:`w` (paper §4, "Permutahedron").

:math:`\mathcal P(w) = \operatorname{conv}\{w_\sigma : \sigma \text{ permutation of } [k]\}`,
for label ranking with scores: a permutation :math:`\pi` is encoded by giving the label at
rank :math:`r` the weight :math:`w_r` (``w`` sorted in descending order, default
:math:`w = (k, \dots, 1)`, which gives the classical permutahedron).

Structures: ``y`` of shape ``(..., k)`` with ``y[rank] = label`` (rank 0 = most preferred),
:math:`\varphi(y)_{y_r} = w_r`.

Oracles (:math:`\sigma` sorts :math:`\theta` in descending order, :math:`s = \theta_\sigma`;
Blondel, Teboul, Berthet & Djolonga 2020, "Fast differentiable sorting and ranking",
Prop. 3; Lim & Wright 2016, "Efficient Bregman projections onto the permutahedron and
related polytopes"):

- Euclidean: :math:`P(\theta)_\sigma = s - v`, with
  :math:`v = \operatorname{argmin}_{v_1\ge\dots\ge v_k}\|v - (s - w)\|^2` (isotonic
  regression).
- KL, :math:`P(\theta) = \operatorname{argmin}_{u \in \mathcal P(w)} KL(u, e^{\theta-1})`
  with :math:`\Psi(u) = \langle u, \log u\rangle` (requires :math:`w > 0`). Expanding the
  paper's :math:`KL(u, v) = \sum_i u_i \log(u_i/v_i) - u_i + v_i`,

  .. math:: KL(u, e^{\theta-1}) = \langle u, \log u\rangle - \langle u, \theta\rangle
            + \text{const}, \qquad
            KL(u, e^{z}) = \langle u, \log u\rangle - \langle u, z\rangle
            - \langle u, 1\rangle + \text{const}.

  Blondel et al. project with the second one (onto :math:`\mathcal P(e^{w'})`). On
  :math:`\mathcal P(w)` the sum :math:`\langle u, 1\rangle = \langle w, 1\rangle` is
  constant, so the "-1" shift (between :math:`\langle u,\log u\rangle` and
  :math:`\langle u,\log u - 1\rangle`, or in :math:`e^{\theta-1}`) does not move the
  minimizer: take :math:`z = \theta`, :math:`w' = \log w`, and their Prop. 3 gives

  .. math:: P(\theta)_\sigma = e^{s - v_E(s, \log w)},\qquad
            v_E(s, \log w) = \operatorname{argmin}_{v_1\ge\dots\ge v_k}
            \langle e^{s - v}, 1\rangle + \langle w, v\rangle.

  On a pool :math:`B` of :math:`v_E`, :math:`v_B = \operatorname{LSE}(s_B) -
  \log\sum_B w_i`, so :math:`P(\theta)_{\sigma(B)} = (\sum_B w_i)\,
  \operatorname{softmax}(s_B)`: a softmax inside each pool (no overflow for any
  :math:`|\theta|`).
- MAP: the vertex that gives the largest weight to the highest score,
  :math:`v_{\sigma_r} = w_r` (sorting, :math:`O(k \log k)`).

Costs: a batched ``np.argsort``, :math:`O(k \log k)`, then one compiled pass per row
(:mod:`projloss._numba`) that gathers the sorted row, solves the isotonic problem by pool
adjacent violators (:mod:`projloss.isotonic`, :math:`O(k)`) and scatters the result back:
no Python loop over samples.

Extreme magnitudes: forming :math:`s - w` (or :math:`s - \log w`) loses the weights to
rounding once :math:`|\theta| \gg |w|` (at :math:`|\theta| = 10^{100}` it returns
zeros). Euclidean rows with :math:`\max|\theta| > 10^6 \max(1, \max|w|)` and KL rows
of range above 600 therefore keep each pool relative to its largest entry
(:func:`_pav_shifted`): the projection is exact up to rounding for any finite
:math:`\theta` (at :math:`|\theta| = 10^{300}`, distinct entries get exactly the weights
of their ranks, tied entries the mean weight of their ranks).

Array-API oracles (PyTorch tensors on the CPU or a GPU, float32 or float64, NumPy
arrays; :meth:`~projloss.sets.base.ConvexSet.xp_project`): the same sort, then the
isotonic problem solved by pool adjacent violators *by rounds*
(:func:`projloss.isotonic.xp_pav_euclidean`, :func:`projloss.isotonic.xp_pav_kl`): every
round merges all adjacent violating pools of every row at once, so a round is a handful
of whole-batch operations (:math:`O(k)` per row, parallel over rows and pools) and the
rounds stop at the first without a violation: a few on random inputs (measured at
:math:`n = 10^5` standard normal rows, :math:`k = 100`: 3 rounds Euclidean, 18 KL, 1.1
and 7 per row on average), at most :math:`k - 1` (a cascade absorbing one pool per
round), so :math:`O(k^2)` per row in the worst case against :math:`O(k)` for the
engine's stack. Every pool keeps its value relative to its first entry (the frame of
the exact path above) on every input, so one path is exact up to rounding at any
magnitude, in float32 too (measured: within :math:`10^{-6}\max|u|` of the engine). The
Jacobian is the block structure of the pools (Blondel et
al. 2020, §4): with :math:`B` the pools in sorted order and :math:`t` a tangent,

.. math:: (J_P t)_{\sigma(B)} = t_{\sigma(B)} - \operatorname{mean}_B(t_\sigma)
          \quad\text{(Euclidean)},\qquad
          (J_P t)_{\sigma(B)} = u_{\sigma(B)} \odot \bigl(t_{\sigma(B)} -
          \textstyle\sum_B p_i\, t_{\sigma(i)}\bigr)\quad\text{(KL)},

with :math:`p = u_B / \sum_B u_i = \operatorname{softmax}(s_B)` (differentiate
:math:`P_\sigma = s - v` and :math:`P_\sigma = e^{s - v}` with
:math:`\partial v_B / \partial s_i` = :math:`1/|B|`, resp. :math:`p_i`, for
:math:`i \in B`): both are symmetric (the Euclidean one projects out the pools'
indicator vectors; the KL one is :math:`\operatorname{diag}(u) - \sum_B (\sum_B w)\,
p_B p_B^\top`).
"""

from __future__ import annotations

import itertools
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._numba import kernel
from .._validation import check_array
from .._xp import device, is_torch
from ..isotonic import XpPools, pav_decreasing, xp_pav_euclidean, xp_pav_kl, xp_pool_mean
from .base import ConvexSet
from .jacobians import Jacobians, merge_tol
from .simplex import as_rows


def _sort_descending(theta: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """The permutation sorting each row in descending order (stable), and the sorted rows."""
    order = np.argsort(-theta, axis=-1, kind="stable")
    return order, np.take_along_axis(theta, order, axis=-1)


def _unsort(values: NDArray[np.float64], order: NDArray[np.intp]) -> NDArray[np.float64]:
    """Put ``values[..., r]`` at position ``order[..., r]`` (inverse of the sort)."""
    out = np.empty_like(values)
    np.put_along_axis(out, order, values, axis=-1)
    return out


def _xp_unsort(xp: Any, values: Any, order: Any) -> Any:
    """:func:`_unsort` on arrays: ``out[..., order[..., r]] = values[..., r]`` (a scatter,
    not in the array API standard: one branch per library)."""
    if is_torch(values):
        import torch

        return torch.empty_like(values).scatter_(-1, order, values.expand_as(order))
    out = np.empty(np.shape(values), dtype=values.dtype)
    np.put_along_axis(out, np.asarray(order), np.asarray(values), axis=-1)
    return out


#: Rows whose range (max - min) exceeds this take the exact (reference-shifted) KL path;
#: below it, exponentials relative to the row max stay normal floats (>= e^-600 ~ 1e-261).
_LINEAR_RANGE = 600.0

#: Euclidean rows whose largest magnitude exceeds this multiple of max(1, max |w|) take the
#: exact (reference-shifted) path: forming s - w would lose the weights to rounding
#: (an absolute error ulp(|s|) ~ 1.1e-16 |s|, i.e. 1e-10 max|w| at this threshold, and
#: all of w beyond |s| ~ 1e16 max|w|, where the plain path returns zeros).
_EXACT_SCALE = 1e6


@kernel
def _pav_shifted(s, w, kl, out, ref, c, acc, sw, cnt, start):
    r"""Exact projection of one row ``s`` sorted in descending order, written to ``out``
    (sorted order), for huge magnitudes.

    Pool adjacent violators on the same pools as the plain paths, but each pool ``B`` keeps
    its value relative to its first (largest) entry ``r_B``, so no quantity of the size of
    ``|s|`` is ever combined with one of the size of ``w``:

    - Euclidean: value :math:`r_B + c_B`, :math:`c_B = (\sum_B (s_i - r_B) - \sum_B w_i)
      / |B|`; output :math:`u_j = (s_j - r_B) - c_B`;
    - KL: value :math:`\operatorname{LSE}(s_B) - \log\sum_B w_i = r_B + c_B`,
      :math:`c_B = \log(\sum_B e^{s_i - r_B} / \sum_B w_i)`; output
      :math:`u_j = e^{(s_j - r_B) - c_B}`.

    Pools ``A`` (before) and ``B`` violate the order when :math:`r_A - r_B < c_B - c_A`.
    Merged pools have entries within :math:`O(k \max|w|)` of each other (or of
    :math:`O(k)` in the log domain), so the differences :math:`s_j - r_B` are exact
    (Sterbenz) whatever :math:`|s|`; distinct entries farther apart than the weights
    never pool, and get exactly :math:`w_j`.
    """
    k = s.size
    top = -1
    for i in range(k):
        top += 1
        ref[top] = s[i]
        acc[top] = 1.0 if kl else 0.0
        sw[top] = w[i]
        cnt[top] = 1.0
        c[top] = -np.log(w[i]) if kl else -w[i]
        start[top] = i
        while top > 0 and ref[top - 1] - ref[top] < c[top] - c[top - 1]:
            p = top - 1
            d = ref[top] - ref[p]  # <= 0, small: the pools are close
            if kl:
                acc[p] += acc[top] * np.exp(d)
            else:
                acc[p] += acc[top] + cnt[top] * d
            sw[p] += sw[top]
            cnt[p] += cnt[top]
            top = p
            c[top] = np.log(acc[top] / sw[top]) if kl else (acc[top] - sw[top]) / cnt[top]
    for t in range(top + 1):
        end = start[t + 1] if t < top else k
        for j in range(start[t], end):
            d = (s[j] - ref[t]) - c[t]
            out[j] = np.exp(d) if kl else d


@kernel
def _project_rows(x, order, w, kl, scale, out):
    # order[r]: the permutation sorting x[r] in ascending order; w: the weights sorted in
    # descending order; scale: the magnitude above which a Euclidean row takes the exact
    # path.
    n, k = x.shape
    s = np.empty(k)
    y = np.empty(k)
    v = np.empty(k)
    ones = np.ones(k)
    s1 = np.empty(k)
    s2 = np.empty(k)
    s3 = np.empty(k)
    s4 = np.empty(k)
    val = np.empty(k)
    start = np.empty(k, dtype=np.int64)
    for r in range(n):
        for j in range(k):  # descending order (ties: any order gives the same result)
            s[j] = x[r, order[r, k - 1 - j]]
        if not kl and max(abs(s[0]), abs(s[k - 1])) <= scale:
            for j in range(k):
                y[j] = s[j] - w[j]
            pav_decreasing(y, ones, v, s1, s2, val, start)
            for j in range(k):
                out[r, order[r, k - 1 - j]] = s[j] - v[j]
        elif kl and s[0] - s[k - 1] <= _LINEAR_RANGE:
            # Linear domain: with e = exp(s - s_0), the pool value LSE(s_B) - log sum_B w
            # is s_0 + log(sum_B e / sum_B w), increasing in the ratio: pooling the ratios
            # (weighted means of e_i / w_i) forms the same pools, and the projection is
            # P_i = e_i / ratio_B -- one exponential per entry, no logarithm.
            for j in range(k):
                y[j] = np.exp(s[j] - s[0])
            pav_decreasing(y, w, v, s1, s2, val, start)
            for j in range(k):
                out[r, order[r, k - 1 - j]] = y[j] / v[j]
        else:  # huge magnitudes (Euclidean) or a wide range (KL): reference-shifted pools
            _pav_shifted(s, w, kl, y, s1, s2, s3, s4, val, start)
            for j in range(k):
                out[r, order[r, k - 1 - j]] = y[j]


class Permutahedron(ConvexSet):
    """The permutahedron :math:`\\mathcal P(w)` (default :math:`w = (k, \\dots, 1)`).

    Parameters
    ----------
    w : array-like of shape (k,), optional
        The weights inducing the polytope (any order; sorted descending internally). Must be
        finite, and positive for the KL geometry. Default: ``(k, k-1, ..., 1)`` for the size
        ``k`` of the input.

    Raises
    ------
    ValueError
        If ``w`` is not a non-empty 1-D array, or has NaN or infinite entries.

    Examples
    --------
    >>> import numpy as np
    >>> s = Permutahedron()  # w = (k, ..., 1)
    >>> theta = np.array([0.3, -1.2, 2.0, 0.5])
    >>> print(np.round(s.project(theta), 6))
    [2.4 1.  4.  2.6]
    >>> print(np.round(s.project(theta, "kl"), 6))
    [2.25083 1.      4.      2.74917]
    >>> print(s.argmax(theta), s.decode(s.argmax(theta)))  # label 2 first, then 3, 0, 1
    [2. 1. 4. 3.] [2 3 0 1]
    >>> print(np.round(s.project(1e300 * theta), 6))  # exact at any magnitude
    [2. 1. 4. 3.]

    The array-API oracles (here on NumPy; the same on torch tensors, CPU or GPU): labels
    0 and 3 share a pool, so the Jacobian moves them against each other.

    >>> u = s.xp_project(theta)
    >>> print(np.round(u, 6), s.xp_project_jvp(theta, u, np.array([1.0, 0.0, 0.0, 0.0])))
    [2.4 1.  4.  2.6] [ 0.5  0.   0.  -0.5]
    """

    name: ClassVar[str] = "permutahedron"
    encodings: ClassVar[tuple[str, ...]] = ("permutahedron",)
    decodes: ClassVar[tuple[str, ...]] = ("permutahedron",)
    permutation_outputs: ClassVar[bool] = True
    #: ``w`` is the label-ranking estimators' own argument (built for the labels' size)
    estimator_params: ClassVar[dict[str, tuple[str, Any]]] = {"w": ("w", None)}

    def projection_jacobians(
        self,
        theta: NDArray[np.float64],
        u: NDArray[np.float64],
        geometry: str,
        event_shape: tuple[int, ...],
    ) -> Jacobians | None:
        """Euclidean: :func:`permutahedron_jacobians` (exact, ``(n, k, k)``); KL: none.

        Parameters
        ----------
        theta : ndarray of shape (n, k), dtype float64
            The scores, one point per row.
        u : ndarray of shape (n, k), dtype float64
            Their projections.
        geometry : {"euclidean", "kl"}
            The geometry of the projection.
        event_shape : tuple of int
            ``(k,)``.

        Returns
        -------
        ndarray of shape (n, k, k), dtype float64, or None
            Euclidean: the dense Jacobians (identity minus the averaging over each pool of
            the isotonic problem, ties within
            :func:`~projloss.sets.jacobians.merge_tol` merged); KL: ``None`` (finite
            differences).
        """
        if geometry != "euclidean":
            return None
        return permutahedron_jacobians(theta, u, merge_tol(theta))

    def __init__(self, w: ArrayLike | None = None) -> None:
        if w is None:
            self.w = None
            self._w_sorted = None
        else:
            arr = np.asarray(w, dtype=np.float64)
            if arr.ndim != 1 or arr.size == 0:
                raise ValueError(f"w must be a non-empty 1-D array, got shape {arr.shape}")
            if not np.all(np.isfinite(arr)):
                raise ValueError("w contains NaN or infinite values; it must be finite")
            self.w = tuple(float(x) for x in arr)
            self._w_sorted = np.sort(arr)[::-1].copy()
            self._w_sorted.flags.writeable = False  # weights(k) hands it out, not a copy

    # ------------------------------------------------------------------ parameters
    def _check_size(self, k: int) -> None:
        if self._w_sorted is not None and self._w_sorted.size != k:
            raise ValueError(
                f"the permutahedron's w has length {self._w_sorted.size} but the input has "
                f"size k = {k}: their lengths must match"
            )

    def weights(self, k: int) -> NDArray[np.float64]:
        """The weights sorted in descending order, for size ``k``.

        Parameters
        ----------
        k : int
            The size of the points.

        Returns
        -------
        ndarray of shape (k,), dtype float64
            ``w`` sorted in descending order, or ``(k, k-1, ..., 1)`` without ``w``.

        Raises
        ------
        ValueError
            If ``w`` was given and its length is not ``k``.
        """
        self._check_size(k)
        if self._w_sorted is None:
            return np.arange(k, 0, -1, dtype=np.float64)
        return self._w_sorted

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters (for the repr, ``==``, configs and logging).

        Returns
        -------
        dict of str to Any
            ``{"w": w}``: the weights as a tuple of floats in the order given, or None.
        """
        return {"w": self.w}

    # ------------------------------------------------------------------ oracles
    def _project(self, theta: NDArray[np.float64], kl: bool) -> NDArray[np.float64]:
        w = self.weights(theta.shape[-1])
        x, shape = as_rows(theta)
        out = np.empty_like(x)
        if x.size:
            scale = _EXACT_SCALE * max(1.0, float(np.abs(w).max()))
            _project_rows(x, np.argsort(x, axis=1), w, kl, scale, out)
        return out.reshape(shape)

    def _project_euclidean(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._project(theta, kl=False)

    def _project_kl(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        w = self.weights(theta.shape[-1])
        if np.any(w <= 0):
            raise ValueError(
                "the KL projection onto the permutahedron requires positive weights w > 0, "
                f"got w = {self.w}"
            )
        return self._project(theta, kl=True)

    def _argmax(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        w = self.weights(theta.shape[-1])
        order, _ = _sort_descending(theta)
        return _unsort(np.broadcast_to(w, theta.shape).copy(), order)

    # ------------------------------------------------------------------ array-API oracles
    def _xp_weights(self, theta: Any, xp: Any) -> Any:
        """The weights sorted in descending order, on ``theta``'s device and in its dtype
        (the default :math:`(k, \\dots, 1)` is made there, no copy from the host)."""
        k = theta.shape[-1]
        if self._w_sorted is None:
            return xp.arange(k, 0, -1, dtype=theta.dtype, device=device(theta))
        return xp.asarray(self.weights(k), dtype=theta.dtype, device=device(theta))

    def _xp_pools(self, theta: Any, geometry: str, xp: Any) -> tuple[Any, Any, XpPools]:
        """The descending sort (``order``, sorted rows ``s``) and the pools of the isotonic
        problem of ``geometry`` on ``s``, in the exact frame of :func:`_pav_shifted`."""
        w = self._xp_weights(theta, xp)
        if geometry == "kl" and np.any(self.weights(theta.shape[-1]) <= 0):
            raise ValueError(
                "the KL projection onto the permutahedron requires positive weights w > 0, "
                f"got w = {self.w}"
            )
        order = xp.argsort(theta, axis=-1, descending=True, stable=True)
        s = xp.take_along_axis(theta, order, axis=-1)
        if geometry == "euclidean":
            # v = iso(s - w), pool values relative to the pool's first (largest) entry
            return order, s, xp_pav_euclidean(xp, s, offset=w)
        # v_E(s, log w): pool value LSE(s_B) - log sum_B w, relative to max_B s = s_first
        return order, s, xp_pav_kl(xp, s, xp.log(w), descending=True)

    def _xp_project(self, theta: Any, geometry: str, xp: Any) -> Any:
        r"""Sort, isotonic pools (:meth:`_xp_pools`), then :math:`P_\sigma = s - v`
        (Euclidean) or :math:`e^{s - v}` (KL) in each pool's frame, un-sorted."""
        order, s, pools = self._xp_pools(theta, geometry, xp)
        d = (s - pools.ref) - pools.c
        return _xp_unsort(xp, d if geometry == "euclidean" else xp.exp(d), order)

    def _xp_project_jvp(self, theta: Any, u: Any, tangent: Any, geometry: str, xp: Any) -> Any:
        r"""The block structure (module docstring): the pools are recomputed from
        ``theta`` (the same rounds as the projection), so the Jacobian is the one of the
        pools that :meth:`_xp_project` formed; ``u`` is not needed."""
        order, s, pools = self._xp_pools(theta, geometry, xp)
        t = xp.take_along_axis(tangent, order, axis=-1)
        if geometry == "euclidean":
            return _xp_unsort(xp, t - xp_pool_mean(xp, pools, t), order)
        p = xp.exp((s - pools.ref) - pools.c)  # the projection in sorted order
        return _xp_unsort(xp, p * (t - xp_pool_mean(xp, pools, t, weights=p)), order)

    def _xp_argmax(self, theta: Any, xp: Any) -> Any:
        """The weight of rank ``r`` at the ``r``-th largest entry (ties: the first index
        ranks first, a stable descending sort as in the engine)."""
        order = xp.argsort(theta, axis=-1, descending=True, stable=True)
        w = xp.broadcast_to(self._xp_weights(theta, xp), tuple(theta.shape))
        return _xp_unsort(xp, w, order)

    # ------------------------------------------------------------------ encoding
    def encode(self, y: ArrayLike, k: int | None = None) -> NDArray[np.float64]:
        """:math:`\\varphi(y)` for permutations ``y[..., rank] = label``: label ``y[r]`` gets
        the ``r``-th largest weight.

        Parameters
        ----------
        y : array-like of int, shape (..., k)
            Rankings: each row a permutation of ``0..k-1``, ``y[..., r]`` the label at
            rank ``r`` (rank 0 first).
        k : int or None, default=None
            The size; ``None``: ``y.shape[-1]``, which it must equal otherwise.

        Returns
        -------
        ndarray of shape y.shape, dtype float64
            The permuted weights: entry ``y[..., r]`` holds the ``r``-th largest weight.

        Raises
        ------
        ValueError
            If ``y`` is a scalar, its size differs from ``k`` (or from the length of
            ``w``), or a row is not a permutation of ``0..k-1``.
        """
        arr = np.asarray(y)
        if arr.ndim < 1:
            raise ValueError("y must have shape (..., k) (a permutation per row), got a scalar")
        size = arr.shape[-1]
        if k is not None and k != size:
            raise ValueError(f"y has {size} entries on its last axis but k = {k}")
        if not np.issubdtype(arr.dtype, np.number) or not np.all(arr == np.round(arr)):
            raise ValueError("y must contain integer labels (a permutation of 0..k-1 per row)")
        labels = arr.astype(np.int64)
        if not np.array_equal(
            np.sort(labels, axis=-1), np.broadcast_to(np.arange(size), arr.shape)
        ):
            raise ValueError(f"every row of y must be a permutation of 0..{size - 1}")
        w = self.weights(size)
        return _unsort(np.broadcast_to(w, arr.shape).copy(), labels)

    def _xp_decode(self, v: Any, xp: Any) -> Any:
        """Permuted ``w`` -> ranking (descending, ties: first index), on ``v``'s device."""
        return xp.argsort(-v, axis=-1, stable=True)

    def decode(self, v: ArrayLike) -> NDArray[np.int64]:
        """The permutation ``y[rank] = label`` ranking the entries of ``v`` (descending).

        Parameters
        ----------
        v : array-like of shape (..., k)
            Points to rank, usually vertices (permuted weights); any finite point is
            ranked (ties: the first index ranks first).

        Returns
        -------
        ndarray of shape v.shape, dtype int64
            The labels by decreasing entry of ``v``.

        Raises
        ------
        ValueError
            If ``v`` is not a finite numeric array of at least one axis.
        """
        arr = check_array(v, name="v")
        return np.argsort(-arr, axis=-1, kind="stable").astype(np.int64)

    def vertices(self, k: int) -> NDArray[np.float64]:
        """The distinct permutations of the weights (``k!`` without ties in ``w``).

        Parameters
        ----------
        k : int
            The size (small: ``k!`` vertices).

        Returns
        -------
        ndarray of shape (n_vertices, k), dtype float64
            The vertices, in decreasing lexicographic order.

        Raises
        ------
        ValueError
            If ``w`` was given and its length is not ``k``.
        """
        w = self.weights(k)
        return np.array(sorted(set(itertools.permutations(w.tolist())), reverse=True))

    def _contains(self, u: NDArray[np.float64], atol: float) -> NDArray[np.bool_]:
        # u in P(w) iff u is majorized by w: equal sums, and the sum of the j largest
        # entries of u is at most that of w for every j (Rado 1952).
        w = self.weights(u.shape[-1])
        top = np.cumsum(-np.sort(-u, axis=-1), axis=-1)
        bound = np.cumsum(w)
        ok = np.all(top <= bound + atol, axis=-1)
        return ok & (np.abs(top[..., -1] - bound[-1]) <= atol)


def permutahedron_jacobians(
    theta: NDArray[np.float64], u: NDArray[np.float64], tol: float
) -> NDArray[np.float64]:
    r"""Jacobians of the Euclidean projection onto the permutahedron, ``(n, k, k)``.

    :math:`P(\theta)_\sigma = s - v` with :math:`v` the isotonic regression of
    :math:`s - w` (``projloss.sets.permutahedron``), constant on pools of consecutive
    sorted entries: :math:`\partial P = I - B`, with :math:`B` the averaging over each
    pool. Pools are read from :math:`v = \theta - u` (equal on a pool); two neighbouring
    pools whose values differ by at most ``tol`` are merged: at a kink this picks the
    element of the generalized Jacobian with the largest rank (the curvature of the piece
    the sample is about to enter), which keeps the Newton step from jumping over it."""
    n, k = theta.shape
    order = np.argsort(-theta, axis=1, kind="stable")
    v = np.take_along_axis(theta - u, order, axis=1)
    new_pool = np.abs(np.diff(v, axis=1)) > tol
    pool = np.concatenate([np.zeros((n, 1), dtype=np.intp), np.cumsum(new_pool, axis=1)], 1)
    same = pool[:, :, None] == pool[:, None, :]
    B = same / same.sum(axis=2, keepdims=True)
    Js = np.eye(k) - B  # in sorted order
    inv = np.argsort(order, axis=1)
    J = np.take_along_axis(Js, inv[:, :, None], axis=1)
    return np.take_along_axis(J, inv[:, None, :], axis=2)
