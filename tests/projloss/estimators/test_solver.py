"""The L-BFGS fit: the solution satisfies the optimality conditions of the regularized
objective, matches independent solvers where one exists, and handles sparse inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import make_set
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge

from projloss.estimators import (
    ProjectionClassifier,
    ProjectionMultilabelClassifier,
    ProjectionOrdinalRegressor,
)
from projloss.estimators._solver import fit_projection_model
from projloss.sets import UnitCube


def multilabel_data(n=120, d=6, k=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    W = rng.standard_normal((d, k))
    Y = (X @ W + 0.5 * rng.standard_normal((n, k)) > 0).astype(int)
    return X, Y


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_stationarity_of_the_solution(geometry, fit_intercept):
    """grad = (1/n) (U - Phi)^T X + alpha W = 0 and mean(U - Phi) = 0 (intercept), with U
    recomputed from the fitted model through the public API."""
    X, Y = multilabel_data()
    alpha = 0.05
    m = ProjectionMultilabelClassifier(
        geometry=geometry, alpha=alpha, fit_intercept=fit_intercept, tol=1e-9, max_iter=2000
    ).fit(X, Y)
    U = m.project(X)
    G = (U - Y).T @ X / len(X) + alpha * m.coef_
    assert np.abs(G).max() < 1e-6
    if fit_intercept:
        assert np.abs((U - Y).mean(axis=0)).max() < 1e-6
    else:
        np.testing.assert_array_equal(m.intercept_, 0.0)


def test_squared_loss_is_ridge_regression():
    """C = R^p with the Euclidean geometry: the objective is ridge regression on phi(y)
    (scikit-learn's Ridge with alpha * n, unpenalized intercept)."""
    X, Y = multilabel_data(seed=1)
    alpha = 0.3
    m = ProjectionMultilabelClassifier(
        projection_set="reals", decoding_set="unit_cube", alpha=alpha, tol=1e-10
    ).fit(X, Y)
    ridge = Ridge(alpha=alpha * len(X)).fit(X, Y.astype(float))
    np.testing.assert_allclose(m.coef_, ridge.coef_, atol=1e-6)
    np.testing.assert_allclose(m.intercept_, ridge.intercept_, atol=1e-6)


def test_logistic_loss_is_multinomial_logistic_regression():
    """C = simplex with KL: the logistic loss; equals scikit-learn's multinomial
    LogisticRegression with C = 1 / (n alpha) (unpenalized intercept)."""
    make_set("simplex")
    rng = np.random.default_rng(2)
    X = rng.standard_normal((150, 4))
    y = np.argmax(X @ rng.standard_normal((4, 3)) + rng.standard_normal((150, 3)), axis=1)
    alpha = 0.02
    m = ProjectionClassifier(geometry="kl", alpha=alpha, tol=1e-10, max_iter=5000).fit(X, y)
    lr = LogisticRegression(C=1 / (len(X) * alpha), tol=1e-12, max_iter=10000).fit(X, y)
    # logits are defined up to a constant per sample: compare centered decision functions
    ours = m.decision_function(X)
    theirs = lr.decision_function(X)
    np.testing.assert_allclose(
        ours - ours.mean(1, keepdims=True), theirs - theirs.mean(1, keepdims=True), atol=1e-5
    )
    np.testing.assert_allclose(m.project(X), lr.predict_proba(X), atol=1e-6)


def test_ordinal_squared_loss_is_ridge_on_the_cumulative_encoding():
    make_set("order_simplex")
    rng = np.random.default_rng(3)
    X = rng.standard_normal((100, 5))
    y = np.clip(np.round(X[:, 0] + 2.5 + 0.3 * rng.standard_normal(100)), 1, 5).astype(int)
    m = ProjectionOrdinalRegressor(projection_set="reals", alpha=0.1, tol=1e-10).fit(X, y)
    k = len(np.unique(y))
    Phi = (np.arange(1, k)[None] < (np.searchsorted(np.unique(y), y) + 1)[:, None]) * 1.0
    ridge = Ridge(alpha=0.1 * len(X)).fit(X, Phi)
    np.testing.assert_allclose(m.coef_, ridge.coef_, atol=1e-6)


def test_sparse_input_gives_the_same_model():
    X, Y = multilabel_data(seed=4)
    X[np.abs(X) < 0.8] = 0.0
    dense = ProjectionMultilabelClassifier(alpha=0.1, tol=1e-9).fit(X, Y)
    sparse = ProjectionMultilabelClassifier(alpha=0.1, tol=1e-9).fit(sp.csr_matrix(X), Y)
    np.testing.assert_allclose(dense.coef_, sparse.coef_, atol=1e-7)
    np.testing.assert_array_equal(dense.predict(X), sparse.predict(sp.csr_matrix(X)))
    kw = {"alpha": 1.0, "model": "poly", "degree": 2, "max_iter": 50}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = ProjectionMultilabelClassifier(**kw).fit(X, Y)
        b = ProjectionMultilabelClassifier(**kw).fit(sp.csr_matrix(X), Y)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), rtol=1e-6)


