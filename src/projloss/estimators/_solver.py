r"""Regularized empirical risk minimization with a projection loss, by L-BFGS.

Minimizes (paper §6)

.. math::
    F(W, b) = \frac1n\sum_{i=1}^n S_C^\Psi(W f_i + b, y_i) + \frac\alpha2\|W\|_F^2

over :math:`W \in \mathbb{R}^{p\times d}` and (if fitted) an unpenalized intercept
:math:`b \in \mathbb{R}^p`, where :math:`f_i` are the model features (the inputs, or the
kernel values against the training inputs). With ``penalize_intercept=True`` the intercept
is penalized like :math:`W` (a term :math:`\frac\alpha2\|b\|^2`): the intercept is then the
weight of a constant feature of 1s appended to :math:`f_i`, as in the paper's reference
implementation (``sklearn.preprocessing.add_dummy_feature``, github.com/mblondel/
projection-losses, ``estimators.py``) and scikit-learn's ``intercept_scaling=1`` of
``LinearSVC``. The gradient is
:math:`\frac1n (U - \Phi)^\top F + \alpha W` with :math:`U = P_C^\Psi(\Theta)`: one batched
projection per objective evaluation, and sparse features stay sparse
(``safe_sparse_dot``).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.extmath import safe_sparse_dot
from threadpoolctl import ThreadpoolController

from ..losses import loss_from_projection
from ..sets import ConvexSet
from ._newton import SparseDerived, affordable, newton_fit, sparse_derived

T = TypeVar("T")

_CONTROLLER: ThreadpoolController | None = None

#: the largest dense feature matrix (entries) of the Newton fallback (its SVD)
MAX_DENSE = 20_000_000

#: the Newton iterations of a Newton-first fit (:func:`newton_first_pays`) before it falls
#: back to L-BFGS then Newton
NEWTON_FIRST_ITER = 50

#: the tightest relative decrease rule of L-BFGS-B (scipy's ``ftol``): L-BFGS brings the
#: fit near the optimum, a Newton finish to ``tol``
LBFGS_FTOL = 1e-9


def _blas_controller() -> ThreadpoolController:
    """One ``ThreadpoolController`` per process: creating one scans the loaded libraries
    (``/proc/self/maps``), about 4 ms -- a third of a small fit when done per fit."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


@dataclass
class FitResult:
    coef: NDArray[np.float64]
    intercept: NDArray[np.float64]
    n_iter: int
    objective: float
    converged: bool
    message: str
    n_evals: int = 0
    #: the Newton method's share of ``n_iter`` (0 when L-BFGS alone ran)
    n_iter_newton: int = 0
    #: the Jacobians of the projection the Newton method computed, by source: ``"set"``
    #: (the set's own, :meth:`ConvexSet.projection_jacobians`) or ``"differences"``
    #: (finite differences of the projection)
    n_jacobians: dict[str, int] = field(default_factory=lambda: {"set": 0, "differences": 0})


