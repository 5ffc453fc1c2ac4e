"""Helpers shared by the engine tests (not the sets' tests)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

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


def load_tmc2007_500(n: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """The first ``n`` samples of MULAN's tmc2007-500 test part
    (``multilabel/tmc2007/tmc2007-500-test.arff``, sparse ARFF lines ``{index value,...}``):
    X ``(n, 500)`` CSR of the binary word features, Y ``(n, 22)`` the labels (attributes
    500-521)."""
    path = require_mirror() / "multilabel" / "tmc2007" / "tmc2007-500-test.arff"
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().lower() == "@data") + 1
    rows, cols, Y = [], [], np.zeros((n, 22))
    for i, line in enumerate(lines[start : start + n]):
        for item in line.strip().strip("{}").split(","):
            if item:
                j, value = item.split()
                if int(j) < 500:
                    rows.append(i)
                    cols.append(int(j))
                else:
                    Y[i, int(j) - 500] = float(value)
    X = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, 500))
    return X, Y
