r"""The knapsack polytope :math:`\{\mu \in [0,1]^k : l \le \langle\mu, \mathbf{1}\rangle \le u\}`.

Paper §4, "Knapsack polytope", Proposition 3 and Appendix "Projection onto the knapsack
polytope". With integer bounds :math:`0 \le l \le u \le k` the polytope is integral: it is
the marginal polytope of the label subsets :math:`y \subseteq [k]` with
:math:`l \le |y| \le u`, under the indicator encoding :math:`\varphi(y) \in \{0,1\}^k`.

Projections (Proposition 3): let :math:`\nu` be the projection of
:math:`\nabla\Psi^*(\theta)` onto the unit cube (``clip(theta, 0, 1)``, or
:math:`\min(1, e^{\theta-1})` for KL). If :math:`l \le \langle\nu,\mathbf{1}\rangle \le u`,
:math:`\nu` is the projection; otherwise the projection lies on the capped simplex
:math:`\{\mu \in [0,1]^k : \langle\mu,\mathbf{1}\rangle = m\}`, with :math:`m = u` when
:math:`\langle\nu,\mathbf{1}\rangle > u` and :math:`m = l` when it is :math:`< l`:

- Euclidean: :math:`\mu = \operatorname{clip}_{[0,1]}(\theta - \tau)` with :math:`\tau` the
  root of the piecewise-linear, non-increasing
  :math:`f(\tau) = \sum_i \operatorname{clip}_{[0,1]}(\theta_i - \tau)`, located exactly
  among its :math:`2k` sorted breakpoints :math:`\{\theta_i, \theta_i - 1\}`
  (:func:`project_capped_simplex`, :math:`O(k\log k)`);
- KL: the constrained softmax of Martins & Kreutzer (2017, "Learning what's easy: fully
  differentiable neural easy-first taggers"),
  :math:`\mu_i = \min(1, e^{\theta_i - 1 - \tau})`, by fixing the capped coordinates in
  rounds (each round one pass over the row, no sort; exponentials relative to a maximum,
  so nothing overflows) (:func:`kl_project_capped_simplex`, :math:`O(k)` per round).

MAP (paper §4): with :math:`\pi` sorting :math:`\theta` in descending order, take
:math:`\pi_1..\pi_l`, then those of :math:`\pi_{l+1}..\pi_u` with :math:`\theta > 0`.

Projections run as compiled per-row kernels (:mod:`projloss._numba`; the Euclidean one
after a batched ``np.sort`` of the rows that need it): samples of one batch may fall into
different branches (cube / sum = u / sum = l); no Python loop over samples.

The array-API oracles (``xp_project``, ``xp_project_jvp``, ``xp_argmax``: PyTorch tensors
on any device, NumPy arrays; :mod:`projloss._xp`) solve the same capped simplices exactly
with sorts, cumulative sums and a doubling scan instead of sequential loops
(:func:`_xp_capped_euclidean`, :func:`_xp_capped_kl`); their Jacobian is closed form on
the face of the solution: :math:`\operatorname{diag}(w) - w w^\top / \langle w,
\mathbf{1}\rangle` on the sum = m face, :math:`\operatorname{diag}(w)` on the cube, with
:math:`w = \mathbf{1}_F` (Euclidean) or :math:`u \odot \mathbf{1}_F` (KL) on the free
entries :math:`F`.
"""

from __future__ import annotations

import itertools
import numbers
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._numba import kernel
from .base import ConvexSet, check_binary
from .jacobians import DiagonalMinusRankOne, Jacobians
from .simplex import as_rows

# ---------------------------------------------------------------------- capped simplex
# The kernels below act on the rows ``rows`` of ``x`` (n, k) whose budget ``budget[r]``
# is set (>= 0; -1 elsewhere) and write ``out[r]``; the others are left alone. A budget of
# 0 or k (the single-vertex cases) gives 0 or 1. Compiled loops (projloss._numba): each
# threshold search is sequential within a row.


@kernel
def _budgets(x, lo, hi, budget):
    # Proposition 3 (Euclidean), first step: budget[r] = the capped-simplex budget (u or l)
    # where the sum of clip(x[r], 0, 1) leaves [lo, hi], else -1.
    n, k = x.shape
    for r in range(n):
        total = 0.0
        for i in range(k):
            total += min(max(x[r, i], 0.0), 1.0)
        budget[r] = hi if total > hi else (lo if total < lo else -1.0)


@kernel
def _capped_euclidean_rows(x, asc, rows, budget, out):
    # asc[j] = row rows[j] of x sorted in ascending order (asc may be out when rows are
    # all the rows: a row of asc is read in full before the row of out is written).
    # Rows with budget < 0 get the cube projection clip(x, 0, 1).
    k = x.shape[1]
    for j in range(rows.size):
        r = rows[j]
        m = budget[r]
        if m < 0.0:
            for i in range(k):
                out[r, i] = min(max(x[r, i], 0.0), 1.0)
            continue
        if m == 0.0 or m >= k:
            out[r, :] = 0.0 if m <= 0.0 else 1.0
            continue
        # Walk down the 2k breakpoints of f(tau) = sum_i clip(s_i - tau, 0, 1) in
        # decreasing order, merging the two sorted lists s_b (entry b enters the support)
        # and s_a - 1 (entry a reaches the cap) -- s in descending order, shifted by its
        # max so that the partial sums stay small. With a entries capped and b in the
        # support, f(z) = a + (C_b - C_a) - (b - a) z (C = partial sums of s), linear
        # between breakpoints; stop at the first breakpoint z with f(z) >= m: the root
        # lies on the piece just above it.
        top = asc[j, k - 1]
        na = 0
        nb = 0
        ca = 0.0
        cb = 0.0
        while True:
            zu = asc[j, k - 1 - nb] - top if nb < k else -np.inf
            zl = asc[j, k - 1 - na] - top - 1.0
            z = zu if zu >= zl else zl
            f = na + (cb - ca) - (nb - na) * z
            if f >= m or (na == k - 1 and zu < zl):  # (na never passes k - 1)
                break
            if zu >= zl:
                cb += zu
                nb += 1
            else:
                ca += zl + 1.0
                na += 1
        # nb == na only on a flat piece where f == m up to rounding: any tau there is a
        # root.
        tau = (na + cb - ca - m) / (nb - na) if nb > na else z
        for i in range(k):
            out[r, i] = min(max((x[r, i] - top) - tau, 0.0), 1.0)


