r"""The Birkhoff MAP (a linear assignment) with near-ties broken by a canonical rule.

:math:`\max_\sigma \sum_r \theta_{r\sigma(r)}` often has several maximizers in the
decoding pipeline: the Euclidean projections on the Birkhoff polytope and on the row
simplex are sparse, so two assignments that differ only on entries equal to 0 score the
same to the last bit. Which of them :func:`scipy.optimize.linear_sum_assignment` returns
depends on the path of its shortest augmenting paths, i.e. on the last bits of the
*other* entries -- which differ between machines (BLAS, SIMD, compiled kernels) even when
every fit converges: a decoded ranking, hence a validation loss, moved between two
machines of the same kind. Here:

1. the assignment solver's maximizer :math:`\sigma` (as before);
2. the gap to the second-best assignment, vectorized over samples: any other
   assignment :math:`\pi = \sigma \circ \tau` loses
   :math:`\sum_r \theta_{r\sigma(r)} - \theta_{r\sigma(\tau(r))}`, a sum over the
   cycles of :math:`\tau`, so the gap is the weight of the lightest cycle (length
   :math:`\ge 2`) of the graph on rows with edge weights
   :math:`w_{rr'} = \theta_{r\sigma(r)} - \theta_{r\sigma(r')}` (no negative cycle, as
   :math:`\sigma` is optimal): Floyd-Warshall with an infinite diagonal, :math:`O(k^3)`
   per sample (Ahuja, Magnanti & Orlin, *Network Flows*, 1993, §5.6);
3. where the gap is at most ``rtol * max|theta_i|`` (a near-tie), the lexicographically
   smallest assignment (as the sequence of columns) among those within that tolerance of
   the best: row by row, the smallest free column that can still be completed within the
   tolerance (one assignment solve of the remaining rows per column tried).

Samples without a near-tie keep the solver's maximizer: the result changes only where
the maximizer was not determined by the data to more than the tolerance.

Examples
--------
>>> import numpy as np
>>> theta = np.array([[[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]])
>>> canonical_assignment(theta).tolist()  # rows 1 and 2 tie: the smaller columns first
[[0, 1, 2]]
>>> canonical_assignment(theta[:, ::-1, ::-1]).tolist()
[[0, 1, 2]]
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linear_sum_assignment

#: assignments whose scores are within ``TIE_RTOL * max|theta_i|`` of the best are tied:
#: well above the differences between machines (last bits; the projections' own accuracy,
#: 1e-9), well below any difference a decoded loss could notice
TIE_RTOL = 1e-7


def second_best_gaps(theta: NDArray[np.float64], cols: NDArray[np.int64]) -> NDArray[np.float64]:
    r"""The score of the assignment ``cols`` (``(n, k)``: row -> column, optimal) minus the
    best score of any other assignment, per sample (``inf`` for ``k = 1``): the lightest
    cycle of the module docstring's row graph.

    Examples
    --------
    >>> theta = np.array([[[3.0, 1.0], [1.0, 2.0]]])
    >>> second_best_gaps(theta, np.array([[0, 1]])).tolist()  # 3 + 2 against 1 + 1
    [3.0]
    """
    n, k = cols.shape
    best = np.take_along_axis(theta, cols[:, :, None], axis=2)  # (n, k, 1)
    D = best - np.take_along_axis(theta, np.broadcast_to(cols[:, None, :], (n, k, k)), axis=2)
    diagonal = np.arange(k)
    D[:, diagonal, diagonal] = np.inf
    for m in range(k):
        np.minimum(D, D[:, :, m : m + 1] + D[:, m : m + 1, :], out=D)
    return D[:, diagonal, diagonal].min(axis=1) if k else np.full(n, np.inf)


def _assignment_value(theta: NDArray[np.float64]) -> float:
    if theta.size == 0:
        return 0.0
    rows, cols = linear_sum_assignment(theta, maximize=True)
    return float(theta[rows, cols].sum())


def lexicographic_assignment(theta: NDArray[np.float64], floor: float) -> NDArray[np.int64]:
    """The lexicographically smallest assignment (row -> column) of one ``(k, k)`` matrix
    whose score is at least ``floor`` (which must be at most the best score).

    Examples
    --------
    >>> theta = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    >>> lexicographic_assignment(theta, 3.0).tolist(), lexicographic_assignment(theta, 1.0).tolist()
    ([1, 0, 2], [0, 1, 2])
    """
    k = theta.shape[0]
    free = list(range(k))
    out = np.empty(k, dtype=np.int64)
    prefix = 0.0
    for r in range(k):
        rest = theta[r + 1 :]
        for c in free:
            others = [j for j in free if j != c]
            if r == k - 1 or prefix + theta[r, c] + _assignment_value(rest[:, others]) >= floor:
                break
        else:  # rounding left no column above the floor: the best completion's column
            c = free[int(linear_sum_assignment(theta[r:, free], maximize=True)[1][0])]
        out[r] = c
        prefix += theta[r, c]
        free.remove(c)
    return out


def canonical_assignment(theta: NDArray[np.float64], rtol: float = TIE_RTOL) -> NDArray[np.int64]:
    """Maximum-score assignments of finite ``(n, k, k)`` score matrices, ``(n, k)`` (row ->
    column), with the assignments within ``rtol * max|theta_i|`` of the best treated as
    tied and the lexicographically smallest of them returned (module docstring).

    Examples
    --------
    >>> theta = np.array([[[1.0, 1.0], [1.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]])
    >>> canonical_assignment(theta).tolist()  # a tie, then a unique best
    [[0, 1], [1, 0]]
    >>> canonical_assignment(np.array([[[1.0, 1.0 + 1e-12], [1.0, 1.0]]])).tolist()
    [[0, 1]]
    >>> canonical_assignment(np.array([[[1.0, 1.0 + 1e-12], [1.0, 1.0]]]), rtol=0.0).tolist()
    [[1, 0]]
    """
    n, k = theta.shape[0], theta.shape[-1]
    cols = np.empty((n, k), dtype=np.int64)
    for i, t in enumerate(theta):
        cols[i] = linear_sum_assignment(t, maximize=True)[1]
    if n == 0 or k < 2:
        return cols
    tol = rtol * np.abs(theta).max(axis=(1, 2))
    for i in np.flatnonzero(second_best_gaps(theta, cols) <= tol):
        t = theta[i]
        best = float(t[np.arange(k), cols[i]].sum())
        cols[i] = lexicographic_assignment(t, best - tol[i])
    return cols
