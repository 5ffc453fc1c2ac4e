r"""Semismooth Newton-CG in the singular basis of the features (the kernel models' solver).

The objective of :mod:`._solver`,

.. math::
    F(B) = \frac1n\sum_i S_C^\Psi(B \tilde f_i, y_i) + \frac\alpha2\|B_{\mathrm{pen}}\|_F^2,

is written in the basis of the singular vectors of the penalized features
:math:`\tilde F_{\mathrm{pen}} = U \Sigma Q^\top` (the features, and the column of 1s
when the intercept is penalized; for a kernel model :math:`[K, \mathbf 1]`): with
:math:`V = B_{\mathrm{pen}} Q` (an orthogonal change of variables, so
:math:`\|V\|_F = \|B_{\mathrm{pen}}\|_F` and the regularizer stays
:math:`\frac\alpha2\|V\|^2`) the outputs are :math:`\theta_i = V g_i (+ b)` with
features :math:`G = U\Sigma` whose columns are orthogonal. Singular values below
:data:`CUTOFF` (``1e-12``) times the largest are dropped, with their :math:`V` columns set to
0: they are below the rounding of the computed decomposition (about
:math:`\sqrt n\,\epsilon\,\sigma_{\max}`), and the optimal weight of such a direction
moves :math:`\theta` by at most :math:`\sigma_j^2 \|\nabla S\| / (n\alpha)` (below
:math:`10^{-9}` for the paper's degree-3 kernels at :math:`\alpha = 10^{-4}`).

Why not L-BFGS: with the degree-3 kernel the Hessian's eigenvalues span
:math:`\alpha` to :math:`\sigma_{\max}^2 / n` (``1e-4`` to ``2e12`` on vehicle), and a
rescaling of the coordinates (the preconditioned L-BFGS) cannot follow the curvature of a
piecewise-quadratic loss whose pieces change from sample to sample (measured: 27 of the
60 kernel grid fits of Table 3 stopped at ``max_iter``; ``benchmarks/RESULTS.md``).

Each iteration solves :math:`H D = -\nabla F` by conjugate gradients with the generalized
Hessian

.. math::
    H = \frac1n \sum_i J_i \otimes \tilde g_i \tilde g_i^\top + \alpha I_{\mathrm{pen}},

:math:`J_i` a Jacobian of the projection at :math:`\theta_i`: for the Euclidean
permutahedron the exact one (:func:`permutahedron_jacobians`, the largest-rank element at a
kink: without this choice the method stalls, since the regularizer pushes many samples
exactly onto the kink of their zero-loss region); for the other sets ``p`` forward
differences of the batched projection. The Hessian-vector products are exact (two matrix
products). The preconditioner is the exact inverse of :math:`H` (with the intercept
penalized, i.e. :math:`H` itself for a penalized intercept) from the SVD of
:math:`A = [e \otimes \tilde g_i]` (``R`` rows, the total rank of the Jacobians: samples
whose projection is a vertex contribute none), refactored only when the last solve needed
more than :data:`REUSE_CG` CG iterations. Steps: a line search on the directional
derivative (:func:`_line_search`), not on the objective, whose rounding (about
``1e-10`` relative for degree-3 kernels) hides the decrease of the last steps.

Stopping rule: the max-norm of the gradient of :math:`F` in the *original* coordinates
:math:`B` (:math:`\nabla_B F = \nabla_V F\, Q^\top`) at most ``tol``: the same rule as the
linear models' L-BFGS, not a rule in rescaled coordinates (reachable: the rounding of that
gradient is about ``1e-8`` on the paper's kernels).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import OptimizeResult

from ..losses import loss_from_projection
from ..sets import ConvexSet
from ..sets.nonneg import NonNegative
from ..sets.permutahedron import Permutahedron
from ..sets.reals import Reals
from ..sets.unit_cube import UnitCube

#: the separable sets: diagonal Jacobians, a Hessian block diagonal over the outputs
SEPARABLE = (UnitCube, NonNegative, Reals)

#: the largest output size of a non-separable set for the L-BFGS fallback (e.g. the
#: knapsack polytope of cal500's 174 labels: 174 x 174 Jacobians per sample)
MAX_COUPLED_OUTPUTS = 64

#: relative cutoff of the singular values kept (see the module docstring)
CUTOFF = 1e-12

#: pools of the permutahedron whose values differ by at most this, relative to
#: ``1 + max |theta|``, are merged in the Jacobian (see :func:`permutahedron_jacobians`)
MERGE = 1e-9

#: the preconditioner is refactored when the previous solve took more CG iterations
REUSE_CG = 10

#: the dense Cholesky preconditioner is used only if the largest curvature of ``H`` over
#: ``alpha`` is below this (beyond, rounding makes the formed ``H`` indefinite)
DENSE_COND = 1e12

#: the largest total Jacobian rank for the exact (SVD) preconditioner
MAX_RANK = 3000

Precond = Callable[[NDArray[np.float64]], NDArray[np.float64]]

_BASIS_CACHE: dict[str, tuple[str, SpectralBasis]] = {}


@dataclass
class SpectralBasis:
    """``F_pen = G Q^T`` with ``G = U Sigma`` (orthogonal columns), singular values kept."""

    G: NDArray[np.float64]  # (n, m)
    Q: NDArray[np.float64]  # (d_pen, m), orthonormal columns
    s: NDArray[np.float64]  # (m,)
    n_dropped: int


def spectral_basis(F_pen: NDArray[np.float64], cutoff: float = CUTOFF) -> SpectralBasis:
    """The thin SVD of ``F_pen`` without the singular values ``< cutoff * max``.

    Cached for the last matrix (a lambda grid refits the same kernel ten times)."""
    key = hashlib.blake2b(F_pen.tobytes(), digest_size=16).hexdigest()
    key = f"{F_pen.shape}-{cutoff}-{key}"
    hit = _BASIS_CACHE.get("last")
    if hit is not None and hit[0] == key:
        return hit[1]
    U, s, Vt = np.linalg.svd(F_pen, full_matrices=False)
    keep = s > cutoff * (float(s[0]) if s.size else 0.0)
    basis = SpectralBasis(
        np.ascontiguousarray(U[:, keep] * s[keep]),
        np.ascontiguousarray(Vt[keep].T),
        s[keep],
        int((~keep).sum()),
    )
    _BASIS_CACHE["last"] = (key, basis)
    return basis


def affordable(projection_set: ConvexSet, p: int) -> bool:
    """Whether the Newton method is cheap for this set and output size: separable sets
    (diagonal Jacobians) always; otherwise ``(p, p)`` Jacobians per sample and a Hessian
    coupling the outputs, up to :data:`MAX_COUPLED_OUTPUTS` outputs."""
    return isinstance(projection_set, SEPARABLE) or p <= MAX_COUPLED_OUTPUTS


def permutahedron_jacobians(
    theta: NDArray[np.float64], u: NDArray[np.float64], tol: float
) -> NDArray[np.float64]:
    r"""Jacobians of the Euclidean projection onto the permutahedron, ``(n, k, k)``.

    :math:`P(\theta)_\sigma = s - v` with :math:`v` the isotonic regression of
    :math:`s - w` (``projloss.sets.permutahedron``), constant on pools of consecutive
    sorted entries: :math:`\partial P = I - B`, with :math:`B` the averaging over each
    pool. Pools are read from :math:`v = \theta - u` (equal on a pool); two neighbouring
    pools whose values differ by at most ``tol`` are merged: at a kink this picks the
    element of the generalized Jacobian with the largest rank (the curvature of the piece
    the sample is about to enter), which keeps the Newton step from jumping over it."""
    n, k = theta.shape
    order = np.argsort(-theta, axis=1, kind="stable")
    v = np.take_along_axis(theta - u, order, axis=1)
    new_pool = np.abs(np.diff(v, axis=1)) > tol
    pool = np.concatenate([np.zeros((n, 1), dtype=np.intp), np.cumsum(new_pool, axis=1)], 1)
    same = pool[:, :, None] == pool[:, None, :]
    B = same / same.sum(axis=2, keepdims=True)
    Js = np.eye(k) - B  # in sorted order
    inv = np.argsort(order, axis=1)
    J = np.take_along_axis(Js, inv[:, :, None], axis=1)
    return np.take_along_axis(J, inv[:, None, :], axis=2)


class _BasisProblem:
    r""":math:`F` as a function of :math:`X = [V, b]` (``b`` only for an unpenalized
    intercept), features :math:`\tilde G = [G, \mathbf 1]`."""

    def __init__(
        self,
        G: NDArray[np.float64],
        phi: NDArray[np.float64],
        projection_set: ConvexSet,
        geometry: str,
        event_shape: tuple[int, ...],
        alpha: float,
        free_intercept: bool,
    ) -> None:
        n = G.shape[0]
        self.Gt = np.hstack([G, np.ones((n, 1))]) if free_intercept else G
        self.pen = np.ones(self.Gt.shape[1])
        if free_intercept:
            self.pen[-1] = 0.0
        self.phi, self.set, self.geometry = phi, projection_set, geometry
        self.event_shape, self.alpha = event_shape, alpha
        self.nfev = 0

    def project(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        n, p = theta.shape
        return self.set.project(theta.reshape(n, *self.event_shape), self.geometry).reshape(n, p)

    def value_and_gradient(
        self, X: NDArray[np.float64]
    ) -> tuple[float, NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        self.nfev += 1
        n = self.Gt.shape[0]
        theta = self.Gt @ X.T
        u = self.project(theta)
        value = float(np.sum(loss_from_projection(theta, u, self.phi, self.geometry, 1))) / n
        Xp = X * self.pen
        value += 0.5 * self.alpha * float(np.sum(Xp * Xp))
        grad = (u - self.phi).T @ self.Gt / n + self.alpha * Xp
        return value, grad, theta, u

    def jacobians(self, theta: NDArray[np.float64], u: NDArray[np.float64]) -> NDArray:
        """``(n, p, p)`` Jacobians, or their diagonals ``(n, p)`` for the separable sets."""
        if isinstance(self.set, SEPARABLE):
            return self.diagonal_jacobians(theta, u)
        if isinstance(self.set, Permutahedron) and self.geometry == "euclidean":
            return permutahedron_jacobians(theta, u, MERGE * (1.0 + float(np.abs(theta).max())))
        return self.difference_jacobians(theta, u)

    def diagonal_jacobians(
        self, theta: NDArray[np.float64], u: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """The diagonal Jacobians ``(n, p)`` of a separable projection (box, orthant,
        reals: one coordinate at a time), from forward and backward differences of all
        coordinates at once, the larger of the two (the curved side at a kink)."""
        h = np.sqrt(np.finfo(np.float64).eps) * (1.0 + float(np.abs(theta).max()))
        forward = (self.project(theta + h) - u) / h
        backward = (u - self.project(theta - h)) / h
        d = np.maximum(forward, backward)
        return np.where(d > 1e-6, d, 0.0)

    def difference_jacobians(self, theta: NDArray[np.float64], u: NDArray[np.float64]) -> NDArray:
        """``J[i] ~ dP(theta_i)``, ``(n, p, p)``: per direction ``a`` the forward or the
        backward difference, whichever has the larger ``J[a, a]`` (at a kink, the side
        with curvature: for the box and the nonnegative orthant, exactly the largest-rank
        element of the generalized Jacobian), symmetrized, with the eigenvalues below
        1e-6 (difference noise) set to 0."""
        n, p = theta.shape
        h = np.sqrt(np.finfo(np.float64).eps) * (1.0 + float(np.abs(theta).max()))
        J = np.empty((n, p, p))
        for a in range(p):
            t = theta.copy()
            t[:, a] += h
            forward = (self.project(t) - u) / h
            t[:, a] -= 2 * h
            backward = (u - self.project(t)) / h
            use_forward = forward[:, a] >= backward[:, a]
            J[:, :, a] = np.where(use_forward[:, None], forward, backward)
        w, E = np.linalg.eigh(0.5 * (J + J.transpose(0, 2, 1)))
        w = np.where(w > 1e-6, w, 0.0)  # PSD (a projection's Jacobian), rounding removed
        return np.einsum("iab,ib,icb->iac", E, w, E)

    def hvp(self, J: NDArray, D: NDArray[np.float64]) -> NDArray[np.float64]:
        n = self.Gt.shape[0]
        T = self.Gt @ D.T
        T = J * T if J.ndim == 2 else np.einsum("iab,ib->ia", J, T)
        return T.T @ self.Gt / n + self.alpha * (D * self.pen)

    def preconditioner(self, J: NDArray) -> Precond:
        """The cheapest exact inverse of ``H`` that is accurate here (dense Cholesky or
        the SVD of the Jacobians' rows, by their flop counts), else the block diagonal."""
        if J.ndim == 2:
            return self.output_preconditioner(J)
        n, p, _ = J.shape
        m = self.Gt.shape[1]
        rank = int(np.sum(np.linalg.eigvalsh(J) > 1e-6))
        N = p * m
        svd_cost = 4.0 * rank * rank * N if rank <= N else 4.0 * N * N * rank
        dense_cost = p * (p + 1) / 2 * n * m * m + N**3 / 3
        if dense_cost < svd_cost or rank > MAX_RANK:
            precond = self.dense_preconditioner(J)
            if precond is not None:
                return precond
        return self.spectral_preconditioner(J) or self.block_preconditioner(J)

    def output_preconditioner(self, J: NDArray[np.float64]) -> Precond:
        r"""The exact inverse of ``H`` for diagonal Jacobians: ``H`` is then block
        diagonal over the outputs, :math:`H_a = \frac1n \tilde G^\top \mathrm{diag}(J_{:a})
        \tilde G + \alpha I_{\mathrm{pen}}`, one ``m x m`` factorization per output."""
        n, p = J.shape
        Gt = self.Gt
        inverses = []
        for a in range(p):
            M = Gt.T @ (J[:, a, None] * Gt) / n
            M[np.diag_indices_from(M)] += self.alpha * self.pen
            w, E = np.linalg.eigh(M)
            top = max(float(w.max()), 1e-300)
            inv = np.where(w > 1e-12 * top, 1.0 / np.maximum(w, 1e-300), 0.0)
            inverses.append((E * inv) @ E.T)
        Minv = np.stack(inverses)  # (p, m, m)
        return lambda R: np.einsum("ajk,ak->aj", Minv, R)

    def block_preconditioner(self, J: NDArray) -> Precond:
        """The inverse of the block diagonal of ``H`` (one ``p x p`` block per feature)."""
        n = self.Gt.shape[0]
        p = J.shape[1]
        M = np.einsum("ij,iab->jab", self.Gt * self.Gt, J) / n
        M += self.alpha * self.pen[:, None, None] * np.eye(p)
        w, E = np.linalg.eigh(M)
        top = max(float(w.max()), 1e-300)
        inv = np.where(w > 1e-12 * top, 1.0 / np.maximum(w, 1e-300), 0.0)
        Minv = np.einsum("jab,jb,jcb->jac", E, inv, E)
        return lambda R: np.einsum("jab,bj->aj", Minv, R)

    def dense_preconditioner(self, J: NDArray) -> Precond | None:
        r"""The exact inverse of ``H`` by a Cholesky factorization of ``H`` formed densely
        (``p (p + 1) / 2`` products :math:`\tilde G^\top \mathrm{diag}(J_{ab}) \tilde G`).
        Cheaper than the SVD when many samples have Jacobians of high rank (vowel:
        ``R ~ n (k - 1)``), but only accurate when :math:`\|H\| / \alpha` is well
        inside double precision: ``None`` above :data:`DENSE_COND`, for an intercept that is
        not penalized (``H`` singular along the flat directions of the loss), or if the
        factorization fails."""
        n, p, _ = J.shape
        Gt = self.Gt
        m = Gt.shape[1]
        if self.pen.min() == 0.0:
            return None
        top = float(np.max(np.sum(Gt * Gt, axis=0))) / n
        if top > DENSE_COND * self.alpha:
            return None
        H = np.empty((p, m, p, m))
        for a in range(p):
            for b in range(a, p):
                block = Gt.T @ (J[:, a, b, None] * Gt) / n
                H[a, :, b, :] = block
                if b != a:
                    H[b, :, a, :] = block.T
        H = H.reshape(p * m, p * m)
        H[np.diag_indices_from(H)] += self.alpha
        try:
            factor = cho_factor(H, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            return None
        return lambda Rm: cho_solve(factor, Rm.ravel(), check_finite=False).reshape(Rm.shape)

    def spectral_preconditioner(self, J: NDArray, max_rank: int = MAX_RANK) -> Precond | None:
        r"""The inverse of :math:`H_\alpha = \alpha I + \frac1n A^\top A` (``H`` with the
        intercept penalized too, i.e. ``H`` itself for a penalized intercept). The rows of
        ``A`` are :math:`e \otimes \tilde g_i` for the eigenvectors :math:`e` of
        :math:`J_i` scaled by the square roots of their eigenvalues: their number ``R`` is
        the total rank of the Jacobians, small for the polyhedral sets (a sample whose
        projection is a vertex contributes none). With the thin SVD
        :math:`A / \sqrt n = W \Sigma Z^\top`,
        :math:`H_\alpha^{-1} = Z (\alpha + \Sigma^2)^{-1} Z^\top
        + \frac1\alpha (I - Z Z^\top)`: no squared condition number (the Woodbury form
        :math:`(n\alpha I + A A^\top)^{-1}` has one of :math:`\sigma_{\max}^2/\alpha`,
        beyond double precision for degree-3 kernels). ``None`` if ``R > max_rank``."""
        n, p, _ = J.shape
        lam = self.alpha
        w, E = np.linalg.eigh(J)
        keep = w > 1e-6
        rows, cols = np.nonzero(keep)
        if rows.size == 0:
            return lambda Rm: Rm / lam
        if rows.size > max_rank:
            return None
        Ebar = E[rows, :, cols] * np.sqrt(w[rows, cols])[:, None]  # (R, p)
        m = self.Gt.shape[1]
        A = (Ebar[:, :, None] * self.Gt[rows][:, None, :]).reshape(rows.size, p * m)
        _, sig, Zt = np.linalg.svd(A / np.sqrt(n), full_matrices=False)
        scale = 1.0 / (lam + sig * sig)

        def precond(Rm: NDArray[np.float64]) -> NDArray[np.float64]:
            v = Rm.ravel()
            c = Zt @ v
            out = (v - Zt.T @ c) / lam + Zt.T @ (scale * c)
            return out.reshape(Rm.shape)

        return precond


def _pcg(
    problem: _BasisProblem, J: NDArray, G: NDArray, precond: Precond, rtol: float, max_cg: int
) -> tuple[NDArray[np.float64], int]:
    """Approximately solve ``H D = -G`` by preconditioned CG from 0 (relative residual
    ``rtol``); stops at a direction of non-positive curvature."""
    gnorm = float(np.linalg.norm(G))
    D = np.zeros_like(G)
    R = -G
    Z = precond(R)
    P = Z
    rz = float(np.sum(R * Z))
    it = 0
    while it < max_cg:
        it += 1
        HP = problem.hvp(J, P)
        curv = float(np.sum(P * HP))
        if curv <= 0:
            break
        a = rz / curv
        D = D + a * P
        R = R - a * HP
        if float(np.linalg.norm(R)) <= rtol * gnorm:
            break
        Z = precond(R)
        rz_new = float(np.sum(R * Z))
        P = Z + (rz_new / rz) * P
        rz = rz_new
    if not D.any():
        D = precond(-G)
    return D, it


def _line_search(
    problem: _BasisProblem,
    X: NDArray[np.float64],
    D: NDArray[np.float64],
    slope: float,
    c2: float = 0.1,
    max_evals: int = 60,
) -> tuple[float, float, NDArray, NDArray, NDArray]:
    r"""A step :math:`t` along ``D`` with :math:`|\phi'(t)| \le c_2 |\phi'(0)|`,
    :math:`\phi(t) = F(X + tD)` (strong Wolfe curvature condition), by expansion from
    :math:`t = 1` then false position (Illinois) on :math:`\phi'`. :math:`\phi` is convex
    and piecewise quadratic for the polyhedral sets, so :math:`\phi'` is nondecreasing and
    piecewise linear; unlike an Armijo test on :math:`\phi`, the test on
    :math:`\phi' = \langle\nabla F, D\rangle` is not lost in the rounding of the
    objective near the solution. Returns ``(t, F, grad, theta, u)`` at the step (``t = 0``
    if no point with a smaller derivative magnitude was found)."""

    def at(t: float) -> tuple[float, tuple]:
        out = problem.value_and_gradient(X + t * D)
        return float(np.sum(out[1] * D)), out

    target = c2 * abs(slope)
    t_lo, d_lo = 0.0, slope
    best: tuple[float, float, tuple] | None = None
    t = 1.0
    d, out = at(t)
    evals = 1
    while d < -target and evals < max_evals:  # still descending: expand
        best = (t, d, out)
        t_lo, d_lo = t, d
        t *= 4.0
        d, out = at(t)
        evals += 1
    if abs(d) <= target:
        return (t, *out)
    if d < 0:  # no bracket: the best expansion point
        return (t, *out)
    t_hi, d_hi = t, d
    side = 0
    while evals < max_evals:
        t = t_lo - d_lo * (t_hi - t_lo) / (d_hi - d_lo)
        if not t_lo < t < t_hi:
            t = 0.5 * (t_lo + t_hi)
        d, out = at(t)
        evals += 1
        if best is None or abs(d) < abs(best[1]):
            best = (t, d, out)
        if abs(d) <= target:
            return (t, *out)
        if d < 0:
            t_lo, d_lo = t, d
            if side == -1:
                d_hi *= 0.5
            side = -1
        else:
            t_hi, d_hi = t, d
            if side == 1:
                d_lo *= 0.5
            side = 1
    if best is None or (best[1] > 0 and abs(best[1]) >= abs(slope)):
        return (0.0, np.nan, np.empty(0), np.empty(0), np.empty(0))
    return (best[0], *best[2])


def newton_fit(
    F_pen: NDArray[np.float64],
    phi: NDArray[np.float64],
    projection_set: ConvexSet,
    geometry: str,
    event_shape: tuple[int, ...],
    *,
    alpha: float,
    free_intercept: bool,
    B0: NDArray[np.float64],
    max_iter: int,
    tol: float,
    max_cg: int = 1000,
) -> OptimizeResult:
    r"""Minimize :math:`F` (module docstring) from ``B0 = [B_pen, b]`` (``b`` only if
    ``free_intercept``, an unpenalized intercept); ``F_pen``: the penalized features
    (with the column of 1s for a penalized intercept), dense. Returns ``x`` = the solution
    in the original coordinates, ``nit`` Newton iterations, ``success`` whether the
    gradient rule was met."""
    if alpha <= 0:
        raise ValueError("the Newton solver needs alpha > 0")
    basis = spectral_basis(F_pen)
    problem = _BasisProblem(
        basis.G, phi, projection_set, geometry, event_shape, alpha, free_intercept
    )
    d_pen = F_pen.shape[1]
    X = B0[:, :d_pen] @ basis.Q
    if free_intercept:
        X = np.hstack([X, B0[:, d_pen:]])

    def original_gradient(grad: NDArray[np.float64]) -> NDArray[np.float64]:
        g = grad[:, : basis.Q.shape[1]] @ basis.Q.T
        return np.hstack([g, grad[:, -1:]]) if free_intercept else g

    f, g, theta, u = problem.value_and_gradient(X)
    nit, cg_total, success, message = 0, 0, False, ""
    precond: Precond | None = None
    n_cg = n_factor = 0
    while True:
        gmax = float(np.abs(original_gradient(g)).max()) if g.size else 0.0
        if gmax <= tol:
            success, message = True, f"max |grad| {gmax:.3g} <= tol"
            break
        if nit >= max_iter:
            message = f"iteration limit reached (max |grad| {gmax:.3g})"
            break
        J = problem.jacobians(theta, u)
        gnorm = float(np.linalg.norm(g))
        if precond is None or n_cg > REUSE_CG:  # the last factorization has gone stale
            precond = problem.preconditioner(J)
            n_factor += 1
        D, n_cg = _pcg(problem, J, g, precond, min(0.1, np.sqrt(gnorm)), max_cg)
        cg_total += n_cg
        slope = float(np.sum(g * D))
        if slope >= 0:  # rounding: fall back to the preconditioned gradient
            D = -precond(g)
            slope = float(np.sum(g * D))
        step, f_new, g_new, theta_new, u_new = _line_search(problem, X, D, slope)
        nit += 1
        if step == 0.0:
            # the directional derivative is lost in rounding (a tiny last step, whose
            # slope g^T D ~ |g|^2 / curvature is below the rounding of <grad, D>): the
            # full step if it decreases the norm of the gradient (the merit function of
            # the Newton method for the equation grad F = 0)
            step = 1.0
            f_new, g_new, theta_new, u_new = problem.value_and_gradient(X + D)
            if not float(np.linalg.norm(g_new)) < gnorm:
                message = f"no step along the Newton direction (max |grad| {gmax:.3g})"
                break
        X, f, g, theta, u = X + step * D, f_new, g_new, theta_new, u_new
    B = X[:, : basis.Q.shape[1]] @ basis.Q.T
    if free_intercept:
        B = np.hstack([B, X[:, -1:]])
    return OptimizeResult(
        x=B,
        fun=f,
        nit=nit,
        nfev=problem.nfev,
        success=success,
        message=message,
        n_cg=cg_total,
        n_factor=n_factor,
        n_dropped=basis.n_dropped,
    )
