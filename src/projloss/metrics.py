"""The metrics of the paper's tables (§6, Appendix B).

- label ranking: :func:`ranking_hamming_loss`, the entrywise Hamming loss between the true
  and predicted permutation matrices, in percent (Tables 1-3);
- multilabel: :func:`multilabel_accuracy` = 100 (1 - Hamming loss) and :func:`f1` (micro,
  macro or per-sample average, in percent; Tables 6-7);
- ordinal regression: :func:`ordinal_mae`, the mean absolute error (Table 4).

Every metric validates its inputs and raises a ``ValueError`` naming the argument:
rankings must be permutations, indicator matrices 0/1 of equal shape, ordinal labels
finite numbers, ``sample_weight`` one finite non-negative weight per sample (not all 0).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.metrics import f1_score, hamming_loss

from ._permutations import check_permutations, permutation_matrix


def _dense(y: Any) -> np.ndarray:
    return np.asarray(y.toarray() if hasattr(y, "toarray") else y)


def _as_matrices(y: ArrayLike, name: str) -> np.ndarray:
    arr = _dense(y)
    if arr.ndim == 2:  # rankings y[i, rank] = label
        return permutation_matrix(check_permutations(arr, name))
    if arr.ndim != 3 or arr.shape[1] != arr.shape[2]:
        raise ValueError(
            f"{name} must be rankings (n, k) or 0/1 matrices (n, k, k), got shape {arr.shape}"
        )
    if not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name} must contain 0/1 matrices")
    return arr


def _check_sample_weight(sample_weight: Any, n: int) -> np.ndarray | None:
    """``None``, or one finite non-negative weight per sample, not all zero."""
    if sample_weight is None:
        return None
    try:
        sw = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("sample_weight must be numbers, one per sample") from None
    if sw.shape != (n,):
        raise ValueError(f"sample_weight must have shape ({n},) (one per sample), got {sw.shape}")
    if not np.all(np.isfinite(sw)) or np.any(sw < 0) or not sw.sum() > 0:
        raise ValueError("sample_weight must be finite, non-negative and not all zero")
    return sw


def _check_indicators(y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    """Two 0/1 label indicator matrices ``(n, L)`` of the same shape, ``n >= 1``."""
    out = []
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        arr = _dense(y)
        if arr.ndim != 2:
            raise ValueError(
                f"{name} must be a label indicator matrix (n_samples, n_labels), "
                f"got shape {arr.shape}"
            )
        if arr.dtype.kind not in "biuf" or not np.all((arr == 0) | (arr == 1)):
            raise ValueError(f"{name} must be a 0/1 label indicator matrix (only 0 and 1)")
        out.append(arr.astype(np.int64))
    if out[0].shape != out[1].shape:
        raise ValueError(
            f"y_true and y_pred have different shapes: {out[0].shape} and {out[1].shape}"
        )
    if out[0].shape[0] == 0:
        raise ValueError("y_true and y_pred are empty: need at least one sample")
    return out[0], out[1]


def ranking_hamming_loss(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    percent: bool = True,
    sample_weight: ArrayLike | None = None,
) -> float:
    """Fraction of differing entries between true and predicted ``k x k`` permutation matrices.

    Averaged over samples; in percent by default (the paper's label-ranking metric).
    Inputs are rankings ``(n, k)`` with ``y[i, rank] = label`` or 0/1 matrices
    ``(n, k, k)``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples, k) or (n_samples, k, k)
        True rankings (permutations of ``0..k-1``) or 0/1 matrices ``[rank, label]``.
    y_pred : array-like of shape (n_samples, k) or (n_samples, k, k)
        Predicted rankings or 0/1 matrices, as ``y_true``.
    percent : bool, default=True
        Return a percentage (else a fraction in ``[0, 1]``).
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative finite weights, not all zero; None for equal weights.

    Returns
    -------
    loss : float
        The weighted mean Hamming loss, in percent if ``percent``.

    Raises
    ------
    ValueError
        If an input is neither permutations nor 0/1 square matrices, the two shapes
        differ, there is no sample, or ``sample_weight`` is invalid.

    Examples
    --------
    >>> from projloss.metrics import ranking_hamming_loss
    >>> ranking_hamming_loss([[0, 1, 2]], [[1, 0, 2]])  # 4 of the 9 entries differ
    44.44444444444444
    """
    A = _as_matrices(y_true, "y_true")
    B = _as_matrices(y_pred, "y_pred")
    if A.shape != B.shape:
        raise ValueError(f"y_true and y_pred have different shapes: {A.shape} and {B.shape}")
    if len(A) == 0:
        raise ValueError("y_true and y_pred are empty: need at least one sample")
    per_sample = np.mean(A != B, axis=(1, 2))
    h = float(np.average(per_sample, weights=_check_sample_weight(sample_weight, len(A))))
    return 100.0 * h if percent else h


def multilabel_accuracy(y_true: Any, y_pred: Any, *, sample_weight: Any = None) -> float:
    """``100 (1 - Hamming loss)`` over the label indicator matrix (paper Table 6).

    Parameters
    ----------
    y_true : array-like or sparse matrix of shape (n_samples, n_labels)
        True 0/1 label indicator matrix.
    y_pred : array-like or sparse matrix of shape (n_samples, n_labels)
        Predicted 0/1 label indicator matrix.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative finite weights, not all zero; None for equal weights.

    Returns
    -------
    accuracy : float
        The weighted fraction of correct entries, in percent.

    Raises
    ------
    ValueError
        If an input is not a 0/1 indicator matrix, the shapes differ, there is no sample,
        or ``sample_weight`` is invalid.

    Examples
    --------
    >>> round(multilabel_accuracy([[1, 0, 1], [0, 1, 0]], [[1, 0, 0], [0, 1, 0]]), 4)
    83.3333
    """
    y_true, y_pred = _check_indicators(y_true, y_pred)
    sample_weight = _check_sample_weight(sample_weight, len(y_true))
    return 100.0 * (1.0 - hamming_loss(y_true, y_pred, sample_weight=sample_weight))


def f1(y_true: Any, y_pred: Any, *, average: str = "micro", sample_weight: Any = None) -> float:
    """F1 score in percent for label indicator matrices (paper Table 7).

    The paper does not say which average it uses. Undefined ratios count as 0.

    Parameters
    ----------
    y_true : array-like or sparse matrix of shape (n_samples, n_labels)
        True 0/1 label indicator matrix.
    y_pred : array-like or sparse matrix of shape (n_samples, n_labels)
        Predicted 0/1 label indicator matrix.
    average : {"micro", "macro", "samples"}, default="micro"
        The average over labels (micro, macro) or samples (samples), as
        :func:`sklearn.metrics.f1_score`.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative finite weights, not all zero; None for equal weights.

    Returns
    -------
    score : float
        The F1 score, in percent.

    Raises
    ------
    ValueError
        If ``average`` is unknown, an input is not a 0/1 indicator matrix, the shapes
        differ, there is no sample, or ``sample_weight`` is invalid.

    Examples
    --------
    >>> from projloss.metrics import f1
    >>> f1([[1, 0, 1], [0, 1, 0]], [[1, 0, 0], [0, 1, 0]])  # 2 true positives, 1 miss
    80.0
    """
    if average not in ("micro", "macro", "samples"):
        raise ValueError(f"unknown F1 average {average!r}; valid: 'micro', 'macro', 'samples'")
    y_true, y_pred = _check_indicators(y_true, y_pred)
    sample_weight = _check_sample_weight(sample_weight, len(y_true))
    return 100.0 * float(
        f1_score(y_true, y_pred, average=average, zero_division=0, sample_weight=sample_weight)
    )


def ordinal_mae(y_true: ArrayLike, y_pred: ArrayLike, *, sample_weight: Any = None) -> float:
    r"""Mean absolute error between ordinal labels (paper Table 4).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True ordinal labels (finite numbers).
    y_pred : array-like of shape (n_samples,)
        Predicted ordinal labels (finite numbers).
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative finite weights, not all zero; None for equal weights.

    Returns
    -------
    mae : float
        The weighted mean of :math:`|\hat y_i - y_i|`.

    Raises
    ------
    ValueError
        If an input is not 1-D or holds non-numeric or non-finite values, the lengths
        differ, there is no sample, or ``sample_weight`` is invalid.

    Examples
    --------
    >>> from projloss.metrics import ordinal_mae
    >>> ordinal_mae([1, 2, 3], [1, 3, 5])
    1.0
    """
    arrays = []
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        arr = np.asarray(y)
        if arr.ndim != 1:
            raise ValueError(f"{name} must be a 1-D array of ordinal labels, got shape {arr.shape}")
        if arr.dtype.kind not in "biuf" or not np.all(np.isfinite(arr.astype(np.float64))):
            raise ValueError(f"{name} must hold finite numeric ordinal labels")
        arrays.append(arr.astype(np.float64))
    if arrays[0].shape != arrays[1].shape:
        raise ValueError(
            f"y_true and y_pred have different lengths: {len(arrays[0])} and {len(arrays[1])}"
        )
    if arrays[0].size == 0:
        raise ValueError("y_true and y_pred are empty: need at least one sample")
    sample_weight = _check_sample_weight(sample_weight, arrays[0].size)
    # scikit-learn's mean_absolute_error, the same operations (so the same bits) without
    # its input checks (done above): a third of a small ordinal fit's scoring time
    errors = np.abs(arrays[1] - arrays[0]).reshape(-1, 1)
    return float(np.average(np.average(errors, axis=0, weights=sample_weight)))


__all__ = ["f1", "multilabel_accuracy", "ordinal_mae", "ranking_hamming_loss"]
