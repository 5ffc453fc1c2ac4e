"""The estimators' check of ``X``: scikit-learn's ``validate_data``, with a shortcut for the
input a fit or a prediction gets almost always (a finite ``float64`` ndarray).

``validate_data`` costs 100-250 microseconds per call whatever the size of ``X``
(conversions, the dataframe check, tags, the feature-name check): on the paper's small
datasets (an ordinal regression split of 100-1,000 samples, ten lambdas fitted and scored
each) it was 12% of a tune stage's time. For a 2-D ndarray of ``float64`` that is finite,
not empty, and (when predicting) has the fitted number of columns and an estimator fitted
without feature names, ``validate_data`` returns ``X`` itself and sets (``reset``) or checks
``n_features_in_``: that is what the shortcut does. Everything else -- other dtypes, lists,
dataframes, sparse matrices, subclasses of ndarray, non-finite values, a wrong number of
columns, an estimator fitted on a dataframe -- goes through ``validate_data``, with its
conversions, warnings and messages.

Examples
--------
>>> import numpy as np
>>> from sklearn.base import BaseEstimator
>>> est = BaseEstimator()
>>> X = np.ones((3, 2))
>>> validate_features(est, X, reset=True) is X, est.n_features_in_
(True, 2)
>>> validate_features(est, [[1, 2]], reset=False)  # a list: scikit-learn's conversion
array([[1., 2.]])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import validate_data


def _fast(estimator: Any, X: Any, reset: bool) -> bool:
    """Whether ``validate_data`` would return ``X`` unchanged, with nothing to warn about."""
    if type(X) is not np.ndarray or X.dtype != np.float64 or X.ndim != 2:
        return False
    if X.shape[0] < 1 or X.shape[1] < 1 or hasattr(estimator, "feature_names_in_"):
        return False
    if not reset and getattr(estimator, "n_features_in_", X.shape[1]) != X.shape[1]:
        return False
    # a finite sum means finite entries; an infinite one (NaN, inf, or an overflow of
    # large finite values) is left to scikit-learn's own check and message
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.add.reduce(X, axis=None)))


def validate_features(estimator: Any, X: Any, *, reset: bool) -> Any:
    """``validate_data(estimator, X, accept_sparse="csr", dtype=np.float64, reset=reset,
    ensure_min_samples=1)``, the same result for every input, faster for a finite
    ``float64`` ndarray (module docstring)."""
    if _fast(estimator, X, reset):
        if reset:
            estimator.n_features_in_ = X.shape[1]
        return X
    return validate_data(
        estimator, X, accept_sparse="csr", dtype=np.float64, reset=reset, ensure_min_samples=1
    )


#: features whose largest magnitude exceeds this are named in a ``ConvergenceWarning``: the
#: estimators' objective is not scale-invariant (the penalty ``alpha/2 ||W||^2`` acts on the
#: weights of unscaled features), so far from unit scale a fit is badly conditioned
LARGE_FEATURES = 1e6


def feature_magnitude(F: Any) -> float:
    """The largest absolute entry of ``F`` (dense or sparse; 0 for an empty matrix)."""
    data = F.data if sp.issparse(F) else np.asarray(F)
    return float(np.max(np.abs(data))) if data.size else 0.0


def overflow_limit(n_samples: int, n_features: int) -> float:
    r"""The largest feature magnitude :math:`m` whose fit cannot overflow ``float64``: the
    solvers form sums of :math:`n` products of two features (:math:`F^\top D F`, the
    Hessian-vector products of the Newton steps) and of :math:`d` products of a feature and a
    weight, so :math:`4\,n\,(d + 1)\,m^2` must stay below the largest double
    (:math:`m \approx 3.9\times10^{152}` for 60 samples and 4 features).

    >>> f"{overflow_limit(60, 4):.1e}"
    '3.9e+152'
    """
    return float(np.sqrt(np.finfo(np.float64).max / (4.0 * max(n_samples, 1) * (n_features + 1))))


def check_feature_scale(F: Any, what: str = "X") -> float:
    """Refuse features so large that the fit's products overflow ``float64`` (one message
    naming the input, its largest entry and the remedy, instead of a NaN found deep in
    the solver); return their largest magnitude (:func:`feature_magnitude`).

    >>> check_feature_scale(np.array([[1.0, -3.0]]))
    3.0
    >>> check_feature_scale(np.array([[1e160, 0.0]]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: X has entries up to 1.0e+160 in absolute value: ... above 3.9e+153 ...
    """
    m = feature_magnitude(F)
    n, d = F.shape
    limit = overflow_limit(n, d)
    if m > limit:
        size = f"up to {m:.1e}" if np.isfinite(m) else "that overflow float64 (inf)"
        raise ValueError(
            f"{what} has entries {size} in absolute value: the fit's products of the "
            f"features overflow float64 above {limit:.1e} (for {n} samples and {d} features); "
            "standardize the features (e.g. sklearn.preprocessing.StandardScaler) or divide "
            "them by a constant"
        )
    return m


def scale_hint(magnitude: float, what: str = "X") -> str:
    """The remedy a ``ConvergenceWarning`` adds when the features are far from unit scale
    (:data:`LARGE_FEATURES`), else ``""``."""
    if magnitude <= LARGE_FEATURES:
        return ""
    return (
        f"; {what} has entries up to {magnitude:.1e} in absolute value, far from unit scale, "
        "which makes the fit badly conditioned: standardize the features (e.g. "
        "sklearn.preprocessing.StandardScaler)"
    )


__all__ = [
    "LARGE_FEATURES",
    "check_feature_scale",
    "feature_magnitude",
    "overflow_limit",
    "scale_hint",
    "validate_features",
]