def test_polynomial_kernel_model():
    """model='poly': features are (<x, x_j> + coef0)^degree against the training inputs."""
    X, Y = multilabel_data(n=60, seed=5)
    m = ProjectionMultilabelClassifier(alpha=1.0, model="poly", degree=3, coef0=1.0, max_iter=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m.fit(X, Y)
    K = (X @ X.T + 1.0) ** 3
    assert m.coef_.shape == (Y.shape[1], len(X))
    np.testing.assert_allclose(m.decision_function(X), K @ m.coef_.T + m.intercept_)
    np.testing.assert_array_equal(m.X_fit_, X)


def test_convergence_warning_and_warm_start():
    X, Y = multilabel_data(seed=6)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        ProjectionMultilabelClassifier(alpha=1e-3, max_iter=2).fit(X, Y)
    cold = ProjectionMultilabelClassifier(alpha=1e-2, tol=1e-8).fit(X, Y)
    warm = ProjectionMultilabelClassifier(alpha=1e-2, tol=1e-8, warm_start=True)
    warm.coef_, warm.intercept_ = cold.coef_.copy(), cold.intercept_.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warm.fit(X, Y)
    assert warm.n_iter_ < cold.n_iter_
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-5)


def test_one_projection_per_objective_evaluation():
    X, Y = multilabel_data(n=40, seed=7)
    calls = []

    class Counting(UnitCube):
        def project(self, theta, geometry="euclidean"):
            calls.append(1)
            return super().project(theta, geometry)

    res = fit_projection_model(
        X,
        Y.astype(float),
        Counting(),
        "euclidean",
        alpha=0.1,
        fit_intercept=True,
        max_iter=100,
        tol=1e-6,
        newton_fallback=False,  # L-BFGS alone (the Newton finish differences projections)
    )
    assert res.converged
    assert len(calls) == res.n_evals >= res.n_iter  # value and gradient share a projection


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_preconditioning_reaches_the_same_minimizer(fit_intercept):
    """The preconditioned coordinates (used for kernel features) change the path, not the
    objective: both runs reach the same minimizer, the preconditioned one in fewer
    iterations on badly conditioned features."""
    X, Y = multilabel_data(n=50, seed=8)
    F = (X @ X.T + 1.0) ** 2  # polynomial kernel features: badly conditioned
    kw = {
        "alpha": 0.5,
        "fit_intercept": fit_intercept,
        "max_iter": 50000,
        "tol": 1e-9,
        "newton_first": False,  # L-BFGS first: its path with and without preconditioning
    }
    plain = fit_projection_model(F, Y.astype(float), UnitCube(), "euclidean", **kw)
    pre = fit_projection_model(F, Y.astype(float), UnitCube(), "euclidean", precondition=True, **kw)
    assert plain.converged and pre.converged
    assert pre.objective == pytest.approx(plain.objective, rel=1e-7, abs=1e-10)
    np.testing.assert_allclose(pre.coef, plain.coef, atol=1e-4)
    assert pre.n_iter < plain.n_iter


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_penalized_intercept_is_a_penalized_constant_feature(geometry):
    """penalize_intercept=True: the intercept is the weight of a constant feature of 1s,
    penalized with W (the reference implementation's add_dummy_feature): the same model as
    no intercept on [X, 1], and the stationarity condition mean(U - Phi) + alpha b = 0."""
    X, Y = multilabel_data(seed=9)
    Y[:, 0] = 1  # a frequent label: a large intercept, visibly shrunk by the penalty
    alpha = 0.05
    kw = {"geometry": geometry, "alpha": alpha, "tol": 1e-9, "max_iter": 2000}
    m = ProjectionMultilabelClassifier(penalize_intercept=True, **kw).fit(X, Y)
    X1 = np.hstack([X, np.ones((len(X), 1))])
    ref = ProjectionMultilabelClassifier(fit_intercept=False, **kw).fit(X1, Y)
    np.testing.assert_allclose(m.coef_, ref.coef_[:, :-1], atol=1e-6)
    np.testing.assert_allclose(m.intercept_, ref.coef_[:, -1], atol=1e-6)
    U = m.project(X)
    assert np.abs((U - Y).mean(axis=0) + alpha * m.intercept_).max() < 1e-6
    free = ProjectionMultilabelClassifier(**kw).fit(X, Y)
    assert np.abs(free.intercept_ - m.intercept_).max() > 1e-3  # the option changes the fit


