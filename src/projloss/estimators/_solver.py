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
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import OptimizeResult, minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.extmath import safe_sparse_dot
from threadpoolctl import ThreadpoolController

from ..losses import loss_from_projection
from ..sets import ConvexSet

T = TypeVar("T")

_CONTROLLER: ThreadpoolController | None = None


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

    def mean_jacobian(self, B: NDArray[np.float64]) -> NDArray[np.float64]:
        r""":math:`\bar J = \frac1n\sum_i \partial P_C^\Psi(\theta_i)` at the model's
        :math:`\theta_i` (``p`` forward differences of the batched projection),
        symmetrized, ``(p, p)``."""
        F = self.F
        n, d = F.shape
        p = self.phi.shape[1]
        theta = safe_sparse_dot(F, B[:, :d].T, dense_output=True)
        if self.fit_intercept:
            theta = theta + B[:, d]
        shape = (n, *self.event_shape)
        u = self.projection_set.project(theta.reshape(shape), self.geometry).reshape(n, p)
        eps = np.sqrt(np.finfo(np.float64).eps) * (1.0 + float(np.abs(theta).max()))
        J = np.empty((p, p))
        for a in range(p):
            t = theta.copy()
            t[:, a] += eps
            ua = self.projection_set.project(t.reshape(shape), self.geometry).reshape(n, p)
            J[:, a] = (ua - u).mean(axis=0) / eps
        return 0.5 * (J + J.T)


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


def one_blas_thread(fn: Callable[..., T]) -> Callable[..., T]:
    """Run ``fn`` with one BLAS thread (threadpoolctl): see :func:`fit_projection_model`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        with _blas_controller().limit(limits=1, user_api="blas"):
            return fn(*args, **kwargs)

    return wrapper


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
) -> FitResult:
    r"""Fit ``(coef, intercept)`` by L-BFGS-B with the analytic gradient.

    ``F``: features, dense ``(n, d)`` or CSR; ``phi``: encoded labels ``(n, *event_shape)``.
    ``penalize_intercept``: add :math:`\frac\alpha2\|b\|^2` (see the module docstring).
    L-BFGS-B stops when the max-norm of the projected gradient is at most ``tol``
    (``gtol``) or the relative decrease of the objective is at most ``1e-4 * tol``
    (``ftol``; at the default ``tol = 1e-5`` this is close to scipy's default
    ``2.2e-9``, the reference implementation's setting). Emits a
    ``ConvergenceWarning`` if the solver stops before convergence.

    ``precondition=True`` (dense ``F`` of moderate width, e.g. kernel features, which are
    badly conditioned) runs L-BFGS in the coordinates :math:`Z = [W, b] A^{1/2}` (see
    :func:`_preconditioner`): the same objective and minimizer, far fewer iterations; then
    ``tol`` applies to the gradient in those coordinates.

    ``solver="newton"`` (experimental, not used by the estimators): the truncated Newton
    method of :func:`_newton_cg` instead of L-BFGS-B (``precondition`` is then ignored).
    Measured on the paper's grids (``python -m benchmarks.solver``, benchmarks/RESULTS.md)
    it converges where L-BFGS stops at ``max_iter`` for the largest lambdas of the
    degree-3 kernel permutahedron fits, but not on the middle of that grid, and it is
    slower; on the ordinal order simplex its preconditioner breaks down.

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

    if solver == "newton":
        res = _newton_cg(problem, B0, int(max_iter), float(tol))
        n_evals = res.nfev
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
                "ftol": 1e-4 * float(tol),
                "maxls": 50,
            },
        )
        res.success = bool(res.status == 0)
        name = "L-BFGS"
    else:
        raise ValueError(f"unknown solver {solver!r}; valid solvers are ['lbfgs', 'newton']")
    converged = bool(res.success)
    if not converged:
        warnings.warn(
            f"{name} did not converge in {res.nit} iterations ({res.message}); "
            "increase max_iter or tol, or scale the features",
            ConvergenceWarning,
            stacklevel=4,  # warn, wrapper, fit_projection_model, estimator.fit
        )
    B = res.x.reshape(p, dt)
    if precondition:
        B = B @ P
    coef = np.ascontiguousarray(B[:, :d])
    intercept = B[:, d].copy() if fit_intercept else np.zeros(p)
    return FitResult(
        coef, intercept, int(res.nit), float(res.fun), converged, str(res.message), n_evals
    )


