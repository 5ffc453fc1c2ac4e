"""LIBSVM multi-label files (``l1,l2,... idx:val ...``, plain or ``.bz2``/``.gz``).

Parsed with :func:`sklearn.datasets.load_svmlight_files` (``multilabel=True``), all parts
together so that they share one feature count.  Feature indices are 1-based in LIBSVM
files (``zero_based=False``); label ids start at ``label_base`` (0 in the LIBSVM
multi-label sets).  Lines without labels (first token ``idx:val``) are samples with an
empty label set.  Labels become a dense 0/1 ``int8`` indicator matrix (scikit-learn's
``MultiLabelBinarizer``); X is a CSR matrix.

Refused with a one-line :class:`~pipeline.errors.DataFormatError` (file and 1-based line;
a sample's line is not counted in ``.bz2``/``.gz`` files): empty or binary plain files,
lines that scikit-learn's parser rejects (found by parsing each line alone once the whole
parse failed), NaN/inf values, non-integer labels, label ids below ``label_base`` or
beyond ``n_labels``.  The features have no names, so the option ``drop`` is not available.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_files
from sklearn.preprocessing import MultiLabelBinarizer

from ...errors import DataFormatError
from ._text import NOT_FINITE, read_text

Part = tuple[sp.csr_matrix, np.ndarray]


def read(
    paths: Sequence[Path],
    n_features: int | None = None,
    n_labels: int | None = None,
    zero_based: bool = False,
    label_base: int = 0,
) -> tuple[list[Part], dict[str, Any]]:
    """Read LIBSVM multi-label files jointly."""
    for path in paths:
        if Path(path).suffix not in (".bz2", ".gz"):
            read_text(path)  # empty, binary or not UTF-8: refused here with its line
    try:
        loaded = load_svmlight_files(
            [str(p) for p in paths],
            n_features=n_features,
            dtype=np.float64,
            multilabel=True,
            zero_based=zero_based,
        )
    except (ValueError, OSError, EOFError) as exc:
        path, row, problem = _first_bad_line(paths, zero_based, n_features)
        raise DataFormatError(
            f"malformed LIBSVM data: {problem or exc}",
            path or ", ".join(map(str, paths)),
            row,
            "each line must be `l1,l2,... index:value ...` (1-based increasing indices)",
        ) from None
    Xs, ys = loaded[0::2], loaded[1::2]
    for X, path in zip(Xs, paths, strict=True):
        bad = np.flatnonzero(~np.isfinite(X.data))
        if bad.size:
            sample = int(np.searchsorted(X.indptr, bad[0], side="right") - 1)
            raise DataFormatError(
                f"value {X.data[bad[0]]} of feature {int(X.indices[bad[0]]) + 1}",
                path,
                _line_of_sample(Path(path), sample),
                NOT_FINITE,
            )
    label_ids = []
    # A Python loop per sample, once at load time (sklearn returns label tuples per row).
    for y, path in zip(ys, paths, strict=True):
        ids = []
        for sample, row in enumerate(y):
            arr = np.asarray(row, dtype=np.float64)
            if not np.all(arr == np.round(arr)):
                raise DataFormatError(
                    f"non-integer label in {row}",
                    path,
                    _line_of_sample(Path(path), sample),
                    "labels are integer ids",
                )
            ids.append(tuple(int(v) - label_base for v in arr))
            low = min(ids[-1], default=0)
            if low < 0:
                raise DataFormatError(
                    f"label id {low + label_base} < label_base = {label_base}",
                    path,
                    _line_of_sample(Path(path), sample),
                    "set the dataset's options.label_base to its smallest label id",
                )
            if n_labels is not None and max(ids[-1], default=-1) >= n_labels:
                raise DataFormatError(
                    f"label id {max(ids[-1]) + label_base} but n_labels = {n_labels}",
                    path,
                    _line_of_sample(Path(path), sample),
                    "set the dataset's options.n_labels to the number of labels (or remove "
                    "it to count them)",
                )
        label_ids.append(ids)
    seen = [i for ids in label_ids for row in ids for i in row]
    hi = max(seen, default=-1)
    if n_labels is None:
        n_labels = hi + 1
    mlb = MultiLabelBinarizer(classes=list(range(n_labels)))
    parts: list[Part] = []
    for X, ids in zip(Xs, label_ids, strict=True):
        Y = mlb.fit_transform(ids).astype(np.int8)
        parts.append((sp.csr_matrix(X, dtype=np.float64), Y))
    return parts, {"n_classes": n_labels, "n_attributes": int(Xs[0].shape[1])}


def _first_bad_line(
    paths: Sequence[Path], zero_based: bool, n_features: int | None
) -> tuple[Path | None, int | None, str | None]:
    """(file, 1-based line, scikit-learn's message) of the first line its parser refuses,
    parsed alone (only after the joint parse failed); (None, None, None) when none does."""
    import bz2
    import gzip
    import io

    from sklearn.datasets import load_svmlight_file

    opener = {".bz2": bz2.open, ".gz": gzip.open}
    for path in paths:
        try:
            with opener.get(Path(path).suffix, open)(path, "rb") as f:
                lines = f.read().splitlines()
        except (OSError, EOFError) as exc:  # a damaged archive: the file, no line
            return Path(path), None, str(exc)
        for i, line in enumerate(lines):
            if not line.split(b"#", 1)[0].strip():
                continue
            try:
                load_svmlight_file(
                    io.BytesIO(line + b"\n"), n_features=n_features, multilabel=True,
                    zero_based=zero_based,
                )  # fmt: skip
            except ValueError as exc:
                return Path(path), i + 1, str(exc)
    return None, None, None


def _line_of_sample(path: Path, sample: int) -> int | None:
    """1-based line of the ``sample``-th data line of a plain file (comments skipped)."""
    if path.suffix in (".bz2", ".gz"):
        return None
    count = -1
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            text = line.split("#", 1)[0].strip()
            if text:
                count += 1
                if count == sample:
                    return i + 1
    return None
