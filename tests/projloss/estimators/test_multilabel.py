"""Multilabel classification: knapsack bounds, decoding, sparse labels, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import require_sets

from projloss.estimators import ProjectionMultilabelClassifier
from projloss.estimators.multilabel import knapsack_upper_bound
from projloss.metrics import multilabel_accuracy


def multilabel_data(n=150, k=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5))
    Y = (X @ rng.standard_normal((5, k)) + 0.5 * rng.standard_normal((n, k)) > 1.0) * 1
    return X, Y


def test_cube_decoding_thresholds_the_projection_at_one_half():
    X, Y = multilabel_data()
    m = ProjectionMultilabelClassifier(alpha=1e-2).fit(X, Y)
    u = m.project(X)
    np.testing.assert_array_equal(m.predict(X), (u > 0.5).astype(int))
    np.testing.assert_allclose(u, np.clip(m.decision_function(X), 0, 1))
    assert m.score(X, Y) == pytest.approx(multilabel_accuracy(Y, m.predict(X)) / 100)
    assert m.score(X, Y) > 0.85


def test_knapsack_bounds():
    require_sets("knapsack")
    X, Y = multilabel_data(seed=1)
    counts = Y.sum(axis=1)
    u = math.ceil(counts.mean() + counts.std())
    assert knapsack_upper_bound(Y) == u
    m = ProjectionMultilabelClassifier(projection_set="knapsack", alpha=1e-2).fit(X, Y)
    assert m.knapsack_upper_ == u
    assert m.projection_set_.get_params() == {"lower": 0, "upper": u}
    assert m.decoding_set_ is m.projection_set_
    assert m.predict(X).sum(axis=1).max() <= u
    assert np.all(m.project(X).sum(axis=1) <= u + 1e-9)
    m2 = ProjectionMultilabelClassifier(
        projection_set="unit_cube", decoding_set="knapsack", knapsack_lower=1, knapsack_upper=2
    ).fit(X, Y)
    sizes = m2.predict(X).sum(axis=1)
    assert sizes.min() >= 1 and sizes.max() <= 2
    # upper = None means k
    m3 = ProjectionMultilabelClassifier(projection_set="knapsack", knapsack_upper=None).fit(X, Y)
    assert m3.projection_set_.get_params()["upper"] is None
    with pytest.raises(ValueError, match="knapsack_upper must be"):
        ProjectionMultilabelClassifier(projection_set="knapsack", knapsack_upper="max").fit(X, Y)
    with pytest.raises(ValueError, match="knapsack_lower must be"):
        ProjectionMultilabelClassifier(projection_set="knapsack", knapsack_lower=-1).fit(X, Y)


def test_knapsack_upper_rounded():
    """knapsack_upper='auto_round': E|Y| + std|Y| rounded to the nearest integer (halves
    up) instead of the ceiling; exact integers stay put under both rules."""
    require_sets("knapsack")
    Y = np.zeros((4, 6))
    for i, n in enumerate([1, 1, 1, 2]):  # mean 1.25, std 0.433: 1.683
        Y[i, :n] = 1
    assert knapsack_upper_bound(Y) == 2 and knapsack_upper_bound(Y, "round") == 2
    Y[3, 1] = 0  # all sizes 1: exactly 1 under both rules
    assert knapsack_upper_bound(Y) == 1 and knapsack_upper_bound(Y, "round") == 1
    Y = np.zeros((10, 6))
    Y[:, 0] = 1
    Y[0, 1] = 1  # mean 1.1, std 0.3: 1.4 -> ceil 2, round 1
    assert knapsack_upper_bound(Y) == 2 and knapsack_upper_bound(Y, "round") == 1
    X = np.random.default_rng(0).standard_normal((10, 3))
    m = ProjectionMultilabelClassifier(projection_set="knapsack", knapsack_upper="auto_round")
    assert m.fit(X, Y).knapsack_upper_ == 1
    with pytest.raises(ValueError, match="unknown rule 'floor'"):
        knapsack_upper_bound(Y, "floor")


def test_knapsack_upper_bound_is_at_most_k():
    Y = np.ones((10, 3))
    Y[0] = 0
    assert knapsack_upper_bound(Y) == 3


def test_sparse_labels_and_inputs():
    X, Y = multilabel_data(seed=2)
    a = ProjectionMultilabelClassifier(alpha=0.1).fit(X, Y)
    b = ProjectionMultilabelClassifier(alpha=0.1).fit(sp.csr_matrix(X), sp.csr_matrix(Y))
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-8)


def test_bad_input():
    X, Y = multilabel_data(n=30)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        ProjectionMultilabelClassifier().fit(X, Y[:-1])
    with pytest.raises(ValueError, match="0/1 label indicator"):
        ProjectionMultilabelClassifier().fit(X, 2 * Y)
    with pytest.raises(ValueError, match=r"shape \(n_samples, n_labels\)"):
        ProjectionMultilabelClassifier().fit(X, Y[:, 0])
    with pytest.raises(ValueError, match="cannot decode.*\\['unit_cube', 'knapsack'\\]"):
        ProjectionMultilabelClassifier(projection_set="nonneg").fit(X, Y)
    with pytest.raises(ValueError, match="requires y to be passed"):
        ProjectionMultilabelClassifier().fit(X, None)
