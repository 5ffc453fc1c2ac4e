"""The one "Newton first" policy of ``fit_projection_model`` (``_solver.newton_first_pays``).

Newton first (from a warm start, or cold from the squared loss's optimum) and L-BFGS first
(then the Newton finish) stop at the same rule, ``max|grad| <= tol``, of a strongly convex
objective: the same optimum, on real dense data (cal500, Table 6) and on degenerate data
(a constant column, fewer samples than features, a large and a tiny lambda). A Newton-first
attempt that does not converge in its budget falls back to L-BFGS then Newton.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from mirror import require_mirror
from projloss.estimators import ProjectionMultilabelClassifier, _solver
from projloss.estimators._solver import fit_projection_model, newton_first_pays
from projloss.sets import get_set

TOL = 1e-9


@pytest.fixture(scope="module")
def cal500(tmp_path_factory):
    """cal500's training split as the pipeline prepares it (standardized, label-less
    samples dropped; 300 x 68, 174 labels), prepared from the offline mirror."""
    from pipeline.data.api import load_prepared

    tmp = tmp_path_factory.mktemp("cal500")
    settings = {
        "mirror": str(require_mirror()),
        "raw_dir": str(tmp / "raw"),
        "prepared_dir": str(tmp / "prepared"),
        "progress": False,
    }
    X, y = load_prepared("cal500", settings, drop_empty=True).train
    return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)


def max_gradient(F, Y, projection_set, geometry, res, alpha):
    r""":math:`\|\nabla F\|_\infty` at the fit's ``(coef, intercept)``, computed afresh (the
    intercept penalized)."""
    p = Y.shape[1]
    problem = _solver._Problem(F, Y, projection_set, geometry, (p,), alpha, True, True)
    B = np.hstack([res.coef, res.intercept[:, None]])
    return float(np.abs(problem.value_and_gradient(B)[1]).max())


def both_ways(F, Y, projection_set, geometry, alpha, **warm):
    """The same fit Newton first and L-BFGS first (intercept penalized, ``tol = 1e-9``)."""
    kw = dict(alpha=alpha, fit_intercept=True, penalize_intercept=True, tol=TOL, **warm)
    newton = fit_projection_model(F, Y, projection_set, geometry, max_iter=500, **kw)
    lbfgs = fit_projection_model(
        F, Y, projection_set, geometry, max_iter=20_000, newton_first=False, **kw
    )
    for res in (newton, lbfgs):
        assert res.converged, res.message
        assert max_gradient(F, Y, projection_set, geometry, res, alpha) <= TOL
    # strong convexity (modulus alpha): |B - B*| <= |grad|_2 / alpha <= sqrt(size) tol / alpha
    # and F(B) - F(B*) <= |grad|_2^2 / (2 alpha)
    size = lbfgs.coef.size + Y.shape[1]
    scale = max(np.abs(lbfgs.coef).max(), np.abs(lbfgs.intercept).max())
    atol = max(1e-6 * scale, 2 * np.sqrt(size) * TOL / alpha)
    np.testing.assert_allclose(newton.coef, lbfgs.coef, rtol=0, atol=atol)
    np.testing.assert_allclose(newton.intercept, lbfgs.intercept, rtol=0, atol=atol)
    np.testing.assert_allclose(
        newton.objective, lbfgs.objective, rtol=1e-12, atol=size * TOL**2 / alpha
    )
    return newton, lbfgs


def test_newton_first_reaches_the_lbfgs_optimum_on_cal500(cal500):
    """cal500 (dense, 174 labels, the unit cube): cold (the refit stage's fit: from the
    squared loss's optimum) and warm-started (the tune stage's grid: from the solution at a
    10x larger lambda), Newton first runs the Newton method alone, in far fewer iterations
    than L-BFGS first, to the same optimum."""
    X, Y = cal500
    s = get_set("unit_cube")
    prev, _ = both_ways(X, Y, s, "euclidean", 1e-2)
    assert prev.n_iter_newton == prev.n_iter  # cold: the Newton method alone
    warm = dict(coef_init=prev.coef, intercept_init=prev.intercept)
    newton, lbfgs = both_ways(X, Y, s, "euclidean", 1e-3, **warm)
    assert newton.n_iter_newton == newton.n_iter < 30
    assert lbfgs.n_iter - lbfgs.n_iter_newton > 100  # L-BFGS ran first


def degenerate(n=30, d=60, p=5, seed=0):
    """Fewer samples than features, a constant column and a duplicated one."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[:, 0] = 1.0
    X[:, 1] = X[:, 2]
    Y = (X[:, 3 : 3 + p] + 0.5 * rng.standard_normal((n, p)) > 0).astype(np.float64)
    return X, Y


