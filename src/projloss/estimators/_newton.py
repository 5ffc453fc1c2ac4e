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

:math:`J_i` a Jacobian of the projection at :math:`\theta_i`: the set's own
(:meth:`projloss.sets.base.ConvexSet.projection_jacobians`, :mod:`projloss.sets.jacobians`;
exact, and at a kink the largest-rank element of the generalized Jacobian: without this
choice the method stalls, since the regularizer pushes many samples exactly onto the kink
of their zero-loss region), else finite differences of the batched projection (the
solver reports which: ``n_jacobians`` of :func:`newton_fit`); this module knows no set
class. The Hessian-vector products are exact (two matrix
products). The preconditioner is the exact inverse of :math:`H` (with the intercept
penalized, i.e. :math:`H` itself for a penalized intercept) on the columns of the basis
whose curvature :math:`\sigma_j^2/n` is at least :data:`TRUNCATE` times :math:`\alpha` and
the block diagonal on the others, where the regularizer dominates
(:meth:`_BasisProblem.truncated_preconditioner`); the exact inverse by the cheapest of a
Cholesky factorization of the ``R x R`` capacitance matrix (Woodbury), the SVD of
:math:`A = [e \otimes \tilde g_i]` (``R`` rows, the total rank of the Jacobians: samples
whose projection is a vertex contribute none), or the dense Hessian; refactored only when
the last solve needed more than :data:`REUSE_CG` CG iterations. Sparse features (linear
models) stay in their own coordinates: the preconditioner is the inverse of the block
diagonal of :math:`H` over the outputs (exact for the separable sets) when they have at
most :data:`MAX_SPARSE_BLOCK` columns (:mod:`._sparse_gram`), else a two-level one: the
exact inverse on the top right singular vectors of the features, the diagonal (Jacobi) on
the rest (:meth:`_BasisProblem.coarse_preconditioner`).
Steps: a line search on the directional derivative (:func:`_line_search`), not on the
objective, whose rounding (about
``1e-10`` relative for degree-3 kernels) hides the decrease of the last steps.

Stopping rule: the max-norm of the gradient of :math:`F` in the *original* coordinates
:math:`B` (:math:`\nabla_B F = \nabla_V F\, Q^\top`) at most ``tol``: the same rule as the
linear models' L-BFGS, not a rule in rescaled coordinates (reachable: the rounding of that
gradient is about ``1e-8`` on the paper's kernels).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.linalg import LinAlgError, cho_factor, cho_solve, cholesky, solve_triangular
from scipy.optimize import OptimizeResult

from ..losses import loss_from_projection
from ..sets import ConvexSet
from ..sets.jacobians import DiagonalMinusRankOne
from ._sparse_gram import PairGram, pair_gram
from ._sparse_products import csr_matmul, csr_t_matmul

#: the largest output size of a non-separable set for the L-BFGS fallback (e.g. the
#: knapsack polytope of cal500's 174 labels: 174 x 174 Jacobians per sample)
MAX_COUPLED_OUTPUTS = 64

#: relative cutoff of the singular values kept (see the module docstring)
CUTOFF = 1e-12

#: the preconditioner is refactored when the previous solve took more CG iterations
REUSE_CG = 10

#: the CG iterations of a stale preconditioner that is cheap to refresh (the sparse
#: per-output blocks: a refresh costs about as much as 30 Hessian-vector products) before
#: the solve is redone with a fresh one (tmc2007_500's knapsack: stale solves of 100-200
#: iterations otherwise)
STALE_CG = 8

#: the precision of the per-output blocks of sparse features (the pair products, the
#: blocks and their Cholesky factors: :meth:`_BasisProblem.sparse_output_preconditioner`)
BLOCK_DTYPE = np.float32

#: the dense Cholesky preconditioner is used only if the largest curvature of ``H`` over
#: ``alpha`` is below this (beyond, rounding makes the formed ``H`` indefinite)
DENSE_COND = 1e12

#: the largest total Jacobian rank for the exact (SVD) preconditioner
MAX_RANK = 3000

#: the largest number of CG iterations per Newton step (an inexact Newton step: CG from
#: 0 gives a descent direction at every iteration)
MAX_CG = 250

#: the ratio of two successive regularizations of the continuation path
CONTINUATION = 10.0

#: the Newton iterations of a continuation stage before it is split in two
STAGE_ITER = 50

#: the largest number of times a continuation stage is split
MAX_SPLITS = 3

#: the columns of the spectral features whose curvature is below this times alpha get a
#: block-diagonal preconditioner (:meth:`_BasisProblem.truncated_preconditioner`)
TRUNCATE = 1e-2

#: the largest Hessian (``p m`` coefficients) formed densely for the Cholesky
#: preconditioner (``(p m)^2`` doubles: 288 MB at the limit; vowel's degree-3 kernel,
#: 11 x 423, needs it); above (tmc2007_500's 22 labels x 501 features: 11k coefficients,
#: a 1 GB matrix), Hessian-vector products only
MAX_DENSE_COEF = 6000

#: the widest sparse features (columns, intercept included) for the per-output block
#: preconditioner (tmc2007_500: 501); above, the Jacobi preconditioner (the paper's
#: 30,438-feature TMC)
MAX_SPARSE_BLOCK = 4000

#: the most stored entries of sparse features for a row-major copy of their transpose (the
#: products ``G^T T`` about 1.4x faster than on the CSC view; 12 bytes an entry: 48 MB);
#: above (the tmc2007-shape scaling case (b): 23 million), no copy: both products by the
#: compiled loops over the CSR arrays (:mod:`._sparse_products`)
MAX_TRANSPOSED_NNZ = 4_000_000

#: the largest number of entries of the ``p`` per-output ``m x m`` blocks of the sparse
#: block preconditioner (``8 *`` this bytes: 128 MB; tmc2007_500: 22 x 501^2 = 5.5 million)
MAX_BLOCK_ENTRIES = 16_000_000

#: the size of the coarse space of the sparse features too wide for the per-output blocks
#: (:meth:`_BasisProblem.coarse_preconditioner`): their top right singular vectors
COARSE_RANK = 8

