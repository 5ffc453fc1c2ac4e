"""Independent reference solvers for the set tests (no code shared with projloss.sets).

The projection onto a polytope given by its vertices V (rows) is computed in the
barycentric coordinates p of the convex hull:

- Euclidean: min_p 1/2 ||V^T p - theta||^2, p in the simplex, solved exactly by
  Lawson-Hanson NNLS (scipy.optimize.nnls) with the constraint sum(p) = 1 appended as a
  heavily weighted equation;
- KL: min_u KL(u, exp(theta - 1)) over the H-representation of conv(V): the affine hull
  of the vertices (SVD) and the facets of the hull inside it (qhull), solved by SLSQP in
  those few coordinates, then polished by Newton's method with the exact Hessian on the
  face of the (nearly) active facets. For <= 24 vertices the older barycentric SLSQP
  (min over p in the simplex of KL(V^T p, exp(theta - 1))) is also run; the candidate
  with the best variational-inequality certificate is returned. (The barycentric SLSQP
  alone is too slow and inaccurate, ~1e-6, for the permutahedron at k = 5: 120 vertices.)

``optimality_gap`` is the variational-inequality certificate: u = P(theta) iff
<grad Psi(u) - theta, v - u> >= 0 for every vertex v.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize, nnls
from scipy.spatial import ConvexHull, QhullError


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
        # Coordinates that are 0 at every vertex are 0 in the projection (0 log 0 = 0).
        live = V.max(axis=0) > 0
        u = np.zeros_like(t)
        Vl, tl = V[:, live], t[live]
        candidates = []
        try:
            candidates += _kl_h_representation(Vl, tl)
        except QhullError:
            pass
        if m <= 24 or not candidates:
            candidates.append(_kl_barycentric(Vl, tl))
        u[live] = max(candidates, key=lambda c: _kl_certificate(c, tl, Vl))
        return u.reshape(shape)
    raise ValueError(geometry)


_TINY = 1e-300


def _kl_objective(u: np.ndarray, t: np.ndarray) -> tuple[float, np.ndarray]:
    """sum u log u - u t (= KL(u, exp(t - 1)) + const) and its gradient."""
    lu = np.log(np.maximum(u, _TINY))
    return float(np.sum(u * lu - u * t)), lu + 1.0 - t


def _kl_certificate(u: np.ndarray, t: np.ndarray, V: np.ndarray) -> float:
    """min over vertices of <grad, v - u> (0 at the optimum, -inf if u is infeasible)."""
    if np.any(u < 0):
        return -np.inf
    _, g = _kl_objective(u, t)
    d = V - u[None, :]
    return float(np.min(np.where(d == 0, 0.0, g[None, :] * d).sum(axis=1)))


def _affine_h_representation(V: np.ndarray):
    """conv(V) = {c + Q x : A x + b <= 0}: affine hull by SVD, facets by qhull."""
    c = V.mean(axis=0)
    _, S, Wt = np.linalg.svd(V - c, full_matrices=False)
    r = int(np.sum(S > 1e-9 * max(1.0, S.max(initial=0.0))))
    Q = Wt[:r].T
    X = (V - c) @ Q
    if r == 0:
        return c, Q, np.zeros((0, 0)), np.zeros(0)
    if r == 1:
        return c, Q, np.array([[1.0], [-1.0]]), np.array([-X.max(), X.min()])
    eq = ConvexHull(X).equations  # rows (normal, offset): normal . x + offset <= 0
    eq = eq[np.unique(np.round(eq, 10), axis=0, return_index=True)[1]]
    return c, Q, eq[:, :-1], eq[:, -1]


def _kl_h_representation(V: np.ndarray, t: np.ndarray) -> list[np.ndarray]:
    """SLSQP on the H-representation, then Newton on the active face; both iterates."""
    c, Q, A, b = _affine_h_representation(V)
    r = Q.shape[1]
    if r == 0:
        return [c]

    def fun(x):
        val, g = _kl_objective(c + Q @ x, t)
        return val, Q.T @ g

    res = minimize(
        fun,
        np.zeros(r),
        jac=True,
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda x: -(A @ x + b), "jac": lambda x: -A}],
        options={"ftol": 1e-16, "maxiter": 1000},
    )
    x = res.x
    active = A @ x + b > -1e-6
    Aa, ba = A[active], b[active]
    for _ in range(30):
        u = c + Q @ x
        if np.any(u <= 0):
            break
        _, g = _kl_objective(u, t)
        H = Q.T @ (Q / u[:, None])
        na = len(Aa)
        kkt = np.block([[H, Aa.T], [Aa, np.zeros((na, na))]])
        rhs = -np.concatenate([Q.T @ g, Aa @ x + ba])
        dx = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:r]
        step = 1.0
        while np.any(c + Q @ (x + step * dx) <= 0) and step > 1e-8:
            step /= 2
        x = x + step * dx
        if np.abs(dx).max() < 1e-15:
            break
    polished = c + Q @ x
    if np.max(A @ x + b, initial=0.0) > 1e-10:  # left the polytope: not a candidate
        return [c + Q @ res.x]
    return [polished, c + Q @ res.x]


def _kl_barycentric(V: np.ndarray, t: np.ndarray) -> np.ndarray:
    """SLSQP over the barycentric coordinates p of conv(V) (slow for many vertices)."""
    m = len(V)

    def fun(p):
        val, g = _kl_objective(V.T @ p, t)
        return val, V @ g

    res = minimize(
        fun,
        np.full(m, 1.0 / m),
        jac=True,
        method="SLSQP",
        bounds=[(0.0, 1.0)] * m,
        constraints=[
            {"type": "eq", "fun": lambda p: p.sum() - 1.0, "jac": lambda p: np.ones_like(p)}
        ],
        options={"ftol": 1e-16, "maxiter": 5000},
    )
    p = np.maximum(res.x, 0)
    return V.T @ (p / p.sum())


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