@pytest.mark.parametrize("alpha", [1e2, 1e-6])
@pytest.mark.parametrize(
    ("set_name", "geometry"),
    [("unit_cube", "euclidean"), ("unit_cube", "kl"), ("simplex", "euclidean")],
)
def test_newton_first_reaches_the_lbfgs_optimum_on_degenerate_data(set_name, geometry, alpha):
    """n < d, a constant and a duplicated column, lambda large and tiny: cold, and warm
    from the optimum at a 10x larger lambda (as the tune stage's grid)."""
    X, Y = degenerate()
    if set_name == "simplex":
        Y = np.eye(Y.shape[1])[np.argmax(Y + 1e-3 * np.arange(Y.shape[1]), axis=1)]
    s = get_set(set_name)
    cold, _ = both_ways(X, Y, s, geometry, alpha)
    if geometry == "euclidean":
        assert cold.n_iter_newton == cold.n_iter  # from the squared loss's optimum
    else:
        assert cold.n_iter > cold.n_iter_newton  # KL, cold: L-BFGS first
    prev, _ = both_ways(X, Y, s, geometry, 10 * alpha)
    warm = dict(coef_init=prev.coef, intercept_init=prev.intercept)
    newton, _ = both_ways(X, Y, s, geometry, alpha, **warm)
    assert newton.n_iter_newton == newton.n_iter


def test_newton_first_falls_back_to_lbfgs_then_newton(cal500, monkeypatch):
    """A Newton-first attempt that does not converge in its budget (here 1 iteration) is
    continued by L-BFGS then the Newton finish, and converges to the same optimum;
    ``n_iter`` counts the three."""
    X, Y = cal500
    cube = get_set("unit_cube")
    kw = dict(alpha=1e-3, fit_intercept=True, penalize_intercept=True, tol=TOL, max_iter=500)
    ref = fit_projection_model(X, Y, cube, "euclidean", **kw)
    assert ref.converged and ref.n_iter_newton == ref.n_iter > 1
    monkeypatch.setattr(_solver, "NEWTON_FIRST_ITER", 1)
    res = fit_projection_model(X, Y, cube, "euclidean", **kw)
    assert res.converged, res.message
    assert res.message.startswith("Newton-CG first: iteration limit reached")
    assert res.n_iter > res.n_iter_newton >= 1  # L-BFGS ran between
    assert max_gradient(X, Y, cube, "euclidean", res, 1e-3) <= TOL
    scale = np.abs(ref.coef).max()
    np.testing.assert_allclose(res.coef, ref.coef, rtol=0, atol=1e-6 * scale)


def test_warm_started_grid_of_the_estimator_runs_newton_first(cal500):
    """The tune stage's grid through the estimator (``warm_start``: it passes only its
    previous solution): every fit after the first runs the Newton method alone."""
    X, Y = cal500
    est = ProjectionMultilabelClassifier(
        projection_set="unit_cube", penalize_intercept=True, tol=TOL, warm_start=True
    )
    for lam in (1e1, 1.0, 1e-1):
        est.set_params(alpha=lam).fit(X, Y.astype(int))
        assert est.converged_ and est.n_iter_newton_ == est.n_iter_


def test_the_policy():
    """Newton first: every coefficient penalized; dense features warm, or cold with the
    Euclidean geometry (the squared loss's start), not for the knapsack polytope; sparse
    ones, narrow (per-output blocks) or wide (the two-level preconditioner)."""
    dense = np.zeros((10, 4))
    cube, knapsack = get_set("unit_cube"), get_set("knapsack")
    assert newton_first_pays(dense, cube, True, True, "euclidean", cold=True)
    assert newton_first_pays(dense, cube, True, True, "kl", cold=False)
    assert not newton_first_pays(dense, cube, True, True, "kl", cold=True)
    assert not newton_first_pays(dense, cube, True, False, "euclidean", cold=False)
    assert newton_first_pays(dense, cube, False, False, "euclidean", cold=False)
    assert not newton_first_pays(dense, knapsack, True, True, "euclidean", cold=False)
    narrow, wide = sp.csr_matrix((10, 500)), sp.csr_matrix((10, 30_438))
    assert newton_first_pays(narrow, knapsack, True, True, "euclidean", cold=True)
    assert newton_first_pays(wide, cube, True, True, "euclidean", cold=True)
    assert not newton_first_pays(wide, cube, True, False, "euclidean", cold=True)