@dataclass
class _Problem:
    r"""The objective :math:`F(B)` of the module docstring at :math:`B = [W, b]`, shape
    ``(p, d + fit_intercept)``; ``phi``: encoded labels ``(n, p)``."""

    F: Any
    phi: NDArray[np.float64]
    projection_set: ConvexSet
    geometry: str
    event_shape: tuple[int, ...]
    alpha: float
    fit_intercept: bool
    penalized: bool

    def value_and_gradient(self, B: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        r""":math:`F(B)` and :math:`\nabla F(B) = [\frac1n (U - \Phi)^\top F + \alpha W,\
        \mathrm{mean}(U - \Phi) (+ \alpha b)]` in the original coordinates."""
        F, alpha = self.F, self.alpha
        n, d = F.shape
        p = self.phi.shape[1]
        coef = B[:, :d]
        theta = safe_sparse_dot(F, coef.T, dense_output=True)
        if self.fit_intercept:
            theta = theta + B[:, d]
        u = self.projection_set.project(theta.reshape(n, *self.event_shape), self.geometry)
        u = u.reshape(n, p)
        value = float(np.sum(loss_from_projection(theta, u, self.phi, self.geometry, 1))) / n
        value += 0.5 * alpha * float(np.sum(coef * coef))
        if self.penalized:
            value += 0.5 * alpha * float(B[:, d] @ B[:, d])
        resid = u - self.phi  # dS/dtheta, (n, p)
        G = np.empty(B.shape)
        G[:, :d] = safe_sparse_dot(F.T, resid, dense_output=True).T / n + alpha * coef
        if self.fit_intercept:
            G[:, d] = resid.mean(axis=0)
            if self.penalized:
                G[:, d] += alpha * B[:, d]
        return value, G


def _preconditioner(
    F, alpha: float, fit_intercept: bool, penalize_intercept: bool = False
) -> tuple[NDArray, NDArray]:
    r"""``(P, P^{-1})`` with :math:`P = A^{-1/2}`,
    :math:`A = \frac1n \tilde F^\top\tilde F + \mathrm{diag}(\alpha, \dots, \alpha, 0)`,
    :math:`\tilde F = [F, \mathbf 1]` (the Hessian of the objective for a 1-smooth loss
    with unit curvature, shared by the ``p`` outputs; the last diagonal entry is
    :math:`\alpha` too when the intercept is penalized)."""
    Ft = np.hstack([F, np.ones((F.shape[0], 1))]) if fit_intercept else F
    A = Ft.T @ Ft / F.shape[0]
    n_penalized = Ft.shape[1] if penalize_intercept else F.shape[1]
    A[np.arange(n_penalized), np.arange(n_penalized)] += alpha
    evals, Q = np.linalg.eigh(A)
    evals = np.maximum(evals, 1e-10 * max(float(evals.max()), 1e-300))
    P = (Q / np.sqrt(evals)) @ Q.T
    P_inv = (Q * np.sqrt(evals)) @ Q.T
    return P, P_inv


def newton_applicable(
    F: Any, projection_set: ConvexSet, p: int, geometry: str, alpha: float
) -> bool:
    """Whether the Newton method of :mod:`._newton` fits this problem: ``alpha > 0`` (a
    strongly convex objective), sparse features (kept sparse) or dense ones of at most
    :data:`MAX_DENSE` entries (their SVD), a set whose projection is exact
    (``ConvexSet.exact_projection``: not the Birkhoff polytope's iterations) and whose
    Jacobians are cheap for ``p`` outputs (:func:`._newton.affordable`)."""
    n, d = F.shape
    return (
        alpha > 0
        and (sp.issparse(F) or n * d <= MAX_DENSE)
        and projection_set.exact_projection
        and affordable(projection_set, p, geometry)
    )


def newton_first_pays(
    F: Any,
    projection_set: ConvexSet,
    fit_intercept: bool,
    penalize_intercept: bool,
    geometry: str,
    cold: bool,
) -> bool:
    """Whether a fit whose Newton finish is available (:func:`newton_applicable`) runs the
    Newton method first (:func:`fit_projection_model`), the rule measured on the paper's
    linear fits (CPU seconds, ``tol = 1e-9``):

    - every coefficient penalized: an unpenalized intercept leaves directions without
      curvature (where every sample's projection is a vertex of its output's set), along
      which Newton steps are unbounded;
    - sparse features, cold (along a continuation path) or warm: preconditioned by the
      exact per-output Hessian blocks up to :func:`._newton.sparse_blocks_fit`'s width
      (tmc2007_500's 501 columns: at ``alpha = 1e-4`` 500 L-BFGS iterations then 15
      Newton ones, or 12 Newton ones), above it (the 30,438 of the paper's TMC) by the
      two-level :meth:`._newton._BasisProblem.coarse_preconditioner` (the tmc2007-shape
      scaling case (b): 160 L-BFGS iterations then 2 Newton ones, or 5 Newton ones);
    - dense features warm-started (the tune stage's grid, from the previous lambda's
      solution): 2-18 Newton iterations per lambda where L-BFGS ran up to 500 before its
      Newton finish (cal500's grid: 2.4 s -> 1.5 s; ordinal regression, Table 4: ~20
      L-BFGS iterations then a Newton finish in 93% of the fits, 1-3 Newton ones);
    - dense features cold (the refit stage's fits) with the Euclidean geometry, from the
      squared loss's optimum (:func:`squared_loss_start`, closed form): 6-47 Newton
      iterations where L-BFGS ran 30-570 from zero (ordinal regression: ~90 -> ~8; the
      multilabel refits 12.5 s -> 8.9 s). With the KL geometry there is no such start,
      and Newton from zero along a continuation path is not cheaper (vowel: 0.39 s ->
      0.47 s at ``alpha = 1e-4``): L-BFGS first.

    Except a set that says so (``ConvexSet.newton_first = False``), the knapsack polytope,
    with dense features: its Jacobians couple the outputs of
    the samples whose budget is active, and the Newton steps stall at the kinks of its
    projection (birds at ``alpha <= 1e-3``: steps ~1e-3, then the fallback to L-BFGS
    then Newton after :data:`NEWTON_FIRST_ITER` iterations; the knapsack/knapsack tune
    grids of Tables 6-7 took 11.9 s either way, birds with its label-less samples 1.8 s
    -> 4.2 s): L-BFGS first.
    """
    if fit_intercept and not penalize_intercept:
        return False
    if sp.issparse(F):
        return True
    if not projection_set.newton_first:  # its own word (ConvexSet.newton_first)
        return False
    return not cold or geometry == "euclidean"


def _max_gradient(problem: _Problem, res: Any, preconditioned: bool) -> float:
    r""":math:`\|\nabla F\|_\infty` at L-BFGS's point ``res.x`` (already mapped back to the
    original coordinates): its own last gradient ``res.jac`` unless it ran in the
    preconditioned ones."""
    G = problem.value_and_gradient(res.x)[1] if preconditioned else res.jac
    return float(np.max(np.abs(G))) if np.size(G) else 0.0


def one_blas_thread(fn: Callable[..., T]) -> Callable[..., T]:
    """Run ``fn`` with one BLAS thread (threadpoolctl): see :func:`fit_projection_model`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        with _blas_controller().limit(limits=1, user_api="blas"):
            return fn(*args, **kwargs)

    return wrapper


@one_blas_thread  # as the fit: the same start (to the last bit) whatever the BLAS threads
def squared_loss_start(
    F: NDArray[np.float64], phi: NDArray[np.float64], alpha: float, fit_intercept: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""The minimizer :math:`(W, b)` of the squared-loss objective
    :math:`\frac1{2n}\|F W^\top + 1 b^\top - \Phi\|_F^2 + \frac\alpha2(\|W\|_F^2 + \|b\|^2)`
    (ridge regression of the encoded labels, the intercept penalized; ``alpha > 0``):
    the Fenchel-Young loss of the set :math:`\mathbb{R}^p` with the Euclidean geometry,
    the start of a cold Newton-first fit with the Euclidean geometry and dense features
    (:func:`fit_projection_model`). ``F`` dense ``(n, d)``, ``phi`` ``(n, p)``; returns
    ``W`` ``(p, d)`` and ``b`` ``(p,)`` (zeros without intercept).

    Examples
    --------
    >>> F = np.array([[0.0], [1.0], [2.0]])
    >>> W, b = squared_loss_start(F, 2 * F + 1, alpha=1e-12, fit_intercept=True)
    >>> print(np.round(W, 6), np.round(b, 6))
    [[2.]] [1.]
    """
    n, d = F.shape
    Ft = np.hstack([F, np.ones((n, 1))]) if fit_intercept else F
    A = Ft.T @ Ft / n
    A[np.diag_indices_from(A)] += alpha
    B = np.linalg.solve(A, Ft.T @ phi / n).T
    if fit_intercept:
        return np.ascontiguousarray(B[:, :d]), B[:, d].copy()
    return np.ascontiguousarray(B), np.zeros(phi.shape[1])


@one_blas_thread
def fit_projection_model(
    F,
    phi: NDArray[np.float64],
    projection_set: ConvexSet,
    geometry: str,
    *,
    alpha: float,
    fit_intercept: bool,
    max_iter: int,
    tol: float,
    penalize_intercept: bool = False,
    coef_init: NDArray[np.float64] | None = None,
    intercept_init: NDArray[np.float64] | None = None,
    precondition: bool = False,
    solver: str = "lbfgs",
    newton_fallback: bool = True,
    newton_first: bool | None = None,
    warning_hint: str = "",
) -> FitResult:
    r"""Fit ``(coef, intercept)`` by L-BFGS-B with the analytic gradient.

    ``F``: features, dense ``(n, d)`` or CSR; ``phi``: encoded labels ``(n, *event_shape)``.
    ``penalize_intercept``: add :math:`\frac\alpha2\|b\|^2` (see the module docstring).
    ``solver="lbfgs"``: the fit stops when the max-norm of the gradient in the original
    coordinates, :math:`\|\nabla F(W, b)\|_\infty`, is at most ``tol``. L-BFGS-B runs
    first and stops at that rule (``gtol``) or when the relative decrease of the objective
    falls to ``ftol = 1e-4 * tol`` (at the default ``tol = 1e-5`` about scipy's default
    ``2.2e-9``, the reference implementation's setting), no tighter than
    :data:`LBFGS_FTOL` when a Newton finish follows or the projection is iterative (the
    Birkhoff polytope: the accuracy of its objective is its projection's). On the flat
    optima of nearly separable data the decrease rule stops L-BFGS where the gradient is
    still far above ``tol``, at a point that depends on the last bits of the arithmetic
    (Table 4's pasture at ``alpha = 1e-4``: another CPU gave other test predictions): the
    Newton finish below then takes the fit to ``tol`` (at ``tol = 1e-9`` two CPUs agree
    to about ``1e-12`` relative). Emits a ``ConvergenceWarning`` if the fit stops before
    convergence.

    ``precondition=True`` (dense ``F`` of moderate width, e.g. kernel features, which are
    badly conditioned) runs L-BFGS in the coordinates :math:`Z = [W, b] A^{1/2}` (see
    :func:`_preconditioner`): the same objective and minimizer, far fewer iterations; then
    ``tol`` applies to the gradient in those coordinates.

    ``solver="newton"``: the semismooth Newton method of :mod:`._newton` (the kernel
    models' solver; ``precondition`` is then ignored, the features must be densifiable):
    it stops when the max-norm of the gradient in the original coordinates is at most
    ``tol``, and converges on every kernel fit of the paper where L-BFGS stops at
    ``max_iter`` (``python -m benchmarks.solver``, benchmarks/RESULTS.md).

    ``newton_fallback``: when L-BFGS stops above ``tol`` (its relative decrease rule,
    ``max_iter``, or a line search that fails), continue from its point with the Newton
    method (for ``alpha > 0``, sparse features, which it keeps sparse, or dense ones of at
    most :data:`MAX_DENSE` entries, a set whose projection is exact
    (``ConvexSet.exact_projection``) and for which it is cheap,
    :func:`._newton.affordable`), with its own budget of ``max_iter`` iterations:
    ``n_iter`` then counts both (and may exceed ``max_iter``), ``n_iter_newton`` the
    Newton part. A fit that L-BFGS brings to ``tol`` is unchanged, to the last bit. Where
    no Newton finish is available (the Birkhoff polytope's iterative projection; coupled
    sets above :data:`._newton.MAX_COUPLED_OUTPUTS` outputs) L-BFGS's own rules decide
    convergence, as in scipy.

    Newton first (``newton_first``; ``None``: :func:`newton_first_pays` decides, the one
    place of that policy): where a Newton finish is available and every coefficient is
    penalized, the Newton method runs first, for at most :data:`NEWTON_FIRST_ITER`
    iterations, from ``coef_init``/``intercept_init``, or for a cold fit from the squared
    loss's optimum (dense features, :func:`squared_loss_start`) or from 0 along a
    continuation path in ``alpha`` (sparse features, :func:`._newton.newton_fit`); if it
    has not converged, L-BFGS goes on from its point, then the Newton finish (``n_iter``
    counts all three). Every path stops at ``max|grad| <= tol``, at the same (unique)
    optimum of the strongly convex objective.

    ``warning_hint``: appended to the ``ConvergenceWarning``'s remedy (the estimators name
    features far from unit scale there, :func:`._validation.scale_hint`).

    The whole fit, preconditioner included, runs with one BLAS thread: L-BFGS-B calls BLAS
    on vectors of the size of w at every iteration, and a multi-threaded OpenBLAS
    spin-waits on those tiny calls (measured 20-40x slower fits on a shared 2-core
    machine; scikit-learn does the same in its own loops, e.g. KMeans); and the result
    does not depend on the threads of the calling process (a multi-threaded ``eigh``
    rounds differently, which matters for fits stopped by ``max_iter``).
    """
    n, d = F.shape
    event_shape = phi.shape[1:]
    p = int(np.prod(event_shape))
    phi_flat = phi.reshape(n, p)
    dt = d + int(fit_intercept)  # columns of B = [W, b]
    if solver == "newton":
        precondition = False  # Newton-CG preconditions its own steps (see _newton_cg)
    if precondition:
        P, P_inv = _preconditioner(np.asarray(F), alpha, fit_intercept, penalize_intercept)
    penalized = fit_intercept and penalize_intercept

    newton_ok = newton_applicable(F, projection_set, p, geometry, alpha)
    # an unpenalized intercept leaves directions without curvature (where every sample's
    # projection is a vertex of its output's set): Newton steps are unbounded there
    every_penalized = not fit_intercept or penalize_intercept
    finish = solver == "lbfgs" and newton_fallback and newton_ok
    # L-BFGS's relative decrease rule: no tighter than LBFGS_FTOL when a Newton finish to
    # ``tol`` follows, or when the projection is iterative (its own tolerance bounds the
    # accuracy of the objective: the Birkhoff polytope's, 1e-9 by default)
    ftol = 1e-4 * float(tol)
    if (finish and every_penalized) or not projection_set.exact_projection:
        ftol = max(ftol, LBFGS_FTOL)

    n_evals = 0
    problem = _Problem(
        F, phi_flat, projection_set, geometry, event_shape, alpha, fit_intercept, penalized
    )

    def objective(z: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        nonlocal n_evals
        n_evals += 1
        B = z.reshape(p, dt)
        if precondition:
            B = B @ P
        value, G = problem.value_and_gradient(B)
        if precondition:
            G = G @ P
        return value, G.ravel()

    B0 = np.zeros((p, dt))
    if coef_init is not None:
        B0[:, :d] = coef_init
    if fit_intercept and intercept_init is not None:
        B0[:, d] = intercept_init
    z0 = (B0 @ P_inv if precondition else B0).ravel()

    derived: SparseDerived | None = None  # sparse features: keyed once a fit (two Newton runs)

    def newton(
        B_start: NDArray[np.float64], continuation: bool = False, budget: int | None = None
    ) -> Any:
        nonlocal derived
        ones_column = False
        if sp.issparse(F):  # kept sparse: the Newton method in the features' coordinates,
            Fd, ones_column = sp.csr_matrix(F), penalized  # the 1s implicit (no stacked copy)
            if derived is None:
                derived = sparse_derived(Fd)
        else:
            Fd = np.asarray(F, dtype=np.float64)
            if penalized:
                Fd = np.hstack([Fd, np.ones((n, 1))])
        out = newton_fit(
            Fd,
            phi_flat,
            projection_set,
            geometry,
            event_shape,
            alpha=float(alpha),
            free_intercept=fit_intercept and not penalized,
            B0=B_start,
            max_iter=int(max_iter if budget is None else budget),
            tol=float(tol),
            continuation=continuation,
            ones_column=ones_column,
            derived=derived,
        )
        for source, count in out.n_jacobians.items():
            n_jacobians[source] += count
        return out

    n_iter_newton = 0
    n_jacobians = {"set": 0, "differences": 0}
    cold = coef_init is None and intercept_init is None
    first = None  # a Newton-first attempt
    if newton_first is None:
        newton_first = newton_first_pays(
            F, projection_set, fit_intercept, penalize_intercept, geometry, cold
        )
    if solver == "lbfgs" and finish and every_penalized and newton_first:
        start, continuation = B0, cold  # from 0: along a continuation path in alpha
        if cold and not sp.issparse(F) and geometry == "euclidean":
            # the squared loss's optimum (closed form): near the sets' Euclidean optima
            W, b = squared_loss_start(np.asarray(F), phi_flat, float(alpha), fit_intercept)
            start = np.hstack([W, b[:, None]]) if fit_intercept else W
            continuation = False
        budget = min(NEWTON_FIRST_ITER, int(max_iter))
        first = newton(start, continuation=continuation, budget=budget)
        n_evals += first.nfev
        if not first.success and np.all(np.isfinite(first.x)):
            # L-BFGS goes on from the Newton method's point (its line search only descends:
            # nearer the optimum than the start; birds' knapsack grid, where the steps stall:
            # 1.6 s instead of 1.8 from the start)
            z0 = (first.x @ P_inv if precondition else first.x).ravel()
    if first is not None and first.success:
        res, name = first, "Newton-CG"
        n_iter_newton = int(res.nit)
    elif solver == "newton":
        res = newton(B0, continuation=cold)
        n_evals = res.nfev
        n_iter_newton = int(res.nit)
        name = "Newton-CG"
    elif solver == "lbfgs":
        res = minimize(
            objective,
            z0,
            jac=True,
            method="L-BFGS-B",
            options={
                "maxiter": int(max_iter),
                "gtol": float(tol),
                "ftol": ftol,
                "maxls": 50,
            },
        )
        res.success = bool(res.status == 0)
        res.x = res.x.reshape(p, dt) @ P if precondition else res.x.reshape(p, dt)
        name = "L-BFGS"
        if finish and (
            not res.success or (every_penalized and _max_gradient(problem, res, precondition) > tol)
        ):
            polish = newton(res.x)
            n_iter_newton = int(polish.nit)
            polish.nit += res.nit
            polish.message = f"L-BFGS: {res.message}; then Newton-CG: {polish.message}"
            n_evals += polish.nfev
            res, name = polish, "L-BFGS then Newton-CG"
    else:
        raise ValueError(f"unknown solver {solver!r}; valid solvers are ['lbfgs', 'newton']")
    if first is not None and not first.success:  # the attempt counts in the iterations
        res.nit += first.nit
        n_iter_newton += int(first.nit)
        res.message = f"Newton-CG first: {first.message}; then {res.message}"
    converged = bool(res.success)
    if not converged:
        warnings.warn(
            f"{name} did not converge in {res.nit} iterations ({res.message}); "
            f"increase max_iter or tol, or scale the features{warning_hint}",
            ConvergenceWarning,
            stacklevel=4,  # warn, wrapper, fit_projection_model, estimator.fit
        )
    B = res.x.reshape(p, dt)
    coef = np.ascontiguousarray(B[:, :d])
    intercept = B[:, d].copy() if fit_intercept else np.zeros(p)
    return FitResult(
        coef,
        intercept,
        int(res.nit),
        float(res.fun),
        converged,
        str(res.message),
        n_evals,
        n_iter_newton,
        n_jacobians,
    )
