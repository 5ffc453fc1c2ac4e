r"""Shared machinery of the projection-loss estimators.

Every estimator composes a projection set :math:`C`, a geometry :math:`\Psi`, a decoding set
:math:`D` and a target loss :math:`L` for one task (validated by
:func:`projloss.tasks.check_composition`), fits

.. math::
    \min_{W, b}\ \frac1n\sum_i S_C^\Psi(W f(x_i) + b, y_i) + \frac\alpha2\|W\|_F^2

by L-BFGS, or a semismooth Newton method for the kernel model (the intercept :math:`b` is
not penalized, unless ``penalize_intercept``: then
:math:`\frac\alpha2\|b\|^2` is added, as in the paper's reference implementation) and
predicts
:math:`\hat y = \mathrm{MAP}_D(-Vu - b_L)`, :math:`u = P_C^\Psi(W f(x) + b)`.

The model features :math:`f(x)` are the inputs (``model="linear"``) or the polynomial
kernel against the training inputs, :math:`f(x)_j = (\langle x, x_j\rangle + c_0)^D`
(``model="poly"``; the paper's :math:`g(x) = \sum_j w_j\kappa(x, x_j)`, Appendix B.1),
penalized with the same :math:`\|W\|_F^2`. The kernel model stores the training inputs and
costs :math:`O(n^2)` memory: use it on small datasets.
"""

from __future__ import annotations

import functools
import numbers
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator
from sklearn.metrics.pairwise import polynomial_kernel
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.validation import check_is_fitted

from ..sets import ConvexSet, get_set
from ..target_losses import TargetLoss, get_target_loss
from ..tasks import Composition, check_composition
from ._fit_memo import active_memo, fit_key
from ._solver import fit_projection_model, one_blas_thread
from ._validation import check_feature_scale, feature_magnitude, scale_hint, validate_features

#: the polynomial kernel with one BLAS thread, as the fit: the same kernel (to the last
#: bit) whatever the BLAS threads of the calling process
_kernel = one_blas_thread(polynomial_kernel)

MODELS = ("linear", "poly")

#: the solver of each model (``fit_projection_model(solver=...)``), for ``alpha > 0``: the
#: semismooth Newton method of :mod:`._newton` for the kernel models, on which L-BFGS
#: stops at ``max_iter``; for the linear models L-BFGS finished by the Newton method to
#: ``tol``, with the Newton method first where it pays (the policy of
#: :func:`._solver.newton_first_pays`: the estimators pass only their warm start).
SOLVERS = {"linear": "lbfgs", "poly": "newton"}