def test_penalized_intercept_squared_loss_and_ridge_baseline():
    """C = R^p: ridge on [X, 1] without intercept (scikit-learn's Ridge); the ordinal
    ridge + rounding baseline with the same option is that ridge on the ranks."""
    from projloss.estimators import RidgeRoundingOrdinalRegressor

    X, Y = multilabel_data(seed=10)
    alpha = 0.3
    X1 = np.hstack([X, np.ones((len(X), 1))])
    ridge = Ridge(alpha=alpha * len(X), fit_intercept=False).fit(X1, Y.astype(float))
    m = ProjectionMultilabelClassifier(
        projection_set="reals",
        decoding_set="unit_cube",
        alpha=alpha,
        penalize_intercept=True,
        tol=1e-10,
    ).fit(X, Y)
    np.testing.assert_allclose(m.coef_, ridge.coef_[:, :-1], atol=1e-6)
    np.testing.assert_allclose(m.intercept_, ridge.coef_[:, -1], atol=1e-6)
    y = 1 + Y.sum(axis=1)  # ordinal classes 1..5
    base = RidgeRoundingOrdinalRegressor(alpha=alpha, penalize_intercept=True).fit(X, y)
    r = Ridge(alpha=alpha * len(X), fit_intercept=False).fit(X1, (y - y.min() + 1).astype(float))
    np.testing.assert_allclose(base.predict_rank(X), X1 @ r.coef_, atol=1e-8)
    free = RidgeRoundingOrdinalRegressor(alpha=alpha).fit(X, y)
    assert np.abs(free.predict_rank(X) - base.predict_rank(X)).max() > 1e-3


def test_preconditioning_with_a_penalized_intercept():
    X, Y = multilabel_data(n=50, seed=11)
    F = (X @ X.T + 1.0) ** 2
    kw = {"alpha": 0.5, "fit_intercept": True, "penalize_intercept": True, "max_iter": 50000}
    plain = fit_projection_model(F, Y.astype(float), UnitCube(), "euclidean", tol=1e-9, **kw)
    pre = fit_projection_model(
        F, Y.astype(float), UnitCube(), "euclidean", tol=1e-9, precondition=True, **kw
    )
    assert plain.converged and pre.converged
    assert pre.objective == pytest.approx(plain.objective, rel=1e-7, abs=1e-10)
    np.testing.assert_allclose(pre.intercept, plain.intercept, atol=1e-4)
