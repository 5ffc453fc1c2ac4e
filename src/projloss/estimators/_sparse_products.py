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

The gathered (``W``) and scattered (``G^T T``) rows are the memory traffic: with
``p = 22`` a row is 176 bytes, which spans three or four 64-byte cache lines depending on
where it starts. Both products therefore work on a copy whose rows are padded to whole
cache lines (:func:`padded_width`: ``22 -> 24`` columns, 192 bytes, aligned to 64 bytes):
every row is exactly three lines. The padding columns are zeros and the results are cut
back to ``p`` columns, so every value is the same to the last bit (the same operations on
the same columns). On the same case (17,158 x 30,438, one thread, best of five, AMD EPYC
with 32 MB L3): ``G @ W`` 0.172 -> 0.145 s, ``G.T @ T`` 0.177 -> 0.145 s.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from .._numba import kernel

#: bytes per cache line: the padded rows start on, and fill, whole lines
CACHE_LINE = 64


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


def padded_width(p: int) -> int:
    """The padded row length for ``p`` float64 columns: a power of two up to a cache line
    (8 values), else the next multiple of 8 -- a row then never straddles a line more
    than it must.

    Examples
    --------
    >>> [padded_width(p) for p in (1, 2, 3, 5, 8, 9, 22, 24)]
    [1, 2, 4, 8, 8, 16, 24, 24]
    """
    per_line = CACHE_LINE // 8
    if p <= per_line:
        return 1 << max(p - 1, 0).bit_length()
    return -(-p // per_line) * per_line


def _aligned_zeros(rows: int, cols: int) -> NDArray[np.float64]:
    """A C-contiguous ``(rows, cols)`` float64 array of zeros starting on a cache line."""
    per_line = CACHE_LINE // 8
    buf = np.zeros(rows * cols + per_line)
    start = (-buf.ctypes.data % CACHE_LINE) // 8
    return buf[start : start + rows * cols].reshape(rows, cols)


def _padded(G: sp.csr_matrix, B: NDArray, rows: int, what: str) -> tuple[NDArray[np.float64], int]:
    """``B`` ``(rows, p)`` as a C-contiguous float64 array on a cache line with its rows
    padded to :func:`padded_width` (zeros), in one copy at most, and ``p``; checks the
    shapes."""
    if not (sp.issparse(G) and G.format == "csr"):
        raise TypeError(f"{what}: G must be a CSR matrix, got {type(G).__name__}")
    if np.ndim(B) != 2 or np.shape(B)[0] != rows:
        raise ValueError(f"{what}: shapes {G.shape} and {np.shape(B)} do not match")
    p = np.shape(B)[1]
    q = padded_width(p)
    ready = (
        q == p
        and isinstance(B, np.ndarray)
        and B.dtype == np.float64
        and B.flags.c_contiguous
        and B.ctypes.data % CACHE_LINE == 0
    )
    if ready:
        return B, p
    out = _aligned_zeros(rows, q)
    out[:, :p] = B
    return out, p


def csr_matmul(G: sp.csr_matrix, W: NDArray[np.float64]) -> NDArray[np.float64]:
    """``G @ W``, ``(n, p)``, for CSR ``G`` ``(n, m)`` and dense ``W`` ``(m, p)``.

    Examples
    --------
    >>> G = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0]]))
    >>> csr_matmul(G, np.arange(6.0).reshape(3, 2)).tolist()
    [[8.0, 11.0], [0.0, 0.0]]
    """
    Wq, p = _padded(G, W, G.shape[1], "csr_matmul")  # rows on whole cache lines
    out = np.empty((G.shape[0], Wq.shape[1]))
    _csr_matmul(G.indptr, G.indices, np.asarray(G.data, dtype=np.float64), Wq, out)
    return out if out.shape[1] == p else np.ascontiguousarray(out[:, :p])


def csr_t_matmul(G: sp.csr_matrix, T: NDArray[np.float64]) -> NDArray[np.float64]:
    """``G.T @ T``, ``(m, p)``, for CSR ``G`` ``(n, m)`` and dense ``T`` ``(n, p)``,
    without a transposed copy of ``G``.

    Examples
    --------
    >>> G = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
    >>> csr_t_matmul(G, np.array([[1.0], [2.0]])).ravel().tolist()
    [1.0, 6.0, 2.0]
    """
    # the scattered rows on whole cache lines; T padded too, so that the loop over a row
    # is whole vectors
    Tq, p = _padded(G, T, G.shape[0], "csr_t_matmul")
    out = _aligned_zeros(G.shape[1], Tq.shape[1])
    _csr_t_matmul(G.indptr, G.indices, np.asarray(G.data, dtype=np.float64), Tq, out)
    return out if out.shape[1] == p else np.ascontiguousarray(out[:, :p])
