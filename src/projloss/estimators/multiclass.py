r"""Multiclass classification with projection losses (paper §4, "Probability simplex").

One-hot encoding; the marginal polytope is the simplex, whose Euclidean and KL projections
give the sparsemax and logistic (softmax) losses. Calibrated for the 0-1 loss
(:math:`V = \mathbf 1\mathbf 1^\top - I`), decoding is the argmax of :math:`u`; any loss
matrix (:class:`~projloss.target_losses.LossMatrix`) is supported as well.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_consistent_length, column_or_1d

from ..sets import ConvexSet
from ..target_losses import LossMatrix, TargetLoss
from ._base import ProjectionEstimatorBase


class ProjectionClassifier(ClassifierMixin, ProjectionEstimatorBase):
    r"""Multiclass classification with a Fenchel-Young projection loss.

    Labels: any 1-D labels (``classes_`` = ``np.unique(y)``). Projection sets
    ``"simplex"`` (default: sparsemax loss with the Euclidean geometry, logistic loss with
    KL), ``"unit_cube"``, ``"reals"`` or ``"nonneg"``; decoding set ``"simplex"``; target
    loss ``"zero_one"`` (default) or a :class:`~projloss.target_losses.LossMatrix`
    ``M[predicted, true]`` over ``classes_``.

    Parameters
    ----------
    projection_set : str or ConvexSet, default="simplex"
        The set :math:`C` of the loss :math:`S_C^\Psi` (a registry name or an instance).
    geometry : {"euclidean", "kl"}, default="euclidean"
        The geometry :math:`\Psi` of the projection.
    decoding_set : str or ConvexSet, default=None
        The set :math:`D` of the calibrated decoding; ``None`` means the simplex.
    target_loss : str or TargetLoss, default=None
        The target loss :math:`L`: ``"zero_one"`` (``None``) or a
        :class:`~projloss.target_losses.LossMatrix` of shape ``(k, k)``.
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
        The class labels (``np.unique(y)``).
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
    ProjectionMLPClassifier : The same compositions with a multilayer perceptron.

    Notes
    -----
    ``score`` is the accuracy (scikit-learn's default for classifiers).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((90, 2))
    >>> y = np.array(["a", "b", "c"])[np.argmax(X @ [[1.0, -1.0, 0.0], [0.0, 1.0, -1.0]], axis=1)]
    >>> model = ProjectionClassifier(projection_set="simplex", alpha=1e-3).fit(X, y)
    >>> print(model.classes_, f"{model.score(X, y):.2f}")
    ['a' 'b' 'c'] 0.98
    >>> print(np.round(model.project(X[:1]).sum(), 6))  # a point of the simplex
    1.0
    """

    _task: ClassVar[str] = "multiclass"

    def __init__(
        self,
        projection_set: str | ConvexSet = "simplex",
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
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        check_consistent_length(np.empty((n_samples, 0)), y)
        self.classes_, idx = np.unique(y, return_inverse=True)
        k = len(self.classes_)
        if k < 2:
            raise ValueError(
                f"classification needs at least 2 classes in y, got 1 class: {self.classes_}"
            )
        if isinstance(self.target_loss, LossMatrix) and self.target_loss.matrix.shape != (k, k):
            raise ValueError(
                f"the loss matrix must have shape ({k}, {k}) for the {k} classes, "
                f"got {self.target_loss.matrix.shape}"
            )
        return idx.astype(np.int64), k

    def _target_loss_params(self, name: str, k: int) -> dict[str, Any]:
        return {"n_classes": k} if name == "zero_one" else {}

    def _format_predictions(self, vertices: NDArray[np.float64]) -> NDArray[Any]:
        idx = np.asarray(self.decoding_set_.decode(vertices), dtype=np.int64).reshape(-1)
        return self.classes_[idx]