#: When the largest uncapped exponential (relative to the row max) falls below this, the
#: uncapped exponentials are recomputed relative to their own max. Then the threshold T
#: stays >= _RESCALE / k, so every output mu = e / T above ~1e-290 comes from an
#: exponential e that did not underflow: full relative precision (which log-losses need).
_RESCALE = 1e-16


@kernel(reassoc=True)
def _uncapped_stats(out):
    # Sum and max of the uncapped entries (out >= 0) of one row.
    total = 0.0
    big = 0.0
    for i in range(out.size):
        e = max(out[i], 0.0)
        total += e
        big = max(big, e)
    return total, big


@kernel
def _rescale(x, out):
    # Exponentials of the uncapped entries relative to their own max (the capped ones
    # are marked -1).
    c = -np.inf
    for i in range(x.size):
        if out[i] >= 0.0:
            c = max(c, x[i])
    for i in range(x.size):
        if out[i] >= 0.0:
            out[i] = np.exp(x[i] - c)


@kernel(reassoc=True)
def _fix_caps(x, m, out):
    # One row, 0 < m < k: out holds e = exp(x - max x) on entry, mu on exit.
    # mu_i = min(1, e_i / T) with sum(mu) = m. Dropping the caps of the uncapped entries
    # gives T = sum(uncapped e) / (m - #capped), which can only be too large (the relaxed
    # sum is larger), so every e_i > T is capped in the solution too: cap them (mark
    # out = -1) and repeat until none is added. One branch-free pass per round (the sums
    # of positive terms may be reordered: reassoc).
    k = x.size
    total, big = _uncapped_stats(out)
    capped = 0
    while True:
        if big < _RESCALE:  # the uncapped entries are tiny next to the capped ones
            _rescale(x, out)
            total, big = _uncapped_stats(out)
        thresh = total / (m - capped)
        added = 0
        total = 0.0
        big = 0.0
        for i in range(k):
            e = out[i]
            # Strictly above: an entry equal to T gets mu = 1 uncapped as well, and capping
            # it when T merely rounds to it (e.g. a dominant entry, T = 1 + 1e-20) would use
            # the budget up and zero the tiny entries.
            cap = e > thresh
            out[i] = -1.0 if cap else e
            v = 0.0 if cap else max(e, 0.0)
            total += v
            big = max(big, v)
            added += 1 if cap else 0
        if added == 0:
            break
        capped += added
        if capped >= m:  # (cannot happen: each round caps < m - capped entries)
            thresh = np.inf
            break
    for i in range(k):
        e = out[i]
        out[i] = 1.0 if e < 0.0 else e / thresh


@kernel
def _exp_shifted(x, out):
    # out = exp(x - max x) for one row.
    c = x[0]
    for i in range(1, x.size):
        c = max(c, x[i])
    for i in range(x.size):
        out[i] = np.exp(x[i] - c)


@kernel
def _capped_kl_rows(x, rows, budget, out):
    k = x.shape[1]
    for j in range(rows.size):
        r = rows[j]
        m = budget[r]
        if m <= 0.0 or m >= k:
            out[r, :] = 0.0 if m <= 0.0 else 1.0
            continue
        _exp_shifted(x[r], out[r])
        _fix_caps(x[r], m, out[r])


#: Rows whose max c lies in [-_SHARED, _SHARED] take one exponential per entry for both
#: the cube projection nu = min(1, e^{x - 1}) and the capped solution e^{x - c}: entries
#: x < 1 get nu = e^{x - 1}, and e^{x - c} = nu e^{1 - c} (no overflow; nu underflows only
#: where e^{x - c} < e^{-744 + _SHARED}, a denormal anyway); entries x >= 1 have nu = 1 and
#: get e^{x - c}. Other rows take a second exponential per entry when capped.
_SHARED = 30.0


@kernel
def _knapsack_kl_rows(x, lo, hi, out):
    # Proposition 3 for each row: the cube projection, or the capped simplex at u or l.
    n, k = x.shape
    for r in range(n):
        xr = x[r]
        o = out[r]
        c = xr[0]
        for i in range(1, k):
            c = max(c, xr[i])
        shared = -_SHARED <= c <= _SHARED
        total = 0.0
        for i in range(k):
            xi = xr[i]
            low = xi < 1.0
            # (one exponential whichever the branch: a select, not a second call)
            v = np.exp(xi - 1.0 if low or not shared else xi - c)
            o[i] = v
            total += v if low else 1.0
        if lo <= total <= hi:
            for i in range(k):
                if xr[i] >= 1.0:
                    o[i] = 1.0
            continue
        m = hi if total > hi else lo
        if m <= 0.0 or m >= k:
            o[:] = 0.0 if m <= 0.0 else 1.0
            continue
        if shared:
            g = np.exp(1.0 - c)
            for i in range(k):
                if xr[i] < 1.0:
                    o[i] *= g
        else:
            _exp_shifted(xr, o)
        _fix_caps(xr, m, o)


