r"""Weighted Gram matrices of sparse features for all outputs at once.

The per-output blocks of the Newton method's Hessian (:mod:`._newton`) for sparse
features :math:`G` (``n x m``, CSR) are

.. math::
    M_a = G^\top \mathrm{diag}(w_{:a})\, G = \sum_i w_{ia}\, g_i g_i^\top,
    \qquad a = 1, \dots, p.

A row with :math:`k_i` nonzeros contributes to :math:`k_i (k_i + 1) / 2` entries of the
upper triangle. :class:`PairGram` lists those products once (a sparse ``(n, m^2)`` matrix
``P`` whose row ``i`` holds :math:`g_{ij} g_{ik}`, ``j <= k``, at column ``j m + k``): then
all the blocks are one sparse-dense product :math:`P^\top W` (``O(p \sum_i k_i^2 / 2)``)
instead of ``p`` sparse-sparse products that each rebuild the pattern (tmc2007_500:
16,139 x 501 with the intercept, 22 outputs, 5.6 million pairs). Built once per feature
matrix: the Newton method keeps them with what else it derives from the features
(:func:`._newton.sparse_derived`: a lambda grid refits the same features);
``G`` is never densified, and ``P`` is only listed when it has fewer entries than a dense
copy of ``G`` would (rows of fewer than about :math:`\sqrt{2m}` nonzeros).

``dtype``: the precision of the listed products and of the blocks. The Newton method's
preconditioner asks for ``float32`` (its blocks only need to be close to the Hessian's:
half the memory traffic of the product, whose ``(m^2, p)`` result -- 22 MB instead of 44
MB at tmc2007_500's shape -- then stays in a 32 MB last-level cache: 48 ms instead of 99 ms
a product there).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

#: the largest number of pairs (entries of ``P``, 12 bytes each in float64, 8 in float32:
#: up to 240 MB; about 28 bytes each while they are listed) listed; beyond,
#: :func:`pair_gram` returns ``None`` (the caller forms the blocks one at a time)
MAX_PAIRS = 20_000_000


class PairGram:
    """The pair products of a CSR matrix ``G`` (module docstring).

    Examples
    --------
    >>> G = sp.csr_matrix(np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 1.0]]))
    >>> W = np.array([[1.0, 0.0], [2.0, 1.0]])
    >>> M = PairGram(G).grams(W)
    >>> bool(np.allclose(M[0], G.T @ np.diag(W[:, 0]) @ G.toarray()))
    True
    >>> PairGram(G, dtype=np.float32).grams(W).dtype
    dtype('float32')
    """

    def __init__(self, G: sp.csr_matrix, dtype: type = np.float64) -> None:
        G = sp.csr_matrix(G, dtype=np.float64)
        if not G.has_sorted_indices:
            G = G.sorted_indices()
        n, m = G.shape
        lengths = np.diff(G.indptr).astype(np.int64)
        per_row = lengths * (lengths + 1) // 2
        total = int(per_row.sum())
        index = np.int32 if max(total, m * m, G.nnz) < 2**31 else np.int64
        # entry e pairs with the entries e, ..., (end of its row) - 1
        count = np.repeat(G.indptr[1:], lengths) - np.arange(G.nnz)
        first = np.repeat(np.arange(G.nnz, dtype=index), count)
        second = np.arange(total, dtype=index)
        second -= np.repeat((np.cumsum(count) - count).astype(index), count)
        second += first
        key = G.indices[first].astype(index) * m + G.indices[second]
        value = (G.data[first] * G.data[second]).astype(dtype, copy=False)
        del first, second
        indptr = np.concatenate([[0], np.cumsum(per_row)]).astype(index)
        # (n, m^2): row i lists the pairs of row i of G, already in order (no sort)
        self.PT = sp.csr_matrix((value, key, indptr), shape=(n, m * m))
        self.m = m

    @property
    def n_pairs(self) -> int:
        return int(self.PT.nnz)

    def grams(self, W: NDArray[np.float64]) -> NDArray[np.float64]:
        r"""The ``(p, m, m)`` matrices :math:`G^\top \mathrm{diag}(W_{:a}) G` for ``W``
        ``(n, p)``, in the products' precision (``dtype``)."""
        m, p = self.m, W.shape[1]
        W = np.asarray(W, dtype=self.PT.dtype)
        U = np.asarray(self.PT.T @ W).T.reshape(p, m, m)  # the upper triangles (j <= k)
        M = U + U.transpose(0, 2, 1)
        idx = np.arange(m)
        M[:, idx, idx] = U[:, idx, idx]
        return M


def count_pairs(G: sp.csr_matrix) -> int:
    r""":math:`\sum_i k_i (k_i + 1) / 2`, the entries of :class:`PairGram`'s ``P``."""
    k = np.diff(G.indptr).astype(np.int64)
    return int(np.sum(k * (k + 1) // 2))


def pair_gram(
    G: sp.csr_matrix, max_pairs: int = MAX_PAIRS, dtype: type = np.float64
) -> PairGram | None:
    """:class:`PairGram` of ``G`` (products in ``dtype``), or ``None`` above ``max_pairs``
    pairs or above the entries of ``G`` densified (not kept: see
    :func:`._newton.sparse_derived`)."""
    G = sp.csr_matrix(G)
    fits = count_pairs(G) <= min(max_pairs, G.shape[0] * G.shape[1])
    return PairGram(G, dtype=dtype) if fits else None