#: up to this many samples the coarse space is the whole row space of the features (rank at
#: most ``n``): the data term then has no curvature outside it
COARSE_FULL = 64

#: the extra columns and power iterations of the randomized range finder of the coarse space
#: (Halko, Martinsson & Tropp 2011, Algorithm 4.4)
COARSE_OVERSAMPLE, COARSE_POWER = 8, 2

Precond = Callable[[NDArray[np.float64]], NDArray[np.float64]]


_BASIS_CACHE: dict[str, tuple[str, SpectralBasis]] = {}


@dataclass
class SparseDerived:
    """What fits derive from sparse features alone, kept for the next fit of the same
    matrix (:func:`sparse_derived`, the one cache of sparse features: a lambda grid refits
    the same features ten times; at the tmc2007-shape scaling case (b), 23 million stored
    entries, about 2 s a fit)."""

    column_sq: NDArray[np.float64]  # the squared norms of the columns
    squared: Any = None  # the squared entries on the features' pattern (Jacobi)
    #: the coarse spaces (:meth:`_BasisProblem.coarse_basis`) by (column of 1s, rank)
    coarse: dict[tuple[bool, int], tuple[NDArray, NDArray]] = field(default_factory=dict)
    #: the pair products of the features (:func:`._sparse_gram.pair_gram`, ``None`` above
    #: its bound) by column of 1s (the per-output blocks)
    pairs: dict[bool, PairGram | None] = field(default_factory=dict)


_SPARSE_CACHE: dict[str, tuple[str, SparseDerived]] = {}


def _cholesky(M: NDArray[Any]) -> NDArray[Any] | None:
    """The lower Cholesky factor of ``M`` (its precision), or None if it is not positive
    definite to that precision."""
    try:
        return cho_factor(M, lower=True, check_finite=False)[0]
    except LinAlgError:
        return None


def _pseudo_inverse(M: NDArray[np.float64]) -> NDArray[np.float64]:
    """The pseudo-inverse of a symmetric positive semidefinite ``M`` by its eigenvalues,
    those below ``1e-12`` of the largest taken as 0 (a singular block: an unpenalized
    intercept without curvature)."""
    w, E = np.linalg.eigh(M)
    top = max(float(w.max()), 1e-300)
    inv = np.where(w > 1e-12 * top, 1.0 / np.maximum(w, 1e-300), 0.0)
    return (E * inv) @ E.T


def content_key(G: sp.csr_matrix) -> str:
    """A key of the CSR matrix ``G`` that only a matrix of the same contents has: its shape,
    the types and sizes of its three arrays and the SHA-256 digest of their bytes (read in
    place, no copy; its cost: :func:`sparse_derived`)."""
    arrays = [np.ascontiguousarray(a) for a in (G.indptr, G.indices, G.data)]
    digest = hashlib.sha256()
    for a in arrays:
        digest.update(memoryview(a).cast("B"))
    layout = ",".join(f"{a.dtype.str}{a.size}" for a in arrays)
    return f"{G.shape}-{layout}-{digest.hexdigest()}"


def sparse_derived(G: sp.csr_matrix) -> SparseDerived:
    """:class:`SparseDerived` of the CSR matrix ``G``, the one cache of what is derived from
    sparse features; the last one is kept (keyed by :func:`content_key`: the same contents,
    whatever the arrays' addresses; a different matrix, even written in place over the
    same arrays, never hits), the previous one freed first. The key is computed once per
    fit (:func:`._solver.fit_projection_model`, for its one or two Newton runs): 2 ms
    (CPU) on tmc2007_500's 364,495 stored entries, 0.13 s on the 23 million of the
    tmc2007-shape scaling case (b) (SHA-256 with the CPU's SHA instructions; blake2b
    0.2 s, and 0.3 s with the copy of the bytes that the pair products' key made)."""
    key = content_key(G)
    hit = _SPARSE_CACHE.get("last")
    if hit is not None and hit[0] == key:
        return hit[1]
    _SPARSE_CACHE.pop("last", None)  # free the previous one before building
    out = SparseDerived(np.bincount(G.indices, weights=G.data**2, minlength=G.shape[1]))
    _SPARSE_CACHE["last"] = (key, out)
    return out


@dataclass
class SpectralBasis:
    """``F_pen = G Q^T`` with ``G = U Sigma`` (orthogonal columns), singular values kept."""

    G: Any  # (n, m); the sparse features themselves when Q is None
    Q: NDArray[np.float64] | None  # (d_pen, m), orthonormal columns; None: the identity
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


def affordable(projection_set: ConvexSet, p: int, geometry: str = "euclidean") -> bool:
    """Whether the Newton method is cheap for this set and output size: a set whose
    Jacobians cost ``O(p)`` per sample (:meth:`ConvexSet.cheap_jacobians`: the separable
    sets, the simplices, the Euclidean knapsack polytope) always; otherwise ``(p, p)``
    Jacobians per sample and a Hessian coupling the outputs, up to
    :data:`MAX_COUPLED_OUTPUTS` outputs."""
    return projection_set.cheap_jacobians(geometry) or p <= MAX_COUPLED_OUTPUTS


def sparse_blocks_fit(m: int, p: int) -> bool:
    """Whether sparse features of ``m`` columns (intercept included) and ``p`` outputs get
    the per-output block preconditioner (:meth:`_BasisProblem.sparse_output_preconditioner`):
    at most :data:`MAX_SPARSE_BLOCK` columns and :data:`MAX_BLOCK_ENTRIES` block entries."""
    return m <= MAX_SPARSE_BLOCK and p * m * m <= MAX_BLOCK_ENTRIES


