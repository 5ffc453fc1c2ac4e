r"""Multilabel classification with projection losses (paper §6 "Multilabel", Tables 6-7).

Labels are 0/1 indicator matrices; the encoding is the identity (the unit cube is the
marginal polytope of all subsets, the knapsack polytope that of the subsets with
``lower <= |y| <= upper``). Calibrated for the Hamming loss (:math:`V = -2I`,
:math:`b = \mathbf 1`), decoding is :math:`\mathrm{MAP}_D(2u - 1)`: on the cube, a threshold
of :math:`u` at 1/2; on the knapsack polytope, the best subset of bounded size.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from sklearn.base import ClassifierMixin, MultiOutputMixin
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_consistent_length

from ..metrics import multilabel_accuracy
from ..sets import ConvexSet
from ..target_losses import TargetLoss
from ._base import ProjectionEstimatorBase


def check_indicator(y: Any, name: str = "y") -> NDArray[np.float64]:
    """Validate a 0/1 label indicator matrix ``(n_samples, n_labels)`` (dense or sparse).

    Parameters
    ----------
    y : {array-like, sparse matrix} of shape (n_samples, n_labels)
        The label indicator matrix.
    name : str, default="y"
        The argument's name, for the error messages.

    Returns
    -------
    Y : ndarray of shape (n_samples, n_labels)
        The dense matrix, float64.

    Raises
    ------
    ValueError
        If ``y`` holds NaN or infinite values, values other than 0 and 1, or is not 2-D.
    """
    if hasattr(y, "toarray"):
        y = y.toarray()
    arr = np.asarray(y)
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        row, col = np.argwhere(~np.isfinite(arr))[0] if arr.ndim == 2 else (None, None)
        where = f" (first at row {row}, column {col}, 0-based)" if row is not None else ""
        raise ValueError(
            f"{name} contains NaN or infinite values{where}; {name} must be a 0/1 label "
            "indicator matrix (n_samples, n_labels) without missing labels: drop those rows "
            "or fill them with 0/1"
        )
    if arr.dtype.kind not in "biuf" or not np.all((arr == 0) | (arr == 1)):
        kind = type_of_target(arr) if arr.dtype.kind in "biuf" else "non-numeric"
        raise ValueError(
            f"Unknown label type: {kind}; {name} must be a 0/1 label indicator matrix "
            "(n_samples, n_labels). Only binary classification is supported."
        )
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a label indicator matrix of shape (n_samples, n_labels), "
            f"got shape {arr.shape}"
        )
    return arr.astype(np.float64)


#: the rules of ``knapsack_upper``: name -> how E|Y| + sqrt(Var|Y|) becomes an integer
UPPER_RULES = {"auto": "ceil", "auto_round": "round"}


def knapsack_upper_bound(Y: NDArray[np.float64], rule: str = "ceil") -> int:
    r"""The paper's upper bound on the number of labels of the knapsack polytope.

    :math:`\lceil \mathbb{E}|Y| + \sqrt{\mathbb{V}|Y|}\rceil` on the training labels
    (population variance), at most ``k``. ``rule="round"`` rounds to the nearest integer
    (halves up) instead of the ceiling: the bound the paper's Tables 6-7 numbers imply (its
    text states the ceiling; see the project's ``reports/README.md``).

    Parameters
    ----------
    Y : ndarray of shape (n_samples, k)
        The training label indicator matrix.
    rule : {"ceil", "round"}, default="ceil"
        How :math:`\mathbb{E}|Y| + \sqrt{\mathbb{V}|Y|}` becomes an integer.

    Returns
    -------
    upper : int
        The bound, in ``0..k``.

    Raises
    ------
    ValueError
        If ``rule`` is unknown.

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [1, 1, 1, 0]])  # 1, 1, 1, 3
    >>> knapsack_upper_bound(Y), knapsack_upper_bound(Y, "round")  # 1.5 + 0.866...
    (3, 2)
    """
    counts = Y.sum(axis=1)
    value = float(counts.mean() + counts.std())
    if rule == "ceil":
        u = math.ceil(value - 1e-12)
    elif rule == "round":
        u = math.floor(value + 0.5 + 1e-12)
    else:
        raise ValueError(f"unknown rule {rule!r}; valid: 'ceil', 'round'")
    return int(min(max(u, 0), Y.shape[1]))


class ProjectionMultilabelClassifier(MultiOutputMixin, ClassifierMixin, ProjectionEstimatorBase):
    r"""Multilabel classification with a Fenchel-Young projection loss.

    Projection sets ``"unit_cube"`` (default), ``"knapsack"``, ``"reals"`` or ``"nonneg"``;
    decoding sets ``"unit_cube"`` or ``"knapsack"``; target loss ``"hamming"``.

    Parameters
    ----------
    projection_set : str or ConvexSet, default="unit_cube"
        The set :math:`C` of the loss :math:`S_C^\Psi` (a registry name or an instance).
    geometry : {"euclidean", "kl"}, default="euclidean"
        The geometry :math:`\Psi` of the projection.
    decoding_set : str or ConvexSet, default=None
        The set :math:`D` of the calibrated decoding; ``None`` means the projection set
        (required for ``"reals"``/``"nonneg"``).
    target_loss : str or TargetLoss, default=None
        The target loss :math:`L`; ``None`` means ``"hamming"``.
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
    knapsack_lower : int, default=0
        Lower bound :math:`l` on the number of labels (knapsack sets given by name).
    knapsack_upper : int, "auto", "auto_round" or None, default="auto"
        Upper bound :math:`u`; ``"auto"`` is the paper's
        :math:`\lceil \mathbb{E}|Y| + \sqrt{\mathbb{V}|Y|}\rceil` on the training labels;
        ``"auto_round"`` the same value rounded to the nearest integer instead (what the
        paper's tables imply, see :func:`knapsack_upper_bound`); ``None`` means ``k``.

    Attributes
    ----------
    n_labels_ : int
        The number of labels ``k``.
    knapsack_upper_ : int or None
        The resolved upper bound (when a knapsack set is built by name).
    coef_ : ndarray of shape (k, n_model_features)
        :math:`W` (``n_model_features`` is ``n_features``, or ``n_samples`` for the kernel
        model).
    intercept_ : ndarray of shape (k,)
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
        The shape of one encoded label, ``(k,)``.
    X_fit_ : {array-like, sparse matrix} of shape (n_samples, n_features)
        The training inputs (``model="poly"`` only: the kernel's landmarks).

    See Also
    --------
    ProjectionMLPMultilabelClassifier : The same compositions with a multilayer perceptron.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((80, 4))
    >>> Y = (X @ rng.standard_normal((4, 3)) > 0.5).astype(int)
    >>> model = ProjectionMultilabelClassifier(alpha=1e-3).fit(X, Y)
    >>> print(model.predict(X[:2]).shape, f"{model.score(X, Y):.2f}")
    (2, 3) 1.00
    """

    _task: ClassVar[str] = "multilabel"

    def __init__(
        self,
        projection_set: str | ConvexSet = "unit_cube",
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
        knapsack_lower: int = 0,
        knapsack_upper: int | str | None = "auto",
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
        self.knapsack_lower = knapsack_lower
        self.knapsack_upper = knapsack_upper

    def _prepare_targets(self, y: Any, n_samples: int) -> tuple[Any, int]:
        Y = check_indicator(y)
        check_consistent_length(np.empty((n_samples, 0)), Y)
        k = Y.shape[1]
        self.n_labels_ = k
        self.knapsack_upper_ = None
        if "knapsack" in (self.composition_.projection_set, self.composition_.decoding_set):
            lo, up = self.knapsack_lower, self.knapsack_upper
            if not isinstance(lo, numbers.Integral) or isinstance(lo, bool) or lo < 0:
                raise ValueError(f"knapsack_lower must be an integer >= 0, got {lo!r}")
            bad_up = ValueError(
                f"knapsack_upper must be an integer, 'auto', 'auto_round' or None, got {up!r}"
            )
            if isinstance(up, str):
                if up not in UPPER_RULES:
                    raise bad_up
                up = max(knapsack_upper_bound(Y, UPPER_RULES[up]), int(lo))
            elif up is not None and (not isinstance(up, numbers.Integral) or isinstance(up, bool)):
                raise bad_up
            self.knapsack_upper_ = None if up is None else int(up)
        return Y, k

    def _set_kwargs(self, name: str, k: int, y: Any) -> dict[str, Any]:
        if name == "knapsack":
            return {"lower": int(self.knapsack_lower), "upper": self.knapsack_upper_}
        return {}

    def _target_loss_params(self, name: str, k: int) -> dict[str, Any]:
        return {"event_ndim": 1} if name == "hamming" else {}

    def _format_predictions(self, vertices: NDArray[np.float64]) -> NDArray[np.int64]:
        return np.rint(vertices).astype(np.int64)

    def predict(self, X: Any) -> NDArray[np.int64]:
        """Predicted label indicator matrix ``(n_samples, n_labels)``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples, n_labels)
            The predicted 0/1 label indicator matrix, int64.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        """
        return super().predict(X)

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Label-wise accuracy ``1 - Hamming loss`` (higher is better).

        The paper's Table 6 metric / 100; not scikit-learn's subset accuracy.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples.
        y : {array-like, sparse matrix} of shape (n_samples, n_labels)
            True 0/1 label indicator matrix.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights of the mean.

        Returns
        -------
        score : float
            The weighted fraction of correct entries, in ``[0, 1]``.

        Raises
        ------
        ValueError
            If ``y`` is not a 0/1 label indicator matrix of the predictions' shape, or
            ``sample_weight`` is invalid.
        """
        Y = check_indicator(y)
        return multilabel_accuracy(Y, self.predict(X), sample_weight=sample_weight) / 100.0

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False
        tags.classifier_tags.multi_label = True
        tags.classifier_tags.multi_class = False  # 1-D multi-class targets are not accepted
        return tags
