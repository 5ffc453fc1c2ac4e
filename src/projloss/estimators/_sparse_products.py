r"""Products of CSR features with dense row-major blocks, single-threaded (numba).

The Newton method of :mod:`._newton` multiplies sparse features :math:`G` (``n x m``,
CSR) by the ``p`` outputs' coefficients, :math:`G W` with ``W`` ``(m, p)``, and their
transpose by per-sample values, :math:`G^\top T` with ``T`` ``(n, p)``, twice per objective
evaluation and per Hessian-vector product. Both loops here run over the stored entries in
their storage order, ``p`` contiguous values per entry (the rows of ``W`` and ``T``):

.. math::
    (G W)_{i:} = \sum_{e \in \mathrm{row}\ i} g_e\, W_{j_e :}, \qquad
    (G^\top T)_{j_e :} \mathrel{+}= g_e\, T_{i :}.

The first keeps the row it accumulates in registers (scipy's ``csr_matvecs`` adds each
term into the output row in memory); the second scatters from the CSR arrays themselves
(scipy multiplies the CSC view of :math:`G^\top`, the same scatter). Measured on the
tmc2007-shape scaling case (b) (17,158 x 30,438, 1,345 entries a row, ``p = 22``; one
thread, ``python -m benchmarks.sparse_products``, best of five on a loaded machine):
``G @ W`` 0.152 s (scipy) -> 0.130 s, ``G.T @ T`` 0.126 s -> 0.116 s. Each sum is
taken in the same order as scipy's, so the results agree to the rounding of the
individual products. Any index dtype (int32, int64), unsorted or repeated indices
(summed), empty rows and columns.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from .._numba import kernel


@kernel
def _csr_matmul(indptr, indices, data, W, out):  # pragma: no cover - compiled
    p = W.shape[1]
    acc = np.zeros(p)
    for i in range(indptr.size - 1):
        acc[:] = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            v = data[e]
            for a in range(p):
                acc[a] += v * W[j, a]
        for a in range(p):
            out[i, a] = acc[a]


@kernel
def _csr_t_matmul(indptr, indices, data, T, out):  # pragma: no cover - compiled
    p = T.shape[1]
    for i in range(indptr.size - 1):
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            v = data[e]
            for a in range(p):
                out[j, a] += v * T[i, a]


def _check(G: sp.csr_matrix, B: NDArray, rows: int, what: str) -> NDArray[np.float64]:
    if not (sp.issparse(G) and G.format == "csr"):
        raise TypeError(f"{what}: G must be a CSR matrix, got {type(G).__name__}")
    B = np.ascontiguousarray(B, dtype=np.float64)
    if B.ndim != 2 or B.shape[0] != rows:
        raise ValueError(f"{what}: shapes {G.shape} and {B.shape} do not match")
    return B


def csr_matmul(G: sp.csr_matrix, W: NDArray[np.float64]) -> NDArray[np.float64]:
    """``G @ W``, ``(n, p)``, for CSR ``G`` ``(n, m)`` and dense ``W`` ``(m, p)``.

    Examples
    --------
    >>> G = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0]]))
    >>> csr_matmul(G, np.arange(6.0).reshape(3, 2)).tolist()
    [[8.0, 11.0], [0.0, 0.0]]
    """
    W = _check(G, W, G.shape[1], "csr_matmul")
    out = np.empty((G.shape[0], W.shape[1]))
    _csr_matmul(G.indptr, G.indices, np.asarray(G.data, dtype=np.float64), W, out)
    return out


def csr_t_matmul(G: sp.csr_matrix, T: NDArray[np.float64]) -> NDArray[np.float64]:
    """``G.T @ T``, ``(m, p)``, for CSR ``G`` ``(n, m)`` and dense ``T`` ``(n, p)``,
    without a transposed copy of ``G``.

    Examples
    --------
    >>> G = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
    >>> csr_t_matmul(G, np.array([[1.0], [2.0]])).ravel().tolist()
    [1.0, 6.0, 2.0]
    """
    T = _check(G, T, G.shape[0], "csr_t_matmul")
    out = np.zeros((G.shape[1], T.shape[1]))
    _csr_t_matmul(G.indptr, G.indices, np.asarray(G.data, dtype=np.float64), T, out)
    return out