def _capped(theta: ArrayLike, m: ArrayLike, kl: bool) -> NDArray[np.float64]:
    x, shape = as_rows(theta)
    budget = np.ascontiguousarray(np.broadcast_to(np.asarray(m, dtype=np.float64), shape[:-1]))
    budget = budget.reshape(-1)
    rows = np.arange(len(x))
    if kl:
        out = np.empty_like(x)
        if x.size:
            _capped_kl_rows(x, rows, budget, out)
    else:
        out = np.sort(x, axis=1)  # sorted in place of the output
        if x.size:
            _capped_euclidean_rows(x, out, rows, budget, out)
    return out.reshape(shape)


def project_capped_simplex(theta: ArrayLike, m: ArrayLike) -> NDArray[np.float64]:
    r"""Euclidean projection onto :math:`\{\mu \in [0,1]^k : \langle\mu,\mathbf{1}\rangle = m\}`.

    Batched over the leading axes of ``theta`` (``(..., k)``); ``m`` broadcasts to
    ``theta.shape[:-1]`` and must lie in ``[0, k]`` (not validated). The solution is
    :math:`\operatorname{clip}_{[0,1]}(\theta - \tau)` where :math:`\tau` solves
    :math:`f(\tau) = \sum_i \operatorname{clip}_{[0,1]}(\theta_i - \tau) = m`; :math:`f` is
    piecewise linear and non-increasing with breakpoints :math:`\{\theta_i, \theta_i - 1\}`.
    Each row is sorted once (a batched ``np.sort``), then a compiled scan walks the
    :math:`2k` breakpoints in decreasing order -- merging the two sorted lists
    :math:`\theta_{(i)}` and :math:`\theta_{(i)} - 1` -- with running partial sums, up to
    the piece where :math:`f` crosses :math:`m`, and interpolates: :math:`\tau` exactly
    (up to rounding), in :math:`O(k\log k)`. This is the sort-based counterpart of Pardalos
    & Kovoor (1990) and of the bisection of the paper's Appendix; hand-written because no
    library provides it batched.

    Parameters
    ----------
    theta : array-like of shape (..., k)
        Scores, at least 1-D, converted to float64; not validated.
    m : float or array-like broadcastable to theta.shape[:-1]
        The sum :math:`m \in [0, k]` of each projection (not validated).

    Returns
    -------
    ndarray of shape theta.shape, dtype float64
        The projections: entries in :math:`[0, 1]` summing to ``m`` along the last axis.

    Examples
    --------
    >>> import numpy as np
    >>> print(np.round(project_capped_simplex(np.array([2.0, 0.5, 0.2, -1.0]), 2), 6))
    [1.   0.65 0.35 0.  ]
    """
    return _capped(theta, m, kl=False)


def kl_project_capped_simplex(theta: ArrayLike, m: ArrayLike) -> NDArray[np.float64]:
    r"""KL projection onto :math:`\{\mu \in [0,1]^k : \langle\mu,\mathbf{1}\rangle = m\}`.

    The constrained softmax (Martins & Kreutzer 2017):
    :math:`\operatorname{argmin}_\mu \langle\mu,\log\mu\rangle - \langle\mu,\theta\rangle`
    s.t. :math:`\langle\mu,\mathbf{1}\rangle = m, \mu \le 1`, whose solution is
    :math:`\mu_i = \min(1, e^{\theta_i}/T)` for the :math:`T` that gives the sum :math:`m`.
    Computed without sorting, by fixing caps (Martins & Kreutzer's algorithm without the
    sort): with the set :math:`A` of entries already capped, drop the caps of the others
    and solve :math:`T_A = \sum_{i \notin A} e^{\theta_i} / (m - |A|)`; since this relaxed
    sum is never smaller, :math:`T_A \ge T` and every :math:`e^{\theta_i} > T_A` is capped
    in the solution too. Add them to :math:`A` and repeat; when none is added the relaxed
    solution is feasible, hence optimal. The exponentials are taken relative to the row's
    maximum (no overflow), and again relative to the maximum of the uncapped entries when
    those are tiny next to it (no underflow of an output above ~1e-290); each round is one
    pass over the row (a compiled loop; a few rounds on typical inputs, at most
    :math:`m`). Batched over the leading axes; ``m`` broadcasts to
    ``theta.shape[:-1]`` and must lie in ``[0, k]`` (not validated).

    Parameters
    ----------
    theta : array-like of shape (..., k)
        Scores, at least 1-D, converted to float64; not validated.
    m : float or array-like broadcastable to theta.shape[:-1]
        The sum :math:`m \in [0, k]` of each projection (not validated).

    Returns
    -------
    ndarray of shape theta.shape, dtype float64
        The projections: entries in :math:`[0, 1]` summing to ``m`` along the last axis.

    Examples
    --------
    >>> import numpy as np
    >>> mu = kl_project_capped_simplex(np.array([5.0, 0.0, 0.0, np.log(2.0)]), 2)
    >>> print(np.round(mu, 6))  # the first capped at 1, the rest in ratio 1 : 1 : 2
    [1.   0.25 0.25 0.5 ]
    """
    return _capped(theta, m, kl=True)


# ---------------------------------------------------------------------- array-API oracles
# The same projections written once against the array API standard (PyTorch tensors on any
# device, NumPy arrays; see projloss._xp), bound to the kernels above by
# tests/projloss/sets/test_knapsack_xp.py. Every row goes through one vectorized path: the
# rows of a batch that fall into different branches (cube / sum = u / sum = l) are computed
# alike and selected with ``where``.


def _gather(xp: Any, x: Any, index: Any) -> Any:
    """``x[..., index[...]]`` along the last axis (``index`` has shape ``x.shape[:-1]``)."""
    return xp.take_along_axis(x, index[..., None], axis=-1)[..., 0]


