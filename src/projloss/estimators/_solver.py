r"""Regularized empirical risk minimization with a projection loss, by L-BFGS.

Minimizes (paper §6)

.. math::
    F(W, b) = \frac1n\sum_{i=1}^n S_C^\Psi(W f_i + b, y_i) + \frac\alpha2\|W\|_F^2

over :math:`W \in \mathbb{R}^{p\times d}` and (if fitted) an unpenalized intercept
:math:`b \in \mathbb{R}^p`, where :math:`f_i` are the model features (the inputs, or the
kernel values against the training inputs). The gradient is
:math:`\frac1n (U - \Phi)^\top F + \alpha W` with :math:`U = P_C^\Psi(\Theta)`: one batched
projection per objective evaluation, and sparse features stay sparse
(``safe_sparse_dot``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.extmath import safe_sparse_dot
from threadpoolctl import threadpool_limits

from ..losses import loss_from_projection
from ..sets import ConvexSet


@dataclass
class FitResult:
    coef: NDArray[np.float64]
    intercept: NDArray[np.float64]
    n_iter: int
    objective: float
    converged: bool
    message: str
    n_evals: int = 0


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
    coef_init: NDArray[np.float64] | None = None,
    intercept_init: NDArray[np.float64] | None = None,
) -> FitResult:
    """Fit ``(coef, intercept)`` by L-BFGS-B with the analytic gradient.

    ``F``: features, dense ``(n, d)`` or CSR; ``phi``: encoded labels ``(n, *event_shape)``.
    L-BFGS-B stops when the max-norm of the projected gradient is at most ``tol``
    (``gtol``) or the relative decrease of the objective is at most ``1e-4 * tol``
    (``ftol``; at the default ``tol = 1e-5`` this is close to scipy's default
    ``2.2e-9``, the reference implementation's setting). Emits a
    ``ConvergenceWarning`` if the solver stops before convergence.
    """
    n, d = F.shape
    event_shape = phi.shape[1:]
    p = int(np.prod(event_shape))
    phi_flat = phi.reshape(n, p)
    size = p * d

    n_evals = 0

    def objective(w: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        nonlocal n_evals
        n_evals += 1
        coef = w[:size].reshape(p, d)
        theta = safe_sparse_dot(F, coef.T, dense_output=True)
        if fit_intercept:
            theta = theta + w[size:]
        u = projection_set.project(theta.reshape(n, *event_shape), geometry).reshape(n, p)
        value = float(np.sum(loss_from_projection(theta, u, phi_flat, geometry, 1))) / n
        value += 0.5 * alpha * float(np.dot(w[:size], w[:size]))
        resid = u - phi_flat  # dS/dtheta, (n, p)
        grad = np.empty_like(w)
        grad[:size] = (safe_sparse_dot(F.T, resid, dense_output=True).T / n + alpha * coef).ravel()
        if fit_intercept:
            grad[size:] = resid.mean(axis=0)
        return value, grad

    w0 = np.zeros(size + (p if fit_intercept else 0))
    if coef_init is not None:
        w0[:size] = coef_init.ravel()
    if fit_intercept and intercept_init is not None:
        w0[size:] = intercept_init.ravel()

    # One BLAS thread: L-BFGS-B calls BLAS on vectors of the size of w at every iteration,
    # and a multi-threaded OpenBLAS spin-waits on those tiny calls (measured 20-40x slower
    # fits on a shared 2-core machine). The batched projections are not BLAS-bound either.
    # scikit-learn does the same in its own loops (e.g. KMeans).
    with threadpool_limits(limits=1, user_api="blas"):
        res = minimize(
            objective,
            w0,
            jac=True,
            method="L-BFGS-B",
            options={
                "maxiter": int(max_iter),
                "gtol": float(tol),
                "ftol": 1e-4 * float(tol),
                "maxls": 50,
            },
        )
    converged = bool(res.status == 0)
    if not converged:
        warnings.warn(
            f"L-BFGS did not converge in {res.nit} iterations ({res.message}); "
            "increase max_iter or tol, or scale the features",
            ConvergenceWarning,
            stacklevel=3,
        )
    coef = res.x[:size].reshape(p, d)
    intercept = res.x[size:] if fit_intercept else np.zeros(p)
    return FitResult(
        coef, intercept, int(res.nit), float(res.fun), converged, str(res.message), n_evals
    )
