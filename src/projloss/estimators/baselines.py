r"""Baselines for ordinal regression (paper Table 4, columns "Baseline" and "Round").

- :class:`MedianOrdinalRegressor`: always predicts the median training label;
- :class:`RidgeRoundingOrdinalRegressor`: ridge regression on the label ranks ``1..k``,
  rounded to the nearest class and clipped to ``[1, k]``.

The squared-loss baseline with order-simplex decoding (Table 4, column :math:`\mathbb{R}^{k-1}`)
is ``ProjectionOrdinalRegressor(projection_set="reals")``.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy import linalg
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import Ridge
from sklearn.preprocessing import add_dummy_feature
from sklearn.utils.validation import check_is_fitted

from ..decoding import round_to_class
from ._validation import validate_features
from .ordinal import OrdinalLabelsMixin


class MedianOrdinalRegressor(OrdinalLabelsMixin, ClassifierMixin, BaseEstimator):
    """Predicts the median training label, ignoring the inputs.

    The lower median when the number of samples is even and the two middle labels differ.
    ``score`` is minus the mean absolute error, as for
    :class:`~projloss.estimators.ProjectionOrdinalRegressor`.

    Attributes
    ----------
    classes_ : ndarray of shape (k,)
        The ordered labels (``np.unique(y)``).
    n_classes_ : int
        ``k``.
    median_ : object
        The predicted label (an element of ``classes_``).
    median_rank_ : int
        Its rank in ``1..k``.
    n_features_in_ : int
        Number of features seen during fit.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.zeros((5, 1))
    >>> model = MedianOrdinalRegressor().fit(X, [1, 2, 2, 3, 4])
    >>> print(model.predict(X[:2]))
    [2 2]
    """

    def fit(self, X: Any, y: Any) -> MedianOrdinalRegressor:
        """Store the median training label.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs (only their number of samples and features is used).
        y : array-like of shape (n_samples,)
            Ordered training labels (at least 2 classes).

        Returns
        -------
        self : object
            Fitted estimator.

        Raises
        ------
        ValueError
            If ``y`` has fewer than 2 classes or a length other than ``n_samples``.
        """
        X = validate_features(self, X, reset=True)
        ranks = self._fit_ordinal_labels(y, X.shape[0])
        self.median_rank_ = int(np.quantile(ranks, 0.5, method="lower"))
        self.median_ = self.classes_[self.median_rank_ - 1]
        return self

    def predict(self, X: Any) -> NDArray[Any]:
        """Predict the median training label for every sample.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            ``median_`` for every sample.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        """
        check_is_fitted(self)
        X = validate_features(self, X, reset=False)
        return self._ranks_to_labels(np.full(X.shape[0], self.median_rank_))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class RidgeRoundingOrdinalRegressor(OrdinalLabelsMixin, ClassifierMixin, BaseEstimator):
    r"""Ridge regression on the label ranks ``1..k``, rounded to the nearest class.

    Minimizes :math:`\frac1{2n}\sum_i (\langle w, x_i\rangle + b - r_i)^2 + \frac\alpha2\|w\|^2`
    (the same scaling of ``alpha`` as the projection-loss estimators, so one
    :math:`\lambda` grid serves both; the intercept is not penalized unless
    ``penalize_intercept``), with scikit-learn's :class:`~sklearn.linear_model.Ridge`
    (``alpha * n_samples`` in its scaling).

    Parameters
    ----------
    alpha : float, default=1.0
        The ridge penalty :math:`\alpha` (>= 0), scaled as in the objective above.
    fit_intercept : bool, default=True
        Fit the intercept :math:`b` (not penalized unless ``penalize_intercept``).
    penalize_intercept : bool, default=False
        Penalize the intercept like ``w`` (:math:`+\frac\alpha2 b^2`): ridge on the inputs
        with a constant feature of 1s appended (``add_dummy_feature``), as the paper's
        reference implementation does. Only with ``fit_intercept=True``.
    clip : bool, default=True
        ``True``: round to the nearest class (clipped to the range of the classes).
        ``False``: the paper's literal "rounding to the closest integer" (its reference
        implementation's ``np.round``): ridge on the numeric label values, rounded,
        **not** clipped, so predictions may fall outside the classes (numeric labels only).

    Attributes
    ----------
    classes_ : ndarray of shape (k,)
        The ordered labels (``np.unique(y)``).
    n_classes_ : int
        ``k``.
    coef_ : ndarray of shape (n_features,) or (n_features + 1,)
        The ridge weights :math:`w`; with ``penalize_intercept`` it has ``n_features + 1``
        entries, the first the intercept (the weight of the constant feature that
        ``add_dummy_feature`` prepends).
    intercept_ : float
        The intercept :math:`b` (0.0 with ``penalize_intercept``).
    n_features_in_ : int
        Number of features seen during fit.

    See Also
    --------
    ProjectionOrdinalRegressor : The projection-loss estimator these baselines compare to.

    Notes
    -----
    ``coef_`` and ``intercept_`` are :class:`~sklearn.linear_model.Ridge`'s: on dense
    inputs with at least as many samples as features (every ordinal dataset) the fit runs
    its "cholesky" solver's operations itself (:func:`ridge_cholesky`), without its
    per-fit checks (most of a small fit's time); otherwise it calls ``Ridge``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 2))
    >>> y = np.digitize(X @ [1.0, 0.5], [-1.0, 0.0, 1.0]) + 1
    >>> model = RidgeRoundingOrdinalRegressor(alpha=1.0).fit(X, y)
    >>> print(model.predict(X[:3]), f"{model.score(X, y):.2f}")
    [3 3 2] -0.34
    """

    def __init__(
        self,
        alpha: float = 1.0,
        fit_intercept: bool = True,
        penalize_intercept: bool = False,
        clip: bool = True,
    ) -> None:
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.penalize_intercept = penalize_intercept
        self.clip = clip

    @property
    def _dummy(self) -> bool:
        return bool(self.fit_intercept and self.penalize_intercept)

    def fit(self, X: Any, y: Any) -> RidgeRoundingOrdinalRegressor:
        """Fit the ridge regression on the label ranks (or values, with ``clip=False``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples.
        y : array-like of shape (n_samples,)
            Ordered training labels (at least 2 classes).

        Returns
        -------
        self : object
            Fitted estimator.

        Raises
        ------
        ValueError
            If ``alpha`` is not a number >= 0, ``clip=False`` with non-numeric labels, or ``y``
            has fewer than 2 classes or a length other than ``n_samples``.
        """
        a = self.alpha
        if not isinstance(a, numbers.Real) or isinstance(a, bool) or not a >= 0:
            raise ValueError(f"alpha must be a finite number >= 0, got {a!r}")
        X = validate_features(self, X, reset=True)
        ranks = self._fit_ordinal_labels(y, X.shape[0])
        target = ranks.astype(np.float64)
        if not self.clip:
            if not np.issubdtype(np.asarray(self.classes_).dtype, np.number):
                raise ValueError(
                    "clip=False (rounding to the closest integer) needs numeric labels, got "
                    f"{np.asarray(self.classes_).dtype}; use clip=True"
                )
            target = np.asarray(self.classes_, dtype=np.float64)[ranks - 1]
        fit_intercept = bool(self.fit_intercept) and not self._dummy
        Xr = add_dummy_feature(X) if self._dummy else X
        alpha = float(a) * X.shape[0]
        solved = ridge_cholesky(Xr, target, alpha, fit_intercept)
        if solved is None:
            ridge = Ridge(alpha=alpha, fit_intercept=fit_intercept).fit(Xr, target)
            solved = ridge.coef_, float(ridge.intercept_)
        self.coef_, self.intercept_ = solved
        return self

    def predict_rank(self, X: Any) -> NDArray[np.float64]:
        r"""The real-valued ridge prediction before rounding.

        Of the rank, or of the label value when ``clip=False``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        z : ndarray of shape (n_samples,)
            :math:`\langle w, x\rangle + b` for each sample, float64.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        """
        check_is_fitted(self)
        X = validate_features(self, X, reset=False)
        return (add_dummy_feature(X) if self._dummy else X) @ self.coef_ + self.intercept_

    def predict(self, X: Any) -> NDArray[Any]:
        """Round the ridge predictions to the nearest class (see ``clip``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Elements of ``classes_`` (``clip=True``), or the ridge predictions of the label
            values rounded to the nearest integer, as floats (``clip=False``).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        """
        z = self.predict_rank(X)
        if not self.clip:
            return np.floor(z + 0.5)  # the closest integer (halves up), not clipped
        return self._ranks_to_labels(round_to_class(z, self.n_classes_))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def ridge_cholesky(
    X: Any, y: NDArray[np.float64], alpha: float, fit_intercept: bool
) -> tuple[NDArray[np.float64], float] | None:
    r"""Ridge regression :math:`\min_{w, b} \|y - Xw - b\|^2 + \alpha\|w\|^2` by the
    operations of scikit-learn's :class:`~sklearn.linear_model.Ridge` with its "cholesky"
    solver (its choice for dense inputs): center ``X`` and ``y`` (``fit_intercept``), solve
    :math:`(X^\top X + \alpha I) w = X^\top y` (``scipy.linalg.solve``,
    ``assume_a="pos"``), or with more features than samples the dual system
    :math:`(X X^\top + \alpha I) c = y`, :math:`w = X^\top c`; then
    :math:`b = \bar y - \bar x^\top w` (0 without intercept).

    Returns ``(w, b)``, or ``None`` where ``Ridge`` would do something else (sparse ``X``;
    ``alpha <= 0`` or a matrix that is not numerically positive definite: its SVD or
    least-squares fallbacks): the caller then fits ``Ridge``.
    Without ``Ridge``'s per-fit input checks (the caller validated ``X`` and ``y``): a
    fit of Table 4's sizes takes ~0.1 ms instead of ~1.8 ms.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        Validated inputs.
    y : ndarray of shape (n_samples,)
        Targets.
    alpha : float
        The penalty :math:`\alpha` (in ``Ridge``'s scaling).
    fit_intercept : bool
        Fit the (unpenalized) intercept :math:`b`.

    Returns
    -------
    solution : tuple of (ndarray of shape (n_features,), float) or None
        ``(w, b)``, or None where ``Ridge`` itself must fit.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import Ridge
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.standard_normal((50, 3)), rng.standard_normal(50)
    >>> w, b = ridge_cholesky(X, y, 2.0, fit_intercept=True)
    >>> ridge = Ridge(alpha=2.0).fit(X, y)
    >>> bool(np.allclose(w, ridge.coef_, rtol=1e-12) and np.isclose(b, ridge.intercept_))
    True
    """
    n, d = X.shape
    if sp.issparse(X) or not alpha > 0:
        return None
    X = np.array(X, dtype=np.float64, order="K", copy=True)
    y = np.array(y, dtype=np.float64, copy=True)
    if fit_intercept:
        X_offset = np.average(X, axis=0)
        X -= X_offset
        y_offset = np.average(y, axis=0)
        y -= y_offset
    try:
        if d > n:  # the dual system (n x n): (X X^T + alpha I) c = y, w = X^T c
            K = X @ X.T
            K.flat[:: n + 1] += alpha
            dual = linalg.solve(K, y.reshape(-1, 1), assume_a="pos", overwrite_a=False)
            coef = (X.T @ dual).T.ravel()
        else:
            A = X.T @ X
            A.flat[:: d + 1] += alpha
            Xy = X.T @ y.reshape(-1, 1)
            coef = linalg.solve(A, Xy, assume_a="pos", overwrite_a=True).T.ravel()
    except linalg.LinAlgError:
        return None
    intercept = float(y_offset - X_offset @ coef) if fit_intercept else 0.0
    return coef, intercept
