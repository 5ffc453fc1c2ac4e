"""Ordinal regression: label handling, calibrated decoding, baselines, bad input."""

from __future__ import annotations

import functools
from unittest import mock

import numpy as np
import pytest
from helpers import load_orreview, require_sets
from sklearn.linear_model import Ridge
from sklearn.preprocessing import StandardScaler

from mirror import require_mirror
from projloss.estimators import (
    MedianOrdinalRegressor,
    ProjectionOrdinalRegressor,
    RidgeRoundingOrdinalRegressor,
    _base,
    _solver,
)
from projloss.metrics import ordinal_mae


def ordinal_data(n=200, seed=0, labels=None):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    z = X @ np.array([1.5, -1.0, 0.5, 0.0]) + 0.3 * rng.standard_normal(n)
    r = np.digitize(z, [-2.0, -0.7, 0.7, 2.0]) + 1  # ranks 1..5
    return X, (r if labels is None else np.asarray(labels)[r - 1])


@pytest.fixture(autouse=True)
def _needs_order_simplex():
    require_sets("order_simplex")


@pytest.mark.parametrize(
    ("proj", "geometry"),
    [
        (p, g)
        for p in ("order_simplex", "unit_cube", "reals", "nonneg")
        for g in ("euclidean", "kl")
        if (p, g) != ("reals", "kl")
    ],  # KL onto R^p is undefined
)
def test_projection_sets_and_decoding(proj, geometry):
    X, y = ordinal_data()
    m = ProjectionOrdinalRegressor(projection_set=proj, geometry=geometry, alpha=1e-3).fit(X, y)
    assert m.decoding_set_.name == "order_simplex" and m.target_loss_.name == "absolute"
    assert m.decision_function(X).shape == (len(X), 4)
    pred = m.predict(X)
    assert set(pred) <= set(m.classes_)
    # calibrated decoding for the absolute loss: 1 + #{i: u_i > 1/2} when u is monotone
    # (a median of the distribution encoded by u); in general MAP_order_simplex(2u - 1)
    u = m.project(X)
    scores = np.concatenate([np.zeros((len(u), 1)), np.cumsum(2 * u - 1, axis=1)], axis=1)
    np.testing.assert_array_equal(pred, np.argmax(scores, axis=1) + 1)
    assert ordinal_mae(y, pred) < 0.4
    assert m.score(X, y) == pytest.approx(-ordinal_mae(y, pred))


def test_any_ordered_labels():
    X, r = ordinal_data(seed=1)
    for labels in ([10, 20, 30, 40, 50], ["a-low", "b-mid", "c-high", "d-top", "e-max"]):
        _, y = ordinal_data(seed=1, labels=labels)
        m = ProjectionOrdinalRegressor(alpha=1e-3).fit(X, y)
        np.testing.assert_array_equal(m.classes_, labels)
        ref = ProjectionOrdinalRegressor(alpha=1e-3).fit(X, r)
        np.testing.assert_array_equal(m.predict(X), np.asarray(labels)[ref.predict(X) - 1])
    # numeric labels: MAE in label units; other labels: in ranks
    m = ProjectionOrdinalRegressor(alpha=1e-3).fit(X, 10 * r)
    assert m.score(X, 10 * r) == pytest.approx(10 * ref.score(X, r))
    with pytest.raises(ValueError, match="not seen in fit"):
        ProjectionOrdinalRegressor(alpha=1e-3).fit(X, y).score(X, np.full(len(X), "zzz"))