def _newton_cg(
    problem: _Problem, B0: NDArray[np.float64], max_iter: int, tol: float, max_cg: int = 200
) -> OptimizeResult:
    r"""Minimize :math:`F(B)` by a truncated Newton method with a Kronecker preconditioner.

    Each iteration solves :math:`H D = -\nabla F` by preconditioned conjugate gradients
    (forcing term :math:`\eta_k = \min(1/2, \sqrt{\|g\|})`, stopped at a direction of
    non-positive curvature) and takes an Armijo backtracking step from the unit step
    (Nocedal & Wright, *Numerical Optimization*, Algorithm 7.1). The Hessian-vector
    products are differences of the analytic gradient,
    :math:`H V \approx (\nabla F(B + \epsilon V) - \nabla F(B)) / \epsilon`, i.e.
    :math:`\frac1n \sum_i J_i (V \tilde f_i) \tilde f_i^\top + \alpha V` with
    :math:`J_i` the Jacobian of the projection at :math:`\theta_i` (block averaging for
    the permutahedron and the isotonic sets, the active set of the cube or the capped
    simplex...): exact on each linear piece of a polyhedral projection, with no Jacobian
    oracle per set.

    The preconditioner is the Kronecker approximation of the Hessian
    :math:`\bar J \otimes \frac1n \tilde F^\top \tilde F + \alpha I`, with
    :math:`\bar J = \frac1n\sum_i J_i` (``p`` finite differences of the projection,
    recomputed every iteration), inverted through the eigendecompositions of its two
    factors. It captures the curvature that the loss actually has: at a large
    :math:`\alpha` the permutahedron pools every :math:`\theta_i` into one block
    (:math:`J_i = \mathbf 1\mathbf 1^\top / k`), the loss is flat in all other output
    directions, and a preconditioner that assumes unit curvature (``precondition=True``
    of L-BFGS) leaves a condition number of about :math:`s_{\max}/\alpha`.

    Stopping rule, an optimality condition that means the same in every basis: the Newton
    decrement :math:`\nabla F^\top H^{-1} \nabla F \approx 2 (F(B) - F^\star)` (from
    the CG direction) at most ``tol**2``. A max-norm rule on the gradient is not
    invariant: kernel features of degree 3 have entries up to :math:`10^4`, and a max-norm
    of ``1e-5`` is then below the rounding of the objective (measured: the gradient stalls
    at ``2e-3`` with the objective converged to ``1e-11``), while a rule relative to
    :math:`\|\nabla F(0)\|_\infty` stops warm starts far from the optimum. ``success``
    is False if it is not met in ``max_iter`` iterations, or if no step decreases the
    objective any more (rounding) before it is met.
    """
    F = np.asarray(problem.F)
    n = F.shape[0]
    Ft = np.hstack([F, np.ones((n, 1))]) if problem.fit_intercept else F
    s_eig, Q = np.linalg.eigh(Ft.T @ Ft / n)
    s_eig = np.maximum(s_eig, 0.0)
    nfev = 0

    def fun(B: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        nonlocal nfev
        nfev += 1
        return problem.value_and_gradient(B)

    B = np.array(B0, dtype=np.float64)
    f, G = fun(B)
    nit, message, success = 0, "", False
    while True:
        mu, V = np.linalg.eigh(problem.mean_jacobian(B))
        denom = np.maximum(mu, 0.0)[:, None] * s_eig[None, :] + problem.alpha
        denom = np.maximum(denom, 1e-12 * float(denom.max()))

        def precond(R: NDArray[np.float64]) -> NDArray[np.float64]:
            return V @ ((V.T @ R @ Q) / denom) @ Q.T  # noqa: B023 -- used in this iteration

        D = _truncated_pcg(fun, B, G, precond, max_cg)
        decrement = -float(np.sum(G * D))  # ~ g^T H^{-1} g = 2 (F(B) - F*) near B*
        if decrement < 0:  # not a descent direction (rounding): the preconditioned gradient
            D = -precond(G)
            decrement = -float(np.sum(G * D))
        if decrement <= tol**2:
            success, message = True, f"Newton decrement^2 {decrement:.3g} <= tol^2"
            break
        if nit >= max_iter:
            message = f"iteration limit reached (Newton decrement^2 {decrement:.3g})"
            break
        step, accepted = 1.0, False
        for _ in range(60):
            f_new, G_new = fun(B + step * D)
            if f_new <= f - 1e-4 * step * decrement:
                accepted = True
                break
            step *= 0.5
        nit += 1
        if not accepted:
            message = f"no decrease of the objective (Newton decrement^2 {decrement:.3g})"
            break
        B, f, G = B + step * D, f_new, G_new
    return OptimizeResult(x=B, fun=f, jac=G, nit=nit, nfev=nfev, success=success, message=message)


def _truncated_pcg(
    fun: Callable[[NDArray[np.float64]], tuple[float, NDArray[np.float64]]],
    B: NDArray[np.float64],
    G: NDArray[np.float64],
    precond: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    max_cg: int,
) -> NDArray[np.float64]:
    """Approximately solve ``H D = -G`` by preconditioned CG from ``D = 0``, to a residual
    norm of ``min(1/2, sqrt(|G|)) |G|``; Hessian-vector products by forward differences."""
    gnorm = float(np.linalg.norm(G))
    target = min(0.5, np.sqrt(gnorm)) * gnorm
    eps_base = np.sqrt(np.finfo(np.float64).eps) * (1.0 + float(np.linalg.norm(B)))
    D = np.zeros_like(G)
    R = -G
    Zr = precond(R)
    Pd = Zr
    rz = float(np.sum(R * Zr))
    for _ in range(max_cg):
        eps = eps_base / float(np.linalg.norm(Pd))
        HP = (fun(B + eps * Pd)[1] - G) / eps
        curv = float(np.sum(Pd * HP))
        if curv <= 0:
            return D if D.any() else -precond(G)
        a = rz / curv
        D = D + a * Pd
        R = R - a * HP
        if float(np.linalg.norm(R)) <= target:
            break
        Zr = precond(R)
        rz_new = float(np.sum(R * Zr))
        Pd = Zr + (rz_new / rz) * Pd
        rz = rz_new
    return D
