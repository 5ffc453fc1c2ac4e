"""The ordinal baselines: the ridge fit by scikit-learn's own operations (``ridge_cholesky``)
against :class:`sklearn.linear_model.Ridge`, on real datasets and degenerate inputs."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import load_orreview
from sklearn.linear_model import Ridge
from sklearn.preprocessing import add_dummy_feature

from projloss.estimators import RidgeRoundingOrdinalRegressor
from projloss.estimators.baselines import ridge_cholesky

#: the tune stage's grid (conf/lambdas: ten lambdas 1e-4..1e4)
LAMBDAS = np.logspace(-4, 4, 10)


def degenerate_inputs() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Ties and rank deficiency, from a real dataset (car): duplicate rows, a constant
    column, fewer samples than features."""
    X, y, _ = load_orreview("car")
    dup = np.vstack([X[:60], X[:60]]), np.concatenate([y[:60], y[:60]])
    const = np.hstack([X[:80], np.full((80, 1), 3.0)]), y[:80]
    wide = X[:12], y[:12]  # 12 samples, 21 features
    return {"duplicate rows": dup, "constant column": const, "n < d": wide}


def check_against_ridge(X, y, fit_intercept: bool) -> None:
    n = X.shape[0]
    for lam in LAMBDAS:
        ridge = Ridge(alpha=lam * n, fit_intercept=fit_intercept).fit(X, y)
        w, b = ridge_cholesky(X, y, lam * n, fit_intercept)
        scale = max(float(np.abs(ridge.coef_).max()), float(abs(ridge.intercept_)), 1e-12)
        np.testing.assert_allclose(w, ridge.coef_, rtol=1e-10, atol=1e-10 * scale)
        np.testing.assert_allclose(b, ridge.intercept_, rtol=1e-10, atol=1e-10 * scale)
        np.testing.assert_allclose(
            X @ w + b, ridge.predict(X), rtol=1e-10, atol=1e-10 * np.abs(y).max()
        )


@pytest.mark.parametrize("name", ["car", "eucalyptus", "squash-stored"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_ridge_cholesky_equals_sklearn_ridge_on_real_data(name, fit_intercept):
    """Every lambda of the grid, with a free intercept or the paper's penalized one (a
    constant feature, no intercept); squash-stored has more features than samples (the
    dual system)."""
    X, y, _ = load_orreview(name)
    check_against_ridge(X if fit_intercept else add_dummy_feature(X), y, fit_intercept)


@pytest.mark.parametrize("case", ["duplicate rows", "constant column", "n < d"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_ridge_cholesky_equals_sklearn_ridge_on_degenerate_inputs(case, fit_intercept):
    X, y = degenerate_inputs()[case]
    check_against_ridge(X, y, fit_intercept)


def test_ridge_cholesky_leaves_the_other_cases_to_sklearn():
    X, y, _ = load_orreview("car")
    assert ridge_cholesky(sp.csr_matrix(X), y, 1.0, True) is None
    assert ridge_cholesky(X, y, 0.0, True) is None


@pytest.mark.parametrize("penalize_intercept", [True, False])
@pytest.mark.parametrize("clip", [True, False])
def test_ridge_rounding_predicts_as_with_sklearn_ridge(penalize_intercept, clip):
    """The estimator's labels on a real test split (eucalyptus, Table 4) at every lambda
    equal those of the former code path (``Ridge.fit`` + ``Ridge.predict``, rounded the
    same way), also on sparse inputs (``Ridge`` itself)."""
    X, y, X_test = load_orreview("eucalyptus")
    model = RidgeRoundingOrdinalRegressor(penalize_intercept=penalize_intercept, clip=clip)
    classes, ranks = np.unique(y, return_inverse=True)
    target = y if not clip else ranks + 1.0
    dummy = penalize_intercept
    for lam in LAMBDAS:
        ridge = Ridge(alpha=lam * len(X), fit_intercept=not dummy)
        ridge.fit(add_dummy_feature(X) if dummy else X, target)
        z = ridge.predict(add_dummy_feature(X_test) if dummy else X_test)
        rounded = np.floor(z + 0.5)  # halves up, as round_to_class
        expected = (
            rounded if not clip else classes[np.clip(rounded, 1, len(classes)).astype(int) - 1]
        )
        model.set_params(alpha=lam).fit(X, y)
        np.testing.assert_allclose(model.predict_rank(X_test), z, rtol=1e-10, atol=1e-10)
        np.testing.assert_array_equal(model.predict(X_test), expected)
        Xs, Xs_test = sp.csr_matrix(X), sp.csr_matrix(X_test)
        ridge.fit(add_dummy_feature(Xs) if dummy else Xs, target)
        z_sparse = ridge.predict(add_dummy_feature(Xs_test) if dummy else Xs_test)
        sparse = model.fit(Xs, y).predict_rank(Xs_test)
        np.testing.assert_allclose(sparse, z_sparse, rtol=1e-10, atol=1e-10)
