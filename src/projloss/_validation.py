"""Input validation shared by the sets, losses and estimators.

Every public oracle goes through these helpers so that bad input fails early with a
``ValueError`` that names the problem (shape, NaN/inf, unknown geometry, ...).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.sparse import issparse

GEOMETRIES = ("euclidean", "kl")


def check_geometry(geometry: str) -> str:
    """Normalise and validate a geometry name ('euclidean' or 'kl')."""
    if not isinstance(geometry, str):
        raise ValueError(f"geometry must be a string in {GEOMETRIES}, got {geometry!r}")
    g = geometry.lower()
    if g not in GEOMETRIES:
        raise ValueError(f"unknown geometry {geometry!r}; valid geometries are {GEOMETRIES}")
    return g


def check_array(
    x: ArrayLike,
    *,
    name: str = "theta",
    matrix: bool = False,
    min_size: int = 1,
    finite: bool = True,
) -> NDArray[np.float64]:
    """Return ``x`` as a finite float64 array of shape ``(..., p)`` or ``(..., k, k)``.

    Parameters
    ----------
    x : array-like
        The input.
    name : str
        Name used in error messages.
    matrix : bool
        If True, the trailing two axes must form a square ``k x k`` matrix.
    min_size : int
        Minimum size of the trailing axis (``p`` or ``k``).
    finite : bool
        Check that every entry is finite (False: the caller's kernel checks it in the
        pass that reads the entries, and calls again with True to raise the error).
    """
    if issparse(x):
        raise ValueError(
            f"{name} is a scipy.sparse {type(x).__name__}: sparse input is not supported "
            f"(projections are dense); pass {name}.toarray()"
        )
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array: {exc}") from None
    if matrix:
        if arr.ndim < 2 or arr.shape[-1] != arr.shape[-2]:
            raise ValueError(
                f"{name} must have shape (..., k, k) (square trailing axes), got {arr.shape}"
            )
    elif arr.ndim < 1:
        raise ValueError(f"{name} must have shape (..., p) with at least one axis, got a scalar")
    if arr.shape[-1] < min_size:
        raise ValueError(
            f"{name} must have at least {min_size} entries on its last axis, got shape {arr.shape}"
        )
    if finite and not np.all(np.isfinite(arr)):
        bad = "NaN" if np.isnan(arr).any() else "infinite"
        raise ValueError(f"{name} contains {bad} values; projections need finite input")
    return arr
