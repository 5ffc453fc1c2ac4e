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
  :math:`\mu_i = \min(1, e^{\theta_i - 1 - \tau})`, with the capped coordinates a prefix of
  the sorted :math:`\theta`, solved from one cumulative sum of shifted exponentials that
  cannot overflow (:func:`kl_project_capped_simplex`, :math:`O(k\log k)`).

MAP (paper §4): with :math:`\pi` sorting :math:`\theta` in descending order, take
:math:`\pi_1..\pi_l`, then those of :math:`\pi_{l+1}..\pi_u` with :math:`\theta > 0`.

Every oracle is vectorized over the whole batch; samples of one batch may fall into
different branches (cube / sum = u / sum = l), handled with masks.
"""

from __future__ import annotations

import itertools
import numbers
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .base import ConvexSet, check_binary
from .simplex import row_max, row_sum


# ---------------------------------------------------------------------- capped simplex
def _split_by_budget(theta: ArrayLike, m: ArrayLike, solve: Any) -> NDArray[np.float64]:
    """Apply ``solve(theta2d, m1d)`` to the rows with ``0 < m < k``; 0 / 1 for the others."""
    theta = np.asarray(theta, dtype=np.float64)
    shape = theta.shape
    k = shape[-1]
    t = theta.reshape(-1, k)
    mm = np.broadcast_to(np.asarray(m, dtype=np.float64), shape[:-1]).reshape(-1)
    mid = (mm > 0) & (mm < k)
    if mid.all():
        return solve(t, mm).reshape(shape)
    out = np.where((mm >= k)[:, None], 1.0, np.zeros_like(t))
    if mid.any():
        out[mid] = solve(t[mid], mm[mid])
    return out.reshape(shape)


def _euclidean_capped(t: NDArray[np.float64], m: NDArray[np.float64]) -> NDArray[np.float64]:
    # Rows of t: (n, k); budgets m: (n,) with 0 < m < k.
    n, k = t.shape
    # tau is shift-equivariant: centring each row on its max keeps the cumulative sums
    # small, which keeps the root accurate when |theta| is large.
    t = t - row_max(t)
    # f(tau) = sum_j w_j max(z_j - tau, 0) over the 2k breakpoints z = (t, t - 1) with
    # weights w = (+1, -1). With z sorted in descending order, A = cumsum(w z) and
    # B = cumsum(w) (B >= 0, integer), f(z_j) = A_j - B_j z_j is non-decreasing in j, and
    # on [z_{j+1}, z_j] f is linear: f(tau) = A_j - B_j tau. We sort y = -z in ascending
    # order (the same order, but contiguous arrays all along: reversed views make the
    # gathers and cumsums below several times slower); then A = -cumsum(w y).
    y = np.empty((n, 2 * k))
    np.negative(t, out=y[:, :k])
    np.subtract(1.0, t, out=y[:, k:])
    order = np.argsort(y, axis=1)
    ys = np.take_along_axis(y, order, axis=1)
    w = np.where(order < k, 1.0, -1.0)
    big_b = np.cumsum(w, axis=1)
    w *= ys
    neg_a = np.cumsum(w, axis=1)
    f = big_b * ys
    f -= neg_a
    # Last breakpoint with f < m (f_0 = 0 < m, f_{2k-1} = k > m): the root lies just left.
    j = np.count_nonzero(f < m[:, None], axis=1) - 1
    np.clip(j, 0, 2 * k - 1, out=j)
    rows = np.arange(n)
    a_j, b_j, z_j = -neg_a[rows, j], big_b[rows, j], -ys[rows, j]
    # b_j == 0 only on a flat piece where f == m up to rounding: any tau there is a root.
    tau = np.where(b_j > 0, (a_j - m) / np.maximum(b_j, 1.0), z_j)
    out = t - tau[:, None]
    np.clip(out, 0.0, 1.0, out=out)
    return out


def project_capped_simplex(theta: ArrayLike, m: ArrayLike) -> NDArray[np.float64]:
    r"""Euclidean projection onto :math:`\{\mu \in [0,1]^k : \langle\mu,\mathbf{1}\rangle = m\}`.

    Batched over the leading axes of ``theta`` (``(..., k)``); ``m`` broadcasts to
    ``theta.shape[:-1]`` and must lie in ``[0, k]`` (not validated). The solution is
    :math:`\operatorname{clip}_{[0,1]}(\theta - \tau)` where :math:`\tau` solves
    :math:`f(\tau) = \sum_i \operatorname{clip}_{[0,1]}(\theta_i - \tau) = m`; :math:`f` is
    piecewise linear and non-increasing with breakpoints :math:`\{\theta_i, \theta_i - 1\}`,
    so sorting the :math:`2k` breakpoints once, evaluating :math:`f` at all of them with
    cumulative sums and interpolating on the bracketing piece gives :math:`\tau` exactly
    (up to rounding), in :math:`O(k\log k)`. This is the sort-based counterpart of
    Pardalos & Kovoor (1990) and of the bisection of the paper's Appendix; hand-written
    because no library provides it batched.
    """
    return _split_by_budget(theta, m, _euclidean_capped)


#: Exponents (relative to the m-th largest entry) are clipped at this value.
_EXP_CAP = 600.0


def _kl_capped(t: NDArray[np.float64], m: NDArray[np.float64]) -> NDArray[np.float64]:
    # Rows of t: (n, k); budgets m: (n,) with 0 < m < k.
    n, k = t.shape
    rows = np.arange(n)
    asc = np.sort(t, axis=1)
    # Work in the linear domain relative to c = s_{m-1}, the m-th largest entry (0-based,
    # descending), instead of a reverse cumulative logaddexp: as safe, several times faster.
    # - For r <= m - 1 the tail sum tail_r = sum_{i >= r} exp(s_i - c) contains exp(0) = 1
    #   and otherwise non-negative terms: it never underflows to 0, and tail_{m-1} >= 1.
    # - Entries at positions >= m - 1 give terms <= 1. Clipping the exponents at _EXP_CAP
    #   (only entries at positions < m - 1 can reach it) rules out overflow; a clipped
    #   position r can never pass the test below, since then
    #   tail_r <= (m - 1 - r) e^cap + k < (m - r) e^cap.
    c = asc[rows, (k - m).astype(np.int64)][:, None]
    e = asc - c
    if np.any(asc[:, -1] - c[:, 0] > _EXP_CAP):
        np.minimum(e, _EXP_CAP, out=e)
    np.exp(e, out=e)
    tail = np.cumsum(e, axis=1)[:, ::-1]  # tail[:, r] = sum over the k - r smallest
    # With the r largest capped at 1: r + exp(-t) * sum_{i >= r} exp(s_i) = m, i.e.
    # t_r = c + log(tail_r) - log(m - r). The answer is the smallest r whose first uncapped
    # entry stays under the cap, s_r <= t_r, i.e. (m - r) exp(s_r - c) <= tail_r
    # (r* = #{i : s_i > t*}; every r < r* has t_r >= t* and s_r > t_r). The test holds at
    # r = m - 1 exactly in floating point (1 * 1 <= tail_{m-1}), so the first r passing it
    # is at most m - 1 (for r >= m it would hold trivially).
    ok = (m[:, None] - np.arange(k)) * e[:, ::-1] <= tail
    r_star = np.argmax(ok, axis=1)
    # Stay in the frame shifted by c: t - (c + log(...)) would round away ~|c| * eps of
    # the exponent (sums off by 1e-12 at |theta| = 3e3); (t - c) is exact for entries
    # tied with c.
    t_rel = np.log(tail[rows, r_star]) - np.log(m - r_star)
    out = t - c
    out -= t_rel[:, None]
    np.minimum(out, 0.0, out=out)
    np.exp(out, out=out)
    return out


def kl_project_capped_simplex(theta: ArrayLike, m: ArrayLike) -> NDArray[np.float64]:
    r"""KL projection onto :math:`\{\mu \in [0,1]^k : \langle\mu,\mathbf{1}\rangle = m\}`.

    The constrained softmax (Martins & Kreutzer 2017):
    :math:`\operatorname{argmin}_\mu \langle\mu,\log\mu\rangle - \langle\mu,\theta\rangle`
    s.t. :math:`\langle\mu,\mathbf{1}\rangle = m, \mu \le 1`, whose solution is
    :math:`\mu_i = \min(1, e^{\theta_i - t})` (:math:`t = 1 + \tau` in the paper's
    notation). Sorting :math:`\theta` in descending order into :math:`s`, the capped
    coordinates form a prefix of length :math:`r < m`, and then
    :math:`t = \log\sum_{i > r} e^{s_i} - \log(m - r)`. All candidate :math:`t_r` come from
    one reverse cumulative sum of :math:`e^{s_i - s_m}` (shifted by the :math:`m`-th largest
    entry, which keeps every relevant sum between 1 and :math:`k^2`: no overflow or
    underflow for any finite :math:`\theta`); the valid :math:`r` is the smallest with
    :math:`s_{r+1} \le t_r`.
    :math:`O(k\log k)`, batched over the leading axes; ``m`` broadcasts to
    ``theta.shape[:-1]`` and must lie in ``[0, k]`` (not validated).
    """
    return _split_by_budget(theta, m, _kl_capped)


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
    """

    name: ClassVar[str] = "knapsack"

    def __init__(self, lower: int = 0, upper: int | None = None) -> None:
        self.lower = _check_bound(lower, "lower")
        self.upper = None if upper is None else _check_bound(upper, "upper")
        if self.upper is not None and self.lower > self.upper:
            raise ValueError(
                f"the knapsack bounds must satisfy lower <= upper, got lower = {self.lower} "
                f"> upper = {self.upper}"
            )

    def get_params(self) -> dict[str, Any]:
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
    def _project_with(
        self, theta: NDArray[np.float64], nu: NDArray[np.float64], solve: Any
    ) -> NDArray[np.float64]:
        """Proposition 3: keep the cube projection ``nu`` unless its sum leaves [l, u]."""
        k = theta.shape[-1]
        lo, hi = self._bounds(k)
        if lo == 0 and hi == k:
            return nu
        total = row_sum(nu)[..., 0]
        over = total > hi
        under = total < lo
        bad = over | under
        if bad.all():
            return _split_by_budget(theta, np.where(over, hi, lo), solve)
        if bad.any():
            nu[bad] = _split_by_budget(theta[bad], np.where(over[bad], hi, lo), solve)
        return nu

    def _project_euclidean(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._project_with(theta, np.clip(theta, 0.0, 1.0), _euclidean_capped)

    def _project_kl(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        # min(1, e^{theta - 1}) without overflow.
        nu = np.exp(np.minimum(theta - 1.0, 0.0))
        return self._project_with(theta, nu, _kl_capped)

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
        """The 0/1 label indicator ``(..., k)``, validated against the count bounds."""
        return self._check_indicators(y, "y", k)

    def decode(self, v: ArrayLike) -> NDArray[np.int64]:
        """The label indicator of vertices ``(..., k)`` as int64."""
        return self._check_indicators(v, "v", None).astype(np.int64)

    def vertices(self, k: int) -> NDArray[np.float64]:
        """All binary vectors of length ``k`` with between ``l`` and ``u`` ones."""
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
