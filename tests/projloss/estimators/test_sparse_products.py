"""The compiled CSR products of the Newton method against scipy's."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from projloss.estimators._sparse_products import csr_matmul, csr_t_matmul


def _cases():
    """CSR matrices with the degenerate cases: empty rows, an all-zero column, a single
    column, a single row, no entry at all, unsorted and repeated indices, int64 indices."""
    rng = np.random.default_rng(0)
    G = sp.random(40, 30, density=0.2, format="csr", random_state=1)
    keep_rows = (np.arange(40) % 7 != 0).astype(float)  # empty rows
    G = sp.csr_matrix(sp.diags(keep_rows) @ G @ sp.diags((np.arange(30) != 3).astype(float)))
    G.eliminate_zeros()
    assert (np.diff(G.indptr) == 0).any() and G[:, 3].nnz == 0
    yield "random", G
    yield "one column", sp.csr_matrix(rng.standard_normal((12, 1)))
    yield "one row", sp.random(1, 25, density=0.3, format="csr", random_state=2)
    yield "empty", sp.csr_matrix((5, 7))
    U = G.copy()  # the entries of each row in reverse order: unsorted indices
    for i in range(U.shape[0]):
        a, b = U.indptr[i], U.indptr[i + 1]
        U.indices[a:b] = U.indices[a:b][::-1].copy()
        U.data[a:b] = U.data[a:b][::-1].copy()
    U.has_sorted_indices = False
    yield "unsorted", U
    R = sp.csr_matrix(  # repeated indices (not canonical: summed)
        (np.array([1.0, 2.0, -0.5, 4.0]), np.array([2, 2, 0, 1]), np.array([0, 3, 3, 4])),
        shape=(3, 4),
    )
    yield "repeated", R
    L = G.copy()
    L.indices, L.indptr = L.indices.astype(np.int64), L.indptr.astype(np.int64)
    yield "int64", L


@pytest.mark.parametrize("p", [1, 3, 22])
@pytest.mark.parametrize("name,G", list(_cases()), ids=[c[0] for c in _cases()])
def test_products_match_scipy(name, G, p):
    rng = np.random.default_rng(p)
    W = rng.standard_normal((G.shape[1], p))
    T = rng.standard_normal((G.shape[0], p))
    np.testing.assert_allclose(csr_matmul(G, W), G.toarray() @ W, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(csr_t_matmul(G, T), G.toarray().T @ T, rtol=1e-12, atol=1e-12)
    # a non-contiguous block (the coefficients without the intercept column, transposed)
    Wt = rng.standard_normal((p, G.shape[1] + 1))[:, :-1].T
    np.testing.assert_allclose(csr_matmul(G, Wt), G @ Wt, rtol=1e-12, atol=1e-12)


def test_products_reject_mismatched_shapes():
    G = sp.csr_matrix(np.eye(3))
    with pytest.raises(ValueError, match="do not match"):
        csr_matmul(G, np.ones((4, 2)))
    with pytest.raises(ValueError, match="do not match"):
        csr_t_matmul(G, np.ones((2, 2)))
    with pytest.raises(TypeError, match="CSR"):
        csr_matmul(G.tocsc(), np.ones((3, 2)))
    for bad in (np.ones(3), 1.0, np.ones((3, 2, 1))):  # not a block
        with pytest.raises(ValueError, match="do not match"):
            csr_matmul(G, bad)
        with pytest.raises(ValueError, match="do not match"):
            csr_t_matmul(G, bad)


@pytest.mark.parametrize("p", [1, 2, 3, 5, 7, 8, 9, 22, 24, 25])
def test_padding_changes_no_bit(p):
    """The products on rows padded to whole cache lines equal the kernels on the unpadded
    arrays bitwise (the same operations on the same columns), C-contiguous, with the
    caller's block left as it was."""
    from projloss.estimators._sparse_products import _csr_matmul, _csr_t_matmul

    rng = np.random.default_rng(p)
    G = sp.random(300, 200, density=0.1, format="csr", random_state=p)
    X = rng.standard_normal((p, 200))  # as the solver passes it: a transposed view
    T = rng.standard_normal((300, p))
    W, T_before = np.ascontiguousarray(X.T), T.copy()
    ref = np.empty((300, p))
    _csr_matmul(G.indptr, G.indices, G.data, W, ref)
    ref_t = np.zeros((200, p))
    _csr_t_matmul(G.indptr, G.indices, G.data, T, ref_t)
    out, out_t = csr_matmul(G, X.T), csr_t_matmul(G, T)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(out_t, ref_t)
    assert out.flags.c_contiguous and out_t.flags.c_contiguous
    np.testing.assert_array_equal(T, T_before)


def test_padded_width_fills_cache_lines():
    from projloss.estimators._sparse_products import CACHE_LINE, _aligned_zeros, padded_width

    for p in range(1, 70):
        q = padded_width(p)
        assert q >= p
        assert (8 * q) % CACHE_LINE == 0 or CACHE_LINE % (8 * q) == 0
        assert q - p < max(p, 8)  # never more than doubles, at most 7 more past a line
    for rows, cols in [(0, 8), (1, 24), (17, 3)]:
        A = _aligned_zeros(rows, cols)
        assert A.shape == (rows, cols) and not A.any() and A.flags.c_contiguous
        assert A.ctypes.data % CACHE_LINE == 0 or A.size == 0
