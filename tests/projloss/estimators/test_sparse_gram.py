"""The weighted Gram matrices of sparse features for all outputs at once
(``projloss.estimators._sparse_gram``): the per-output Hessian blocks of the Newton
method for sparse linear models."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from projloss.estimators._sparse_gram import PairGram, count_pairs, pair_gram


def awkward_csr(seed: int = 0) -> sp.csr_matrix:
    """A CSR matrix with a row with no nonzero, an all-zero column, a full row and
    unsorted column indices within the rows."""
    rng = np.random.default_rng(seed)
    A = np.where(rng.random((40, 9)) < 0.3, rng.standard_normal((40, 9)), 0.0)
    A[5] = 0.0  # an empty row
    A[:, 4] = 0.0  # an all-zero column
    A[7] = rng.standard_normal(9)
    A[7, 4] = 0.0
    G = sp.csr_matrix(A)
    for i in range(G.shape[0]):  # reverse each row's entries: unsorted indices
        s = slice(G.indptr[i], G.indptr[i + 1])
        G.indices[s], G.data[s] = G.indices[s][::-1].copy(), G.data[s][::-1].copy()
    G.has_sorted_indices = False
    return G


def test_pair_gram_equals_the_weighted_products():
    G = awkward_csr()
    A = G.toarray()
    rng = np.random.default_rng(1)
    W = np.where(rng.random((40, 3)) < 0.7, rng.random((40, 3)), 0.0)
    pairs = PairGram(G)
    assert pairs.n_pairs == count_pairs(G)
    M = pairs.grams(W)
    for a in range(3):
        np.testing.assert_allclose(M[a], A.T @ (W[:, a, None] * A), rtol=1e-12, atol=1e-14)
    assert not M[:, 4].any() and not M[:, :, 4].any()


def test_pair_gram_in_float32_rounds_the_same_products():
    """``dtype=np.float32`` (the Newton preconditioner's): the same blocks to float32's
    rounding, symmetric, in float32 whatever the weights' type."""
    G = awkward_csr()
    A = G.toarray()
    rng = np.random.default_rng(1)
    W = np.where(rng.random((40, 3)) < 0.7, rng.random((40, 3)), 0.0)
    M = PairGram(G, dtype=np.float32).grams(W)
    assert M.dtype == np.float32
    np.testing.assert_array_equal(M, M.transpose(0, 2, 1))
    for a in range(3):
        want = A.T @ (W[:, a, None] * A)
        np.testing.assert_allclose(M[a], want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    assert pair_gram(G, dtype=np.float32).grams(W).dtype == np.float32


def test_pair_gram_is_bounded():
    """``None`` above ``max_pairs`` pairs (the Newton method keeps the pair products with
    what else it derives from the features: ``test_newton.py``)."""
    G = awkward_csr()
    assert pair_gram(G, max_pairs=count_pairs(G)) is not None
    assert pair_gram(G, max_pairs=count_pairs(G) - 1) is None  # too many pairs: none