def _sort_descending(x: Any) -> tuple[Any, Any]:
    """The values and indices of ``x`` sorted in decreasing order along the last axis
    (``torch.sort`` gives both from one kernel; the array API standard has ``sort`` and
    ``argsort`` apart). Not stable: the callers do not depend on the order of ties."""
    from .._xp import is_torch

    if is_torch(x):
        values, indices = x.sort(dim=-1, descending=True)
        return values, indices
    x = np.asarray(x)
    indices = np.argsort(-x, axis=-1)
    return np.take_along_axis(x, indices, axis=-1), indices


def _suffix_ratio_sums(xp: Any, ts: Any, length: int) -> Any:
    r""":math:`S_j = \sum_{i \ge j} e^{t_i - t_j}` for :math:`j <` ``length`` along the last
    axis of ``ts`` sorted in decreasing order, without a common frame.

    The last one, :math:`S_{L-1}`, is a plain sum of terms :math:`\le 1`; the others follow
    from the linear recurrence :math:`S_j = 1 + a_j S_{j+1}` with the neighbour ratios
    :math:`a_j = e^{t_{j+1} - t_j} \in [0, 1]`, solved by a doubling scan over pairs
    (window product, window sum) in :math:`\lceil\log_2 L\rceil` vectorized steps. Every
    quantity lies in :math:`[0, k]` and only differences of nearby entries enter, so
    :math:`S_j` keeps full relative precision whatever :math:`|t|` (a cumulative
    logsumexp in a common frame loses :math:`\mathrm{ulp}(|t|)`: 0.5 in float32 at
    :math:`4\cdot 10^6`). :math:`O(k + L \log L)`."""
    head = ts[..., :length]
    last = ts[..., length - 1 : length]
    tail = xp.sum(xp.exp(ts[..., length - 1 :] - last), axis=-1, keepdims=True)
    zero = xp.zeros_like(last)
    prod = xp.concat([xp.exp(head[..., 1:] - head[..., :-1]), zero], axis=-1)  # 0 past L
    total = xp.concat([xp.ones_like(head[..., 1:]), tail], axis=-1)
    width = 1
    while width < length:
        pad = xp.zeros_like(head[..., :width])
        total = total + prod * xp.concat([total[..., width:], pad], axis=-1)
        prod = prod * xp.concat([prod[..., width:], pad], axis=-1)
        width *= 2
    return total


def _xp_capped_euclidean(xp: Any, theta: Any, m: Any) -> Any:
    r"""Euclidean projection onto :math:`\{\mu \in [0,1]^k : \langle\mu,\mathbf{1}\rangle
    = m\}` on an array-API ``theta`` ``(..., k)``, ``m`` of shape ``theta.shape[:-1]`` in
    ``[0, k]`` (the array-API twin of :func:`project_capped_simplex`).

    :math:`\mu = \operatorname{clip}_{[0,1]}(\theta - \tau)` with :math:`\tau` the root of
    the piecewise-linear, non-increasing
    :math:`f(\tau) = \sum_i \operatorname{clip}_{[0,1]}(\theta_i - \tau)`. Its :math:`2k`
    breakpoints :math:`z \in \{\theta_i\} \cup \{\theta_i - 1\}` are sorted in decreasing
    order (one sort; the order of ties is immaterial: it only splits zero-length pieces);
    between breakpoints :math:`z_{p+1} < \tau < z_p` the slope is
    :math:`-n_p` with :math:`n_p` the number of free entries, the cumulative count of the
    breakpoints :math:`\theta_i` (+1, entry :math:`i` enters the support) and
    :math:`\theta_i - 1` (-1, it reaches the cap) up to :math:`p`. Hence
    :math:`f(z_j) = \sum_{p<j} n_p (z_p - z_{p+1})`, a cumulative sum of non-negative terms
    (no cancellation, and shift-invariant: no frame to choose even at
    :math:`|\theta| = 10^6`). With :math:`j` the first breakpoint where :math:`f(z_j) \ge m`,
    the root lies on the piece just above it, whose capped set
    :math:`A = \{i : \theta_i - 1 \ge z_{j-1}\}` and free set
    :math:`F = \{i : \theta_i \ge z_{j-1} > \theta_i - 1\}` give it in closed form:
    :math:`\tau = z_{j-1} - \delta`,
    :math:`\delta = (m - |A| - \sum_F (\theta_i - z_{j-1})) / |F|` (terms in
    :math:`[0, 1]`, exact differences: float32 reaches ~1e-7). The same piece search as
    the engine's merge of the two sorted breakpoint lists, done with a sort and cumulative
    sums instead of a sequential walk: exact up to rounding, :math:`O(k \log k)`, no
    iteration. ``m = 0`` and ``m = k`` give 0 and 1.
    """
    k = theta.shape[-1]
    shifted = theta - 1.0
    zs, order = _sort_descending(xp.concat([theta, shifted], axis=-1))
    # n_p = (number of theta_i among z_0..z_p) - (number of theta_i - 1 among them)
    entered = xp.cumulative_sum(xp.astype(order < k, theta.dtype), axis=-1)
    n = 2.0 * entered - xp.arange(1, 2 * k + 1, dtype=theta.dtype, device=_xp_device(theta))
    steps = n[..., :-1] * (zs[..., :-1] - zs[..., 1:])
    f = xp.cumulative_sum(steps, axis=-1, include_initial=True)
    # j = the number of breakpoints with f < m (f is non-decreasing, f(z_0) = 0).
    below = xp.count_nonzero(f < m[..., None], axis=-1)
    top = _gather(xp, zs, xp.clip(below - 1, 0, 2 * k - 1))[..., None]  # z_{j-1}
    # On the piece below z_{j-1} (no breakpoint inside): entry i is capped iff
    # theta_i - 1 >= z_{j-1}, free iff theta_i >= z_{j-1} > theta_i - 1. Solve
    # m = |A| + sum_F (theta_i - z_{j-1}) + |F| delta, tau = z_{j-1} - delta, with plain
    # sums of terms in [0, 1] (more accurate than f's cumulative sum: m - |A| is exact).
    # (m = 0 gives top = max theta, no entry capped, delta = 0: mu = 0 exactly.)
    d = theta - top
    capped = shifted >= top
    free = xp.astype((d >= 0.0) & ~capped, theta.dtype)
    n_capped = xp.astype(xp.count_nonzero(capped, axis=-1), theta.dtype)
    n_free = xp.sum(free, axis=-1)
    excess = xp.sum(free * d, axis=-1)
    delta = ((m - n_capped) - excess) / xp.where(n_free > 0.0, n_free, xp.ones_like(n_free))
    delta = xp.where(m >= k, xp.full_like(delta, float("inf")), delta)  # m = k: all ones
    return xp.clip(d + delta[..., None], 0.0, 1.0)


