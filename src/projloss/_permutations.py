"""Permutations ``y[..., rank] = label`` and their encodings (label ranking).

Shared by the target losses (:mod:`projloss.target_losses`), the metrics
(:mod:`projloss.metrics`) and the label-ranking estimator. A ranking of ``k`` labels is a
permutation of ``0..k-1`` listing the labels from the most to the least preferred.

Examples
--------
>>> import numpy as np
>>> y = check_permutations([[2, 0, 1]])  # label 2 first, then 0, then 1
>>> inverse_permutation(y)  # the rank of each label
array([[1, 2, 0]])
>>> permutation_matrix(y)[0]  # P[rank, label] = 1
array([[0., 0., 1.],
       [1., 0., 0.],
       [0., 1., 0.]])
>>> permuted_weights(y, np.array([3.0, 2.0, 1.0]))  # label y[r] gets w[r]
array([[2., 1., 3.]])
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def _as_int(y: ArrayLike, name: str) -> NDArray[np.int64]:
    arr = np.asarray(y)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must contain integers")
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iub":
        raise ValueError(f"{name} must contain integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def check_permutations(y: ArrayLike, name: str = "y") -> NDArray[np.int64]:
    """Validate an array of permutations of ``0..k-1`` on the last axis.

    Parameters
    ----------
    y : array-like of shape (..., k)
        Rankings ``y[..., rank] = label`` (integers, or floats holding integers).
    name : str, default="y"
        The argument's name, for the error messages.

    Returns
    -------
    y : ndarray of shape (..., k)
        The permutations as int64.

    Raises
    ------
    ValueError
        If ``y`` is a scalar, does not hold integers, or some entry along the leading axes
        is not a permutation of ``0..k-1``.
    """
    arr = _as_int(y, name)
    if arr.ndim < 1:
        raise ValueError(f"{name} must have shape (..., k) of permutations, got a scalar")
    k = arr.shape[-1]
    ok = np.all(np.sort(arr, axis=-1) == np.arange(k), axis=-1)
    if not np.all(ok):
        bad = np.argwhere(~np.atleast_1d(ok))[0]
        raise ValueError(
            f"{name} must hold permutations of 0..{k - 1} (y[rank] = label); "
            f"entry {tuple(int(i) for i in bad)} is not a permutation"
        )
    return arr


def permutation_matrix(y: NDArray[np.int64]) -> NDArray[np.float64]:
    """Permutation matrices ``P[..., rank, label] = 1`` for ``y[..., rank] = label``.

    Parameters
    ----------
    y : ndarray of shape (..., k)
        Rankings of integer labels in ``0..k-1`` (not validated; see
        :func:`check_permutations`).

    Returns
    -------
    P : ndarray of shape (..., k, k)
        The 0/1 matrices, float64.
    """
    k = y.shape[-1]
    return np.eye(k)[y]


def inverse_permutation(y: NDArray[np.int64]) -> NDArray[np.int64]:
    """Ranks: ``r[..., label] = rank`` for ``y[..., rank] = label``.

    Parameters
    ----------
    y : ndarray of shape (..., k)
        Permutations of ``0..k-1`` (not validated; see :func:`check_permutations`).

    Returns
    -------
    r : ndarray of shape (..., k)
        The inverse permutations (the rank of each label), int64.
    """
    return np.argsort(y, axis=-1, kind="stable")


def permuted_weights(y: NDArray[np.int64], w: NDArray[np.float64]) -> NDArray[np.float64]:
    r"""The permutahedron encoding :math:`\psi(\pi)_{\pi_r} = w_r`: label ``y[r]`` gets ``w[r]``.

    Parameters
    ----------
    y : ndarray of shape (..., k)
        Permutations of ``0..k-1`` (not validated; see :func:`check_permutations`).
    w : array-like of shape (k,)
        The weight of each rank.

    Returns
    -------
    psi : ndarray of shape (..., k)
        The weight of each label, float64.
    """
    return np.asarray(w, dtype=np.float64)[inverse_permutation(y)]


__all__ = [
    "check_permutations",
    "inverse_permutation",
    "permutation_matrix",
    "permuted_weights",
]
