"""The truncated Newton solver (``fit_projection_model(solver="newton")``): it reaches the
optimum of the regularized objective that a long L-BFGS run reaches, on kernel and linear
models of a few sets, and its result does not depend on the BLAS threads of the caller."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from helpers import load_label_ranking, require_sets
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

import projloss.estimators._base as base
from projloss.estimators import (
    ProjectionLabelRanker,
    ProjectionMultilabelClassifier,
)
from projloss.estimators._solver import fit_projection_model


@pytest.fixture
def newton(monkeypatch):
    """Make the estimators fit with the Newton solver."""
    monkeypatch.setattr(
        base, "fit_projection_model", functools.partial(fit_projection_model, solver="newton")
    )


def iris(n=60):
    X, y = load_label_ranking("iris")
    idx = np.random.default_rng(0).choice(len(X), n, replace=False)
    return StandardScaler().fit_transform(X[idx]), y[idx]


def reference(est, X, y):
    """A long, tight L-BFGS run of the same estimator (the optimum to compare with)."""
    ref = type(est)(**{**est.get_params(), "tol": 1e-10, "max_iter": 50_000})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return ref.fit(X, y)


@pytest.mark.parametrize("degree,alpha", [(3, 1e2), (2, 1.0)])
def test_poly_kernel_permutahedron_reaches_the_optimum(newton, degree, alpha):
    """Table 3's composition (permutahedron, polynomial kernel) on real data: the Newton fit
    converges and its objective equals the long L-BFGS run's to 1e-8 (relative)."""
    require_sets("permutahedron")
    X, y = iris()
    est = ProjectionLabelRanker(
        projection_set="permutahedron", model="poly", degree=degree, alpha=alpha
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est.fit(X, y)
    assert est.converged_
    ref = reference(est, X, y)
    assert est.objective_ <= ref.objective_ * (1 + 1e-8)
    np.testing.assert_allclose(est.objective_, ref.objective_, rtol=1e-8)
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))


@pytest.mark.parametrize(
    "make",
    [
        lambda: ProjectionMultilabelClassifier(projection_set="unit_cube", alpha=0.05),
        lambda: ProjectionMultilabelClassifier(projection_set="knapsack", alpha=0.05),
    ],
    ids=["unit_cube", "knapsack"],
)
def test_linear_models_reach_the_optimum(newton, make):
    """Linear multilabel models (Tables 6-7's sets): the objective of a long L-BFGS run.
    (The ordinal order simplex is not covered: the Newton solver fails there, see
    ``_newton_cg``.)"""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((80, 5))
    est = make()
    y = (X @ rng.standard_normal((5, 4)) + rng.standard_normal((80, 4)) > 0).astype(int)
    est.fit(X, y)
    assert est.converged_
    ref = reference(est, X, y)
    np.testing.assert_allclose(est.objective_, ref.objective_, rtol=1e-8)


def test_converged_attribute():
    """Every fit exposes whether it converged (``converged_``), with both solvers."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((60, 4))
    Y = (X @ rng.standard_normal((4, 3)) > 0).astype(int)
    assert ProjectionMultilabelClassifier(alpha=0.1).fit(X, Y).converged_ is True
    with pytest.warns(ConvergenceWarning):
        short = ProjectionMultilabelClassifier(alpha=1e-3, max_iter=1).fit(X, Y)
    assert short.converged_ is False
    with pytest.warns(ConvergenceWarning, match="Newton-CG did not converge"):
        fit_projection_model(
            X,
            Y.astype(float),
            short.projection_set_,
            "euclidean",
            alpha=1e-3,
            fit_intercept=True,
            max_iter=1,
            tol=1e-12,
            solver="newton",
        )


def test_result_independent_of_blas_threads(newton):
    """The poly-kernel permutahedron fit under 1 and 2 BLAS threads of the caller."""
    require_sets("permutahedron")
    X, y = iris(50)
    fits = []
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="blas"):
            est = ProjectionLabelRanker(
                projection_set="permutahedron", model="poly", degree=3, alpha=1.0
            ).fit(X, y)
        fits.append(est)
    a, b = fits
    np.testing.assert_allclose(a.objective_, b.objective_, rtol=1e-12)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
