r"""Batched isotonic regression and isotonic optimization (pool adjacent violators).

Two problems, solved independently on each row of an array of shape ``(..., k)``:

- **Euclidean isotonic regression** (decreasing by default)

  .. math:: \operatorname{argmin}_{v_1 \ge \dots \ge v_k} \sum_i w_i (v_i - y_i)^2,

  whose value on a pool (block) :math:`B` of consecutive indices is the weighted mean
  :math:`\sum_B w_i y_i / \sum_B w_i`.

- **KL isotonic optimization** of Blondel, Teboul, Berthet & Djolonga (2020), "Fast
  differentiable sorting and ranking" (ICML), §3 and Prop. 3, used for the KL projection onto the
  permutahedron (Lim & Wright 2016):

  .. math:: v_E(s, w) = \operatorname{argmin}_{v_1 \ge \dots \ge v_k}
            \langle e^{s - v}, \mathbf 1\rangle + \langle e^{w}, v\rangle,

  whose pool value is :math:`\operatorname{LSE}(s_B) - \operatorname{LSE}(w_B)` (set the
  derivative :math:`-e^{-v}\sum_B e^{s_i} + \sum_B e^{w_i}` to zero). Block statistics are
  kept in the log domain (merged with ``logaddexp``), so no exponential overflows and no
  cumulative sums are subtracted (no cancellation).

Both problems are separable convex objectives under a chain order whose pool values are
*Cauchy means*: the value of the union of two pools lies between the values of the two
pools (a weighted mean; a log of a mediant of ratios). For such problems, pooling adjacent
violators in **any** order reaches the solution (Robertson, Wright & Dykstra 1988,
"Order Restricted Statistical Inference", §1.2 and §1.4; Best & Chakravarti 1990).

Algorithm — parallel pool adjacent violators, vectorized over rows *and* blocks:
every round computes all pool values at once, finds every adjacent violating pair
(:math:`\text{value}(B_j) < \text{value}(B_{j+1})`), and merges each maximal chain of
violators into one pool (a grouped sum by ``np.bincount``, or ``np.logaddexp.reduceat``
in the log domain). A chain :math:`B_1, \dots, B_m` with
increasing values can be merged in one go because merging the first two keeps a violator
with the third (the union's value is at most that of :math:`B_2`), and so on; so a round is
a valid sequence of classical PAV steps. Rows with no violator left are retired, so each
round only touches the remaining blocks of the unfinished rows.

Cost: each round is :math:`O(\#\text{live blocks})` numpy work; there are at most
:math:`k` rounds (every round merges at least one pair), so :math:`O(n k^2)` in the worst
case (the same as the min-max formula
:math:`v_i = \min_{j \le i}\max_{l \ge i}\text{value}(j..l)`; e.g. ``(0, ..., 0, 1)``
cascades one pool per round), and in practice few rounds: 4-11 on random inputs for
``k = 10..100``, with the number of live blocks shrinking geometrically, i.e. close to
:math:`O(nk)`. There is no Python loop over samples (the loop is over rounds).

Why written by hand: scikit-learn's and scipy's isotonic regressions are 1-D only, and
looping them over rows costs ~0.3 ms per row in validation overhead. Measured on this
2-core machine (n = 10000 rows, decreasing Euclidean): 265x faster than looping
``sklearn.isotonic.isotonic_regression`` at k = 10, 114x at k = 30, 32x at k = 100, and
still ~3x faster on the worst-case cascade at k = 100. Alternatives measured: a classical
stack PAV vectorized over rows needs a Python step per position *and* per pop (3-4x
slower), and the min-max formula costs :math:`O(k^2)` memory and time for every row (7x
slower at k = 10, >20x at k = 30). A compiled per-row PAV (numba) would be faster still
but adds a dependency the engine does not have.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import check_array

__all__ = ["isotonic_kl", "isotonic_regression"]


def _group_sum(x: NDArray[np.float64], gid: NDArray[np.intp], n_groups: int) -> NDArray:
    # bincount is several times faster than np.add.reduceat for many small groups.
    return np.bincount(gid, weights=x, minlength=n_groups)


def _pool_adjacent_violators(
    a: NDArray[np.float64], b: NDArray[np.float64], log_domain: bool
) -> NDArray[np.float64]:
    """Decreasing isotonic solution of each row of ``a`` / ``b`` (both of shape ``(n, k)``).

    The pool value is ``sum(a_B) / sum(b_B)`` (``log_domain=False``) or
    ``LSE(a_B) - LSE(b_B)`` (``log_domain=True``). Returns an ``(n, k)`` array.
    """
    n, k = a.shape
    size = n * k
    if size == 0 or k == 1:
        return (a - b) if log_domain else (a / b)
    value = np.subtract if log_domain else np.divide

    # Current blocks, as flat arrays: statistics, flat index of the first element, row,
    # and whether the block starts its row (never merged with its left neighbour).
    A = a.reshape(-1)
    B = b.reshape(-1)
    index = np.int32 if size < 2**31 else np.intp  # smaller indices: less memory traffic
    pos = np.arange(size, dtype=index)
    row = pos // k
    head = pos % k == 0
    # Value of every retired block, stored at its first element.
    start_value = np.empty(size)
    is_start = np.zeros(size, dtype=bool)

    while True:
        v = value(A, B)
        viol = np.zeros(v.size, dtype=bool)
        np.less(v[:-1], v[1:], out=viol[1:])
        viol &= ~head
        if not viol.any():
            start_value[pos] = v
            is_start[pos] = True
            break
        live_rows = np.zeros(n, dtype=bool)
        live_rows[row[np.flatnonzero(viol)]] = True
        live = live_rows[row]
        if not live.all():  # retire the finished rows
            done = np.flatnonzero(~live)
            start_value[pos[done]] = v[done]
            is_start[pos[done]] = True
            # (integer take: much faster than boolean masks with random patterns)
            keep = np.flatnonzero(live)
            A, B, pos, row, head, viol = (x[keep] for x in (A, B, pos, row, head, viol))
        # Merge every chain of violators: a block starts a new pool unless it violates.
        new = ~viol
        starts = np.flatnonzero(new)
        if log_domain:
            A = np.logaddexp.reduceat(A, starts)
            B = np.logaddexp.reduceat(B, starts)
        else:
            gid = np.cumsum(new.view(np.int8), dtype=index) - 1
            A = _group_sum(A, gid, starts.size)
            B = _group_sum(B, gid, starts.size)
        pos, row, head = pos[starts], row[starts], head[starts]

    # Forward-fill each block's value over its elements (every row starts with a block).
    owner = np.maximum.accumulate(np.where(is_start, np.arange(size, dtype=index), 0))
    return start_value[owner].reshape(n, k)


def isotonic_regression(
    y: ArrayLike, weights: ArrayLike | None = None, *, increasing: bool = False
) -> NDArray[np.float64]:
    r"""Euclidean isotonic regression of each row of ``y`` (shape ``(..., k)``).

    Returns :math:`\operatorname{argmin}_{v_1 \ge \dots \ge v_k}\sum_i w_i (v_i - y_i)^2`
    for every row (or :math:`v_1 \le \dots \le v_k` with ``increasing=True``), by parallel
    pool adjacent violators (see the module docstring). ``weights`` (positive, broadcast
    against ``y``) default to 1.
    """
    y = check_array(y, name="y", min_size=0)
    if weights is None:
        w = np.ones_like(y)
    else:
        w = check_array(weights, name="weights", min_size=0)
        if np.any(w <= 0):
            raise ValueError("weights must be positive")
        try:
            w = np.broadcast_to(w, y.shape)
        except ValueError:
            raise ValueError(
                f"weights of shape {w.shape} do not broadcast to y of shape {y.shape}"
            ) from None
    if y.size == 0:
        return y.copy()
    sign = -1.0 if increasing else 1.0
    k = y.shape[-1]
    a = (sign * w * y).reshape(-1, k)
    b = np.ascontiguousarray(w, dtype=np.float64).reshape(-1, k)
    return sign * _pool_adjacent_violators(a, b, log_domain=False).reshape(y.shape)


def isotonic_kl(s: ArrayLike, w: ArrayLike) -> NDArray[np.float64]:
    r"""KL isotonic optimization :math:`v_E(s, w)` of Blondel et al. (2020), row by row.

    .. math:: v_E(s, w) = \operatorname{argmin}_{v_1 \ge \dots \ge v_k}
              \langle e^{s - v}, \mathbf 1\rangle + \langle e^{w}, v\rangle

    ``s`` has shape ``(..., k)``; ``w`` (finite, log-domain weights) broadcasts against it.
    Pool values :math:`\operatorname{LSE}(s_B) - \operatorname{LSE}(w_B)` are computed in the
    log domain, so any finite magnitudes are safe.
    """
    s = check_array(s, name="s", min_size=0)
    w = check_array(w, name="w", min_size=0)
    try:
        w = np.broadcast_to(w, s.shape)
    except ValueError:
        raise ValueError(
            f"w of shape {w.shape} does not broadcast to s of shape {s.shape}"
        ) from None
    if s.size == 0:
        return s.copy()
    k = s.shape[-1]
    a = np.ascontiguousarray(s).reshape(-1, k)
    b = np.ascontiguousarray(w).reshape(-1, k)
    return _pool_adjacent_violators(a, b, log_domain=True).reshape(s.shape)