class ProjectionEstimatorBase(BaseEstimator):
    """Base class: subclasses set ``_task`` and implement the label hooks."""

    _task: ClassVar[str]

    # ------------------------------------------------------------------ hooks
    def _prepare_targets(self, y: Any, n_samples: int) -> tuple[Any, int]:
        """Validate ``y`` (natural form) and return (canonical structures, size k)."""
        raise NotImplementedError

    def _set_kwargs(self, name: str, k: int, y: Any) -> dict[str, Any]:
        """Constructor parameters for the set registered as ``name`` (e.g. knapsack bounds)."""
        return {}

    def _target_loss_params(self, name: str, k: int) -> dict[str, Any]:
        return {}

    def _format_predictions(self, vertices: NDArray[np.float64]) -> Any:
        """Turn decoded vertices into labels in the user's natural form."""
        raise NotImplementedError

    # ------------------------------------------------------------------ checks
    def _check_hyperparameters(self) -> None:
        def positive(name: str, value: Any, strict: bool = True, integer: bool = False) -> None:
            kind = numbers.Integral if integer else numbers.Real
            ok = isinstance(value, kind) and not isinstance(value, bool)
            ok = ok and (value > 0 if strict else value >= 0) and np.isfinite(value)
            if not ok:
                rel = "> 0" if strict else ">= 0"
                what = "an integer" if integer else "a finite number"
                raise ValueError(f"{name} must be {what} {rel}, got {value!r}")

        positive("alpha", self.alpha, strict=False)
        positive("max_iter", self.max_iter, integer=True)
        positive("tol", self.tol)
        if self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r}; valid models are {list(MODELS)}")
        if self.model == "poly":
            positive("degree", self.degree, integer=True)
            positive("coef0", self.coef0, strict=False)

    def _composition(self) -> Composition:
        return check_composition(
            self._task, self.projection_set, self.geometry, self.decoding_set, self.target_loss
        )

    def _build_set(self, given: str | ConvexSet | None, name: str, k: int, y: Any) -> ConvexSet:
        if isinstance(given, ConvexSet):
            return given
        return get_set(name, **self._set_kwargs(name, k, y))

    def _build_target_loss(self, comp: Composition, k: int) -> TargetLoss:
        if isinstance(self.target_loss, TargetLoss):
            return self.target_loss
        return get_target_loss(comp.target_loss, **self._target_loss_params(comp.target_loss, k))

    def _training_set(self) -> ConvexSet:
        """The projection set used inside the fit: for a set built by name whose oracle can
        reuse its previous solution (``warm_start``, e.g. the Birkhoff polytope's iterative
        solver), a warm-started copy, since successive L-BFGS iterations project nearby
        ``theta``. ``projection_set_`` itself stays cold-started (reproducible predictions)."""
        s = self.projection_set_
        if isinstance(self.projection_set, ConvexSet):
            return s
        params = s.get_params()
        if params.get("warm_start") is False:
            return type(s)(**{**params, "warm_start": True})
        return s

    # ------------------------------------------------------------------ features
    def _features(self, X: Any) -> Any:
        if self.model == "linear":
            return X
        return _kernel(X, self.X_fit_, degree=self.degree, gamma=1.0, coef0=self.coef0)

    def _validate_X(self, X: Any, reset: bool) -> Any:
        return validate_features(self, X, reset=reset)

    # ------------------------------------------------------------------ API
    def _prepare_fit(self, X: Any, y: Any) -> tuple[Any, NDArray[np.float64]]:
        """The shared start of every fit (linear, kernel and the networks of
        :mod:`.neural`): check the composition and ``y``, validate ``X``, resolve the sets
        and the target loss (``composition_``, ``projection_set_``, ``decoding_set_``,
        ``target_loss_``, ``event_shape_``) and return ``(X, phi)``, ``phi`` the encoded
        labels ``(n_samples, *event_shape_)``."""
        comp = self._composition()  # fail on a bad composition before any work
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None"
            )
        X = self._validate_X(X, reset=True)
        check_feature_scale(X)
        self.composition_ = comp
        canonical, k = self._prepare_targets(y, X.shape[0])
        enc = comp.encoding
        proj_name = comp.projection_set
        self.projection_set_ = self._build_set(self.projection_set, proj_name, k, canonical)
        if self.decoding_set is None and comp.decoding_set == comp.projection_set:
            self.decoding_set_ = self.projection_set_
        else:
            self.decoding_set_ = self._build_set(self.decoding_set, comp.decoding_set, k, canonical)
        marginal = get_set(enc.marginal, **self._set_kwargs(enc.marginal, k, canonical))
        self.target_loss_ = self._build_target_loss(comp, k)
        phi = np.asarray(marginal.encode(canonical, k), dtype=np.float64)
        self.event_shape_ = tuple(enc.event_shape(k))
        if phi.shape != (X.shape[0], *self.event_shape_):
            raise ValueError(
                f"the encoded labels have shape {phi.shape}, expected "
                f"{(X.shape[0], *self.event_shape_)}"
            )
        return X, phi

    def fit(self, X: Any, y: Any) -> ProjectionEstimatorBase:
        """Fit the model on the projection loss (L-BFGS; semismooth Newton for ``model="poly"``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs.
        y : array-like
            Labels in the task's natural form (see the class docstring): rankings of shape
            ``(n_samples, k)`` or permutation matrices ``(n_samples, k, k)`` (label
            ranking), ordered labels ``(n_samples,)`` (ordinal regression), a 0/1 label
            indicator matrix ``(n_samples, n_labels)`` (multilabel), class labels
            ``(n_samples,)`` (multiclass).

        Returns
        -------
        self : object
            Fitted estimator.

        Raises
        ------
        ValueError
            If a hyperparameter is out of range, the composition is not valid for the task
            (:func:`projloss.tasks.check_composition`), ``y`` is None or not labels of the
            task, or ``X`` is not finite or too large in magnitude for the loss.
        """
        self._check_hyperparameters()
        X, phi = self._prepare_fit(X, y)
        comp = self.composition_
        if self.model == "poly":
            self.X_fit_ = X
        if self.model == "linear":
            F = X
        else:  # the kernel's powers overflow before X itself: refused with X's scale named
            with np.errstate(over="ignore", invalid="ignore"):
                F = self._features(X)
            what = f"the {self.model} kernel of X (X up to {feature_magnitude(X):.1e})"
            check_feature_scale(F, what=what)
        hint = scale_hint(feature_magnitude(F), "X" if self.model == "linear" else "the kernel")
        coef_init = intercept_init = None
        p = int(np.prod(self.event_shape_))
        if (
            self.warm_start
            and getattr(self, "coef_", None) is not None
            and self.coef_.shape == (p, F.shape[1])
        ):
            coef_init, intercept_init = self.coef_, self.intercept_
        training_set = self._training_set()
        fit = functools.partial(
            fit_projection_model,
            F,
            phi,
            training_set,
            comp.geometry,
            alpha=float(self.alpha),
            fit_intercept=bool(self.fit_intercept),
            penalize_intercept=bool(self.penalize_intercept),
            max_iter=int(self.max_iter),
            tol=float(self.tol),
            precondition=self.model == "poly",
            warning_hint=hint,
        )
        solver = SOLVERS[self.model] if self.alpha > 0 else "lbfgs"
        memo = active_memo()
        if memo is None or isinstance(self.projection_set, ConvexSet):
            res = fit(coef_init=coef_init, intercept_init=intercept_init, solver=solver)
        else:  # a fit of the same inputs earlier in this process: its result (_fit_memo)
            settings = (
                f"{type(training_set).__module__}.{type(training_set).__qualname__}",
                sorted(training_set.get_params().items()),
                comp.geometry,
                float(self.alpha),
                bool(self.fit_intercept),
                bool(self.penalize_intercept),
                int(self.max_iter),
                float(self.tol),
                self.model,
                solver,
            )
            key = fit_key((F, phi, coef_init, intercept_init), settings)
            res = memo.solve(
                key, lambda: fit(coef_init=coef_init, intercept_init=intercept_init, solver=solver)
            )
        self.coef_ = res.coef
        self.intercept_ = res.intercept
        self.n_iter_ = res.n_iter
        self.n_iter_newton_ = res.n_iter_newton
        self.n_jacobians_ = dict(res.n_jacobians)
        self.objective_ = res.objective
        self.converged_ = res.converged
        return self

    def decision_function(self, X: Any) -> NDArray[np.float64]:
        r"""Model outputs :math:`\theta = W f(x) + b`, the input of the projection.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        theta : ndarray of shape (n_samples, ``*event_shape_``)
            The model outputs, float64 (``(n_samples, k, k)`` for the permutation-matrix
            encoding).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        theta = safe_sparse_dot(self._features(X), self.coef_.T, dense_output=True)
        theta = theta + self.intercept_
        return theta.reshape(X.shape[0], *self.event_shape_)

    def project(self, X: Any) -> NDArray[np.float64]:
        r"""Soft outputs :math:`u = P_C^\Psi(\theta)`, the projections of the model outputs.

        E.g. soft permutation matrices for the Birkhoff polytope, marginal label
        probabilities for the cube, class probabilities for the simplex.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        u : ndarray of shape (n_samples, ``*event_shape_``)
            The projections onto ``projection_set_``, float64.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        """
        check_is_fitted(self)
        return self.projection_set_.project(self.decision_function(X), self.composition_.geometry)

    def _decode(self, X: Any) -> NDArray[np.float64]:
        u = self.project(X)
        return self.decoding_set_.argmax(self.target_loss_.scores(u))

    def predict(self, X: Any) -> Any:
        r"""Calibrated decoding :math:`\hat y = \mathrm{MAP}_D(-Vu - b)` (paper eq. 9).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        y_pred : ndarray
            Predicted labels, in the labels' natural form (see the estimator's
            ``predict``).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        """
        check_is_fitted(self)
        return self._format_predictions(self._decode(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags
