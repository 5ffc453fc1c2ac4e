r"""Label ranking with projection losses (paper §6 "Label ranking", Tables 1-3)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import MultiOutputMixin
from sklearn.utils.validation import check_consistent_length

from .._permutations import check_permutations, permutation_matrix
from ..metrics import ranking_hamming_loss
from ..sets import ConvexSet
from ..target_losses import TargetLoss
from ._base import ProjectionEstimatorBase


def check_rankings(y: Any, name: str = "y") -> NDArray[np.int64]:
    """Validate rankings given as permutations or permutation matrices.

    Permutations ``(n, k)`` with ``y[i, rank] = label`` (labels ``0..k-1``, most preferred
    first), or permutation matrices ``(n, k, k)`` with ``Y[i, rank, label] = 1``.

    Parameters
    ----------
    y : {array-like, sparse matrix} of shape (n_samples, k) or (n_samples, k, k)
        The rankings.
    name : str, default="y"
        The argument's name, for the error messages.

    Returns
    -------
    perms : ndarray of shape (n_samples, k)
        The permutations ``y[i, rank] = label``, int64.

    Raises
    ------
    ValueError
        If ``y`` has neither shape, a matrix is not a permutation matrix, a row is not a
        permutation of ``0..k-1``, or ``k < 2``.
    """
    if hasattr(y, "toarray"):
        y = y.toarray()
    arr = np.asarray(y)
    if arr.ndim == 3:
        if arr.shape[1] != arr.shape[2]:
            raise ValueError(f"permutation matrices must have shape (n, k, k), got {arr.shape}")
        ok = np.all((arr == 0) | (arr == 1), axis=(1, 2))
        ok &= np.all(arr.sum(axis=1) == 1, axis=1) & np.all(arr.sum(axis=2) == 1, axis=1)
        if not np.all(ok):
            i = int(np.argmin(ok))
            raise ValueError(f"{name}[{i}] is not a permutation matrix")
        return np.argmax(arr, axis=2).astype(np.int64)
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be rankings of shape (n_samples, n_labels) (y[i, rank] = label) or "
            f"permutation matrices (n_samples, k, k), got shape {arr.shape}"
        )
    if arr.shape[1] < 2:
        raise ValueError(f"label ranking needs at least 2 labels, got {arr.shape[1]}")
    return check_permutations(arr, name)


class ProjectionLabelRanker(MultiOutputMixin, ProjectionEstimatorBase):
    r"""Label ranking with a Fenchel-Young projection loss and calibrated decoding.

    Labels are full rankings of ``k`` labels, given as permutations ``y`` of shape
    ``(n_samples, k)`` with ``y[i, rank] = label`` (labels ``0..k-1``, most preferred
    first; e.g. ``b > a > c`` is ``[1, 0, 2]``), or as permutation matrices
    ``(n_samples, k, k)`` with ``Y[i, rank, label] = 1``.

    Two encodings (paper §4):

    - permutation matrices: decoding set ``"birkhoff"`` (outputs are permutations),
      ``"row_simplex"`` or ``"cube"`` (outputs are 0/1 matrices that need not be
      permutations — the paper's Table 1 baselines); projection set ``"reals"``,
      ``"nonneg"``, ``"cube"``, ``"row_simplex"`` or ``"birkhoff"``; target loss
      ``"hamming"`` (entrywise, the paper's metric; default: decoding
      :math:`\mathrm{MAP}_D(2u - 1)`) or ``"hamming_ranking"`` (:math:`V = -I`, decoding
      :math:`\mathrm{MAP}_D(u)`, the loss the paper's tables are calibrated for). Both decode
      identically on ``"birkhoff"`` and ``"row_simplex"``; on ``"cube"`` the first thresholds
      :math:`u` at 1/2, the second at 0 (the paper's Table 1 cube column);
    - permuted weights ``w`` (default ``(k, ..., 1)``): decoding set ``"permutahedron"``,
      projection set ``"permutahedron"``, ``"reals"`` or ``"nonneg"``; target loss
      ``"spearman"`` (decoding = sorting :math:`u`).

    Parameters
    ----------
    projection_set : str or ConvexSet, default="birkhoff"
        The set :math:`C` of the loss :math:`S_C^\Psi`.
    geometry : {"euclidean", "kl"}, default="euclidean"
        The geometry :math:`\Psi` of the projection.
    decoding_set : str or ConvexSet, default=None
        The set :math:`D` of the calibrated decoding; ``None`` means the projection set
        (required when the projection set is ``"reals"`` or ``"nonneg"``).
    target_loss : str or TargetLoss, default=None
        The target loss :math:`L`; ``None`` means the encoding's default (see above).
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
        coordinates; a linear fit that L-BFGS stops above it (by its relative decrease
        rule) is finished by the Newton method (with ``alpha > 0``, every coefficient
        penalized and an exact projection: not the Birkhoff polytope's iterations). A tight
        one (``1e-9``, the pipeline's) makes the fit, hence the predictions, independent
        of the CPU's last bits.
    warm_start : bool, default=False
        Start from the previous solution (useful along a path of ``alpha``).
    w : array-like of shape (k,), default=None
        Weights of the permutahedron (descending); ``None`` means ``(k, ..., 1)``. Only for
        the permutahedron encoding; its ``k`` entries must be finite and distinct (tied
        weights cannot encode an order: ``fit`` raises a ``ValueError``).

    Attributes
    ----------
    coef_ : ndarray of shape (p, n_model_features)
        :math:`W`, with ``p = k * k`` (matrix encoding, row-major ``[rank, label]``) or ``k``.
    intercept_ : ndarray of shape (p,)
        :math:`b`.
    n_labels_ : int
        The number of labels ``k``.
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
        The shape of one encoded label, ``(k, k)`` or ``(k,)``.
    X_fit_ : {array-like, sparse matrix} of shape (n_samples, n_features)
        The training inputs (``model="poly"`` only: the kernel's landmarks).

    See Also
    --------
    ProjectionMLPLabelRanker : The same compositions with a multilayer perceptron.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 3))
    >>> y = np.argsort(-(X @ rng.standard_normal((3, 4))), axis=1)  # y[i, rank] = label
    >>> model = ProjectionLabelRanker(projection_set="permutahedron", alpha=1e-3).fit(X, y)
    >>> model.predict(X[:2]).shape
    (2, 4)
    >>> print(f"{model.score(X, y):.2f}")  # 1 - Hamming loss between permutation matrices
    1.00
    """

    _task: ClassVar[str] = "label_ranking"

    def __init__(
        self,
        projection_set: str | ConvexSet = "birkhoff",
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
        w: ArrayLike | None = None,
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
        self.w = w

    # ------------------------------------------------------------------ hooks
    def _prepare_targets(self, y: Any, n_samples: int) -> tuple[Any, int]:
        perms = check_rankings(y)
        check_consistent_length(np.empty((n_samples, 0)), perms)
        k = perms.shape[1]
        if self.w is not None:
            if self.composition_.encoding.name != "permutahedron":
                raise ValueError("w applies only to the permutahedron encoding")
            w = np.asarray(self.w, dtype=np.float64)
            if w.shape != (k,):
                raise ValueError(f"w must have shape ({k},) for {k} labels, got {w.shape}")
            if not np.all(np.isfinite(w)):
                raise ValueError("w contains NaN or infinite values; it must be finite")
            if np.unique(w).size != k:
                raise ValueError(
                    f"w must have {k} distinct entries for the permutahedron to encode "
                    f"rankings (labels with equal weights cannot be ordered, so predictions "
                    f"would be constant), got w = {w.tolist()}; use distinct weights, e.g. "
                    f"the default w = None, i.e. ({k}, ..., 1)"
                )
        self.n_labels_ = k
        return perms, k

    def _weights(self) -> NDArray[np.float64] | None:
        return None if self.w is None else np.asarray(self.w, dtype=np.float64)

    def _set_kwargs(self, name: str, k: int, y: Any) -> dict[str, Any]:
        if name == "permutahedron" and self.w is not None:
            return {"w": self._weights()}
        return {}

    def _target_loss_params(self, name: str, k: int) -> dict[str, Any]:
        if name == "hamming":
            return {"event_ndim": 2}
        if name == "spearman":
            return {"w": self._weights()}
        if name == "hamming_ranking" and self.composition_.decoding_set == "cube":
            return {"outputs": "matrices"}
        return {}

    @property
    def _outputs_permutations(self) -> bool:
        return self.composition_.decoding_set in ("birkhoff", "permutahedron")

    def _format_predictions(self, vertices: NDArray[np.float64]) -> Any:
        if self._outputs_permutations:
            return np.asarray(self.decoding_set_.decode(vertices), dtype=np.int64)
        return np.rint(vertices).astype(np.int64)

    # ------------------------------------------------------------------ API
    def predict(self, X: Any) -> NDArray[np.int64]:
        """Predicted rankings (or 0/1 matrices, for the cube and row-stochastic decoders).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples, k) or (n_samples, k, k)
            Rankings ``(n_samples, k)`` (``y[i, rank] = label``) for the Birkhoff and
            permutahedron decoding sets; 0/1 matrices ``(n_samples, k, k)``
            ``[rank, label]`` for the ``"cube"`` and ``"row_simplex"`` decoding sets (their
            outputs need not be permutations); int64.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        """
        return super().predict(X)

    def predict_matrix(self, X: Any) -> NDArray[np.int64]:
        """Predictions as 0/1 matrices ``(n, k, k)`` ``[rank, label]``, for every decoder.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples, k, k)
            Permutation matrices (or the 0/1 matrices of the ``"cube"`` and
            ``"row_simplex"`` decoding sets), int64.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        """
        out = self.predict(X)
        if out.ndim == 2:
            return permutation_matrix(out).astype(np.int64)
        return out

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """``1 - H``, with ``H`` the entrywise Hamming loss between permutation matrices.

        ``H`` is the fraction of differing entries of the true and predicted ``k x k``
        matrices, averaged over samples (the paper's label-ranking metric, there in
        percent). Higher is better.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples.
        y : array-like of shape (n_samples, k) or (n_samples, k, k)
            True rankings (``y[i, rank] = label``) or permutation matrices.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights of the average.

        Returns
        -------
        score : float
            ``1 - H``, in ``[0, 1]``.

        Raises
        ------
        ValueError
            If ``y`` is not rankings or permutation matrices of the predictions' size, or
            ``sample_weight`` is invalid.
        """
        perms = check_rankings(y)
        h = ranking_hamming_loss(
            permutation_matrix(perms),
            self.predict_matrix(X),
            percent=False,
            sample_weight=sample_weight,
        )
        return 1.0 - h

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False
        return tags