def _xp_capped_kl(xp: Any, theta: Any, m: Any, m_max: int | None = None) -> Any:
    r"""KL projection onto :math:`\{\mu \in [0,1]^k : \langle\mu,\mathbf{1}\rangle = m\}`
    on an array-API ``theta`` ``(..., k)``, ``m`` of shape ``theta.shape[:-1]`` in
    ``[0, k]`` (the array-API twin of :func:`kl_project_capped_simplex`); ``m_max``, a
    bound on ``m`` known in advance (the knapsack's ``u``), limits the search to the
    ``m_max`` largest entries.

    The constrained softmax :math:`\mu_i = \min(1, e^{\theta_i}/T)` (Martins & Kreutzer
    2017, with the capped prefix found in one pass rather than by fixing caps in rounds).
    With :math:`\theta_{(0)} \ge \dots \ge \theta_{(k-1)}` sorted, the capped entries are
    a prefix; for a prefix of size :math:`j < m` the rest of the budget goes to a softmax
    of the suffix: :math:`T_j = e^{\theta_{(j)}} S_j / (m - j)` with the ratio sums
    :math:`S_j = \sum_{i \ge j} e^{\theta_{(i)} - \theta_{(j)}} \ge 1`
    (:func:`_suffix_ratio_sums`). The solution's prefix :math:`j^*` is the first :math:`j`
    whose largest uncapped entry fits, :math:`e^{\theta_{(j)}} \le T_j`, i.e.
    :math:`m - j \le S_j`: for every :math:`j < j^*`, :math:`T_j` is a weighted average of
    :math:`e^{\theta_{(j)}} \ge \dots \ge e^{\theta_{(j^*-1)}} \ge T^*` and :math:`T^*`,
    so :math:`T_j \le e^{\theta_{(j)}}`, with equality only where those entries equal
    :math:`T^*` (then :math:`T_j = T^*`: the same solution); every :math:`j \ge m - 1`
    qualifies. Then :math:`\mu_i = e^{\min(0,\, \theta_i - \theta_{(j^*)} - \log T')}`,
    :math:`\log T' = \log S_{j^*} - \log(m - j^*)`: only differences of nearby entries
    and quantities in :math:`[1, k]` enter, so nothing overflows at
    :math:`|\theta| = 10^6`, float32 keeps ~1e-6 there too, and the outputs keep full
    relative precision down to the underflow threshold. Exact (no iteration),
    :math:`O(k \log k)`.
    """
    k = theta.shape[-1]
    length = k if m_max is None else max(1, min(m_max, k))
    ts = xp.sort(theta, axis=-1, descending=True)
    sums = _suffix_ratio_sums(xp, ts, length)
    j = xp.astype(xp.arange(length, device=_xp_device(theta)), theta.dtype)
    rest = m[..., None] - j
    # theta_(j) <= log T_j  <=>  m - j <= S_j (true for every j >= m - 1, as S_j >= 1).
    first = xp.argmax(xp.astype(rest <= sums, theta.dtype), axis=-1)
    top = _gather(xp, ts, first)
    budget = _gather(xp, rest, first)
    budget = xp.where(budget > 0.0, budget, xp.ones_like(budget))  # (m = 0 rows only)
    log_t = xp.log(_gather(xp, sums, first)) - xp.log(budget)  # log T - theta_(j*)
    inf = xp.full_like(log_t, float("inf"))
    log_t = xp.where(m <= 0.0, inf, xp.where(m >= k, -inf, log_t))  # all zeros / all ones
    return xp.exp(xp.clip((theta - top[..., None]) - log_t[..., None], None, 0.0))


def _xp_top(xp: Any, theta: Any, ts: Any, count: int) -> Any:
    """Mask of the first ``count`` entries of ``theta`` in a stable decreasing order
    (``ts``: ``theta`` sorted in decreasing order): those above the ``count``-th largest
    value ``v``, then the entries equal to ``v`` in index order until ``count`` are
    taken. One pass and a cumulative count instead of a second sort for the ranks."""
    if count <= 0:
        return xp.zeros_like(theta, dtype=xp.bool)
    v = ts[..., count - 1 : count]
    above = theta > v
    tied = theta == v
    room = count - xp.sum(xp.astype(above, xp.int64), axis=-1, keepdims=True)
    return above | (tied & (xp.cumulative_sum(xp.astype(tied, xp.int64), axis=-1) <= room))


def _xp_device(x: Any) -> Any:
    from .._xp import device

    return device(x)


