r"""The Birkhoff solvers of :mod:`._birkhoff_solvers` for any array-API library.

The same method as the NumPy/numba engine (read :mod:`._birkhoff_solvers` first): both
projections solved in the semi-dual of Blondel, Seguy & Rolet (2018) by a damped
(Levenberg-Marquardt) Newton method with :math:`\varepsilon`-scaling, to a max-norm
marginal violation ``tol``; the constants (:math:`\mu = 0.1\|\nabla G\|_\infty`, Armijo
constant, halvings, :math:`\varepsilon`-scaling schedule and stage tolerance) are the
engine's, imported from it. What changes is the schedule of the work, made for a GPU:

- **A convergence mask, and compaction.** Every iteration works on a working set of
  samples with branch-free ``where`` updates; each sample has its own step size,
  iteration count and "active" flag (violation above ``tol`` and fewer than
  ``max_iter`` Newton iterations) and is frozen once inactive. One scalar is read back
  to the host per iteration (the number of active samples; the loop ends at zero), and
  when at most a quarter of the working set is still active, the active samples are
  gathered into a smaller working set (their indices read back: a logarithmic number
  of times per solve), so the cost follows the samples still iterating -- the
  Euclidean solves have a tail (at n = 20000, k = 11, std 2: 10% of the samples still
  active after 14 of 37 iterations).
- **The backtracking is spread over iterations.** Each iteration evaluates *one* trial
  point :math:`\alpha + t d` per sample; a sample that fails both of the engine's tests
  (Armijo, or :math:`\langle\nabla G(\alpha + td), d\rangle \le 0`) halves its own
  :math:`t` and retries the same direction at the next iteration, a sample that passes
  takes the step and gets a new Newton direction. The iterates are the engine's (same
  directions, same accepted steps, up to rounding); a Newton iteration costs one batched
  oracle, one batched :math:`k\times k` solve and one host read per trial, instead of a
  host read per halving.
- **A shifted frame for the last stage.** Before the final (:math:`\varepsilon = 1`)
  stage, :math:`\theta` is replaced by :math:`\theta' = \theta + \alpha\mathbf 1^\top +
  \mathbf 1\beta^\top`, with :math:`\alpha` the multipliers reached so far and
  :math:`\beta` the column offsets of :math:`P(\alpha)` (the sparsemax thresholds, the
  column log-sum-exps), which leaves both projections unchanged (shifts of rows and
  columns are absorbed by the multipliers) and brings the entries that matter to
  :math:`O(1)`; below float64 the sum is formed with an error-free transformation
  (TwoSum, Knuth, TAOCP vol. 2, §4.2.2), so that :math:`\theta'` is accurate to the
  last bit of :math:`O(1)` numbers even when :math:`|\theta| \sim 10^3` in float32.
  Newton then refines a multiplier of size :math:`O(1)`, whose rounding no longer
  limits the marginals (measured in float32 at :math:`|\theta| \sim 10^3`,
  :math:`k = 11`: without the shifted frame Newton stalls at a violation of 6e-5, above
  the float32 tolerance; with it, the plain sum reaches the tolerance with errors of
  2e-5 against the float64 engine, TwoSum 5e-6).

The batched solves are ``torch.linalg.solve_ex`` (no error check: the check of
``torch.linalg.solve`` synchronizes the GPU with the host at every call) and
:func:`numpy.linalg.solve`; every matrix solved is symmetric positive definite (a
positive semi-definite Hessian or Laplacian plus :math:`\mathbf 1\mathbf 1^\top/k` plus
a positive multiple of the identity).

**Accuracy.** float64: the engine's ``tol``. float32 cannot reach ``tol = 1e-9``: a row
sum of :math:`k` float32 numbers is only accurate to about :math:`\sqrt k\,\epsilon_{32}`;
the solver stops at :func:`effective_tol` ``= max(tol, 8 k eps)`` of the dtype
(about 1e-5 at :math:`k = 11` in float32; ``tol`` itself in float64 for any
:math:`k < 5\cdot 10^5`), and the projections are then within about 1e-5 of the float64
engine's.

**Jacobian** (:func:`xp_birkhoff_jvp`): implicit differentiation of the optimality
conditions, see there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._xp import device, is_torch
from ._birkhoff_solvers import (
    _ARMIJO,
    _EPS_FACTOR,
    _LM,
    _MAX_HALVINGS,
    _MU_MIN,
    _SMOOTH_RANGE,
    _STAGE_ITER,
    _STAGE_TOL,
)
from .simplex import xp_sparsemax

#: The slack of the Armijo test for the rounding of G, relative to |G| + 1: the engine's
#: 1e-13 in float64; this many units in the last place in a lower precision (the
#: engine's 450 ulps, 5e-5 in float32, accept increases of G that make Newton cycle
#: between two vertex-like plans; a rejected good step only halves t, and the test on
#: the marginals accepts it).
_SLACK = 1e-13
_SLACK_ULPS = 4.0
#: float32 (or any dtype) cannot reach a marginal violation below about this many
#: ``k * eps`` (row sums of k numbers): the solver's tolerance is at least that.
_TOL_ULPS = 8.0


# --------------------------------------------------------------------------- helpers
def _solve(xp: Any, a: Any, b: Any) -> Any:
    """Batched ``a x = b`` for ``b`` of shape ``(..., n)``, without a host synchronization.

    ``torch.linalg.solve_ex`` (``torch.linalg.solve``, hence :func:`projloss._xp.solve`,
    checks for singular matrices by reading a flag back to the host: a synchronization of
    the GPU per call); NumPy's :func:`numpy.linalg.solve` otherwise.
    """
    if is_torch(a):
        import torch

        return torch.linalg.solve_ex(a, b[..., None])[0][..., 0]
    from .._xp import solve

    return solve(xp, a, b)


def _eps(xp: Any, dtype: Any) -> float:
    return float(xp.finfo(dtype).eps)


def effective_tol(xp: Any, dtype: Any, k: int, tol: float) -> float:
    """The marginal violation the solver stops at: ``max(tol, 8 k eps)`` of ``dtype``
    (``tol`` in float64 for ``k < 5e5``; about ``1e-5`` at ``k = 11`` in float32)."""
    return max(float(tol), _TOL_ULPS * k * _eps(xp, dtype))


def _two_sum(a: Any, b: Any) -> tuple[Any, Any]:
    """``s + e == a + b`` exactly, ``s = fl(a + b)`` (Knuth's TwoSum; no FMA needed)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _diag(xp: Any, v: Any) -> Any:
    """Batched diagonal matrices ``(..., k, k)`` from ``(..., k)``."""
    k = v.shape[-1]
    return v[..., None] * xp.eye(k, dtype=v.dtype, device=device(v))


# --------------------------------------------------------------------------- oracles
# As in the engine: thT[n, j, i] = theta[n, i, j] (the columns of theta along the last
# axis), alpha of shape (n, k); an oracle returns G (n,) and PT (n, k, k), PT[n, j] =
# grad f(x_j) the column j of P(alpha) (summing to one), x_j = thT[n, j] + alpha.


def _oracle_euclidean(xp: Any, thT: Any, alpha: Any) -> tuple[Any, Any]:
    x = thT + alpha[:, None, :]
    p = xp_sparsemax(xp, x)  # per column: the Euclidean projection onto the simplex
    return xp.sum(p * (x - 0.5 * p), axis=(1, 2)) - xp.sum(alpha, axis=1), p


def _hessian_euclidean(xp: Any, p: Any) -> Any:
    # sum_j diag(s_j) - s_j s_j^T / |s_j| (s_j: the support of column j)
    s = xp.astype(p > 0, p.dtype)
    cnt = xp.clip(xp.sum(s, axis=2, keepdims=True), min=1.0)  # >= 1 (0 only for NaN)
    return _diag(xp, xp.sum(s, axis=1)) - xp.matmul(xp.matrix_transpose(s / cnt), s)


def _oracle_kl(xp: Any, thT: Any, alpha: Any) -> tuple[Any, Any]:
    x = thT + alpha[:, None, :]
    m = xp.max(x, axis=2, keepdims=True)
    e = xp.exp(x - m)
    z = xp.sum(e, axis=2, keepdims=True)
    G = xp.sum(m[..., 0] + xp.log(z[..., 0]), axis=1) - xp.sum(alpha, axis=1)
    return G, e / z


def _hessian_kl(xp: Any, p: Any) -> Any:
    # diag(P 1) - P P^T
    return _diag(xp, xp.sum(p, axis=1)) - xp.matmul(xp.matrix_transpose(p), p)


_ORACLES = {
    "euclidean": (_oracle_euclidean, _hessian_euclidean),
    "kl": (_oracle_kl, _hessian_kl),
}


def _column_offsets(xp: Any, geometry: str, thT: Any, alpha: Any) -> Any:
    r"""Per column of :math:`x = \theta + \alpha\mathbf 1^\top`, the offset
    :math:`o_j` with :math:`P_{:j} = x_{:j} - o_j` on its support (Euclidean: the
    sparsemax threshold) or :math:`P_{:j} = e^{x_{:j} - o_j}` (KL: the log-sum-exp)."""
    x = thT + alpha[:, None, :]
    if geometry == "kl":
        m = xp.max(x, axis=2, keepdims=True)
        return (m + xp.log(xp.sum(xp.exp(x - m), axis=2, keepdims=True)))[..., 0]
    p = xp_sparsemax(xp, x)
    s = xp.astype(p > 0, x.dtype)
    return xp.sum(s * (x - p), axis=2) / xp.clip(xp.sum(s, axis=2), min=1.0)


# --------------------------------------------------------------------------- Newton
#: The working set is compacted (the samples still active gathered) once at most this
#: fraction of it is active.
_COMPACT = 0.25


@dataclass
class _State:
    alpha: Any  # (n, k) multipliers
    PT: Any  # (n, k, k) transposed plan (zero for the samples not active on entry)
    viol: Any  # (n,) max-norm row-marginal violation (zero: not active on entry)
    n_iter: int  # iterations of the batched loop (one trial per active sample)


def _put_rows(xp: Any, full: Any, idx: Any, vals: Any) -> Any:
    """``full[idx] = vals`` along the first axis, in place (the array API standard has
    no indexed assignment): ``Tensor.index_copy_`` for torch, NumPy's otherwise."""
    if is_torch(full):
        return full.index_copy_(0, idx, vals)
    full[idx] = vals
    return full


def _newton(
    xp: Any,
    geometry: str,
    thT: Any,
    scale: Any | None,
    alpha: Any,
    active: Any,
    tol: float,
    max_iter: int,
) -> _State:
    """The engine's :func:`._birkhoff_solvers._newton` for ``thT / scale`` (``scale``:
    per sample, or ``None`` for 1) on the samples where ``active`` (the others keep
    their ``alpha``), with the backtracking spread over iterations (module docstring).

    The iterations run on a working set, the samples still active, compacted (gathered)
    whenever at most :data:`_COMPACT` of it is active: a solve's cost follows the number
    of samples still iterating, not the slowest sample times the batch. Host reads: the
    number of active samples once per iteration, and the indices of the active samples
    at each compaction (a logarithmic number of times).
    """
    oracle, hessian = _ORACLES[geometry]
    n, k = alpha.shape
    dt, dev = alpha.dtype, device(alpha)
    eps = _eps(xp, dt)
    slack = _SLACK if eps < 1e-15 else _SLACK_ULPS * eps
    mu_min = max(_MU_MIN, 100.0 * eps)
    shift = xp.full((k, k), 1.0 / k, dtype=dt, device=dev)  # fixes the null direction 1
    eye = xp.eye(k, dtype=dt, device=dev)
    t_min = 0.5 ** (_MAX_HALVINGS - 1)  # the engine tries t = 1, ..., 2^-(halvings - 1)

    count = int(xp.sum(xp.astype(active, xp.int64)))
    if count == 0:
        return _State(alpha, xp.zeros((n, k, k), dtype=dt, device=dev), alpha[:, 0] * 0.0, 0)
    ids = None  # the rows of the working set in the batch; None: all, in order
    th, a = thT, alpha + 0.0  # (a copy: the full results may be written into it)
    if count <= _COMPACT * n or (scale is not None and count < n):
        ids = xp.nonzero(active)[0]
        th, a = xp.take(thT, ids, axis=0), xp.take(alpha, ids, axis=0)
        if scale is not None:
            scale = xp.take(scale, ids, axis=0)
        active = xp.take(active, ids, axis=0)
    if scale is not None:
        th = th / scale[:, None, None]
    m = th.shape[0]
    G, P = oracle(xp, th, a)
    grad = xp.sum(P, axis=1) - 1.0
    v = xp.max(xp.abs(grad), axis=1)
    act = active & (v > tol)  # a NaN violation is inactive (and not converged)
    it = xp.zeros(m, dtype=xp.int64, device=dev)  # Newton iterations per sample
    t = xp.ones(m, dtype=dt, device=dev)  # step sizes
    fresh = xp.ones(m, dtype=xp.bool, device=dev)  # needs a new direction
    d = xp.zeros((m, k), dtype=dt, device=dev)
    slope = xp.zeros(m, dtype=dt, device=dev)

    # The full results (alpha, PT, violation), written back from the working set at
    # each compaction and at the end.
    full: tuple[Any, Any, Any] | None = None

    def flush() -> None:
        nonlocal full
        if ids is None:  # the working arrays are the whole batch's
            full = (a, P, v)
            return
        if full is None:
            full = (
                alpha + 0.0,
                xp.zeros((n, k, k), dtype=dt, device=dev),
                xp.zeros(n, dtype=dt, device=dev),
            )
        full = tuple(_put_rows(xp, f, ids, x) for f, x in zip(full, (a, P, v), strict=True))

    loops = 0
    cap = max_iter * _MAX_HALVINGS
    while loops < cap:
        count = int(xp.sum(xp.astype(act, xp.int64)))  # the one host read per iteration
        if count == 0:
            break
        if count <= _COMPACT * m:
            flush()
            keep = xp.nonzero(act)[0]
            ids = keep if ids is None else xp.take(ids, keep, axis=0)
            th, a, G, P, grad, v, d, slope, t, it, fresh, act = (
                xp.take(x, keep, axis=0)
                for x in (th, a, G, P, grad, v, d, slope, t, it, fresh, act)
            )
            m = count
        loops += 1
        # Newton direction (H + 11^T/k + mu I) d = -grad, for the samples that need one.
        mu = _LM * v + mu_min
        H = hessian(xp, P) + shift + mu[:, None, None] * eye
        dn = -_solve(xp, H, grad)
        dn = xp.where(xp.isfinite(dn), dn, -grad)  # never NaN (inactive samples)
        d = xp.where(fresh[:, None], dn, d)
        slope = xp.where(fresh, xp.sum(grad * dn, axis=1), slope)
        # One trial per sample: the engine's two acceptance tests.
        a_try = a + t[:, None] * d
        G1, P1 = oracle(xp, th, a_try)
        g1 = xp.sum(P1, axis=1) - 1.0
        bound = G + slack * (xp.abs(G) + 1.0)
        ok = (G1 <= bound + _ARMIJO * t * slope) | (xp.sum(g1 * d, axis=1) <= 0.0)
        acc = ok & act
        a = xp.where(acc[:, None], a_try, a)
        G = xp.where(acc, G1, G)
        P = xp.where(acc[:, None, None], P1, P)
        grad = xp.where(acc[:, None], g1, grad)
        v = xp.where(acc, xp.max(xp.abs(g1), axis=1), v)
        # A Newton iteration ends with an accepted step or after the last halving (then
        # the same direction again, as the engine, whose next iteration recomputes it).
        done = acc | (act & ~ok & (t <= t_min))
        it = it + xp.astype(done, xp.int64)
        t = xp.where(done, xp.ones_like(t), 0.5 * t)
        fresh = done
        act = act & (v > tol) & (it < max_iter)
    flush()
    assert full is not None
    return _State(*full, loops)


def _init_alpha(xp: Any, theta: Any, geometry: str) -> Any:
    """The engine's starting multipliers: minus the row means (Euclidean) or the row
    log-sum-exps (KL, a Sinkhorn half-step), centered."""
    if geometry == "euclidean":
        a = -xp.mean(theta, axis=2)
    else:
        m = xp.max(theta, axis=2, keepdims=True)
        a = -(m + xp.log(xp.sum(xp.exp(theta - m), axis=2, keepdims=True)))[..., 0]
    return a - xp.mean(a, axis=1, keepdims=True)


@dataclass
class XPSolveInfo:
    """What a batched array-API solve achieved (arrays on the solver's device)."""

    n_iter: int  #: iterations of the batched loops (one trial per sample), all stages
    violation: Any  #: (n,) max-norm violation of the row and column sums
    converged: Any  #: (n,) violation <= the effective tolerance (NaN: not converged)
    tol: float  #: the effective tolerance (:func:`effective_tol`)


def xp_birkhoff_solve(
    xp: Any, theta: Any, geometry: str, tol: float, max_iter: int
) -> tuple[Any, XPSolveInfo]:
    r"""Project each ``theta[i]`` (shape ``(n, k, k)``) onto the Birkhoff polytope.

    The engine's :func:`._birkhoff_solvers.solve` (semi-dual Newton with
    :math:`\varepsilon`-scaling, cold start) for any array-API library, on ``theta``'s
    device and in its dtype, with the changes of the module docstring. Returns ``(P,
    info)``; non-convergence is reported in ``info`` (the caller warns).

    Examples
    --------
    >>> import numpy as np
    >>> from projloss._xp import namespace
    >>> theta = np.array([[[2.0, 0.0, 0.0], [0.0, 1.0, 1.5], [0.0, 1.5, 1.0]]])
    >>> P, info = xp_birkhoff_solve(namespace(theta), theta, "euclidean", 1e-9, 200)
    >>> print(np.round(P[0], 4))
    [[1.   0.   0.  ]
     [0.   0.25 0.75]
     [0.   0.75 0.25]]
    >>> bool(info.converged.all()), info.tol
    (True, 1e-09)
    """
    n, k = theta.shape[0], theta.shape[-1]
    dt = theta.dtype
    tol_eff = effective_tol(xp, dt, k, tol)
    if n == 0:
        empty = xp.zeros(0, dtype=dt, device=device(theta))
        return xp.zeros_like(theta), XPSolveInfo(0, empty, empty > 0, tol_eff)
    thT = xp.matrix_transpose(theta)
    flat = xp.reshape(theta, (n, k * k))
    width = xp.max(flat, axis=1) - xp.min(flat, axis=1)
    scale = xp.clip(width / _SMOOTH_RANGE, min=1.0)  # epsilon of each sample
    alpha = _init_alpha(xp, theta / scale[:, None, None], geometry)
    n_iter = 0
    # epsilon-scaling: solve theta / eps loosely, eps / 8 per stage, down to eps = 1.
    while True:
        stage = scale > 1.0
        if not bool(xp.any(stage)):
            break
        st = _newton(xp, geometry, thT, scale, alpha, stage, _STAGE_TOL, min(_STAGE_ITER, max_iter))
        n_iter += st.n_iter
        new = xp.clip(scale / _EPS_FACTOR, min=1.0)
        alpha = xp.where(stage[:, None], st.alpha * (scale / new)[:, None], alpha)
        scale = xp.where(stage, new, scale)
    # The shifted frame theta + alpha 1^T - 1 offset^T (module docstring), by TwoSum.
    offset = _column_offsets(xp, geometry, thT, alpha)
    if _eps(xp, dt) < 1e-15:  # float64: as accurate as the engine without TwoSum
        thT = (thT + alpha[:, None, :]) - offset[:, :, None]
    else:
        s1, e1 = _two_sum(thT, alpha[:, None, :])
        s2, e2 = _two_sum(s1, -offset[:, :, None])
        thT = s2 + (e1 + e2)
    alpha = xp.zeros_like(alpha)
    active = xp.ones(n, dtype=xp.bool, device=device(theta))
    st = _newton(xp, geometry, thT, None, alpha, active, tol_eff, max_iter)
    n_iter += st.n_iter
    PT = st.PT
    # Rows are what Newton controls; columns sum to one up to rounding: report both.
    viol = xp.maximum(st.viol, xp.max(xp.abs(xp.sum(PT, axis=2) - 1.0), axis=1))
    return xp.matrix_transpose(PT), XPSolveInfo(n_iter, viol, viol <= tol_eff, tol_eff)


# --------------------------------------------------------------------------- Jacobian
def xp_birkhoff_jvp(xp: Any, u: Any, tangent: Any, geometry: str) -> Any:
    r"""Jacobian-vector product of the Birkhoff projection at its value ``u``, by
    implicit differentiation of the optimality conditions.

    Both projections have the form :math:`u = \phi(\theta + \alpha\mathbf 1^\top +
    \mathbf 1\beta^\top)` with :math:`\phi` applied entrywise: :math:`\exp` (KL; the
    Sinkhorn scaling :math:`u = \operatorname{diag}(e^\alpha)e^\theta
    \operatorname{diag}(e^\beta)`) or :math:`\max(\cdot, 0)` (Euclidean; the KKT
    conditions of quadratically regularized OT, Blondel, Seguy & Rolet 2018). With the
    weights :math:`W = u` (KL) or :math:`W = [u > 0]` (Euclidean, the support
    :math:`S`), differentiating gives

    .. math::
        J t = W \odot (t + a\mathbf 1^\top + \mathbf 1 b^\top),

    where :math:`(a, b)` keep the marginals: :math:`(J t)\mathbf 1 = 0`,
    :math:`(J t)^\top\mathbf 1 = 0`. With :math:`R = W\odot t`, :math:`r = W\mathbf 1`,
    :math:`c = W^\top\mathbf 1`, the row conditions give :math:`a = -(R\mathbf 1 +
    Wb)/r` and the column conditions then the :math:`k\times k` system (a Schur
    complement of the :math:`2k\times 2k` one)

    .. math::
        \big(\operatorname{diag}(c) - W^\top\operatorname{diag}(r)^{-1}W\big)\, b
        = W^\top\operatorname{diag}(r)^{-1}R\mathbf 1 - R^\top\mathbf 1 .

    Its matrix :math:`L` is a weighted graph Laplacian of the columns (positive
    semi-definite), singular along :math:`\mathbf 1` (shifting :math:`a` by :math:`+c`
    and :math:`b` by :math:`-c` changes nothing) and along the indicator of each further
    connected component of the support (a block-diagonal :math:`u`); any solution gives
    the same :math:`Jt`, and the right-hand side is orthogonal to that null space. We
    solve :math:`(L + \mathbf 1\mathbf 1^\top/k + \delta I)\,b = \text{rhs}` (positive
    definite) with :math:`\delta = \epsilon^{2/3}` of the dtype, plus two steps of
    iterative refinement against :math:`L` (which remove the bias of :math:`\delta` on
    the range of :math:`L` to :math:`(\delta/\lambda)^3`, :math:`\lambda` its smallest
    nonzero eigenvalue, and leave the null space alone): three batched :math:`k\times k`
    solves, :math:`O(k^3)` per sample.

    :math:`J = D\,\Pi\,D` with :math:`D = \operatorname{diag}(\sqrt W)` and :math:`\Pi`
    an orthogonal projector (onto the complement of the span of the
    :math:`\sqrt{W_{ij}}(a_i + b_j)`): symmetric positive semi-definite, as the Hessian
    of :math:`\Omega^*` must be, hence also the vector-Jacobian product. For the
    Euclidean geometry :math:`J` is the orthogonal projector onto the matrices supported
    on :math:`S` with zero row and column sums: the Jacobian of the face :math:`u` lies
    on (at a kink, where the support is about to change, that one-sided Jacobian).

    Examples
    --------
    The projection above has a disconnected support, ``{(0, 0)}`` and the lower
    ``2 x 2`` block, whose only direction with zero marginals is
    ``E = [[0, 0, 0], [0, 1, -1], [0, -1, 1]]``; a tangent is projected onto it:

    >>> import numpy as np
    >>> from projloss._xp import namespace
    >>> u = np.array([[[1.0, 0.0, 0.0], [0.0, 0.25, 0.75], [0.0, 0.75, 0.25]]])
    >>> t = np.zeros((1, 3, 3))
    >>> t[0, 1, 1] = 1.0
    >>> print(np.round(xp_birkhoff_jvp(namespace(u), u, t, "euclidean")[0], 12) + 0.0)
    [[ 0.    0.    0.  ]
     [ 0.    0.25 -0.25]
     [ 0.   -0.25  0.25]]
    """
    dt = u.dtype
    k = u.shape[-1]
    if u.shape[0] == 0:
        return xp.zeros_like(tangent)
    W = xp.astype(u > 0, dt) if geometry == "euclidean" else u
    R = W * tangent
    r = xp.sum(W, axis=-1)
    r = xp.where(r > 0, r, xp.ones_like(r))  # an empty row (not a projection): no-op
    c = xp.sum(W, axis=-2)
    Wr = W / r[..., None]
    WT = xp.matrix_transpose(W)
    L = _diag(xp, c) - xp.matmul(WT, Wr)
    R1 = xp.sum(R, axis=-1)
    rhs = xp.matmul(WT, (R1 / r)[..., None])[..., 0] - xp.sum(R, axis=-2)
    delta = _eps(xp, dt) ** (2.0 / 3.0)
    A = L + (1.0 / k) + delta * xp.eye(k, dtype=dt, device=device(u))
    b = _solve(xp, A, rhs)
    for _ in range(2):  # iterative refinement against L (not A)
        res = rhs - xp.matmul(L, b[..., None])[..., 0]
        b = b + _solve(xp, A, res)
    a = -(R1 + xp.matmul(W, b[..., None])[..., 0]) / r
    return W * (tangent + a[..., :, None] + b[..., None, :])