def test_baselines():
    X, y = ordinal_data(seed=2)
    med = MedianOrdinalRegressor().fit(X, y)
    lower_median = np.sort(y)[(len(y) - 1) // 2]
    np.testing.assert_array_equal(med.predict(X[:5]), lower_median)
    assert med.median_ == lower_median
    ridge = RidgeRoundingOrdinalRegressor(alpha=0.01).fit(X, y)
    ref = Ridge(alpha=0.01 * len(X)).fit(X, y.astype(float))
    z = ref.predict(X)
    np.testing.assert_allclose(ridge.predict_rank(X), z)
    np.testing.assert_array_equal(ridge.predict(X), np.clip(np.floor(z + 0.5), 1, 5))
    assert ridge.score(X, y) > med.score(X, y)
    with pytest.raises(ValueError, match="alpha must be"):
        RidgeRoundingOrdinalRegressor(alpha=-1).fit(X, y)


def test_ridge_rounding_without_clipping():
    """clip=False: the paper's "rounding to the closest integer" on the label values, not
    clipped to the classes (here labels 10..50: predictions are any integer)."""
    X, r = ordinal_data(seed=3)
    X[0] *= 20  # an extreme input: its ridge prediction falls far outside the labels
    y = 10 * r
    ridge = RidgeRoundingOrdinalRegressor(alpha=1e-3, clip=False).fit(X, y)
    z = Ridge(alpha=1e-3 * len(X)).fit(X, y.astype(float)).predict(X)
    np.testing.assert_allclose(ridge.predict_rank(X), z)
    pred = ridge.predict(X)
    np.testing.assert_array_equal(pred, np.floor(z + 0.5))
    assert pred.min() < 10 or pred.max() > 50  # outside the classes: not clipped
    clipped = RidgeRoundingOrdinalRegressor(alpha=1e-3).fit(X, y).predict(X)
    assert set(clipped) <= set(y)
    with pytest.raises(ValueError, match="clip=False .* needs numeric labels"):
        RidgeRoundingOrdinalRegressor(clip=False).fit(X, np.array(list("abcde"))[r - 1])


def test_bad_input():
    X, y = ordinal_data(n=30)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        ProjectionOrdinalRegressor().fit(X, y[:-2])
    with pytest.raises(ValueError, match="at least 2 classes"):
        ProjectionOrdinalRegressor().fit(X, np.ones(30))
    with pytest.raises(ValueError, match="Unknown label type"):
        ProjectionOrdinalRegressor().fit(X, np.linspace(0, 1, 30))
    with pytest.raises(ValueError, match="does not contain the encoded labels of the ordinal"):
        ProjectionOrdinalRegressor(projection_set="birkhoff").fit(X, y)
    with pytest.raises(ValueError, match="decoding set 'unit_cube' cannot produce outputs"):
        ProjectionOrdinalRegressor(projection_set="unit_cube", decoding_set="unit_cube").fit(X, y)
    with pytest.raises(ValueError, match="'hamming' does not decompose"):
        ProjectionOrdinalRegressor(target_loss="hamming").fit(X, y)


@pytest.mark.slow
def test_esl_split_0_order_simplex_beats_the_baselines():
    """Paper Table 4, ESL (split 0): median 1.12, ridge + round 0.34, order simplex 0.30."""
    base = require_mirror() / "ordinal" / "ESL"
    train = np.loadtxt(base / "train_ESL.0")
    test = np.loadtxt(base / "test_ESL.0")
    scaler = StandardScaler().fit(train[:, :-1])
    Xtr, ytr = scaler.transform(train[:, :-1]), train[:, -1].astype(int)
    Xte, yte = scaler.transform(test[:, :-1]), test[:, -1].astype(int)
    maes = {}
    for name, est in {
        "median": MedianOrdinalRegressor(),
        "ridge": RidgeRoundingOrdinalRegressor(alpha=1e-2),
        "order_simplex": ProjectionOrdinalRegressor(alpha=1e-2),
    }.items():
        maes[name] = ordinal_mae(yte, est.fit(Xtr, ytr).predict(Xte))
    assert maes["order_simplex"] < maes["median"]
    assert maes["order_simplex"] <= maes["ridge"] + 0.05
    assert maes["order_simplex"] < 0.45


class LbfgsFirst(ProjectionOrdinalRegressor):
    """Every linear fit by L-BFGS first, finished by the Newton method where it stops
    above ``tol`` (``fit_projection_model(newton_first=False)``: the path of the fits for
    which Newton first does not pay)."""

    def fit(self, X, y):
        lbfgs_first = functools.partial(_solver.fit_projection_model, newton_first=False)
        with mock.patch.object(_base, "fit_projection_model", lbfgs_first):
            return super().fit(X, y)


@pytest.mark.parametrize("proj", ["order_simplex", "unit_cube", "reals"])
def test_warm_started_grid_by_newton_equals_lbfgs_first(proj):
    """The tune stage's grid (warm starts from the largest lambda down) on a real split
    (automobile, Table 4; the paper's penalized intercept, tol 1e-9): the warm-started
    fits run the Newton method alone, and reach the optimum of the L-BFGS-first path:
    the same coefficients (to the optimality tolerance) and test predictions."""
    X, y, X_test = load_orreview("automobile")
    params = dict(projection_set=proj, penalize_intercept=True, tol=1e-9, warm_start=True)
    new, old = ProjectionOrdinalRegressor(**params), LbfgsFirst(**params)
    for i, lam in enumerate(np.logspace(4, -4, 10)):
        new.set_params(alpha=lam).fit(X, y)
        old.set_params(alpha=lam).fit(X, y)
        assert new.converged_ and old.converged_
        if i > 0:  # warm-started: the Newton method alone
            assert new.n_iter_newton_ == new.n_iter_ > 0
        scale = np.abs(old.coef_).max()
        np.testing.assert_allclose(new.coef_, old.coef_, rtol=0, atol=1e-6 * scale)
        np.testing.assert_allclose(new.intercept_, old.intercept_, rtol=0, atol=1e-6 * scale)
        np.testing.assert_array_equal(new.predict(X_test), old.predict(X_test))


@pytest.mark.parametrize("proj", ["order_simplex", "unit_cube", "reals"])
def test_cold_fit_from_the_squared_loss_start_equals_lbfgs_first(proj):
    """A cold fit (the refit stage's) starts the Newton method at the squared loss's
    optimum (closed form; the optimum itself for the ``reals`` set) and reaches the
    optimum of L-BFGS from zero then Newton: the same coefficients and predictions (real
    split: eucalyptus, Table 4)."""
    X, y, X_test = load_orreview("eucalyptus")
    params = dict(projection_set=proj, penalize_intercept=True, tol=1e-9)
    for lam in (1e-4, 1e-2, 1.0, 100.0):
        new = ProjectionOrdinalRegressor(alpha=lam, **params).fit(X, y)
        old = LbfgsFirst(alpha=lam, **params).fit(X, y)
        assert new.converged_ and old.converged_
        assert new.n_iter_newton_ == new.n_iter_ < old.n_iter_
        if proj == "reals":
            assert new.n_iter_ <= 1
        scale = np.abs(old.coef_).max()
        np.testing.assert_allclose(new.coef_, old.coef_, rtol=0, atol=1e-6 * scale)
        np.testing.assert_allclose(new.intercept_, old.intercept_, rtol=0, atol=1e-6 * scale)
        np.testing.assert_array_equal(new.predict(X_test), old.predict(X_test))


def test_squared_loss_start_is_the_reals_optimum():
    """The start is the minimizer of the squared-loss objective: its gradient vanishes."""
    from projloss.estimators._solver import squared_loss_start

    X, y, _ = load_orreview("automobile")
    phi = (np.unique(y, return_inverse=True)[1][:, None] >= np.arange(1, 6)).astype(float)
    for fit_intercept in (True, False):
        W, b = squared_loss_start(X, phi, 0.01, fit_intercept)
        resid = X @ W.T + b - phi
        np.testing.assert_allclose(X.T @ resid / len(X) + 0.01 * W.T, 0, atol=1e-12)
        if fit_intercept:
            np.testing.assert_allclose(resid.mean(axis=0) + 0.01 * b, 0, atol=1e-12)


def test_free_intercept_keeps_lbfgs_first():
    """An unpenalized intercept (no curvature along some directions): L-BFGS first, also
    from a warm start, as before."""
    X, y, _ = load_orreview("automobile")
    new = ProjectionOrdinalRegressor(penalize_intercept=False, tol=1e-9, warm_start=True)
    for lam in (1.0, 0.1):
        new.set_params(alpha=lam).fit(X, y)
        assert new.converged_ and new.n_iter_ > new.n_iter_newton_
