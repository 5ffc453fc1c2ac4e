"""Label-ranking text files (Cheng et al. 2009 format, as in akorba/Structured_Approach_...).

A header line ``A1,...,Ad,ranking``, then one sample per line: ``d`` comma-separated
numbers and a ranking of the labels written as letters joined by ``>``, most preferred
first, e.g. ``b>a>c``.  Labels are the letters in alphabetical order (``a`` = 0).

Encoding (the convention of the whole project): ``y[r] = label`` at rank ``r``, rank 0
most preferred, so ``b>a>c`` becomes ``[1, 0, 2]``; ``y`` is an int64 permutation.
Rankings must be complete and without ties.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

Part = tuple[np.ndarray, np.ndarray]


def parse_rankings(rankings: Sequence[str], source: str = "") -> tuple[np.ndarray, list[str]]:
    """Strings ``"b>a>c"`` -> int64 array of label indices by rank, and the label names."""
    where = f" in {source}" if source else ""
    # One Python split per sample: this runs once at load time, not in a training loop.
    tokens = [r.strip().split(">") for r in rankings]
    if not tokens:
        raise ValueError(f"no rankings{where}")
    labels = sorted({t for row in tokens for t in row})
    k = len(labels)
    index = {lab: i for i, lab in enumerate(labels)}
    lengths = {len(row) for row in tokens}
    if lengths != {k}:
        bad = next(i for i, row in enumerate(tokens) if len(row) != k)
        raise ValueError(
            f"incomplete ranking {rankings[bad]!r} (sample {bad}){where}: every ranking must "
            f"order all {k} labels {labels}"
        )
    y = np.array([[index[t] for t in row] for row in tokens], dtype=np.int64)
    ok = (np.sort(y, axis=1) == np.arange(k)).all(axis=1)
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"ranking {rankings[bad]!r} (sample {bad}) repeats a label{where}")
    return y, labels


def read(paths: Sequence[Path]) -> tuple[list[Part], dict[str, Any]]:
    """Read label-ranking files; all parts share the label alphabet."""
    feats, ranks, headers = [], [], []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            header = f.readline().strip().split(",")
        if not header or header[-1].strip().lower() != "ranking":
            raise ValueError(f"{path}: the header must end with a 'ranking' column, got {header}")
        d = len(header) - 1
        X = np.loadtxt(path, delimiter=",", skiprows=1, usecols=range(d), ndmin=2)
        r = np.loadtxt(path, delimiter=",", skiprows=1, usecols=[d], dtype=str, ndmin=1)
        feats.append(X.astype(np.float64))
        ranks.append(list(r))
        headers.append(header)
    if any(h != headers[0] for h in headers):
        raise ValueError(f"the files {list(map(str, paths))} have different headers")
    y_all, labels = parse_rankings([s for r in ranks for s in r], ", ".join(map(str, paths)))
    parts, start = [], 0
    for X in feats:
        parts.append((X, y_all[start : start + len(X)]))
        start += len(X)
    meta = {"n_classes": len(labels), "label_names": labels, "feature_names": headers[0][:-1]}
    return parts, meta
