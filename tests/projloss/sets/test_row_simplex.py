"""Row-stochastic matrices: row-wise simplex projections, encoding of permutations."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from projloss.sets import RowSimplex, Simplex, get_set


def test_registry():
    s = get_set("row_simplex")
    assert isinstance(s, RowSimplex) and s.matrix and s.event_shape(3) == (3, 3)


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_projection_is_row_wise_simplex_projection(geometry):
    rng = np.random.default_rng(0)
    theta = 3.0 * rng.standard_normal((4, 2, 5, 5))
    u = RowSimplex().project(theta, geometry)
    for idx in np.ndindex(4, 2, 5):
        np.testing.assert_allclose(u[idx], Simplex().project(theta[idx], geometry), atol=1e-15)
    np.testing.assert_allclose(u.sum(axis=-1), 1.0, atol=1e-12)
    assert RowSimplex().contains(u).all()


@settings(max_examples=100, deadline=None)
@given(
    theta=st.integers(1, 5).flatmap(
        lambda k: hnp.arrays(
            np.float64,
            (k, k),
            elements=st.sampled_from([-1e3, -2.0, 0.0, 0.5, 1.0, 1e3]),
        )
    ),
    geometry=st.sampled_from(["euclidean", "kl"]),
)
def test_property_ties_and_extreme_values(theta, geometry):
    u = RowSimplex().project(theta, geometry)
    assert np.isfinite(u).all() and (u >= 0).all()
    np.testing.assert_allclose(u.sum(axis=-1), 1.0, atol=1e-12)
    # Tied entries of a row get equal mass.
    for row_t, row_u in zip(theta, u, strict=True):
        for a in np.unique(row_t):
            assert np.ptp(row_u[row_t == a]) <= 1e-12


def test_argmax_is_row_wise_with_first_index_ties():
    theta = np.array([[1.0, 2.0, 2.0], [0.0, 0.0, 0.0], [5.0, -1.0, 4.0]])
    np.testing.assert_array_equal(RowSimplex().argmax(theta), [[0, 1, 0], [1, 0, 0], [1, 0, 0]])


def test_permutation_encoding_is_the_permutation_matrix():
    # y[rank] = label  ->  Y[rank, label] = 1.
    s = RowSimplex()
    y = np.array([2, 0, 3, 1])
    Y = s.encode(y, 4)
    expected = np.zeros((4, 4))
    expected[np.arange(4), y] = 1.0
    np.testing.assert_array_equal(Y, expected)
    assert (Y.sum(axis=0) == 1).all()  # a permutation gives a doubly stochastic vertex
    np.testing.assert_array_equal(s.decode(Y), y)
    batch = np.array([list(p) for p in itertools.permutations(range(3))])
    np.testing.assert_array_equal(s.decode(s.encode(batch)), batch)
    assert s.encode(batch).shape == (6, 3, 3)


def test_vertices_are_all_row_one_hot_matrices():
    for k in (1, 2, 3):
        v = RowSimplex().vertices(k)
        assert v.shape == (k**k, k, k)
        assert len({m.tobytes() for m in v}) == k**k
        assert ((v.sum(axis=-1) == 1) & ((v == 0) | (v == 1)).all(axis=-1)).all()


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda s: s.project(np.zeros((3, 4))), r"\(\.\.\., k, k\)"),
        (lambda s: s.project(np.zeros(3)), r"\(\.\.\., k, k\)"),
        (lambda s: s.project(np.full((2, 2), np.nan), "kl"), "NaN"),
        (lambda s: s.encode([0, 1, 3]), r"labels in \[0, 3\)"),
        (lambda s: s.encode([0, 1], 3), "k = 3"),
        (lambda s: s.encode(1), "scalar"),
        (lambda s: s.encode([0.5, 1.0]), "non-integer"),
        (lambda s: s.decode(np.ones((2, 2))), "one-hot"),
        (lambda s: s.decode(np.eye(3)[:2]), r"\(\.\.\., k, k\)"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call(RowSimplex())
