"""On-disk format of a prepared dataset: ``data/prepared/<variant>/``.

- ``train.npz``, ``val.npz``, ``test.npz`` (:func:`numpy.savez`, uncompressed): ``y``
  (labels, compact dtype), ``index`` (row ids in the raw parts, see
  :mod:`pipeline.data.protocol`) and X, either dense (``X``) or CSR components
  (``X_data``, ``X_indices``, ``X_indptr``, ``X_shape``; what
  :func:`scipy.sparse.save_npz` stores), so sparse matrices stay sparse;
- ``scaler.npz``: the fitted StandardScaler's ``mean`` (zeros when not centered),
  ``scale`` and ``var``;
- ``stats.json``: statistics and the parameters that produced the files.  It is written
  last, so its presence means the directory is complete.

Every file is written atomically (temporary file + rename).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..fileio import atomic_open, write_json

STATS = "stats.json"
SCALER = "scaler.npz"


def _compact_labels(y: np.ndarray) -> np.ndarray:
    y = np.asarray(y)
    if y.size and y.min() >= np.iinfo(np.int8).min and y.max() <= np.iinfo(np.int8).max:
        return y.astype(np.int8)
    return y.astype(np.int64)


def save_split(path: Path, X: Any, y: np.ndarray, index: np.ndarray) -> None:
    """Write one split (see the module docstring)."""
    arrays: dict[str, np.ndarray] = {"y": _compact_labels(y), "index": np.asarray(index)}
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        arrays |= {
            "X_data": X.data.astype(np.float64),
            "X_indices": X.indices,
            "X_indptr": X.indptr,
            "X_shape": np.asarray(X.shape, dtype=np.int64),
        }
    else:
        arrays["X"] = np.asarray(X, dtype=np.float64)
    with atomic_open(path, "wb", needed=_npz_bytes(arrays)) as f:
        np.savez(f, **arrays)


def _npz_bytes(arrays: dict[str, np.ndarray]) -> int:
    """About the size of the uncompressed ``.npz`` of ``arrays`` (the data, plus a header
    of about 200 bytes per array): the space a full disk is told to make."""
    return sum(int(a.nbytes) + 200 for a in arrays.values())


def load_split(path: Path) -> tuple[Any, np.ndarray, np.ndarray]:
    """Read one split: ``(X, y, index)``; X dense float64 or CSR, y int64."""
    with np.load(path, allow_pickle=False) as z:
        if "X" in z:
            X: Any = z["X"]
        else:
            X = sp.csr_matrix(
                (z["X_data"], z["X_indices"], z["X_indptr"]), shape=tuple(z["X_shape"])
            )
        return X, z["y"].astype(np.int64), z["index"]


def save_scaler(path: Path, mean: np.ndarray | None, scale: np.ndarray, var: np.ndarray) -> None:
    """Write the scaler's parameters."""
    arrays = {
        "mean": np.zeros_like(scale) if mean is None else np.asarray(mean),
        "scale": np.asarray(scale),
        "var": np.asarray(var),
        "centered": np.asarray(mean is not None),
    }
    with atomic_open(path, "wb", needed=_npz_bytes(arrays)) as f:
        np.savez(f, **arrays)


def load_scaler(path: Path) -> dict[str, np.ndarray]:
    """The scaler's parameters as a dict of arrays."""
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def save_stats(directory: Path, stats: dict[str, Any]) -> None:
    """Write ``stats.json`` (last: it marks the directory complete)."""
    write_json(directory / STATS, stats)


def load_stats(directory: Path) -> dict[str, Any] | None:
    """``stats.json`` of a prepared directory, or None when absent or unreadable."""
    try:
        return json.loads((directory / STATS).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
