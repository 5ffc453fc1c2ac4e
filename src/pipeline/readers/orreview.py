"""Ordinal-regression files in the "matlab" format of datasets-orreview (Gutiérrez et al.).

One sample per line: features separated by whitespace, the class last, an integer from
1 to K.  Nominal attributes are already one-hot encoded upstream.  Labels are returned as
int64 in 1..K; K is the largest class over the parts read together (train and test of a
split), or the ``n_classes`` option.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

Part = tuple[np.ndarray, np.ndarray]


def read(paths: Sequence[Path], n_classes: int | None = None) -> tuple[list[Part], dict[str, Any]]:
    """Read whitespace-separated numeric files with the class in the last column."""
    parts = []
    for path in paths:
        data = np.loadtxt(path, dtype=np.float64, ndmin=2)
        if data.shape[1] < 2:
            raise ValueError(f"{path}: need at least one feature column and the class column")
        y = data[:, -1]
        if not np.all(y == np.round(y)) or y.min() < 1:
            raise ValueError(f"{path}: the last column must hold integer classes 1..K")
        parts.append((np.ascontiguousarray(data[:, :-1]), y.astype(np.int64)))
    widths = {X.shape[1] for X, _ in parts}
    if len(widths) != 1:
        raise ValueError(f"the files {list(map(str, paths))} have different numbers of columns")
    k = max(int(y.max()) for _, y in parts)
    if n_classes is not None:
        if k > n_classes:
            raise ValueError(f"class {k} found but n_classes = {n_classes}")
        k = n_classes
    return parts, {"n_classes": k}
