"""Helpers shared by the engine tests (not the sets' tests)."""

from __future__ import annotations

import numpy as np
import pytest

from mirror import require_mirror
from projloss.sets import SETS, get_set


def require_sets(*names: str) -> None:
    """Fail loudly when a set a test needs is missing from the registry."""
    missing = [n for n in names if n not in SETS]
    if missing:
        pytest.fail(f"sets missing from the registry: {missing}", pytrace=False)


def make_set(name: str, **params):
    require_sets(name)
    return get_set(name, **params)


def load_orreview(name: str, split: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An orreview split of ``ordinal/<name>`` (paper Table 4): the training inputs
    standardized (on the training split), the training labels, the test inputs scaled
    alike."""
    from sklearn.preprocessing import StandardScaler

    base = require_mirror() / "ordinal" / name
    train = np.loadtxt(base / f"train_{name}.{split}")
    test = np.loadtxt(base / f"test_{name}.{split}")
    scaler = StandardScaler().fit(train[:, :-1])
    return scaler.transform(train[:, :-1]), train[:, -1], scaler.transform(test[:, :-1])


def load_label_ranking(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Parse ``label_ranking/<name>.txt``: CSV header ``A1,...,Ad,ranking``, rankings like
    ``b>a>c`` (most preferred first). Returns X (n, d) and permutations y (n, k) with
    ``y[i, rank] = label`` (labels ``a, b, ... -> 0, 1, ...``)."""
    path = require_mirror() / "label_ranking" / f"{name}.txt"
    rows = path.read_text().strip().splitlines()[1:]
    X, y = [], []
    for row in rows:
        *feats, ranking = row.split(",")
        X.append([float(v) for v in feats])
        y.append([ord(c.strip()) - ord("a") for c in ranking.split(">")])
    return np.array(X), np.array(y, dtype=np.int64)
