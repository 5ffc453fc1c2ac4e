"""Multiclass classification: labels, loss matrices, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import require_sets

from projloss.estimators import ProjectionClassifier
from projloss.target_losses import LossMatrix


@pytest.fixture(autouse=True)
def _needs_simplex():
    require_sets("simplex")


def multiclass_data(n=150, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    labels = np.array(["cat", "dog", "eel"])
    return X, labels[np.argmax(X @ rng.standard_normal((4, 3)), axis=1)]


@pytest.mark.parametrize("proj", ["simplex", "unit_cube", "reals"])
@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_fit_predict(proj, geometry):
    if proj == "reals" and geometry == "kl":
        proj = "nonneg"
    X, y = multiclass_data()
    m = ProjectionClassifier(projection_set=proj, geometry=geometry, alpha=1e-3).fit(X, y)
    np.testing.assert_array_equal(m.classes_, ["cat", "dog", "eel"])
    pred = m.predict(X)
    assert pred.dtype == y.dtype
    np.testing.assert_array_equal(pred, m.classes_[np.argmax(m.project(X), axis=1)])
    assert m.score(X, y) > 0.85


def test_sparsemax_projection_is_sparse_and_sums_to_one():
    X, y = multiclass_data(seed=1)
    u = ProjectionClassifier(alpha=1e-3).fit(X, y).project(X)
    np.testing.assert_allclose(u.sum(axis=1), 1.0)
    assert (u == 0).any()


def test_loss_matrix_changes_the_decision():
    """A cost matrix that makes predicting 'eel' very expensive unless it is the truth."""
    X, y = multiclass_data(seed=2)
    M = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [20.0, 20.0, 0.0]])
    plain = ProjectionClassifier(alpha=1e-2).fit(X, y)
    costly = ProjectionClassifier(alpha=1e-2, target_loss=LossMatrix(M)).fit(X, y)
    u = costly.project(X)
    np.testing.assert_array_equal(costly.predict(X), costly.classes_[np.argmin(u @ M.T, axis=1)])
    assert (costly.predict(X) == "eel").sum() < (plain.predict(X) == "eel").sum()
    with pytest.raises(ValueError, match=r"loss matrix must have shape \(3, 3\)"):
        ProjectionClassifier(target_loss=LossMatrix(np.zeros((2, 2)))).fit(X, y)


def test_bad_input():
    X, y = multiclass_data(n=30)
    with pytest.raises(ValueError, match="at least 2 classes"):
        ProjectionClassifier().fit(X, np.zeros(30))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        ProjectionClassifier().fit(X[:10], y)
    with pytest.raises(ValueError, match="unknown projection set 'softmax'"):
        ProjectionClassifier(projection_set="softmax").fit(X, y)
    with pytest.raises(ValueError, match="unknown geometry"):
        ProjectionClassifier(geometry="hellinger").fit(X, y)
