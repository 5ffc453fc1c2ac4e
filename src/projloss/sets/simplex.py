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
are reused by the row-stochastic matrices (:mod:`projloss.sets.row_simplex`). Both are
written with numpy primitives (one sort, one cumsum, elementwise ops) over the whole
batch: there is no Python loop over samples.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .base import ConvexSet, check_binary

#: Up to this length, reductions over the last axis loop over its k columns (each step
#: vectorized over the whole batch): numpy's own reduction along a short contiguous last
#: axis pays a per-row overhead that makes it several times slower than an elementwise op.
_SHORT = 16


def row_max(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``x.max(axis=-1, keepdims=True)``, fast for short last axes (see ``_SHORT``)."""
    k = x.shape[-1]
    if k > _SHORT or k == 0:
        return np.max(x, axis=-1, keepdims=True)
    out = x[..., 0:1].copy()
    for j in range(1, k):  # loop over the k columns, not over samples
        np.maximum(out, x[..., j : j + 1], out=out)
    return out


def row_sum(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``x.sum(axis=-1, keepdims=True)``, fast for short last axes (see ``_SHORT``)."""
    k = x.shape[-1]
    if k > _SHORT or k == 0:
        return np.sum(x, axis=-1, keepdims=True)
    out = x[..., 0:1].copy()
    for j in range(1, k):  # loop over the k columns, not over samples
        out += x[..., j : j + 1]
    return out


def project_simplex(theta: ArrayLike, axis: int = -1) -> NDArray[np.float64]:
    r"""Sparsemax: the Euclidean projection onto the simplex along ``axis``, batched.

    Exact sort-based algorithm (Held et al. 1974; Duchi et al. 2008; Martins & Astudillo
    2016): with :math:`s` the entries sorted in descending order, the threshold is
    :math:`\tau = \max_j (\sum_{i\le j} s_i - 1)/j` (the maximum is attained at the support
    size :math:`\rho`, since :math:`\sum_{i\le j}(s_i - \tau) \le
    \sum_i \max(s_i - \tau, 0) = 1` for every :math:`j`, with equality at :math:`j=\rho`),
    and :math:`P(\theta) = \max(\theta - \tau, 0)`. :math:`O(k\log k)` per point; no input
    validation (the :class:`Simplex` oracle validates).

    Hand-written because neither numpy nor scipy provides it; every step is a whole-batch
    numpy primitive (one sort, one cumsum, elementwise ops, one max).
    """
    theta = np.asarray(theta, dtype=np.float64)
    if axis != -1 and axis != theta.ndim - 1:
        moved = project_simplex(np.moveaxis(theta, axis, -1))
        return np.moveaxis(moved, -1, axis)
    k = theta.shape[-1]
    asc = np.sort(theta, axis=-1)
    # Shift by the max (tau is shift-equivariant): the cumulative sums stay small, so the
    # "- 1" survives even when |theta| is huge.
    top = asc[..., -1:].copy()
    asc -= top
    css = np.cumsum(asc[..., ::-1], axis=-1)  # cumulative sums of the descending order
    css -= 1.0
    css /= np.arange(1, k + 1)
    tau = row_max(css)
    out = theta - top  # stay in the shifted frame: theta - (top + tau) would round tau away
    out -= tau
    np.maximum(out, 0.0, out=out)
    return out


def softmax(theta: ArrayLike, axis: int = -1) -> NDArray[np.float64]:
    r"""Softmax along ``axis``, batched: the KL projection onto the simplex.

    :math:`\operatorname{softmax}(\theta)_i = e^{\theta_i - \max\theta} /
    \sum_j e^{\theta_j - \max\theta}`: the largest exponent is 0, so nothing overflows and
    the denominator is at least 1. Same computation as ``scipy.special.softmax``, written
    with in-place operations and short-axis reductions (``row_max``/``row_sum``) for speed.
    """
    theta = np.asarray(theta, dtype=np.float64)
    if axis != -1 and axis != theta.ndim - 1:
        return np.moveaxis(softmax(np.moveaxis(theta, axis, -1)), -1, axis)
    out = theta - row_max(theta)
    np.exp(out, out=out)
    out /= row_sum(out)
    return out


def one_hot_argmax(theta: NDArray[np.float64]) -> NDArray[np.float64]:
    """One-hot vector of the argmax along the last axis (ties: first index), batched."""
    idx = np.argmax(theta, axis=-1)[..., None]
    out = np.zeros_like(theta)
    np.put_along_axis(out, idx, 1.0, axis=-1)
    return out


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
    r""":math:`\triangle^k`: sparsemax (Euclidean), softmax (KL), argmax (MAP)."""

    name: ClassVar[str] = "simplex"

    def _project_euclidean(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return project_simplex(theta)

    def _project_kl(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return softmax(theta)

    def _argmax(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return one_hot_argmax(theta)

    def encode(self, y: ArrayLike, k: int | None = None) -> NDArray[np.float64]:
        """One-hot encoding ``(..., k)`` of integer labels ``y`` in ``[0, k)`` (``k`` needed)."""
        if k is None:
            raise ValueError("encode needs the number of classes k for the simplex")
        k = _check_k(k)
        return one_hot(check_labels(y, k), k)

    def decode(self, v: ArrayLike) -> NDArray[np.int64]:
        """Class label (int64, shape ``(...)``) of one-hot vertices ``(..., k)``."""
        return decode_one_hot(v)

    def vertices(self, k: int) -> NDArray[np.float64]:
        return np.eye(_check_k(k))

    def _contains(self, u: NDArray[np.float64], atol: float) -> NDArray[np.bool_]:
        return np.all(u >= -atol, axis=-1) & (np.abs(u.sum(axis=-1) - 1.0) <= atol)


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)