# ---------------------------------------------------------------------- the set
def _check_bound(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"the knapsack {name} bound must be an integer, got {value!r}")
    if not float(value).is_integer():
        raise ValueError(
            f"the knapsack {name} bound must be an integer (non-integer bounds make the "
            f"polytope non-integral), got {value!r}"
        )
    if value < 0:
        raise ValueError(f"the knapsack {name} bound must be non-negative, got {value!r}")
    return int(value)


class Knapsack(ConvexSet):
    r""":math:`\{\mu \in [0,1]^k : l \le \langle\mu,\mathbf{1}\rangle \le u\}`.

    Parameters
    ----------
    lower : int, default 0
        The lower bound :math:`l \ge 0` on the number of labels.
    upper : int or None, default None
        The upper bound :math:`u \ge l`; ``None`` means :math:`u = k` (no upper bound).
        Must not exceed the size ``k`` of the points it is used with.

    Raises
    ------
    ValueError
        If a bound is not a non-negative integer, or ``lower > upper``.

    Examples
    --------
    >>> import numpy as np
    >>> s = Knapsack(lower=1, upper=2)  # between 1 and 2 labels
    >>> theta = np.array([0.9, 0.8, 0.7, 0.1])
    >>> print(np.round(s.project(theta), 6))
    [0.766667 0.666667 0.566667 0.      ]
    >>> print(np.round(s.project(theta, "kl"), 6))
    [0.630339 0.570354 0.516078 0.283229]
    >>> print(s.argmax(theta), len(s.vertices(4)))
    [1. 1. 0. 0.] 10
    """

    name: ClassVar[str] = "knapsack"
    newton_first: ClassVar[bool] = False  # steps stall at the budget's kinks: L-BFGS first
    encodings: ClassVar[tuple[str, ...]] = ("indicator",)
    decodes: ClassVar[tuple[str, ...]] = ("indicator",)
    #: the bounds are the multilabel estimators' own (``upper="auto"`` from the labels)
    estimator_params: ClassVar[dict[str, tuple[str, Any]]] = {
        "lower": ("knapsack_lower", 0),
        "upper": ("knapsack_upper", "auto"),
    }

    @classmethod
    def run_params(cls, params: dict[str, Any]) -> dict[str, str]:
        """``knapsack``: the bounds ``lower..upper`` (e.g. ``0..auto``).

        Parameters
        ----------
        params : dict of str to Any
            The configured ``lower`` and ``upper`` (defaults ``0`` and ``"auto"``).

        Returns
        -------
        dict of str to str
            ``{"knapsack": "<lower>..<upper>"}``.

        Examples
        --------
        >>> Knapsack.run_params({"upper": 3})
        {'knapsack': '0..3'}
        """
        return {"knapsack": f"{params.get('lower', 0)}..{params.get('upper', 'auto')}"}

    def projection_jacobians(
        self,
        theta: NDArray[np.float64],
        u: NDArray[np.float64],
        geometry: str,
        event_shape: tuple[int, ...],
    ) -> Jacobians | None:
        """Euclidean: :func:`knapsack_jacobians` (diagonal minus rank one); KL: none.

        Parameters
        ----------
        theta : ndarray of shape (n, k), dtype float64
            The scores, one point per row.
        u : ndarray of shape (n, k), dtype float64
            Their projections.
        geometry : {"euclidean", "kl"}
            The geometry of the projection.
        event_shape : tuple of int
            ``(k,)``.

        Returns
        -------
        DiagonalMinusRankOne or None
            Euclidean: the free entries' identity, minus their averaging where the
            budget is active; KL: ``None`` (finite differences).
        """
        return knapsack_jacobians(self, theta, u) if geometry == "euclidean" else None

    def cheap_jacobians(self, geometry: str) -> bool:
        """Euclidean only (its Jacobians are diagonal minus rank one; KL has none).

        Parameters
        ----------
        geometry : {"euclidean", "kl"}
            The geometry of the projection.

        Returns
        -------
        bool
            Whether ``geometry`` is ``"euclidean"``.
        """
        return geometry == "euclidean"

    def __init__(self, lower: int = 0, upper: int | None = None) -> None:
        self.lower = _check_bound(lower, "lower")
        self.upper = None if upper is None else _check_bound(upper, "upper")
        if self.upper is not None and self.lower > self.upper:
            raise ValueError(
                f"the knapsack bounds must satisfy lower <= upper, got lower = {self.lower} "
                f"> upper = {self.upper}"
            )

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters (for the repr, ``==``, configs and logging).

        Returns
        -------
        dict of str to Any
            ``{"lower": lower, "upper": upper}`` (``upper`` may be None).
        """
        return {"lower": self.lower, "upper": self.upper}

    def _check_size(self, k: int) -> None:
        if self.upper is not None and self.upper > k:
            raise ValueError(
                f"the knapsack upper bound u = {self.upper} exceeds the size k = {k} "
                "(need 0 <= l <= u <= k)"
            )
        if self.lower > k:
            raise ValueError(
                f"the knapsack lower bound l = {self.lower} exceeds the size k = {k} "
                "(need 0 <= l <= u <= k)"
            )

    def _bounds(self, k: int) -> tuple[int, int]:
        return self.lower, k if self.upper is None else self.upper

    # ------------------------------------------------------------------ projections
    def _project(self, theta: NDArray[np.float64], kl: bool) -> NDArray[np.float64]:
        """Proposition 3: the cube projection, unless its sum leaves [l, u]; then the
        capped-simplex projection at sum = u (above) or l (below)."""
        x, shape = as_rows(theta)
        k = shape[-1]
        lo, hi = self._bounds(k)
        if lo == 0 and hi == k:  # the whole cube
            return np.exp(np.minimum(theta - 1.0, 0.0)) if kl else np.clip(theta, 0.0, 1.0)
        if kl:
            out = np.empty_like(x)
            _knapsack_kl_rows(x, float(lo), float(hi), out)
            return out.reshape(shape)
        budget = np.empty(len(x))
        _budgets(x, float(lo), float(hi), budget)
        rows = np.flatnonzero(budget >= 0.0)
        if 2 * rows.size >= len(x):
            # Mostly capped: sort every row in place of the output (a single allocation:
            # fresh memory costs as much as the sort itself on this kind of machine).
            out = np.sort(x, axis=1)
            _capped_euclidean_rows(x, out, np.arange(len(x)), budget, out)
        else:  # mostly inside: clip, and sort only the capped rows
            out = np.clip(x, 0.0, 1.0)
            if rows.size:
                sub = x[rows]
                sub.sort(axis=1)
                _capped_euclidean_rows(x, sub, rows, budget, out)
        return out.reshape(shape)

    def _project_euclidean(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._project(theta, kl=False)

    def _project_kl(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._project(theta, kl=True)

    def _argmax(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        k = theta.shape[-1]
        lo, hi = self._bounds(k)
        positive = theta > 0
        if lo == 0 and hi == k:
            return positive.astype(np.float64)
        # rank[i] = position of theta_i in the descending order (stable: ties -> first index).
        order = np.argsort(-theta, axis=-1, kind="stable")
        rank = np.empty(theta.shape, dtype=np.int64)
        np.put_along_axis(rank, order, np.arange(k), axis=-1)
        chosen = (rank < hi) & positive
        if lo > 0:
            chosen |= rank < lo
        return chosen.astype(np.float64)

    # ------------------------------------------------------------------ array-API oracles
    def _xp_budget(self, xp: Any, nu: Any) -> tuple[Any, Any]:
        """Proposition 3's branch from the cube projection ``nu``: the budget
        ``m = clip(sum(nu), l, u)`` and whether the sum constraint is active (``m`` is
        ``l`` or ``u``, not the sum itself)."""
        lo, hi = self._bounds(nu.shape[-1])
        total = xp.sum(nu, axis=-1)
        m = xp.clip(total, float(lo), float(hi))
        return m, (total < lo) | (total > hi)

    def _xp_project(self, theta: Any, geometry: str, xp: Any) -> Any:
        r"""Proposition 3 on an array-API ``theta``: the cube projection :math:`\nu`
        (``clip(theta, 0, 1)``, or :math:`\min(1, e^{\theta-1})` for KL) where
        :math:`l \le \langle\nu,\mathbf{1}\rangle \le u`, else the capped-simplex
        projection at the budget :math:`m \in \{l, u\}` it leaves through
        (:func:`_xp_capped_euclidean`, :func:`_xp_capped_kl`: exact sort-based solutions,
        :math:`O(k\log k)`, no iteration). One vectorized path for the whole batch."""
        kl = geometry == "kl"
        nu = xp.exp(xp.clip(theta - 1.0, None, 0.0)) if kl else xp.clip(theta, 0.0, 1.0)
        lo, hi = self._bounds(theta.shape[-1])
        if lo == 0 and hi == theta.shape[-1]:
            return nu
        m, active = self._xp_budget(xp, nu)
        if kl:
            capped = _xp_capped_kl(xp, theta, m, m_max=hi)
        else:
            capped = _xp_capped_euclidean(xp, theta, m)
        return xp.where(active[..., None], capped, nu)

    def _xp_project_jvp(self, theta: Any, u: Any, tangent: Any, geometry: str, xp: Any) -> Any:
        r""":math:`J_P(\theta)\,t` in closed form from the face of ``u``.

        Free entries :math:`F`: :math:`0 < u_i < 1` (Euclidean), :math:`u_i < 1` (KL).
        Where the sum constraint is inactive (the cube projection), :math:`J t = w \odot t`
        with :math:`w = \mathbf{1}_F` (Euclidean) or :math:`w = u \odot \mathbf{1}_F` (KL,
        :math:`\partial e^{\theta_i - 1} = e^{\theta_i - 1}`). Where it is active
        (:math:`\langle u,\mathbf{1}\rangle = m`), :math:`u_F = \nabla\Psi^*(\theta_F - \tau)`
        with :math:`\tau` moving so that :math:`\sum_F du_i = 0`, i.e.
        :math:`d\tau = \langle w, d\theta\rangle / \langle w, \mathbf{1}\rangle`, whence
        :math:`J t = w \odot t - w\,\langle w, t\rangle / \langle w, \mathbf{1}\rangle`
        (Euclidean: :math:`\mathbf{1}_F \odot (t - \langle\mathbf{1}_F, t\rangle / |F|)`;
        KL: :math:`u_F \odot (t - \langle u_F, t_F\rangle / \sum_F u_i)`). Symmetric
        (:math:`\operatorname{diag}(w) - w w^\top / \langle w, \mathbf{1}\rangle`). The
        branch is taken from ``theta`` as in :meth:`_xp_project`."""
        kl = geometry == "kl"
        if kl:
            w = u * xp.astype(u < 1.0, u.dtype)
        else:
            w = xp.astype((u > 0.0) & (u < 1.0), u.dtype)
        jt = w * tangent
        lo, hi = self._bounds(theta.shape[-1])
        if lo == 0 and hi == theta.shape[-1]:
            return jt
        nu = xp.exp(xp.clip(theta - 1.0, None, 0.0)) if kl else xp.clip(theta, 0.0, 1.0)
        _, active = self._xp_budget(xp, nu)
        mass = xp.sum(w, axis=-1)
        mass = xp.where(active & (mass > 0.0), mass, xp.full_like(mass, float("inf")))
        return jt - w * (xp.sum(jt, axis=-1) / mass)[..., None]

    def _xp_argmax(self, theta: Any, xp: Any) -> Any:
        """The MAP oracle of :meth:`_argmax`: the top-``l`` entries, then those of the top
        ``u`` with ``theta > 0``, ties to the first index (as the engine's stable sort)."""
        k = theta.shape[-1]
        lo, hi = self._bounds(k)
        positive = theta > 0.0
        if lo == 0 and hi == k:
            return xp.astype(positive, theta.dtype)
        ts = xp.sort(theta, axis=-1, descending=True)
        chosen = _xp_top(xp, theta, ts, hi) & positive
        if lo > 0:
            chosen = chosen | _xp_top(xp, theta, ts, lo)
        return xp.astype(chosen, theta.dtype)

    # ------------------------------------------------------------------ encoding
    def _check_indicators(self, y: ArrayLike, name: str, k: int | None) -> NDArray[np.float64]:
        arr = check_binary(y, name=name)
        size = arr.shape[-1]
        if k is not None and k != size:
            raise ValueError(f"{name} must have shape (..., k) with k = {k}, got {arr.shape}")
        self._check_size(size)
        lo, hi = self._bounds(size)
        count = arr.sum(axis=-1)
        if np.any((count < lo) | (count > hi)):
            raise ValueError(
                f"{name} must have between l = {lo} and u = {hi} ones per row (the knapsack "
                f"label-count bounds), got counts in [{int(count.min())}, {int(count.max())}]"
            )
        return arr

    def encode(self, y: ArrayLike, k: int | None = None) -> NDArray[np.float64]:
        """The 0/1 label indicator ``(..., k)``, validated against the count bounds.

        Parameters
        ----------
        y : array-like of shape (..., k)
            0/1 label indicators, with between ``lower`` and ``upper`` ones each.
        k : int or None, default=None
            The size; ``None``: ``y.shape[-1]``, which it must equal otherwise.

        Returns
        -------
        ndarray of shape y.shape, dtype float64
            ``y`` as float64.

        Raises
        ------
        ValueError
            If ``y`` is a scalar or not 0/1, if its size differs from ``k`` or is smaller
            than a bound, or if a row's count of ones lies outside the bounds.
        """
        return self._check_indicators(y, "y", k)

    def _xp_decode(self, v: Any, xp: Any) -> Any:
        """0/1 -> int64 indicators, on ``v``'s device."""
        return xp.astype(v, xp.int64)

    def decode(self, v: ArrayLike) -> NDArray[np.int64]:
        """The label indicator of vertices ``(..., k)`` as int64.

        Parameters
        ----------
        v : array-like of shape (..., k)
            Vertices: 0/1 vectors with between ``lower`` and ``upper`` ones.

        Returns
        -------
        ndarray of shape v.shape, dtype int64
            The 0/1 indicators.

        Raises
        ------
        ValueError
            If ``v`` is not 0/1, its size is smaller than a bound, or a row's count of
            ones lies outside the bounds.
        """
        return self._check_indicators(v, "v", None).astype(np.int64)

    def vertices(self, k: int) -> NDArray[np.float64]:
        """All binary vectors of length ``k`` with between ``l`` and ``u`` ones.

        Parameters
        ----------
        k : int
            The size (small: the ``2**k`` points of the cube are enumerated).

        Returns
        -------
        ndarray of shape (n_vertices, k), dtype float64
            The vertices, in lexicographic order.

        Raises
        ------
        ValueError
            If a bound exceeds ``k``.
        """
        self._check_size(k)
        lo, hi = self._bounds(k)
        cube = np.array(list(itertools.product([0.0, 1.0], repeat=k))).reshape(-1, k)
        count = cube.sum(axis=1)
        return cube[(count >= lo) & (count <= hi)]

    def _contains(self, u: NDArray[np.float64], atol: float) -> NDArray[np.bool_]:
        lo, hi = self._bounds(u.shape[-1])
        total = u.sum(axis=-1)
        in_cube = np.all((u >= -atol) & (u <= 1 + atol), axis=-1)
        return in_cube & (total >= lo - atol) & (total <= hi + atol)


def knapsack_jacobians(
    projection_set: Knapsack, theta: NDArray[np.float64], u: NDArray[np.float64]
) -> DiagonalMinusRankOne:
    r"""Jacobians of the Euclidean projection onto the knapsack polytope (Proposition 3),
    ``(n, p)`` rows ``theta`` and their projections ``u``.

    Inside the budget (the sum of :math:`\mathrm{clip}(\theta, 0, 1)` in :math:`[l, u]`)
    the projection is the clip: :math:`J = \mathrm{diag}(1_F)`, :math:`F` the coordinates
    with :math:`0 \le \theta_i \le 1` (closed: at a kink, the curved side, the
    largest-rank element of the generalized Jacobian). On a capped simplex
    (:math:`u = \mathrm{clip}(\theta - \tau, 0, 1)`, :math:`\sum u = m` fixed) the free
    coordinates :math:`F = \{0 < u_i < 1\}` move with :math:`\theta` less their mean:
    :math:`J = \mathrm{diag}(1_F) - 1_F 1_F^\top / |F|`. ``O(n p)``, no ``(p, p)``
    matrix."""
    p = theta.shape[1]
    lo, hi = projection_set._bounds(p)
    total = np.clip(theta, 0.0, 1.0).sum(axis=1)
    capped = (total > hi) | (total < lo)
    inside = (theta >= 0.0) & (theta <= 1.0)
    free = np.where(capped[:, None], (u > 0.0) & (u < 1.0), inside)
    d = free.astype(np.float64)
    size = d.sum(axis=1, keepdims=True)
    v = np.where(capped[:, None] & free, 1.0 / np.sqrt(np.maximum(size, 1.0)), 0.0)
    return DiagonalMinusRankOne(d, v)