def jacobian_layout(
    J: NDArray | DiagonalMinusRankOne,
) -> tuple[int, NDArray[np.float64] | None, NDArray[np.float64] | None, int]:
    r"""``(p, d, v, blocks)`` of the three layouts of :meth:`_BasisProblem.jacobians`:
    :math:`J_i = \mathrm{diag}(d_i) - \sum_r v_{ir} v_{ir}^\top` over ``blocks`` blocks of
    the ``p`` outputs (:class:`DiagonalMinusRankOne`), diagonals ``(n, p)`` (``v`` ``None``)
    or ``(n, p, p)`` matrices (``d`` and ``v`` ``None``); the arrays themselves, no copy.

    Examples
    --------
    >>> p, d, v, blocks = jacobian_layout(np.ones((5, 3)))
    >>> p, d.shape, v, blocks
    (3, (5, 3), None, 1)
    """
    if isinstance(J, DiagonalMinusRankOne):
        return J.d.shape[1], J.d, J.v, J.blocks
    return J.shape[1], (J if J.ndim == 2 else None), None, 1


def output_diagonals(J: NDArray | DiagonalMinusRankOne) -> NDArray[np.float64]:
    r"""The diagonals :math:`(J_i)_{aa}`, ``(n, p)``, of Jacobians given as diagonals
    ``(n, p)``, :class:`DiagonalMinusRankOne` (:math:`d_{ia} - v_{ia}^2`) or ``(n, p, p)``
    matrices: with them, :math:`\frac1n \tilde G^\top \mathrm{diag}(J_{:a}) \tilde G
    + \alpha I` are the diagonal blocks of ``H`` over the outputs."""
    if isinstance(J, DiagonalMinusRankOne):
        return np.maximum(J.d - J.v * J.v, 0.0)
    return J if J.ndim == 2 else np.einsum("iaa->ia", J)


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
        orthogonal: bool = False,
        ones_column: bool = False,
        derived: SparseDerived | None = None,
    ) -> None:
        n = G.shape[0]
        self.sparse = sp.issparse(G)
        #: sparse features: ``G`` itself, the column of 1s (``free_intercept`` or
        #: ``ones_column``: a penalized one) kept implicit, never a stacked copy
        self.ones = bool(free_intercept or ones_column) and self.sparse
        self._Gt: Any = None
        self.GT: Any = None  # a row-major copy of G^T (small features only)
        #: sparse features: what is derived from them alone, shared with the other fits of
        #: the same features (:func:`sparse_derived`, unless given: :func:`newton_fit`'s)
        self.derived: SparseDerived | None = None
        if self.sparse:
            self.G = sp.csr_matrix(G)
            self.derived = sparse_derived(self.G) if derived is None else derived
            if self.G.nnz <= MAX_TRANSPOSED_NNZ:
                self.GT = self.G.T.tocsr()
        elif free_intercept or ones_column:
            self._Gt = np.hstack([G, np.ones((n, 1))])
        else:
            self._Gt = G
        self.n, self.m = n, G.shape[1] + int(free_intercept or ones_column)
        self.pen = np.ones(self.m)
        if free_intercept:
            self.pen[-1] = 0.0
        self.phi, self.set, self.geometry = phi, projection_set, geometry
        self.event_shape, self.alpha = event_shape, alpha
        self.nfev = 0
        #: the Jacobians computed, by source (:meth:`jacobians`)
        self.n_jacobians = {"set": 0, "differences": 0}
        self._gram: NDArray[np.float64] | None = None  # G~ G~^T, for the capacitance matrix
        self._restricted: dict[tuple[int, int], _BasisProblem] = {}
        #: the columns of the features are orthogonal, by decreasing norm (a spectral basis)
        self.orthogonal = orthogonal and not self.sparse and not free_intercept
        self.curvature = np.sum(self.Gt * self.Gt, axis=0) / n if self.orthogonal else np.zeros(0)
        #: whether the preconditioner is the sparse per-output blocks (cheap to refresh)
        self.cheap_refresh = False

    @property
    def Gt(self) -> Any:
        r""":math:`\tilde G`, the features with the column of 1s (for sparse features a
        stacked copy, built on first use: only the per-output blocks of narrow features
        use it)."""
        if self._Gt is None:
            self._Gt = (
                sp.hstack([self.G, np.ones((self.n, 1))], format="csr") if self.ones else self.G
            )
        return self._Gt

    def _sparse(self) -> SparseDerived:
        """What is derived from the sparse features (:attr:`derived`); only the sparse
        preconditioners ask for it, and only sparse features have it."""
        if self.derived is None:
            raise RuntimeError("products of sparse features asked for dense features")
        return self.derived

    def features(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        r""":math:`\tilde G X^\top`, ``(n, p)``, for ``X`` ``(p, m)``."""
        if not self.sparse:
            return self.Gt @ X.T
        W = X[:, :-1] if self.ones else X
        # large features (no transposed copy): the compiled products (._sparse_products)
        out = csr_matmul(self.G, W.T) if self.GT is None else np.asarray(self.G @ W.T)
        return out + X[:, -1] if self.ones else out

    def project(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        n, p = theta.shape
        return self.set.project(theta.reshape(n, *self.event_shape), self.geometry).reshape(n, p)

    def value_and_gradient(
        self, X: NDArray[np.float64]
    ) -> tuple[float, NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        self.nfev += 1
        n = self.n
        theta = self.features(X)
        u = self.project(theta)
        value = float(np.sum(loss_from_projection(theta, u, self.phi, self.geometry, 1))) / n
        Xp = X * self.pen
        value += 0.5 * self.alpha * float(np.sum(Xp * Xp))
        grad = self.features_t(u - self.phi) / n + self.alpha * Xp
        return value, grad, theta, u

    def jacobians(
        self, theta: NDArray[np.float64], u: NDArray[np.float64]
    ) -> NDArray | DiagonalMinusRankOne:
        """The set's own Jacobians (:meth:`ConvexSet.projection_jacobians`: exact, in the
        cheapest layout), else finite differences of the projection: their diagonals
        ``(n, p)`` for a separable set (:meth:`diagonal_jacobians`), ``(n, p, p)``
        matrices otherwise (:meth:`difference_jacobians`). Counted in :attr:`n_jacobians`
        by source (``"set"`` or ``"differences"``: the solver's report of which path it
        took)."""
        J = self.set.projection_jacobians(theta, u, self.geometry, self.event_shape)
        if J is not None:
            self.n_jacobians["set"] += 1
            return J
        self.n_jacobians["differences"] += 1
        if self.set.separable:
            return self.diagonal_jacobians(theta, u)
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

    def hvp(self, J: NDArray | DiagonalMinusRankOne, D: NDArray[np.float64]) -> NDArray[np.float64]:
        r""":math:`H D = \frac1n \tilde G^\top [J_i (\tilde G D^\top)_i]_i
        + \alpha D_{\mathrm{pen}}`: two products with the features and the Jacobians
        applied row by row (matrix-free: no ``(p m)^2`` Hessian)."""
        n = self.n
        T = self.features(D)
        if isinstance(J, DiagonalMinusRankOne):
            T = J.apply(T)
        else:
            T = J * T if J.ndim == 2 else np.einsum("iab,ib->ia", J, T)
        return self.features_t(T) / n + self.alpha * (D * self.pen)

    def features_t(self, T: NDArray[np.float64]) -> NDArray[np.float64]:
        r""":math:`T^\top \tilde G`, ``(p, m)``, for ``T`` ``(n, p)`` (sparse features stay
        sparse)."""
        if not self.sparse:
            return T.T @ self.Gt
        # no transposed copy of large features: the compiled scatter from the CSR arrays
        out = (csr_t_matmul(self.G, T) if self.GT is None else np.asarray(self.GT @ T)).T
        return np.hstack([out, T.sum(axis=0)[:, None]]) if self.ones else out

    def preconditioner(self, J: NDArray | DiagonalMinusRankOne) -> Precond:
        r"""The cheapest exact inverse of ``H`` that is accurate here (Cholesky of the
        capacitance matrix, dense Cholesky or the SVD of the Jacobians' rows, by their flop
        counts), else the block diagonal; for a spectral basis, that inverse on its columns
        of large curvature only (:meth:`truncated_preconditioner`);
        for diagonal-minus-rank-one Jacobians, the exact inverse for their diagonals
        (:math:`J_i \preceq \mathrm{diag}(d_i)`: one ``m x m`` factorization per
        output, never a ``(p m)^2`` matrix)."""
        if self.sparse:
            self.cheap_refresh = self.sparse_blocks_affordable(J)
            if self.cheap_refresh:
                return self.sparse_output_preconditioner(output_diagonals(J))
            return self.coarse_preconditioner(J)
        if isinstance(J, DiagonalMinusRankOne):
            return self.output_preconditioner(J.d)
        if J.ndim == 2:
            return self.output_preconditioner(J)
        if self.orthogonal and self.pen.min() > 0.0:
            r = int(np.sum(self.curvature >= TRUNCATE * self.alpha))
            if r < self.Gt.shape[1]:
                return self.truncated_preconditioner(J, r)
        n, p, _ = J.shape
        m = self.Gt.shape[1]
        eig = np.linalg.eigh(J)
        rank = int(np.sum(eig[0] > 1e-6))
        N = p * m
        svd_cost = 4.0 * rank * rank * N if rank <= N else 4.0 * N * N * rank
        dense_cost = p * (p + 1) / 2 * n * m * m + N**3 / 3
        capacitance_cost = rank**3 / 3 + rank * rank * (p + 1)
        if N > MAX_DENSE_COEF:
            dense_cost = np.inf  # matrix-free: the SVD of the Jacobians' rows, or blocks
        if capacitance_cost < min(dense_cost, svd_cost):
            precond = self.capacitance_preconditioner(J, eig)
            if precond is not None:
                return precond
        if dense_cost < svd_cost or (rank > MAX_RANK and N <= MAX_DENSE_COEF):
            precond = self.dense_preconditioner(J)
            if precond is not None:
                return precond
        return self.spectral_preconditioner(J, eig=eig) or self.block_preconditioner(J)

    def truncated_preconditioner(self, J: NDArray, r: int) -> Precond:
        r"""``H``'s exact inverse (:meth:`preconditioner`) on the first ``r`` columns of
        the orthogonal features, those whose curvature :math:`\|\tilde g_{:j}\|^2 / n` is
        at least :data:`TRUNCATE` times :math:`\alpha`, and the inverse of the block
        diagonal (one ``p x p`` block per column) on the others, where the regularizer
        dominates. With orthogonal columns the data term couples the two parts by at most
        :math:`\sqrt{\tau}` (:math:`\tau` = :data:`TRUNCATE`) relative to the diagonal
        blocks (Cauchy-Schwarz for the positive semidefinite data term) and adds at most
        :math:`\tau\alpha` to the second: the preconditioned eigenvalues lie in
        :math:`[1 - \sqrt\tau - \tau, 1 + \sqrt\tau + \tau]`, a few CG iterations, for
        a factorization of ``p r`` instead of ``p m`` coefficients (at a large
        :math:`\alpha`, e.g. the first stages of a continuation path, ``r`` is a small
        part of ``m``)."""
        rest = self.restricted(r, self.Gt.shape[1]).block_preconditioner(J)
        if r == 0:
            return rest
        top = self.restricted(0, r).preconditioner(J)

        def precond(Rm: NDArray[np.float64]) -> NDArray[np.float64]:
            return np.hstack([top(Rm[:, :r]), rest(Rm[:, r:])])

        return precond

    def restricted(self, start: int, stop: int) -> _BasisProblem:
        """The problem on the feature columns ``start:stop`` alone (for preconditioners;
        cached by the columns, with its Gram matrix)."""
        key = (start, stop)
        sub = self._restricted.get(key)
        if sub is None:
            sub = copy.copy(self)
            sub._Gt = np.ascontiguousarray(self.Gt[:, start:stop])  # dense (spectral)
            sub.pen = self.pen[start:stop]
            sub.orthogonal = False  # no further truncation
            sub._gram, sub._restricted = None, {}
            self._restricted[key] = sub
        sub.alpha = self.alpha
        return sub

    def coarse_basis(
        self, rank: int | None = None
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        r"""``(Q, C)``: ``Q`` ``(m, r)`` orthonormal, approximately the top ``r`` right
        singular vectors of the features :math:`\tilde G` (column of 1s included), and
        :math:`C = \tilde G Q` ``(n, r)``; by a randomized range finder with
        :data:`COARSE_POWER` power iterations (Halko, Martinsson & Tropp 2011, Algorithms
        4.4 and 5.1; a fixed seed), ``2 + 2 q`` products with ``r +`` :data:`COARSE_OVERSAMPLE`
        columns, once per matrix (kept with what else is derived from it,
        :func:`sparse_derived`). For the features of text (nonnegative tf-idf rows) the
        first is close to their mean row, whose curvature dwarfs the others' (the
        tmc2007-shape scaling case: :math:`\sigma_1^2 / n = 1.02` against ``7e-4`` for the
        next, ``alpha`` down to ``1e-4``). ``rank``: :data:`COARSE_RANK`, or ``n`` (the
        whole row space) up to :data:`COARSE_FULL` samples."""
        n, m = self.n, self.m
        if rank is None:
            rank = n if n <= COARSE_FULL else COARSE_RANK
        spaces = self._sparse().coarse  # shared with the other fits of the same features
        if (self.ones, rank) not in spaces:
            k = min(rank + COARSE_OVERSAMPLE, n, m)
            omega = np.random.default_rng(0).standard_normal((k, n))
            Y = self.features_t(omega.T)  # (k, m): rows in the row space of G~
            for _ in range(COARSE_POWER):
                Y = np.linalg.qr(Y.T)[0].T
                Y = self.features_t(self.features(Y))
            Qk = np.linalg.qr(Y.T)[0]  # (m, k)
            B = self.features(Qk.T)  # (n, k) = G~ Qk
            _, sig, Vt = np.linalg.svd(B, full_matrices=False)
            r = min(rank, int(np.sum(sig > 1e-12 * max(float(sig[0]), 1e-300))))
            Q = np.ascontiguousarray(Qk @ Vt[:r].T)
            spaces[(self.ones, rank)] = (Q, np.ascontiguousarray(B @ Vt[:r].T))
        return spaces[(self.ones, rank)]

    def coarse_preconditioner(self, J: NDArray | DiagonalMinusRankOne) -> Precond:
        r"""A two-level preconditioner for sparse features too wide for the per-output
        blocks: with :math:`Z = I_p \otimes Q` (:meth:`coarse_basis`, the directions of
        largest curvature of every output), the exact inverse of ``H`` on the coarse space
        and the Jacobi preconditioner on its complement,

        .. math::
            M^{-1} = Z E^{-1} Z^\top + (I - Z Z^\top) D^{-1} (I - Z Z^\top),
            \qquad E = Z^\top H Z = \frac1n \sum_i J_i \otimes c_i c_i^\top
            + \alpha\, I_p \otimes Q^\top \mathrm{diag}(\mathrm{pen})\, Q,

        :math:`c_i = Q^\top \tilde g_i` (the rows of :math:`C = \tilde G Q`), ``D`` the
        diagonal of ``H`` (:meth:`jacobi_preconditioner`): an additive two-level
        (block-Jacobi in the splitting :math:`Z \oplus Z^\perp`) preconditioner, symmetric
        positive definite. The Jacobi preconditioner alone leaves the curvature of the mean
        row of text features (with the column of 1s: ``1.02`` against ``alpha = 1e-4``) to
        CG: 32 CG iterations per Newton step at the optimum of the tmc2007-shape scaling
        case (b) (n = 2,144), 6 with this one; ``E`` is ``p r x p r`` (``176 x 176``),
        formed in ``O(n (p r)^2)``, and one application costs ``O(p m r)``."""
        Q, C = self.coarse_basis()
        jacobi = self.jacobi_preconditioner(J)
        n, r = C.shape
        p, diag, v, blocks = jacobian_layout(J)
        if diag is not None:
            E = np.zeros((p, r, p, r))
            for a in range(p):  # no (n, p, r, r) intermediate (258 MB at tmc2007's shape)
                E[a, :, a, :] = (C * diag[:, a, None]).T @ C
            E = E.reshape(p * r, p * r)
            if v is not None:  # minus sum_b (v_ib c_i)(v_ib c_i)^T, block b of the outputs
                size = p // blocks
                for b in range(blocks):
                    out = slice(b * size * r, (b + 1) * size * r)
                    VC = (v[:, b * size : (b + 1) * size, None] * C[:, None, :]).reshape(n, -1)
                    E[out, out] -= VC.T @ VC
        else:
            E = np.zeros((p, r, p, r))
            for a in range(p):
                for b in range(p):
                    E[a, :, b, :] = (C * J[:, a, b, None]).T @ C
            E = E.reshape(p * r, p * r)
        E /= n
        E += self.alpha * np.kron(np.eye(p), (Q.T * self.pen) @ Q)
        try:
            factor = cho_factor(E, lower=True, check_finite=False)
        except LinAlgError:  # singular (an unpenalized intercept, no curvature): Jacobi
            return jacobi

        def precond(R: NDArray[np.float64]) -> NDArray[np.float64]:
            RQ = R @ Q  # (p, r)
            Y = cho_solve(factor, RQ.ravel(), check_finite=False).reshape(p, r)
            S = jacobi(R - RQ @ Q.T)
            return Y @ Q.T + S - (S @ Q) @ Q.T

        return precond

    def jacobi_preconditioner(self, J: NDArray | DiagonalMinusRankOne) -> Precond:
        r"""The inverse of the diagonal of ``H``,
        :math:`H_{(a,j),(a,j)} = \frac1n \sum_i (J_i)_{aa} \tilde g_{ij}^2 + \alpha`: for
        sparse features in their own coordinates (a linear model), one product with the
        squared features, ``O(nnz p)``; the exact inverses cost ``p`` products of the
        ``(n, m)`` features with themselves (tmc2007_500: 30 s per factorization)."""
        if isinstance(J, DiagonalMinusRankOne):
            diag = J.d - J.v * J.v
        else:
            diag = J if J.ndim == 2 else np.einsum("iaa->ia", J)
        n = self.n
        M = self.features_squared_t(diag) / n + self.alpha * self.pen
        inv = np.where(M > 0, 1.0 / np.where(M > 0, M, 1.0), 0.0)
        return lambda R: R * inv

    def features_squared_t(self, T: NDArray[np.float64]) -> NDArray[np.float64]:
        r""":math:`T^\top (\tilde G \circ \tilde G)`, ``(p, m)``."""
        if not self.sparse:
            return T.T @ (self.Gt * self.Gt)
        derived = self._sparse()
        if derived.squared is None:  # the squared entries on the features' own pattern
            G = self.G
            derived.squared = sp.csr_matrix((G.data * G.data, G.indices, G.indptr), shape=G.shape)
        S = derived.squared
        out = (csr_t_matmul(S, T) if self.GT is None else np.asarray(S.T @ T)).T
        return np.hstack([out, T.sum(axis=0)[:, None]]) if self.ones else out

    def sparse_blocks_affordable(self, J: NDArray | DiagonalMinusRankOne) -> bool:
        """Whether the per-output blocks of :meth:`output_preconditioner` fit for sparse
        features: at most :data:`MAX_SPARSE_BLOCK` columns and :data:`MAX_BLOCK_ENTRIES`
        entries in the ``p`` blocks (else the Jacobi preconditioner)."""
        return sparse_blocks_fit(self.m, jacobian_layout(J)[0])

    def weighted_gram(self, w: NDArray[np.float64]) -> NDArray[np.float64]:
        r""":math:`\tilde G^\top \mathrm{diag}(w) \tilde G`, ``(m, m)`` dense, for
        ``w >= 0``: for sparse features one sparse product (``O(sum_i nnz_i^2)`` over the
        rows with ``w_i > 0``), never a dense copy of the features; for dense ones a
        symmetric rank-k update (BLAS syrk) over those rows only."""
        rows = np.flatnonzero(w > 0)  # the samples with curvature on this output
        if self.sparse:
            R = self.Gt[rows]
            S = R.copy()
            S.data *= np.repeat(w[rows], np.diff(S.indptr))
            return np.asarray((R.T @ S).toarray())
        S = self.Gt[rows] * np.sqrt(w[rows])[:, None]
        return S.T @ S

    def sparse_output_preconditioner(self, J: NDArray[np.float64]) -> Precond:
        r""":meth:`output_preconditioner` for sparse features: the ``p`` blocks
        :math:`\frac1n \tilde G^\top \mathrm{diag}(J_{:a}) \tilde G + \alpha
        I_{\mathrm{pen}}` from one product with the features' pair products
        (:func:`._sparse_gram.pair_gram`, kept with what else is derived from the features,
        :func:`sparse_derived`), Cholesky factors only
        (two triangular solves per output and application: no explicit inverse).

        In single precision (:data:`BLOCK_DTYPE`): the pair products, the blocks and their
        factors. A preconditioner only has to be close to the inverse of ``H`` (the CG
        iterates, the Newton steps and the stopping rule stay in float64): the rounding of
        the float32 blocks (about ``1e-4`` of the largest entry at tmc2007_500's shape,
        against a smallest eigenvalue of at least ``alpha``) changes the preconditioned
        spectrum far less than leaving out the coupling between outputs does, for half the
        memory traffic (tmc2007_500's tune stage on one core: 51 s in float64, 37 s; the
        Newton iterations of its grids the same, but at the largest lambdas, where the
        float64 inverse gave one-step solves: two). A block whose float32 factorization
        fails is formed again in float64 (and factored, or pseudo-inverted when singular:
        an unpenalized intercept without curvature)."""
        n, p = J.shape
        derived = self._sparse()
        if self.ones not in derived.pairs:  # shared with the other fits of the same features
            derived.pairs[self.ones] = pair_gram(self.Gt, dtype=BLOCK_DTYPE)
        pairs = derived.pairs[self.ones]
        W = J / n
        if pairs is None:
            blocks = np.stack([self.weighted_gram(W[:, a]) for a in range(p)])
        else:
            blocks = pairs.grams(W)
        idx = np.arange(blocks.shape[1])
        blocks[:, idx, idx] += self.alpha * self.pen
        factors: list[tuple[NDArray[Any], bool]] = []  # (factor, is Cholesky)
        for a, M in enumerate(blocks):
            # positive definite whenever every coefficient is penalized
            factor = _cholesky(M)
            if factor is None and M.dtype != np.float64:  # indefinite by float32's rounding
                M = self.weighted_gram(W[:, a])
                M[idx, idx] += self.alpha * self.pen
                factor = _cholesky(M)
            # else singular (an unpenalized intercept, no curvature): the pseudo-inverse
            factors.append((factor, True) if factor is not None else (_pseudo_inverse(M), False))

        def precond(R: NDArray[np.float64]) -> NDArray[np.float64]:
            out = np.empty_like(R)
            for a, (factor, is_cholesky) in enumerate(factors):
                if is_cholesky:
                    r = R[a].astype(factor.dtype, copy=False)
                    out[a] = cho_solve((factor, True), r, check_finite=False)
                else:
                    out[a] = factor @ R[a]
            return out

        return precond

    def output_preconditioner(self, J: NDArray[np.float64]) -> Precond:
        r"""The exact inverse of ``H`` for diagonal Jacobians: ``H`` is then block
        diagonal over the outputs, :math:`H_a = \frac1n \tilde G^\top \mathrm{diag}(J_{:a})
        \tilde G + \alpha I_{\mathrm{pen}}`, one ``m x m`` factorization per output. For
        other Jacobians given by their per-output diagonals (:func:`output_diagonals`), the
        inverse of the block diagonal of ``H`` over the outputs (block Jacobi)."""
        n, p = J.shape
        m = self.Gt.shape[1]
        eye = np.eye(m)
        inverses = []
        for a in range(p):
            M = self.weighted_gram(J[:, a] / n)
            M[np.diag_indices_from(M)] += self.alpha * self.pen
            try:  # Cholesky: positive definite whenever every coefficient is penalized
                L = cholesky(M, lower=True)
                Linv = solve_triangular(L, eye, lower=True)
                inverses.append(Linv.T @ Linv)
            except LinAlgError:  # singular (an unpenalized intercept, no curvature)
                inverses.append(_pseudo_inverse(M))
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

    def capacitance_preconditioner(
        self, J: NDArray, eig: tuple[NDArray, NDArray] | None = None
    ) -> Precond | None:
        r"""The exact inverse of :math:`H = \alpha I + \frac1n A^\top A` (every coefficient
        penalized) by the Woodbury identity in the space of the Jacobians' rows,

        .. math::
            H^{-1} = \frac1\alpha \bigl(I - A^\top (n\alpha I + A A^\top)^{-1} A\bigr),
            \qquad (A A^\top)_{rs} = \langle \bar e_r, \bar e_s \rangle\,
            \tilde g_{i_r}^\top \tilde g_{i_s},

        ``A``'s rows :math:`\bar e_r \otimes \tilde g_{i_r}` as in
        :meth:`spectral_preconditioner` (``R`` of them, the total rank of the Jacobians):
        a Cholesky factorization of the ``R x R`` capacitance matrix (:math:`R^3/3` flops,
        its entries from the Gram matrix of the features, formed once) instead of the
        ``(p m)^2`` Hessian's (:math:`(pm)^3/3` flops plus :math:`p^2 n m^2 / 2` to form
        it: vowel's degree-3 kernel, ``R ~ 1,500`` against ``p m = 3,146``, 10-20x fewer),
        and ``O(n m p + R^2)`` per application through the features instead of
        :math:`(pm)^2`. The subtraction loses about :math:`\epsilon \|H\| / \alpha`
        (relative) in the directions of large curvature: ``None`` above
        :data:`DENSE_COND` (as :meth:`dense_preconditioner`), for an intercept that is not
        penalized, or if the factorization fails."""
        n, p, _ = J.shape
        Gt = self.Gt
        if self.pen.min() == 0.0:
            return None
        top = float(np.max(np.sum(Gt * Gt, axis=0))) / n
        if top > DENSE_COND * self.alpha:
            return None
        lam = self.alpha
        w, E = np.linalg.eigh(J) if eig is None else eig
        rows, cols = np.nonzero(w > 1e-6)
        if rows.size == 0:
            return lambda Rm: Rm / lam
        Ebar = E[rows, :, cols] * np.sqrt(w[rows, cols])[:, None]  # (R, p)
        if self._gram is None:
            self._gram = Gt @ Gt.T
        C = (Ebar @ Ebar.T) * self._gram[np.ix_(rows, rows)]
        C[np.diag_indices_from(C)] += n * lam
        try:
            factor = cho_factor(C, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            return None
        # sums over the rows of each sample: rows are sorted by sample (np.nonzero)
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        samples = rows[starts]

        def precond(Rm: NDArray[np.float64]) -> NDArray[np.float64]:
            T = Gt @ Rm.T  # (n, p): A v = <e_r, T[i_r]>
            y = cho_solve(factor, np.einsum("rp,rp->r", Ebar, T[rows]), check_finite=False)
            Y = np.zeros((n, p))
            Y[samples] = np.add.reduceat(y[:, None] * Ebar, starts, axis=0)
            return (Rm - Y.T @ Gt) / lam

        return precond

    def spectral_preconditioner(
        self, J: NDArray, max_rank: int = MAX_RANK, eig: tuple[NDArray, NDArray] | None = None
    ) -> Precond | None:
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
        w, E = np.linalg.eigh(J) if eig is None else eig
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


def continuation_path(alpha: float, scale: float, factor: float = CONTINUATION) -> list[float]:
    r"""The regularizations of a cold-started fit: from ``scale`` (the average curvature
    of the data term, :func:`data_curvature`) down to ``alpha`` by factors of ``factor``,
    ending at ``alpha`` (just ``[alpha]`` if ``alpha >= scale``).

    Examples
    --------
    >>> continuation_path(1e-4, 1.0)
    [1.0, 0.1, 0.01, 0.001, 0.0001]
    >>> continuation_path(5.0, 1.0)
    [5.0]
    """
    path = []
    a = float(scale)
    while a > alpha * factor**0.5:
        path.append(a)
        a /= factor
    return [*path, float(alpha)]


def data_curvature(basis: SpectralBasis, n: int) -> float:
    r"""The average curvature of the data term for unit Jacobians,
    :math:`\|\tilde F_{\mathrm{pen}}\|_F^2 / (n\, m)` (``m`` the basis size): above it the
    regularizer dominates the Hessian and a Newton method converges from anywhere in a
    few steps."""
    m = max(basis.s.size, 1)
    return float(np.sum(basis.s * basis.s)) / (n * m)


@dataclass
class _Solve:
    """The outcome of :func:`_newton_solve`."""

    X: NDArray[np.float64]
    f: float
    g: NDArray[np.float64]
    nit: int
    n_cg: int
    n_factor: int
    success: bool
    message: str


def _newton_solve(
    problem: _BasisProblem,
    X: NDArray[np.float64],
    original_gradient: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    *,
    tol: float,
    max_iter: int,
    max_cg: int,
) -> _Solve:
    """Newton iterations from ``X`` at ``problem.alpha`` until the max-norm of the gradient
    in the original coordinates is at most ``tol`` (or ``max_iter`` iterations)."""
    f, g, theta, u = problem.value_and_gradient(X)
    nit, cg_total, n_factor, success, message = 0, 0, 0, False, ""
    precond: Precond | None = None
    n_cg = 0
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
        fresh = precond is None or n_cg > REUSE_CG  # the last factorization has gone stale
        if fresh:
            precond = problem.preconditioner(J)
            n_factor += 1
        rtol = min(0.1, np.sqrt(gnorm))
        # a stale preconditioner that is cheap to refresh (sparse per-output blocks) gets
        # STALE_CG iterations: beyond, the solve is redone with a fresh one
        stale_cap = STALE_CG if not fresh and problem.cheap_refresh else max_cg
        D, n_cg = _pcg(problem, J, g, precond, rtol, min(stale_cap, max_cg))
        cg_total += n_cg
        if n_cg >= stale_cap < max_cg:
            precond = problem.preconditioner(J)
            n_factor += 1
            D, n_cg = _pcg(problem, J, g, precond, rtol, max_cg)
            cg_total += n_cg
        slope = float(np.sum(g * D))
        if not slope < 0:  # rounding (or a direction without curvature, e.g. an unpenalized
            # intercept where no sample has curvature: CG diverges): the preconditioned
            # gradient
            D = -precond(g)
            slope = float(np.sum(g * D))
        if not np.isfinite(slope):
            message = f"no finite Newton direction (max |grad| {gmax:.3g})"
            break
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
    return _Solve(X, f, g, nit, cg_total, n_factor, success, message)


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
    max_cg: int = MAX_CG,
    continuation: bool = False,
    ones_column: bool = False,
    derived: SparseDerived | None = None,
) -> OptimizeResult:
    r"""Minimize :math:`F` (module docstring) from ``B0 = [B_pen, b]`` (``b`` only if
    ``free_intercept``, an unpenalized intercept); ``F_pen``: the penalized features
    (with the column of 1s for a penalized intercept, or without it and
    ``ones_column=True``: for sparse features no stacked copy), dense or sparse. Returns
    ``x`` = the solution in the original coordinates, ``nit`` Newton iterations (over all
    the stages, at most ``max_iter``), ``success`` whether the gradient rule was met,
    ``n_jacobians`` the Jacobians computed by source (``{"set": .., "differences": ..}``:
    the set's own or finite differences, :meth:`_BasisProblem.jacobians`).

    ``continuation=True`` (a cold start): solve along :func:`continuation_path`, from the
    regularization where the data term stops dominating down to ``alpha``, each stage
    warm-started from the previous one (as the tune stage's grid). From 0 at a small
    ``alpha``, the semismooth Newton steps cross many pieces of the loss at once and can
    stall (the vehicle degree-3 refit at ``alpha = 1e-4``: 180 iterations, 160,000 CG
    iterations, not converged); along the path each stage starts close to its solution.

    ``derived``: for sparse ``F_pen``, its :func:`sparse_derived` (a caller that fits the
    same features twice, :func:`._solver.fit_projection_model`, keys them once); ``None``:
    looked up here."""
    if alpha <= 0:
        raise ValueError("the Newton solver needs alpha > 0")
    if sp.issparse(F_pen):
        # sparse (linear) features: their own coordinates, kept sparse (Jacobi or
        # per-output block preconditioner); no SVD, which would densify them, and no
        # stacked copy for a column of 1s
        F_pen = sp.csr_matrix(F_pen)
        if derived is None:
            derived = sparse_derived(F_pen)
        sq = derived.column_sq
        if ones_column:
            sq = np.append(sq, float(F_pen.shape[0]))
        basis = SpectralBasis(F_pen, None, np.sqrt(sq[sq > 0]), 0)
    else:
        if ones_column:
            F_pen = np.hstack([F_pen, np.ones((F_pen.shape[0], 1))])
            ones_column = False
        basis = spectral_basis(F_pen)
    problem = _BasisProblem(
        basis.G,
        phi,
        projection_set,
        geometry,
        event_shape,
        alpha,
        free_intercept,
        orthogonal=basis.Q is not None,
        ones_column=ones_column,
        derived=derived,
    )
    d_pen = F_pen.shape[1] + int(ones_column)
    Q = basis.Q
    m = d_pen if Q is None else Q.shape[1]
    X = B0[:, :d_pen] if Q is None else B0[:, :d_pen] @ Q
    if free_intercept:
        X = np.hstack([X, B0[:, d_pen:]])

    def original_gradient(grad: NDArray[np.float64]) -> NDArray[np.float64]:
        if Q is None:
            return grad
        g = grad[:, :m] @ Q.T
        return np.hstack([g, grad[:, -1:]]) if free_intercept else g

    path = [alpha]
    if continuation:
        path = continuation_path(alpha, data_curvature(basis, F_pen.shape[0]), factor=CONTINUATION)
    total = _Solve(X, np.nan, np.empty(0), 0, 0, 0, False, "")
    stages = 0

    def solve(X: NDArray[np.float64], a: float, budget: int) -> _Solve:
        nonlocal stages
        stages += 1
        problem.alpha = a
        out = _newton_solve(problem, X, original_gradient, tol=tol, max_iter=budget, max_cg=max_cg)
        total.nit, total.n_cg = total.nit + out.nit, total.n_cg + out.n_cg
        total.n_factor += out.n_factor
        return out

    def follow(X: NDArray[np.float64], a_from: float, a_to: float, depth: int) -> _Solve:
        """Solve at ``a_to`` from ``X`` (the solution at ``a_from``); a stage that does
        not converge in :data:`STAGE_ITER` iterations is split in two (geometric
        midpoint), up to :data:`MAX_SPLITS` times."""
        left = max_iter - total.nit
        last = depth >= MAX_SPLITS
        out = solve(X, a_to, left if last else min(STAGE_ITER, left))
        if out.success or last or total.nit >= max_iter:
            return out
        mid = float(np.sqrt(a_from * a_to))
        out = follow(X, a_from, mid, depth + 1)
        return follow(out.X, mid, a_to, depth + 1)

    out = solve(X, path[0], max_iter if len(path) == 1 else min(STAGE_ITER, max_iter))
    for a_from, a_to in itertools.pairwise(path):
        out = follow(out.X, a_from, a_to, 0)
    X = out.X
    B = X[:, :m] if Q is None else X[:, :m] @ Q.T
    if free_intercept:
        B = np.hstack([B, X[:, -1:]])
    return OptimizeResult(
        x=B,
        fun=out.f,
        nit=total.nit,
        nfev=problem.nfev,
        success=out.success,
        message=out.message,
        n_cg=total.n_cg,
        n_factor=total.n_factor,
        n_dropped=basis.n_dropped,
        n_stages=stages,
        n_jacobians=dict(problem.n_jacobians),
    )
