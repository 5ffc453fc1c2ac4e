"""The metrics of the paper's tables (§6, Appendix B).

- label ranking: :func:`ranking_hamming_loss`, the entrywise Hamming loss between the true
  and predicted permutation matrices, in percent (Tables 1-3);
- multilabel: :func:`multilabel_accuracy` = 100 (1 - Hamming loss) and :func:`f1` (micro,
  macro or per-sample average, in percent; Tables 6-7);
- ordinal regression: :func:`ordinal_mae`, the mean absolute error (Table 4).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.metrics import f1_score, hamming_loss, mean_absolute_error

from .target_losses import check_permutations, permutation_matrix


def _as_matrices(y: ArrayLike, name: str) -> np.ndarray:
    if hasattr(y, "toarray"):
        y = y.toarray()
    arr = np.asarray(y)
    if arr.ndim == 2:  # rankings y[i, rank] = label
        return permutation_matrix(check_permutations(arr, name))
    if arr.ndim != 3 or arr.shape[1] != arr.shape[2]:
        raise ValueError(
            f"{name} must be rankings (n, k) or 0/1 matrices (n, k, k), got shape {arr.shape}"
        )
    if not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name} must contain 0/1 matrices")
    return arr


def ranking_hamming_loss(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    percent: bool = True,
    sample_weight: ArrayLike | None = None,
) -> float:
    """Fraction of differing entries between true and predicted ``k x k`` permutation (or
    0/1) matrices, averaged over samples; in percent by default (the paper's label-ranking
    metric). Inputs are rankings ``(n, k)`` with ``y[i, rank] = label`` or 0/1 matrices
    ``(n, k, k)``."""
    A = _as_matrices(y_true, "y_true")
    B = _as_matrices(y_pred, "y_pred")
    if A.shape != B.shape:
        raise ValueError(f"y_true and y_pred have different shapes: {A.shape} and {B.shape}")
    per_sample = np.mean(A != B, axis=(1, 2))
    h = float(np.average(per_sample, weights=sample_weight))
    return 100.0 * h if percent else h


def multilabel_accuracy(y_true: Any, y_pred: Any, *, sample_weight: Any = None) -> float:
    """``100 (1 - Hamming loss)`` over the label indicator matrix (paper Table 6)."""
    return 100.0 * (1.0 - hamming_loss(y_true, y_pred, sample_weight=sample_weight))


def f1(y_true: Any, y_pred: Any, *, average: str = "micro", sample_weight: Any = None) -> float:
    """F1 score in percent for indicator matrices, ``average`` in {"micro", "macro",
    "samples"} (the paper does not say which; Table 7). Undefined ratios count as 0."""
    if average not in ("micro", "macro", "samples"):
        raise ValueError(f"unknown F1 average {average!r}; valid: 'micro', 'macro', 'samples'")
    return 100.0 * float(
        f1_score(y_true, y_pred, average=average, zero_division=0, sample_weight=sample_weight)
    )


def ordinal_mae(y_true: ArrayLike, y_pred: ArrayLike, *, sample_weight: Any = None) -> float:
    """Mean absolute error between ordinal labels (paper Table 4)."""
    return float(mean_absolute_error(y_true, y_pred, sample_weight=sample_weight))


__all__ = ["f1", "multilabel_accuracy", "ordinal_mae", "ranking_hamming_loss"]
