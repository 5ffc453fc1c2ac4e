"""Independent reference solvers for the set tests (no code shared with projloss.sets).

The projection onto a polytope given by its vertices V (rows) is computed in the
barycentric coordinates p of the convex hull:

- Euclidean: min_p 1/2 ||V^T p - theta||^2, p in the simplex, solved exactly by
  Lawson-Hanson NNLS (scipy.optimize.nnls) with the constraint sum(p) = 1 appended as a
  heavily weighted equation;
- KL: min_p KL(V^T p, exp(theta - 1)), p in the simplex, by SLSQP with analytic gradients
  and a tight tolerance.

``optimality_gap`` is the variational-inequality certificate: u = P(theta) iff
<grad Psi(u) - theta, v - u> >= 0 for every vertex v.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize, nnls


def reference_projection(vertices: np.ndarray, theta: np.ndarray, geometry: str) -> np.ndarray:
    """Bregman projection of one theta onto conv(vertices); shapes follow theta."""
    shape = theta.shape
    V = vertices.reshape(len(vertices), -1).astype(float)  # (m, p)
    t = theta.reshape(-1).astype(float)
    m = len(V)
    if geometry == "euclidean":
        weight = 1e4 * max(1.0, np.abs(t).max(), np.abs(V).max())
        A = np.vstack([V.T, weight * np.ones((1, m))])
        b = np.concatenate([t, [weight]])
        p, _ = nnls(A, b, maxiter=50 * m)
        p = np.maximum(p, 0)
        p /= p.sum()
        return (V.T @ p).reshape(shape)
    if geometry == "kl":
        tiny = 1e-300

        def fun(p):
            u = V.T @ p
            lu = np.log(np.maximum(u, tiny))
            f = np.sum(u * lu - u * t)
            g = V @ (lu + 1.0 - t)
            return f, g

        # Start from the Euclidean projection of exp(theta - 1), nudged inside.
        start = np.full(m, 1.0 / m)
        best = None
        for p0 in (start,):
            res = minimize(
                fun,
                p0,
                jac=True,
                method="SLSQP",
                bounds=[(0.0, 1.0)] * m,
                constraints=[
                    {"type": "eq", "fun": lambda p: p.sum() - 1.0, "jac": lambda p: np.ones_like(p)}
                ],
                options={"ftol": 1e-16, "maxiter": 5000},
            )
            if best is None or res.fun < best.fun:
                best = res
        p = np.maximum(best.x, 0)
        p /= p.sum()
        return (V.T @ p).reshape(shape)
    raise ValueError(geometry)


def grad_psi(u: np.ndarray, geometry: str) -> np.ndarray:
    if geometry == "euclidean":
        return u
    with np.errstate(divide="ignore"):
        return np.log(u) + 1.0


def optimality_gap(u: np.ndarray, theta: np.ndarray, vertices: np.ndarray, geometry: str) -> float:
    """min over vertices v of <grad Psi(u) - theta, v - u> (>= 0 at the projection).

    For KL, coordinates where u = 0 and the vertex is also 0 contribute nothing; a
    coordinate with u = 0 but v > 0 gives -inf, i.e. u is not optimal.
    """
    g = (grad_psi(u, geometry) - theta).reshape(-1)
    V = vertices.reshape(len(vertices), -1)
    d = V - u.reshape(1, -1)
    with np.errstate(invalid="ignore"):
        prod = np.where(d == 0, 0.0, g[None, :] * d)
    return float(np.min(prod.sum(axis=1)))


def brute_force_argmax(vertices: np.ndarray, theta: np.ndarray) -> float:
    """max over vertices of <theta, v> (the value, since maximizers may tie)."""
    V = vertices.reshape(len(vertices), -1)
    return float(np.max(V @ theta.reshape(-1)))
