"""Ordinal-regression files in the "matlab" format of datasets-orreview (Gutiérrez et al.).

One sample per line: features separated by whitespace, the class last, an integer from
1 to K.  Nominal attributes are already one-hot encoded upstream.  Labels are returned as
int64 in 1..K; K is the largest class over the parts read together (train and test of a
split), or the ``n_classes`` option.

Constraints (each violation is a one-line :class:`~pipeline.errors.DataFormatError`
naming the file and its 1-based line): a text file; every row as many columns as the
first one; finite numbers only (no NaN, inf or text); integer classes >= 1.  The columns
have no names, so the option ``drop`` is not available for this format.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import DataFormatError
from ._text import read_text, to_float

Part = tuple[np.ndarray, np.ndarray]
_REMEDY = "the orreview format takes whitespace-separated numbers only, the class last"


def _read_one(path: Path) -> Part:
    rows: list[list[str]] = []
    numbers: list[int] = []
    for i, line in enumerate(read_text(path).splitlines()):
        fields = line.split()
        if not fields:
            continue
        if rows and len(fields) != len(rows[0]):
            raise DataFormatError(
                f"{len(fields)} columns, the first row (line {numbers[0]}) has {len(rows[0])}",
                path,
                i + 1,
                "every row needs the same features and the class last",
            )
        rows.append(fields)
        numbers.append(i + 1)
    if len(rows[0]) < 2:
        raise DataFormatError(
            "need at least one feature column and the class column", path, numbers[0], _REMEDY
        )
    try:
        data = np.array(rows, dtype=np.float64)
    except ValueError:  # find the culprit for the message
        for fields, row in zip(rows, numbers, strict=True):
            for j, v in enumerate(fields):
                to_float(v, str(j + 1), path, row, _REMEDY)
        raise
    bad = ~np.isfinite(data)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        to_float(rows[r][c], str(c + 1), path, numbers[r], _REMEDY)  # raises
    y = data[:, -1]
    wrong = (y != np.round(y)) | (y < 1)
    if wrong.any():
        r = int(np.flatnonzero(wrong)[0])
        raise DataFormatError(
            f"class {rows[r][-1]!r} in the last column",
            path,
            numbers[r],
            "the last column must hold integer classes 1..K",
        )
    return np.ascontiguousarray(data[:, :-1]), y.astype(np.int64)


def read(paths: Sequence[Path], n_classes: int | None = None) -> tuple[list[Part], dict[str, Any]]:
    """Read whitespace-separated numeric files with the class in the last column."""
    parts = [_read_one(path) for path in paths]
    widths = {X.shape[1] for X, _ in parts}
    if len(widths) != 1:
        raise DataFormatError(
            f"the files {list(map(str, paths))} have different numbers of columns",
            paths[-1],
            None,
            "the train and test files of a split need the same columns",
        )
    k = max(int(y.max()) for _, y in parts)
    if n_classes is not None:
        if k > n_classes:
            raise DataFormatError(
                f"class {k} found but n_classes = {n_classes}",
                paths[0],
                None,
                "raise the option n_classes or fix the classes",
            )
        k = n_classes
    return parts, {"n_classes": k}
