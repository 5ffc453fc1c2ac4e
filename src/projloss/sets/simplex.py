r"""The probability simplex :math:`\triangle^k` (paper §4, "Probability simplex").

:math:`\triangle^k = \{u \in \mathbb{R}^k : u \ge 0, \langle u, \mathbf{1}\rangle = 1\}` is the
marginal polytope of multiclass classification with the one-hot encoding
:math:`\varphi(y) = \mathbf{e}_y`.

- Euclidean: sparsemax (Martins & Astudillo 2016), computed exactly by sorting
  (Held, Wolfe & Crowder 1974; Duchi et al. 2008): with :math:`s` the entries sorted in
  descending order, the support size is
  :math:`\rho = \max\{j : 1 + j s_j > \sum_{i \le j} s_i\}` and
  :math:`P(\theta) = \max(\theta - \tau, 0)` with
  :math:`\tau = (\sum_{i\le\rho} s_i - 1)/\rho`. Cost :math:`O(k \log k)`.
- KL: softmax, :math:`P(\theta)_i = e^{\theta_i} / \sum_j e^{\theta_j}` (the constant
  :math:`-1` in :math:`\nabla\Psi^*(\theta) = e^{\theta-1}` cancels), computed after
  subtracting the maximum so that it never overflows. Cost :math:`O(k)`.
- MAP: the one-hot vector of :math:`\operatorname{argmax}_i \theta_i` (ties: first index).

The batched functions :func:`project_simplex` and :func:`softmax` act along any axis and
are reused by the row-stochastic matrices (:mod:`projloss.sets.row_simplex`) and the
Birkhoff solvers. Both run as compiled per-row kernels (:mod:`projloss._numba`) after,
for sparsemax, one batched ``np.sort``: there is no Python loop over samples.

The same oracles on arrays of any array-API library (PyTorch tensors on the CPU or a GPU,
NumPy arrays; :mod:`projloss._xp`) are :func:`xp_sparsemax`, :func:`xp_softmax`, their
Jacobian-vector products :func:`xp_sparsemax_jvp`, :func:`xp_softmax_jvp` and
:func:`xp_one_hot_argmax`, written once against the array API standard and also reused
by the row-stochastic matrices and the Birkhoff solvers.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._fastexp import (
    count_outside,
    div_by,
    exp_inplace,
    exp_into_counted,
    row_max,
    row_sum,
)
from .._numba import kernel
from .base import ConvexSet, check_binary
from .jacobians import MERGE, DiagonalMinusRankOne, Jacobians


def as_rows(theta: ArrayLike, axis: int = -1) -> tuple[NDArray[np.float64], tuple[int, ...]]:
    """``theta`` (at least 1-D) with ``axis`` moved last, as a C-contiguous ``(n, k)``
    float64 array, and the shape to give the result back (see :func:`from_rows`)."""
    theta = np.asarray(theta, dtype=np.float64)
    if axis != -1 and axis != theta.ndim - 1:
        theta = np.moveaxis(theta, axis, -1)
    shape = theta.shape
    return np.ascontiguousarray(theta.reshape(math.prod(shape[:-1]), shape[-1])), shape


def from_rows(out: NDArray[np.float64], shape: tuple[int, ...], axis: int) -> NDArray:
    """Inverse of :func:`as_rows`."""
    out = out.reshape(shape)
    if axis != -1 and axis != len(shape) - 1:
        out = np.moveaxis(out, -1, axis)
    return out


@kernel
def _sparsemax_rows(x, asc, out):
    # x, out: (n, k); asc: the rows of x sorted in ascending order (may be ``out``
    # itself: a row of asc is read in full before the row of out is written).
    n, k = x.shape
    for r in range(n):
        top = asc[r, k - 1]
        # Shifted frame (entries minus the max): the partial sums stay small, so the "- 1"
        # survives even when |theta| is huge. j = 1 gives tau = (0 - 1) / 1.
        tau = -1.0
        css = 0.0
        for j in range(1, k):
            v = asc[r, k - 1 - j] - top
            # Once s_j <= tau, tau can no longer grow: (css + s_j - 1) / (j + 1) <= tau
            # because css - 1 <= j tau, and the same holds for every later (smaller) s.
            if v <= tau:
                break
            css += v
            t = (css - 1.0) / (j + 1)
            if t > tau:
                tau = t
        for i in range(k):
            # Stay in the shifted frame: theta - (top + tau) would round tau away.
            d = (x[r, i] - top) - tau
            out[r, i] = d if d > 0.0 else 0.0


def project_simplex(theta: ArrayLike, axis: int = -1) -> NDArray[np.float64]:
    r"""Sparsemax: the Euclidean projection onto the simplex along ``axis``, batched.

    Exact sort-based algorithm (Held et al. 1974; Duchi et al. 2008; Martins & Astudillo
    2016): with :math:`s` the entries sorted in descending order, the threshold is
    :math:`\tau = \max_j (\sum_{i\le j} s_i - 1)/j` (the maximum is attained at the support
    size :math:`\rho`, since :math:`\sum_{i\le j}(s_i - \tau) \le
    \sum_i \max(s_i - \tau, 0) = 1` for every :math:`j`, with equality at :math:`j=\rho`),
    and :math:`P(\theta) = \max(\theta - \tau, 0)`. :math:`O(k\log k)` per point; no input
    validation (the :class:`Simplex` oracle validates).

    Hand-written because neither numpy nor scipy provides it. The rows are sorted by one
    batched ``np.sort`` (numpy's vectorized sort is hard to beat), then a compiled kernel
    scans each sorted row for :math:`\tau` -- stopping at the end of the support, where
    :math:`s_j \le \tau` -- and writes :math:`\max(\theta - \tau, 0)`: one pass, no
    temporaries (a pure numpy version needs a cumulative sum and about six more passes
    over the batch: 2-4x slower).

    Parameters
    ----------
    theta : array-like of shape (..., k, ...)
        Scores, at least 1-D, converted to float64; not validated (NaN or infinite
        entries give meaningless rows).
    axis : int, default=-1
        The axis of the simplex; every other axis is a batch.

    Returns
    -------
    ndarray of shape theta.shape, dtype float64
        The sparsemax of each slice along ``axis``: nonnegative, summing to 1.

    Examples
    --------
    >>> import numpy as np
    >>> print(np.round(project_simplex(np.array([[0.5, 1.2, -1.0], [3.0, 0.0, 0.0]])), 6))
    [[0.15 0.85 0.  ]
     [1.   0.   0.  ]]
    """
    x, shape = as_rows(theta, axis)
    out = np.sort(x, axis=1)  # sorted in place of the output: one allocation
    if x.size:
        _sparsemax_rows(x, out, out)
    return from_rows(out, shape, axis)


#: Entries in [-_SAFE, _SAFE] skip the shift by the row maximum: e^theta neither overflows
#: nor underflows there (e^-300 ~ 5e-131 is a normal number), and the softmax of the
#: unshifted entries is as accurate.
_SAFE = 300.0
#: The largest finite float64: |x| > _FINITE (or NaN) means x is not finite.
_FINITE = np.finfo(np.float64).max


@kernel
def _softmax_rows(x, out):
    # The exponentials of the whole batch in one flat vectorized pass that also counts the
    # entries outside [-_SAFE, _SAFE]; if there are any, their rows again, shifted by the
    # row max (or, at the first row with a non-finite entry, return how many it has: the
    # output is then meaningless). Then, row by row, a fixed-order sum and the division of
    # each entry by it: for the unshifted rows (entries in [e^-300, e^300], nothing
    # underflows) by the reciprocal and an exact correction (div_by: the bits of the
    # division; the softmax 13-26% faster at k = 10-100), for the shifted ones (entries
    # may be subnormal) by dividing.
    # Returns 0 when every entry is finite.
    n, k = x.shape
    flat = out.reshape(n * k)
    outside = exp_into_counted(x.reshape(n * k), flat, _SAFE)
    shifted = np.zeros(n if outside else 0, np.bool_)
    if outside:
        for r in range(n):
            xr = x[r]
            if count_outside(xr, _SAFE) == 0:
                continue
            bad = count_outside(xr, _FINITE)
            if bad:
                return bad
            shifted[r] = True
            o = out[r]
            m = row_max(xr)
            for i in range(k):
                o[i] = xr[i] - m
            exp_inplace(o)
    for r in range(n):
        o = out[r]
        s = row_sum(o)
        if outside and shifted[r]:
            for i in range(k):
                o[i] /= s
        else:
            y = 1.0 / s
            for i in range(k):
                o[i] = div_by(o[i], s, y)
    return 0


def softmax(theta: ArrayLike, axis: int = -1) -> NDArray[np.float64]:
    r"""Softmax along ``axis``, batched: the KL projection onto the simplex.

    :math:`\operatorname{softmax}(\theta)_i = e^{\theta_i - \max\theta} /
    \sum_j e^{\theta_j - \max\theta}`: the largest exponent is 0, so nothing overflows and
    the denominator is at least 1. Same computation as ``scipy.special.softmax``, in a
    compiled kernel (one vectorized pass for the exponentials, then one per row for the
    sum and the division) instead of four passes over the batch, with the
    vectorized exponential of :mod:`projloss._fastexp` (within 1 ulp of the C library's;
    with the scalar library call, ``jax.nn.softmax`` was up to 4x faster). For the rows
    whose entries lie in [-300, 300] the shift by the row maximum is skipped: no
    exponential over- or underflows there, and the result is as accurate (more, for tiny
    probabilities: no rounding of :math:`\theta_i - \max\theta`). Rows with a
    non-finite entry give NaN rows, as the formula does (the oracles reject them first).
    It is the KL projection because
    :math:`\operatorname{argmin}_{u \in \triangle^k} \langle u, \log u\rangle -
    \langle u, \theta\rangle` has the Gibbs distribution as its solution (paper §4,
    Table 2; e.g. Boyd & Vandenberghe 2004, §5.2.5).

    Parameters
    ----------
    theta : array-like of shape (..., k, ...)
        Scores, at least 1-D, converted to float64; not validated.
    axis : int, default=-1
        The axis of the simplex; every other axis is a batch.

    Returns
    -------
    ndarray of shape theta.shape, dtype float64
        The softmax of each slice along ``axis``: positive, summing to 1 (NaN slices
        where ``theta`` has a non-finite entry).

    Examples
    --------
    >>> import numpy as np
    >>> print(np.round(softmax(np.array([0.0, np.log(3.0), 1e3])), 6))
    [0. 0. 1.]
    >>> print(np.round(softmax(np.array([0.0, np.log(3.0)])), 6))
    [0.25 0.75]
    """
    x, shape = as_rows(theta, axis)
    out = np.empty_like(x)
    if x.size and _softmax_rows(x, out):  # a non-finite entry: the formula's NaN rows
        with np.errstate(invalid="ignore"):
            e = np.exp(x - x.max(axis=1, keepdims=True))
            out = e / e.sum(axis=1, keepdims=True)
    return from_rows(out, shape, axis)


def _checked_softmax(theta: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """:func:`softmax` along the last axis, or ``None`` if an entry is not finite."""
    x, shape = as_rows(theta)
    out = np.empty_like(x)
    if x.size and _softmax_rows(x, out):
        return None
    return out.reshape(shape)


def one_hot_argmax(theta: NDArray[np.float64]) -> NDArray[np.float64]:
    """One-hot vector of the argmax along the last axis (ties: first index), batched."""
    idx = np.argmax(theta, axis=-1)[..., None]
    out = np.zeros_like(theta)
    np.put_along_axis(out, idx, 1.0, axis=-1)
    return out


# ---------------------------------------------------------------------- array API
def _last(xp: Any, x: Any, axis: int) -> tuple[Any, bool]:
    """``x`` with ``axis`` moved last (and whether it was moved)."""
    if axis in (-1, x.ndim - 1):
        return x, False
    return xp.moveaxis(x, axis, -1), True


def _back(xp: Any, x: Any, axis: int, moved: bool) -> Any:
    """Inverse of :func:`_last`."""
    return xp.moveaxis(x, -1, axis) if moved else x


def xp_sparsemax(xp: Any, theta: Any, axis: int = -1) -> Any:
    r"""Sparsemax along ``axis`` for an array of any array-API library: the Euclidean
    projection onto the simplex, batched, on ``theta``'s device and in its dtype.

    The algorithm of :func:`project_simplex` (Held, Wolfe & Crowder 1974; Duchi et al.
    2008; Martins & Astudillo 2016) in whole-batch operations: in the frame shifted by
    the row maximum, :math:`z = \theta - \max\theta` (so that the :math:`-1` survives
    for huge :math:`|\theta|`), with :math:`s` the entries of :math:`z` sorted in
    descending order,

    .. math:: \tau = \max_{1\le j\le k} \frac{\sum_{i\le j} s_i - 1}{j},
        \qquad P(\theta) = \max(z - \tau, 0),

    the maximum being attained at the support size :math:`\rho` (see
    :func:`project_simplex`). A batched sort, a cumulative sum and a few elementwise
    passes: :math:`O(k\log k)` per row, no loop over rows, no host synchronization. No
    input validation; a row with a non-finite entry gives NaN entries.

    Parameters
    ----------
    xp : module
        The array-API namespace of ``theta`` (:func:`projloss._xp.namespace`).
    theta : array, shape (..., k, ...)
        Scores, ``k >= 1`` along ``axis``; a floating dtype.
    axis : int, default -1
        The axis of the simplex.

    Returns
    -------
    array, same shape, dtype and device as ``theta``

    Examples
    --------
    >>> import numpy as np
    >>> from projloss._xp import namespace
    >>> theta = np.array([[0.5, 1.2, -1.0], [3.0, 0.0, 0.0]])
    >>> print(np.round(xp_sparsemax(namespace(theta), theta), 6))
    [[0.15 0.85 0.  ]
     [1.   0.   0.  ]]
    """
    from .._xp import device

    x, moved = _last(xp, theta, axis)
    z = x - xp.max(x, axis=-1, keepdims=True)
    s = xp.sort(z, axis=-1, descending=True)
    j = xp.arange(1, x.shape[-1] + 1, dtype=x.dtype, device=device(x))
    tau = xp.max((xp.cumulative_sum(s, axis=-1) - 1.0) / j, axis=-1, keepdims=True)
    return _back(xp, xp.maximum(z - tau, 0.0), axis, moved)


def xp_sparsemax_jvp(xp: Any, u: Any, tangent: Any, axis: int = -1) -> Any:
    r"""Jacobian-vector product of sparsemax at ``u = xp_sparsemax(xp, theta, axis)``.

    With :math:`S = \{i : u_i > 0\}` the support and :math:`s` its indicator, the
    Jacobian is :math:`\operatorname{diag}(s) - s s^\top/|S|` (Martins & Astudillo
    2016, §2.5), so

    .. math:: J\,t = s \odot \Big(t - \frac{\langle s, t\rangle}{|S|}\Big).

    It is symmetric (also the vector-Jacobian product). At a kink (an entry exactly at
    the threshold, :math:`u_i = 0`) it is the Jacobian of the face :math:`u` lies on.
    :math:`O(k)` per row.

    Parameters
    ----------
    xp : module
        The array-API namespace.
    u : array, shape (..., k, ...)
        The projection.
    tangent : array, same shape as ``u``
        The direction :math:`t`.
    axis : int, default -1
        The axis of the simplex.

    Returns
    -------
    array, same shape as ``u``

    Examples
    --------
    >>> import numpy as np
    >>> from projloss._xp import namespace
    >>> u = np.array([0.15, 0.85, 0.0])
    >>> print(xp_sparsemax_jvp(namespace(u), u, np.array([1.0, 0.0, 5.0])))
    [ 0.5 -0.5  0. ]
    """
    u, moved = _last(xp, u, axis)
    t, _ = _last(xp, tangent, axis)
    s = xp.astype(u > 0, t.dtype)
    size = xp.maximum(xp.sum(s, axis=-1, keepdims=True), 1.0)  # >= 1 on the simplex
    out = s * (t - xp.sum(s * t, axis=-1, keepdims=True) / size)
    return _back(xp, out, axis, moved)


def xp_softmax(xp: Any, theta: Any, axis: int = -1) -> Any:
    r"""Softmax along ``axis`` for an array of any array-API library: the KL projection
    onto the simplex (see :func:`softmax`), shifted by the row maximum so that nothing
    overflows (:func:`projloss._xp.softmax`). :math:`O(k)` per row.

    Examples
    --------
    >>> import numpy as np
    >>> from projloss._xp import namespace
    >>> theta = np.array([0.0, np.log(3.0), -1e6])
    >>> print(np.round(xp_softmax(namespace(theta), theta), 6))
    [0.25 0.75 0.  ]
    """
    from .._xp import softmax as _softmax

    x, moved = _last(xp, theta, axis)
    return _back(xp, _softmax(xp, x, axis=-1), axis, moved)


def xp_softmax_jvp(xp: Any, u: Any, tangent: Any, axis: int = -1) -> Any:
    r"""Jacobian-vector product of softmax at ``u = xp_softmax(xp, theta, axis)``:
    the Jacobian is :math:`\operatorname{diag}(u) - u u^\top` (symmetric), so

    .. math:: J\,t = u \odot (t - \langle u, t\rangle).

    :math:`O(k)` per row.

    Examples
    --------
    >>> import numpy as np
    >>> from projloss._xp import namespace
    >>> u = np.array([0.25, 0.75])
    >>> print(xp_softmax_jvp(namespace(u), u, np.array([1.0, 0.0])))
    [ 0.1875 -0.1875]
    """
    u, moved = _last(xp, u, axis)
    t, _ = _last(xp, tangent, axis)
    out = u * (t - xp.sum(u * t, axis=-1, keepdims=True))
    return _back(xp, out, axis, moved)


def xp_one_hot_argmax(xp: Any, theta: Any) -> Any:
    r"""One-hot vector of the argmax along the last axis (ties: the first index, as
    :func:`one_hot_argmax`), batched, in ``theta``'s dtype and on its device.

    Examples
    --------
    >>> import numpy as np
    >>> from projloss._xp import namespace
    >>> theta = np.array([[1.0, 3.0, 3.0], [0.0, 0.0, 0.0]])
    >>> print(xp_one_hot_argmax(namespace(theta), theta))
    [[0. 1. 0.]
     [1. 0. 0.]]
    """
    from .._xp import device

    idx = xp.argmax(theta, axis=-1, keepdims=True)
    cols = xp.arange(theta.shape[-1], dtype=idx.dtype, device=device(theta))
    return xp.astype(idx == cols, theta.dtype)


def check_labels(y: ArrayLike, k: int, name: str = "y") -> NDArray[np.int64]:
    """Validate integer class labels in ``[0, k)`` (any shape) and return them as int64."""
    arr = np.asarray(y)
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold integer class labels, got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must hold integer class labels, got non-integer values")
    labels = arr.astype(np.int64)
    if labels.size and (labels.min() < 0 or labels.max() >= k):
        raise ValueError(
            f"{name} must hold class labels in [0, {k}), got values in "
            f"[{labels.min()}, {labels.max()}]"
        )
    return labels


def one_hot(labels: NDArray[np.int64], k: int) -> NDArray[np.float64]:
    """One-hot encoding ``(..., k)`` of validated integer labels of any shape."""
    return (labels[..., None] == np.arange(k)).astype(np.float64)


def decode_one_hot(v: ArrayLike, name: str = "v") -> NDArray[np.int64]:
    """Index of the 1 of one-hot vectors along the last axis, batched (validated)."""
    arr = check_binary(v, name=name)
    if not np.all(arr.sum(axis=-1) == 1):
        raise ValueError(f"{name} must be one-hot along its last axis (exactly one 1)")
    return np.argmax(arr, axis=-1).astype(np.int64)


class Simplex(ConvexSet):
    r""":math:`\triangle^k`: sparsemax (Euclidean), softmax (KL), argmax (MAP).

    Examples
    --------
    >>> import numpy as np
    >>> s = Simplex()
    >>> theta = np.array([0.5, 1.2, -1.0])
    >>> print(np.round(s.project(theta), 6))  # sparsemax
    [0.15 0.85 0.  ]
    >>> print(np.round(s.project(theta, "kl"), 6))  # softmax
    [0.308939 0.622127 0.068934]
    >>> print(s.argmax(theta), s.decode(s.argmax(theta)), s.encode(2, k=3))
    [0. 1. 0.] 1 [0. 0. 1.]
    """

    name: ClassVar[str] = "simplex"
    encodings: ClassVar[tuple[str, ...]] = ("one_hot",)
    decodes: ClassVar[tuple[str, ...]] = ("one_hot",)
    fused_check: ClassVar[tuple[str, ...]] = ("kl",)

    def _project_fused(self, theta: NDArray[np.float64], geometry: str) -> NDArray | None:
        return _checked_softmax(theta)

    def projection_jacobians(
        self,
        theta: NDArray[np.float64],
        u: NDArray[np.float64],
        geometry: str,
        event_shape: tuple[int, ...],
    ) -> Jacobians | None:
        r""":func:`simplex_jacobians` (diagonal minus rank one, both geometries).

        Parameters
        ----------
        theta : ndarray of shape (n, k), dtype float64
            The scores, one point per row.
        u : ndarray of shape (n, k), dtype float64
            Their projections (sparsemax or softmax).
        geometry : {"euclidean", "kl"}
            The geometry of the projection.
        event_shape : tuple of int
            ``(k,)``.

        Returns
        -------
        DiagonalMinusRankOne
            KL: :math:`\mathrm{diag}(u) - u u^\top`; Euclidean: :math:`\mathrm{diag}(1_S)
            - 1_S 1_S^\top / |S|` on the support :math:`S`.
        """
        return simplex_jacobians(theta, u, event_shape[-1], geometry)

    def cheap_jacobians(self, geometry: str) -> bool:
        """Always: the Jacobians are diagonal minus rank one, ``O(k)`` per sample.

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
        return project_simplex(theta)

    def _project_kl(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return softmax(theta)

    def _argmax(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return one_hot_argmax(theta)

    def _xp_project(self, theta: Any, geometry: str, xp: Any) -> Any:
        if geometry == "euclidean":
            return xp_sparsemax(xp, theta)
        return xp_softmax(xp, theta)

    def _xp_project_jvp(self, theta: Any, u: Any, tangent: Any, geometry: str, xp: Any) -> Any:
        if geometry == "euclidean":
            return xp_sparsemax_jvp(xp, u, tangent)
        return xp_softmax_jvp(xp, u, tangent)

    def _xp_argmax(self, theta: Any, xp: Any) -> Any:
        return xp_one_hot_argmax(xp, theta)

    def encode(self, y: ArrayLike, k: int | None = None) -> NDArray[np.float64]:
        """One-hot encoding ``(..., k)`` of integer labels ``y`` in ``[0, k)`` (``k`` needed).

        Parameters
        ----------
        y : array-like of int, any shape
            Class labels in ``[0, k)`` (integer-valued floats are accepted).
        k : int
            The number of classes (required: the labels do not imply it).

        Returns
        -------
        ndarray of shape (``*y.shape``, k), dtype float64
            The one-hot vectors.

        Raises
        ------
        ValueError
            If ``k`` is None or not a positive integer, or if ``y`` holds non-integer
            values or labels outside ``[0, k)``.
        """
        if k is None:
            raise ValueError("encode needs the number of classes k for the simplex")
        k = _check_k(k)
        return one_hot(check_labels(y, k), k)

    def _xp_decode(self, v: Any, xp: Any) -> Any:
        """One-hot -> class in ``0..k-1`` (int64), on ``v``'s device."""
        return xp.argmax(v, axis=-1)

    def decode(self, v: ArrayLike) -> NDArray[np.int64]:
        """Class label (int64, shape ``(...)``) of one-hot vertices ``(..., k)``.

        Parameters
        ----------
        v : array-like of shape (..., k)
            One-hot vectors (exactly one 1 per vector, zeros elsewhere).

        Returns
        -------
        ndarray of shape v.shape[:-1], dtype int64
            The index of the 1 of each vector.

        Raises
        ------
        ValueError
            If ``v`` is a scalar, or is not one-hot along its last axis.
        """
        return decode_one_hot(v)

    def vertices(self, k: int) -> NDArray[np.float64]:
        """The ``k`` one-hot vectors (the standard basis).

        Parameters
        ----------
        k : int
            The number of classes.

        Returns
        -------
        ndarray of shape (k, k), dtype float64
            The identity matrix: vertex ``i`` encodes class ``i``.

        Raises
        ------
        ValueError
            If ``k`` is not a positive integer.
        """
        return np.eye(_check_k(k))

    def _contains(self, u: NDArray[np.float64], atol: float) -> NDArray[np.bool_]:
        return np.all(u >= -atol, axis=-1) & (np.abs(u.sum(axis=-1) - 1.0) <= atol)


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)


def simplex_jacobians(
    theta: NDArray[np.float64], u: NDArray[np.float64], k: int, geometry: str
) -> DiagonalMinusRankOne:
    r"""Jacobians of the projection onto the simplex, or onto each row of a row-simplex
    point (``(n, p)`` rows ``theta``, their projections ``u``, ``p / k`` simplices of size
    ``k`` per row). KL (the softmax): :math:`J = \mathrm{diag}(u) - u u^\top` per simplex.
    Euclidean (sparsemax, Martins & Astudillo 2016): :math:`J = \mathrm{diag}(1_S) -
    1_S 1_S^\top / |S|` with :math:`S` the support :math:`\{j: \theta_j \ge \tau\}`,
    :math:`\tau` the threshold of the projection :math:`u = (\theta - \tau)_+`, closed
    (ties within :data:`MERGE` counted in: at a kink, the largest-rank element of the
    generalized Jacobian, as for the permutahedron). ``O(n p)``."""
    n, p = theta.shape
    blocks = p // k
    if geometry == "kl":
        return DiagonalMinusRankOne(u.copy(), u.copy(), blocks)
    T, U = theta.reshape(n, blocks, k), u.reshape(n, blocks, k)
    positive = U > 0.0
    count = np.maximum(positive.sum(axis=2, keepdims=True), 1)
    tau = (np.sum(np.where(positive, T, 0.0), axis=2, keepdims=True) - 1.0) / count
    support = positive | (T >= tau - MERGE * (1.0 + np.abs(T).max(axis=2, keepdims=True)))
    size = support.sum(axis=2, keepdims=True)
    d = support.astype(np.float64)
    v = d / np.sqrt(np.maximum(size, 1))
    return DiagonalMinusRankOne(d.reshape(n, p), v.reshape(n, p), blocks)
