"""A new set is one module: the l-infinity ball of ``linf_ball.py`` (defined and
registered there, nowhere else) is a projection set for the tasks it declares, fits and
predicts through an estimator, and the Newton solver uses its own Jacobians (not finite
differences of its projection)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from projloss.estimators import ProjectionMultilabelClassifier
from projloss.sets import SETS, register_set
from projloss.tasks import ENCODINGS, check_composition, get_task


@pytest.fixture
def linf_ball() -> Iterator[type]:
    """The module imported and its set registered (:func:`projloss.sets.register_set`),
    then unregistered: other tests see the registry as projloss ships it."""
    try:
        yield register_set(importlib.import_module("linf_ball").LinfBall)
    finally:
        SETS.pop("linf_ball", None)
        sys.modules.pop("linf_ball", None)


def _multilabel(n: int = 60, d: int = 4, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    Y = (X @ rng.standard_normal((d, k)) + 0.5 * rng.standard_normal((n, k)) > 0).astype(int)
    return X, Y


def test_the_tasks_take_it_as_declared(linf_ball):
    assert SETS["linf_ball"] is linf_ball
    for task in ("label_ranking", "ordinal", "multilabel", "multiclass"):
        assert "linf_ball" in get_task(task).projection_sets
    assert "linf_ball" not in ENCODINGS["permutahedron"].projection_sets  # w beyond [-1, 1]
    comp = check_composition("multilabel", "linf_ball", decoding_set="unit_cube")
    assert (comp.projection_set, comp.decoding_set) == ("linf_ball", "unit_cube")
    with pytest.raises(ValueError, match=r"valid geometries for it are \(.euclidean.,\)"):
        check_composition("multilabel", "linf_ball", "kl", "unit_cube")


def test_an_estimator_fits_it_with_its_own_jacobians(linf_ball):
    """``model="poly"``: the Newton solver; every Jacobian is the set's (the diagonal
    ``1[|theta| <= 1]``); a copy of the set without them gets finite differences (the
    counter can tell) and the same model."""
    X, Y = _multilabel()
    kwargs = {"decoding_set": "unit_cube", "model": "poly", "alpha": 1e-2, "tol": 1e-8}
    model = ProjectionMultilabelClassifier(projection_set="linf_ball", **kwargs).fit(X, Y)
    assert model.converged_ and model.n_iter_newton_ >= 1
    assert model.n_jacobians_["set"] >= 1 and model.n_jacobians_["differences"] == 0
    assert type(model.projection_set_) is linf_ball
    pred = model.predict(X)
    assert pred.shape == Y.shape and set(np.unique(pred)) <= {0, 1}
    assert np.mean(pred == Y) > 0.7  # it learns

    class Differenced(linf_ball):
        def projection_jacobians(self, theta, u, geometry, event_shape):
            return None

    other = ProjectionMultilabelClassifier(projection_set=Differenced(), **kwargs).fit(X, Y)
    assert other.n_jacobians_["set"] == 0 and other.n_jacobians_["differences"] >= 1
    np.testing.assert_allclose(other.coef_, model.coef_, atol=1e-6)
    np.testing.assert_array_equal(other.predict(X), pred)


def test_its_jacobians_are_the_projections_derivative(linf_ball):
    """Away from the kinks the set's diagonal equals the finite differences of its
    projection (the solver's fallback)."""
    from projloss.estimators._newton import _BasisProblem

    rng = np.random.default_rng(1)
    theta = 2 * rng.standard_normal((50, 4))
    theta = theta[np.all(np.abs(np.abs(theta) - 1) > 1e-3, axis=1)]
    s = linf_ball()
    u = s.project(theta)
    problem = _BasisProblem(np.ones((len(theta), 1)), u, s, "euclidean", (4,), 1.0, False)
    np.testing.assert_allclose(
        s.projection_jacobians(theta, u, "euclidean", (4,)),
        problem.diagonal_jacobians(theta, u),
        atol=1e-6,
    )
