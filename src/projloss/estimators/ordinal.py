r"""Ordinal regression with projection losses (paper §6 "Ordinal regression", Table 4).

Labels :math:`y \in [k]` are encoded as :math:`\varphi(y) = \sum_{i<y} e_i \in \{0,1\}^{k-1}`
(paper §4, "Order simplex"); the marginal polytope is the order simplex. Calibrated for the
absolute loss (:math:`V = -2I`, :math:`b = \mathbf 1`, Appendix A), decoding is
:math:`\mathrm{MAP}_{\text{order simplex}}(2u - 1)`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_consistent_length, column_or_1d

from ..metrics import ordinal_mae
from ..sets import ConvexSet
from ..target_losses import TargetLoss
from ._base import ProjectionEstimatorBase


class OrdinalLabelsMixin:
    """Ordered labels -> ranks ``1..k`` (the order of ``np.unique``) and the MAE score."""

    def _fit_ordinal_labels(self, y: Any, n_samples: int) -> NDArray[np.int64]:
        y = column_or_1d(y, warn=True)
        if y.dtype.kind not in "biu":  # integer labels are class labels: skip the ~0.2 ms
            check_classification_targets(y)  # scan for continuous values (a small fit's 5%)
        check_consistent_length(np.empty((n_samples, 0)), y)
        self.classes_, ranks = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(
                f"ordinal regression needs at least 2 classes in y, got 1 class: {self.classes_}"
            )
        self.n_classes_ = len(self.classes_)
        return ranks.astype(np.int64) + 1

    def _ranks_to_labels(self, ranks: Any) -> NDArray[Any]:
        ranks = np.asarray(ranks, dtype=np.int64).reshape(-1)
        return self.classes_[ranks - 1]

    def _labels_to_ranks(self, y: Any) -> NDArray[np.int64]:
        y = column_or_1d(y)
        idx = np.searchsorted(self.classes_, y)
        idx = np.clip(idx, 0, len(self.classes_) - 1)
        if not np.all(self.classes_[idx] == y):
            unknown = np.setdiff1d(np.unique(y), self.classes_)
            raise ValueError(f"y contains labels not seen in fit: {unknown[:5]}")
        return idx + 1

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        r"""Minus the mean absolute error (higher is better).

        On numeric labels the error is measured on the label values; on other ordered
        labels, on their ranks.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples.
        y : array-like of shape (n_samples,)
            True labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights of the mean.

        Returns
        -------
        score : float
            :math:`-\frac1n\sum_i |\hat y_i - y_i|` (weighted with ``sample_weight``).

        Raises
        ------
        ValueError
            If ``y`` (non-numeric labels) holds labels not seen in fit, or the inputs are
            not valid for :func:`projloss.metrics.ordinal_mae`.
        """
        pred = self.predict(X)
        if np.issubdtype(np.asarray(self.classes_).dtype, np.number):
            return -ordinal_mae(column_or_1d(y), pred, sample_weight=sample_weight)
        return -ordinal_mae(
            self._labels_to_ranks(y), self._labels_to_ranks(pred), sample_weight=sample_weight
        )


class ProjectionOrdinalRegressor(OrdinalLabelsMixin, ClassifierMixin, ProjectionEstimatorBase):
    r"""Ordinal regression with a Fenchel-Young projection loss and calibrated decoding.

    Labels are integers ``1..k`` or any ordered labels (sorted by ``np.unique``; stored
    in ``classes_``). The decoding set is the order simplex; the projection set is
    ``"order_simplex"`` (default; the paper's best), ``"unit_cube"``, ``"reals"`` (the
    squared-loss baseline of Table 4) or ``"nonneg"``; the target loss is ``"absolute"``.

    Parameters
    ----------
    projection_set : str or ConvexSet, default="order_simplex"
        The set :math:`C` of the loss :math:`S_C^\Psi` (a registry name or an instance).
    geometry : {"euclidean", "kl"}, default="euclidean"
        The geometry :math:`\Psi` of the projection.
    decoding_set : str or ConvexSet, default=None
        The set :math:`D` of the calibrated decoding; ``None`` means the order simplex.
    target_loss : str or TargetLoss, default=None
        The target loss :math:`L`; ``None`` means ``"absolute"``.
    alpha : float, default=1.0
        The regularization :math:`\lambda` of :math:`\frac\lambda2\|W\|_F^2`.
    fit_intercept : bool, default=True
        Fit an intercept (not penalized unless ``penalize_intercept``).
    penalize_intercept : bool, default=False
        Penalize the intercept with :math:`W`, i.e. add :math:`\frac\alpha2\|b\|^2`: the
        intercept is the weight of a constant feature of 1s, as in the paper's reference
        implementation (``add_dummy_feature``) and scikit-learn's ``LinearSVC``
        (``intercept_scaling=1``). Only with ``fit_intercept=True``.
    model : {"linear", "poly"}, default="linear"
        Linear model, or the polynomial kernel model of Appendix B.1.
    degree : int, default=2
        Degree :math:`D` of the polynomial kernel :math:`(\langle x, x'\rangle + c_0)^D`.
    coef0 : float, default=1.0
        :math:`c_0` of the polynomial kernel.
    max_iter : int, default=500
        Maximum number of solver iterations (L-BFGS for the linear model, then as many for
        its Newton finish; semismooth Newton for the kernel model).
    tol : float, default=1e-5
        Tolerance on the max-norm of the gradient of the objective in the original
        coordinates; a linear fit that L-BFGS stops above it is finished by the Newton
        method (see :class:`~projloss.estimators.ProjectionLabelRanker`).
    warm_start : bool, default=False
        Start from the previous solution (useful along a path of ``alpha``).

    Attributes
    ----------
    classes_ : ndarray of shape (k,)
        The ordered labels (``np.unique(y)``); rank ``r`` is ``classes_[r - 1]``.
    n_classes_ : int
        ``k``.
    coef_ : ndarray of shape (k - 1, n_model_features)
        :math:`W` (``n_model_features`` is ``n_features``, or ``n_samples`` for the kernel
        model).
    intercept_ : ndarray of shape (k - 1,)
        :math:`b`.
    n_iter_ : int
        Solver iterations in all: L-BFGS's (at most ``max_iter``) plus, when the Newton
        method finished a linear fit that L-BFGS left above ``tol``, the Newton method's
        (its own budget of ``max_iter``: then ``n_iter_`` may exceed ``max_iter``); for the
        kernel model, the Newton method's over all its continuation stages (at most
        ``max_iter``).
    n_iter_newton_ : int
        The Newton method's share of ``n_iter_`` (0 when L-BFGS alone fitted the model).
    n_jacobians_ : dict
        The Jacobians of the projection the Newton method computed, by source:
        ``"set"`` (the set's own, ``ConvexSet.projection_jacobians``) or
        ``"differences"`` (finite differences of the projection).
    converged_ : bool
        Whether the solver met its tolerance (False: it stopped at ``max_iter``; a
        ``ConvergenceWarning`` was emitted).
    objective_ : float
        The regularized objective at the solution.
    projection_set_ : ConvexSet
        The resolved projection set :math:`C`.
    decoding_set_ : ConvexSet
        The resolved decoding set :math:`D`.
    target_loss_ : TargetLoss
        The resolved target loss :math:`L`.
    composition_ : Composition
        The validated composition (:func:`projloss.tasks.check_composition`).
    event_shape_ : tuple of int
        The shape of one encoded label, ``(k - 1,)``.
    X_fit_ : {array-like, sparse matrix} of shape (n_samples, n_features)
        The training inputs (``model="poly"`` only: the kernel's landmarks).

    See Also
    --------
    ProjectionMLPOrdinalRegressor : The same compositions with a multilayer perceptron.
    RidgeRoundingOrdinalRegressor : The ridge-and-round baseline.

    Notes
    -----
    A warm-started linear fit (``warm_start`` after a previous fit, e.g. along a lambda
    grid) whose coefficients are all penalized (``penalize_intercept=True`` or
    ``fit_intercept=False``) runs the Newton method alone from the previous solution, not
    L-BFGS first: the same optimum (the same ``tol``) in far fewer iterations (then
    ``n_iter_newton_ == n_iter_``); a cold fit of that kind with the Euclidean geometry and
    dense inputs starts the Newton method at the squared loss's optimum (closed form), not
    L-BFGS from zero.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 2))
    >>> y = np.digitize(X @ [1.0, 0.5], [-1.0, 0.0, 1.0]) + 1  # classes 1..4
    >>> model = ProjectionOrdinalRegressor(alpha=1e-3).fit(X, y)
    >>> print(model.classes_, f"{model.score(X, y):.2f}")  # score = -MAE
    [1 2 3 4] -0.01
    """

    _task: ClassVar[str] = "ordinal"

    def __init__(
        self,
        projection_set: str | ConvexSet = "order_simplex",
        geometry: str = "euclidean",
        decoding_set: str | ConvexSet | None = None,
        target_loss: str | TargetLoss | None = None,
        alpha: float = 1.0,
        fit_intercept: bool = True,
        penalize_intercept: bool = False,
        model: str = "linear",
        degree: int = 2,
        coef0: float = 1.0,
        max_iter: int = 500,
        tol: float = 1e-5,
        warm_start: bool = False,
    ) -> None:
        self.projection_set = projection_set
        self.geometry = geometry
        self.decoding_set = decoding_set
        self.target_loss = target_loss
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.penalize_intercept = penalize_intercept
        self.model = model
        self.degree = degree
        self.coef0 = coef0
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start

    def _prepare_targets(self, y: Any, n_samples: int) -> tuple[Any, int]:
        ranks = self._fit_ordinal_labels(y, n_samples)
        return ranks, self.n_classes_

    def _target_loss_params(self, name: str, k: int) -> dict[str, Any]:
        return {"n_classes": k} if name == "absolute" else {}

    def _format_predictions(self, vertices: NDArray[np.float64]) -> NDArray[Any]:
        return self._ranks_to_labels(self.decoding_set_.decode(vertices))

    def predict(self, X: Any) -> NDArray[Any]:
        """Predicted labels (from ``classes_``), by calibrated decoding for the absolute loss.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The predicted labels, elements of ``classes_``.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        """
        return super().predict(X)
