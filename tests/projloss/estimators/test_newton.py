"""The semismooth Newton solver (``fit_projection_model(solver="newton")``, the kernel
models' default): it reaches the optimum of the regularized objective that a long L-BFGS
run reaches, on kernel and linear models of a few sets, and its result does not depend on
the BLAS threads of the caller."""

from __future__ import annotations

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
    """Make the estimators fit with the Newton solver (the kernel models' default)."""
    monkeypatch.setitem(base.SOLVERS, "linear", "newton")
    monkeypatch.setitem(base.SOLVERS, "poly", "newton")


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
    """Linear multilabel models (Tables 6-7's sets): the objective of a long L-BFGS run."""
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


def test_permutahedron_jacobian_is_the_derivative_and_merges_kinks():
    """The exact Jacobian of the permutahedron projection equals the differences of the
    projection away from kinks; at a kink (two pools with equal values) it is the
    largest-rank element (the pools merged)."""
    require_sets("permutahedron")
    from projloss.estimators._newton import _BasisProblem
    from projloss.sets import get_set
    from projloss.sets.permutahedron import permutahedron_jacobians

    S = get_set("permutahedron")
    rng = np.random.default_rng(3)
    theta = 3 * rng.standard_normal((200, 5))
    u = S.project(theta, "euclidean")
    problem = _BasisProblem(np.ones((200, 1)), np.zeros((200, 5)), S, "euclidean", (5,), 1.0, False)
    np.testing.assert_allclose(
        permutahedron_jacobians(theta, u, 1e-9), problem.difference_jacobians(theta, u), atol=1e-6
    )
    # theta = w - 1 is on the kink between the vertex w (theta = c w - 1, c > 1: every
    # pool a singleton, J = 0) and the one-pool piece (c < 1): the merged Jacobian has rank
    w = np.arange(5.0, 0.0, -1.0)
    kink = (w - 1.0)[None, :]
    J = permutahedron_jacobians(kink, S.project(kink, "euclidean"), 1e-9)
    assert np.linalg.matrix_rank(J[0], tol=0.5) > 0
    inside = (w * 3.0)[None, :]
    assert not permutahedron_jacobians(inside, S.project(inside, "euclidean"), 1e-9).any()


def test_order_simplex_jacobian_is_the_derivative_and_takes_the_largest_rank_at_kinks():
    """The exact Jacobian of the order simplex projection equals the differences of the
    projection away from kinks (random points around the box, pools of every size); at a
    pool mean on the box's bound it is the averaging (largest rank), clipped pools give 0,
    equal neighbours one pool; always a symmetric projection matrix (J J = J)."""
    require_sets("order_simplex")
    from projloss.estimators._newton import _BasisProblem
    from projloss.sets import get_set
    from projloss.sets.order_simplex import order_simplex_jacobians

    S = get_set("order_simplex")
    rng = np.random.default_rng(5)
    for scale in (0.3, 1.0, 3.0):
        theta = 0.5 + scale * rng.standard_normal((300, 6))
        u = S.project(theta, "euclidean")
        problem = _BasisProblem(
            np.ones((300, 1)), np.zeros((300, 6)), S, "euclidean", (6,), 1.0, False
        )
        np.testing.assert_allclose(
            order_simplex_jacobians(theta, u, 1e-9),
            problem.difference_jacobians(theta, u),
            atol=1e-6,
        )
    kinks = np.array(
        [
            [1.0, 0.5, 0.0],  # singletons with means on both bounds: the identity
            [1.7, 0.6, 0.6],  # clipped at 1, then two equal neighbours: one pool
            [-0.2, -0.4, -3.0],  # all clipped at 0
            [0.2, 0.8, 0.5],  # pooled {0, 1} (mean 0.5), {2} (0.5): one pool of three
        ]
    )
    J = order_simplex_jacobians(kinks, S.project(kinks, "euclidean"), 1e-9)
    np.testing.assert_array_equal(J[0], np.eye(3))
    np.testing.assert_array_equal(J[1], [[0, 0, 0], [0, 0.5, 0.5], [0, 0.5, 0.5]])
    assert not J[2].any()
    np.testing.assert_allclose(J[3], np.full((3, 3), 1 / 3))
    np.testing.assert_allclose(J, J.transpose(0, 2, 1))
    np.testing.assert_allclose(J @ J, J, atol=1e-15)


@pytest.mark.parametrize("kind", ["dense", "spectral", "capacitance"])
def test_preconditioners_invert_the_generalized_hessian(kind):
    """The exact preconditioners of the Newton method invert ``H`` (penalized
    intercept), on a degree-3 kernel of real data."""
    require_sets("permutahedron")
    from sklearn.metrics.pairwise import polynomial_kernel

    from projloss.estimators._newton import _BasisProblem, spectral_basis
    from projloss.sets import get_set

    X, y = iris(40)
    K = polynomial_kernel(X, X, degree=3, coef0=1.0)
    basis = spectral_basis(np.hstack([K, np.ones((40, 1))]))
    S = get_set("permutahedron")
    phi = S.encode(y, 3)
    problem = _BasisProblem(basis.G, phi, S, "euclidean", (3,), 1e-2, False)
    rng = np.random.default_rng(4)
    X0 = rng.standard_normal((3, basis.G.shape[1])) / basis.s
    _, _, theta, u = problem.value_and_gradient(X0)
    J = problem.jacobians(theta, u)
    precond = getattr(problem, f"{kind}_preconditioner")(J)
    R = rng.standard_normal(X0.shape)
    np.testing.assert_allclose(problem.hvp(J, precond(R)), R, rtol=1e-6, atol=1e-6)


def test_lbfgs_unconverged_fit_is_finished_by_newton():
    """A linear fit that L-BFGS leaves at ``max_iter`` is finished by the Newton method
    (converged, the optimum of a long L-BFGS run); a fit that L-BFGS brings to its
    tolerance is the same, to the last bit, with or without the fallback."""
    from projloss.sets import get_set

    rng = np.random.default_rng(5)
    X = rng.standard_normal((120, 6))
    Y = (X @ rng.standard_normal((6, 4)) + rng.standard_normal((120, 4)) > 0).astype(float)
    # L-BFGS first (newton_first=False): the path of the fits where Newton first does not pay
    kw = dict(alpha=1e-4, fit_intercept=True, penalize_intercept=True, tol=1e-5, newton_first=False)
    cube = get_set("unit_cube")
    with pytest.warns(ConvergenceWarning):
        alone = fit_projection_model(
            X, Y, cube, "euclidean", max_iter=5, newton_fallback=False, **kw
        )
    finished = fit_projection_model(X, Y, cube, "euclidean", max_iter=5, **kw)
    assert not alone.converged and finished.converged and finished.n_iter > 5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = fit_projection_model(X, Y, cube, "euclidean", max_iter=50_000, **{**kw, "tol": 1e-10})
    np.testing.assert_allclose(finished.objective, ref.objective, rtol=1e-9)
    a = fit_projection_model(X, Y, cube, "euclidean", max_iter=500, **{**kw, "alpha": 1.0})
    b = fit_projection_model(
        X, Y, cube, "euclidean", max_iter=500, newton_fallback=False, **{**kw, "alpha": 1.0}
    )
    assert a.converged and np.array_equal(a.coef, b.coef) and a.n_iter == b.n_iter


def glass():
    X, y = load_label_ranking("glass")
    return StandardScaler().fit_transform(X), y


def test_cold_kernel_fit_at_small_alpha_converges_along_the_path():
    """Table 3's degree-3 permutahedron model on the whole of glass at alpha = 1e-4 from 0
    (a refit: no tuned point to start from): the continuation path converges within
    ``max_iter`` (the Newton method from 0 at that alpha stopped after 440 iterations
    without converging), at the optimum (its objective is not above the one reached by
    the same solver warm-started from the fit at alpha = 1e-3)."""
    require_sets("permutahedron")
    X, y = glass()
    kw = dict(projection_set="permutahedron", model="poly", degree=3, penalize_intercept=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        cold = ProjectionLabelRanker(alpha=1e-4, **kw).fit(X, y)
        warm = ProjectionLabelRanker(alpha=1e-3, warm_start=True, **kw).fit(X, y)
        warm.set_params(alpha=1e-4).fit(X, y)
    assert cold.converged_ and warm.converged_
    assert cold.n_iter_ <= cold.max_iter and cold.n_iter_newton_ == cold.n_iter_
    np.testing.assert_allclose(cold.objective_, warm.objective_, rtol=1e-5)
    np.testing.assert_array_equal(cold.predict(X), warm.predict(X))


def test_continuation_path():
    from projloss.estimators._newton import continuation_path

    assert continuation_path(1e-4, 1e3) == pytest.approx([1e3, 1e2, 10, 1, 0.1, 1e-2, 1e-3, 1e-4])
    assert continuation_path(50.0, 1.0) == [50.0]
    # the last stage is never shorter than sqrt(factor): 2.5 -> 1 is not split off
    assert continuation_path(1.0, 2.5) == [1.0]


@pytest.mark.parametrize("bounds", [(0, 3), (2, 4), (1, 12)], ids=["upper", "lower+upper", "cube"])
def test_knapsack_jacobian_is_the_derivative(bounds):
    """The diagonal-minus-rank-one Jacobian of the Euclidean knapsack projection equals
    the two-sided differences of the projection (random points: the cube branch and both
    capped branches), and at the kink theta = 0 of the cube branch it is the curved side
    (the coordinate is free)."""
    from projloss.estimators._newton import _BasisProblem
    from projloss.sets import get_set
    from projloss.sets.knapsack import knapsack_jacobians

    lo, hi = bounds
    S = get_set("knapsack", lower=lo, upper=hi)
    k = 12
    rng = np.random.default_rng(7)
    theta = rng.uniform(-0.5, 1.5, (400, k)) + rng.choice([-0.4, 0.0, 0.5], (400, 1))
    u = S.project(theta, "euclidean")
    J = knapsack_jacobians(S, theta, u)
    problem = _BasisProblem(np.ones((400, 1)), np.zeros((400, k)), S, "euclidean", (k,), 1.0, False)
    reference = problem.difference_jacobians(theta, u)
    np.testing.assert_allclose(J.dense(), reference, atol=1e-6)
    # every branch was seen
    total = np.clip(theta, 0, 1).sum(axis=1)
    assert ((total >= lo) & (total <= hi)).any()
    if hi < k:
        assert (total > hi).any()
    if lo > 0:
        assert (total < lo).any()
    T = rng.standard_normal((400, k))
    np.testing.assert_allclose(J.apply(T), np.einsum("iab,ib->ia", J.dense(), T), atol=1e-12)
    kink = np.zeros((1, k))
    kink[0, :2] = 0.5  # sum 1, inside the budget for every bounds but lower = 2
    Jk = knapsack_jacobians(S, kink, S.project(kink, "euclidean"))
    if lo <= 1:
        assert Jk.d[0].all()  # theta_i = 0 counts as free: the curved side


def assert_hvp_matches_gradient_differences(problem, B, D, h=1e-7):
    """``problem.hvp`` at ``B`` along ``D`` equals central differences of the gradient (the
    gradient is piecewise linear in the coefficients: a small step stays on one piece);
    returns the Jacobians at ``B``."""
    _, _, theta, u = problem.value_and_gradient(B)
    J = problem.jacobians(theta, u)
    diff = problem.value_and_gradient(B + h * D)[1] - problem.value_and_gradient(B - h * D)[1]
    np.testing.assert_allclose(problem.hvp(J, D), diff / (2 * h), rtol=1e-5, atol=1e-6)
    return J


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", ["knapsack", "unit_cube", "permutahedron"])
def test_hessian_vector_products_match_gradient_differences(name, sparse):
    """``hvp`` (matrix-free: structured Jacobians, features kept sparse) equals central
    differences of the gradient, at a random point of a real feature matrix (the gradient is
    piecewise linear in the coefficients: a small step stays on one piece)."""
    import scipy.sparse as sp

    from projloss.estimators._newton import _BasisProblem
    from projloss.sets import get_set

    require_sets(name)
    X, _ = iris(60)
    rng = np.random.default_rng(8)
    k = 3 if name == "permutahedron" else 5
    S = get_set(name, **({"lower": 1, "upper": 2} if name == "knapsack" else {}))
    F = np.where(rng.random(X.shape) < 0.5, X, 0.0)  # half the entries 0
    G = sp.csr_matrix(F) if sparse else F
    phi = rng.random((60, k))
    problem = _BasisProblem(G, phi, S, "euclidean", (k,), 0.3, True)
    B = rng.standard_normal((k, F.shape[1] + 1))
    D = rng.standard_normal(B.shape)
    J = assert_hvp_matches_gradient_differences(problem, B, D)
    M = problem.preconditioner(J)(D)  # a preconditioner is symmetric positive definite
    assert float(np.sum(M * D)) > 0


def test_wide_knapsack_finish_is_matrix_free(monkeypatch):
    """A sparse linear multilabel knapsack model with more outputs than the coupled-set
    limit (80 labels, as cal500's 174) at a small alpha: L-BFGS stops at ``max_iter``, the
    Newton method finishes it without forming a dense Hessian, at the optimum of a long,
    tight L-BFGS run; ``n_iter_`` counts both solvers, ``n_iter_newton_`` the Newton part."""
    import scipy.sparse as sp

    from projloss.estimators._newton import MAX_COUPLED_OUTPUTS, _BasisProblem

    def no_dense(self, J):
        raise AssertionError("a dense Hessian was formed")

    monkeypatch.setattr(_BasisProblem, "dense_preconditioner", no_dense)
    monkeypatch.setattr(_BasisProblem, "spectral_preconditioner", no_dense)
    rng = np.random.default_rng(9)
    n, d, k = 300, 40, 80
    assert k > MAX_COUPLED_OUTPUTS
    X = sp.random(n, d, density=0.2, format="csr", random_state=9)
    Y = (X @ rng.standard_normal((d, k)) + rng.standard_normal((n, k)) > 1.0).astype(int)
    kw = dict(projection_set="knapsack", knapsack_upper=6, alpha=1e-3, penalize_intercept=True)
    est = ProjectionMultilabelClassifier(max_iter=20, **kw)
    est.fit(X, Y)
    assert est.converged_
    assert est.n_iter_newton_ > 0 and est.n_iter_ == 20 + est.n_iter_newton_
    ref = reference(est, X, Y)
    np.testing.assert_allclose(est.objective_, ref.objective_, rtol=1e-8)


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
@pytest.mark.parametrize("name,shape", [("simplex", (7,)), ("row_simplex", (4, 4))])
def test_simplex_jacobians_are_the_derivative(name, shape, geometry):
    """The per-row diagonal-minus-rank-one Jacobians of the simplex (sparsemax, softmax)
    and of the row simplex equal the two-sided differences of the projection, and at a
    kink of sparsemax (a coordinate exactly at the threshold: ties of the support) they are
    the curved side, the largest-rank element (the coordinate counts in the support)."""
    from projloss.estimators._newton import _BasisProblem
    from projloss.sets import get_set
    from projloss.sets.simplex import simplex_jacobians

    S = get_set(name)
    k, p = shape[-1], int(np.prod(shape))
    rng = np.random.default_rng(11)
    theta = rng.normal(0.0, 0.6, (300, p)) + rng.choice([0.0, 3.0], (300, p), p=[0.8, 0.2])
    u = S.project(theta.reshape(300, *shape), geometry).reshape(300, p)
    J = simplex_jacobians(theta, u, k, geometry)
    problem = _BasisProblem(np.ones((300, 1)), np.zeros((300, p)), S, geometry, shape, 1.0, False)
    np.testing.assert_allclose(J.dense(), problem.difference_jacobians(theta, u), atol=1e-6)
    T = rng.standard_normal((300, p))
    np.testing.assert_allclose(J.apply(T), np.einsum("iab,ib->ia", J.dense(), T), atol=1e-12)
    if geometry == "euclidean":
        assert ((u == 0) & (theta > theta.min())).any()  # sparse projections were seen
        kink = np.zeros((1, p))
        kink[0, ::k] = 1.0  # every row (1, 0, 0, ...): u = e_1, the others at tau = 0
        u_kink = S.project(kink.reshape(1, *shape), geometry).reshape(1, p)
        Jk = simplex_jacobians(kink, u_kink, k, geometry)
        assert Jk.d.all()  # every coordinate at the threshold counts: the curved side


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_row_simplex_hessian_vector_products_match_gradient_differences(geometry):
    """``hvp`` with the row simplex's structured Jacobians equals central differences of
    the gradient (KL: the softmax is smooth; Euclidean: a small step stays on one piece)."""
    from projloss.estimators._newton import _BasisProblem
    from projloss.sets import get_set

    X, _ = iris(60)
    rng = np.random.default_rng(12)
    k = 4
    S = get_set("row_simplex")
    phi = np.stack([np.eye(k)[rng.permutation(k)] for _ in range(60)]).reshape(60, k * k)
    problem = _BasisProblem(X, phi, S, geometry, (k, k), 0.3, True)
    B = rng.standard_normal((k * k, X.shape[1] + 1))
    D = rng.standard_normal(B.shape)
    assert_hvp_matches_gradient_differences(problem, B, D)


def test_fit_stopped_by_the_decrease_rule_is_finished_to_tol():
    """On a flat optimum (nearly separable data, alpha = 1e-4) L-BFGS stops by its relative
    decrease rule (``ftol = 1e-9``, the pipeline's setting before: ``tol = 1e-5``) with
    the gradient far above ``1e-9``; with ``tol = 1e-9`` the Newton finish takes every fit
    to ``max |grad| <= tol``: two fits whose L-BFGS paths differ (from 0 and from a point
    1e-9 away, as another CPU's rounding would make them) end at the same coefficients to
    1e-7, where L-BFGS alone ends more than 1e-5 apart."""
    from projloss.estimators._solver import _Problem
    from projloss.sets import get_set

    X, Y = _separable_multilabel()
    cube = get_set("unit_cube")
    kw = dict(alpha=1e-4, fit_intercept=True, penalize_intercept=True, max_iter=500)
    start = np.random.default_rng(1).standard_normal((Y.shape[1], X.shape[1])) * 1e-9
    fits = {}
    for finish, tol in ((False, 1e-5), (True, 1e-9)):
        for name, init in (("zero", None), ("moved", start)):
            fits[finish, name] = fit_projection_model(
                X, Y, cube, "euclidean", tol=tol, coef_init=init, newton_fallback=finish, **kw
            )
    problem = _Problem(X, Y, cube, "euclidean", (Y.shape[1],), 1e-4, True, True)

    def gmax(fit):
        B = np.hstack([fit.coef, fit.intercept[:, None]])
        return float(np.abs(problem.value_and_gradient(B)[1]).max())

    lbfgs = fits[False, "zero"], fits[False, "moved"]
    assert all(f.converged and f.n_iter_newton == 0 for f in lbfgs)  # by its ftol rule
    assert min(gmax(f) for f in lbfgs) > 1e-7  # ... far above 1e-9
    assert np.abs(lbfgs[0].coef - lbfgs[1].coef).max() > 1e-5  # ... at path-dependent points
    newton = fits[True, "zero"], fits[True, "moved"]
    assert all(f.converged and f.n_iter_newton > 0 and gmax(f) <= 1e-9 for f in newton)
    np.testing.assert_allclose(newton[0].coef, newton[1].coef, rtol=0, atol=1e-7)


def _separable_multilabel():
    """A nearly separable multilabel problem: the optimum at a small alpha is flat."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((80, 5))
    Y = (X @ rng.standard_normal((5, 3)) > 0).astype(float)
    return X, Y


def _old_preconditioners(monkeypatch):
    """The preconditioners before the capacitance and truncated ones: the dense Cholesky
    or the SVD of the Jacobians' rows on every column."""
    import projloss.estimators._newton as newton_module

    monkeypatch.setattr(newton_module, "TRUNCATE", 0.0)
    monkeypatch.setattr(
        newton_module._BasisProblem, "capacitance_preconditioner", lambda self, J, eig=None: None
    )


def _kernel_problem(n, alpha, degree=3):
    """The Newton method's problem for Table 3's permutahedron model on ``n`` iris samples
    (a degree-3 kernel, intercept penalized), at a random point: ``(problem, J)``."""
    from sklearn.metrics.pairwise import polynomial_kernel

    from projloss.estimators._newton import _BasisProblem, spectral_basis
    from projloss.sets import get_set

    X, y = iris(n)
    K = polynomial_kernel(X, X, degree=degree, coef0=1.0)
    basis = spectral_basis(np.hstack([K, np.ones((n, 1))]))
    S = get_set("permutahedron")
    problem = _BasisProblem(
        basis.G, S.encode(y, 3), S, "euclidean", (3,), alpha, False, orthogonal=True
    )
    rng = np.random.default_rng(4)
    X0 = rng.standard_normal((3, basis.G.shape[1])) / basis.s
    _, _, theta, u = problem.value_and_gradient(X0)
    return problem, problem.jacobians(theta, u)


def _as_matrix(op, shape):
    """The matrix of a linear map of ``(p, m)`` arrays, column by column."""
    N = shape[0] * shape[1]
    return np.stack([op(e.reshape(shape)).ravel() for e in np.eye(N)], axis=1)


def test_truncated_preconditioner_eigenvalues():
    """The truncated preconditioner (exact inverse on the columns of large curvature, the
    block diagonal on the others) puts the eigenvalues of the preconditioned generalized
    Hessian in ``[1 - sqrt(tau) - tau, 1 + sqrt(tau) + tau]`` (a degree-3 kernel of real
    data at an alpha where the data term dominates a few columns only)."""
    require_sets("permutahedron")
    from projloss.estimators._newton import TRUNCATE

    problem, J = _kernel_problem(40, alpha=10.0)
    r = int(np.sum(problem.curvature >= TRUNCATE * problem.alpha))
    m = problem.Gt.shape[1]
    assert 0 < r < m
    shape = (3, m)
    H = _as_matrix(lambda D: problem.hvp(J, D), shape)
    P = _as_matrix(problem.preconditioner(J), shape)
    np.testing.assert_allclose(P, P.T, rtol=1e-8, atol=1e-12 * np.abs(P).max())
    w = np.linalg.eigvals(P @ H).real
    bound = np.sqrt(TRUNCATE) + TRUNCATE
    assert 1 - bound <= w.min() and w.max() <= 1 + bound


def vowel(n):
    X, y = load_label_ranking("vowel")
    idx = np.random.default_rng(1).choice(len(X), n, replace=False)
    return StandardScaler().fit_transform(X[idx]), y[idx]


@pytest.mark.parametrize("case", ["vowel", "duplicates", "two-samples", "one-ranking"])
def test_kernel_fit_without_the_dense_hessian(monkeypatch, case):
    """Table 3's degree-3 permutahedron model on real vowel samples (11 labels: a
    ``(p m)^2`` Hessian of 1,100^2 for 100 samples) converges to ``tol = 1e-9`` without
    forming the whole dense Hessian (capacitance and truncated preconditioners), at the
    optimum the dense preconditioners reach: the same coefficients and predictions. Also
    with ties (every sample twice, a constant feature), two samples, and one ranking for
    all (there the Jacobians' rows may outnumber the coefficients: the dense Hessian may
    be the cheaper one)."""
    require_sets("permutahedron")
    from projloss.estimators._newton import _BasisProblem

    X, y = vowel(100)
    if case == "duplicates":
        X = np.hstack([np.vstack([X[:50], X[:50]]), np.ones((100, 1))])
        y = np.concatenate([y[:50], y[:50]])
    elif case == "two-samples":
        X, y = X[:2], y[:2]
    elif case == "one-ranking":
        y = np.repeat(y[:1], len(y), axis=0)
    kw = dict(
        projection_set="permutahedron",
        model="poly",
        degree=3,
        alpha=1.0,
        tol=1e-9,
        penalize_intercept=True,
    )
    with monkeypatch.context() as mp:
        _old_preconditioners(mp)
        old = ProjectionLabelRanker(**kw).fit(X, y)

    dense = _BasisProblem.dense_preconditioner

    def no_dense(self, J):  # a block of the truncated preconditioner may be dense
        assert not self.orthogonal, "the whole Hessian was formed"
        return dense(self, J)

    if case == "vowel":  # elsewhere fewer coefficients than Jacobian rows: dense is cheaper
        monkeypatch.setattr(_BasisProblem, "dense_preconditioner", no_dense)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        new = ProjectionLabelRanker(**kw).fit(X, y)
    assert old.converged_ and new.converged_
    scale = np.abs(old.coef_).max()
    np.testing.assert_allclose(new.coef_, old.coef_, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(new.intercept_, old.intercept_, rtol=0, atol=1e-6 * scale + 1e-9)
    np.testing.assert_array_equal(new.predict(X), old.predict(X))


def tmc2007_slice(n=800):
    """The first ``n`` samples of tmc2007-500 (binary words: 500 columns, some of them
    all-zero in the slice) and a row with no word at all, the labels of the row a copy of
    the first's; features scaled as the pipeline's (about unit rows)."""
    import scipy.sparse as sp
    from helpers import load_tmc2007_500

    X, Y = load_tmc2007_500(n)
    X = sp.vstack([X, sp.csr_matrix((1, X.shape[1]))], format="csr") / 5.0
    Y = np.vstack([Y, Y[:1]])
    assert np.diff(X.indptr)[-1] == 0 and (np.asarray(X.sum(axis=0)) == 0).any()
    return X, Y


def _sparse_block_problem(name, alpha=1e-3):
    import scipy.sparse as sp

    from projloss.estimators._newton import _BasisProblem
    from projloss.sets import get_set

    X, Y = tmc2007_slice()
    n = X.shape[0]
    Gt = sp.hstack([X, np.ones((n, 1))], format="csr")  # the penalized intercept
    S = get_set(name, **({"upper": 3} if name == "knapsack" else {}))
    problem = _BasisProblem(Gt, Y, S, "euclidean", (22,), alpha, False)
    rng = np.random.default_rng(3)
    B = rng.standard_normal((22, Gt.shape[1])) * 0.3
    _, _, theta, u = problem.value_and_gradient(B)
    return problem, problem.jacobians(theta, u), Gt, rng.standard_normal(B.shape)


def _block_residuals(Gt, J, Z, R, alpha=1e-3):
    """Per output, ``|M_a z_a - r_a| / |r_a|`` for the block of the Jacobians' diagonals."""
    from projloss.estimators._newton import output_diagonals

    A, W = Gt.toarray(), output_diagonals(J)
    n = A.shape[0]
    out = []
    for a in range(Z.shape[0]):
        block = A.T @ (W[:, a, None] * A) / n + alpha * np.eye(A.shape[1])
        out.append(np.linalg.norm(block @ Z[a] - R[a]) / np.linalg.norm(R[a]))
    return np.array(out)


@pytest.mark.parametrize("name", ["unit_cube", "reals", "knapsack"])
def test_sparse_block_preconditioner_inverts_the_output_blocks(name, monkeypatch):
    """For sparse features of moderate width the preconditioner is the inverse of the
    block diagonal of ``H`` over the outputs, formed without densifying the features: for
    the separable sets (diagonal Jacobians) that is ``H`` itself; for the knapsack polytope
    (diagonal minus rank one) the blocks of the Jacobians' diagonals. Exact in float64
    (``BLOCK_DTYPE``); in float32, the default, to the rounding of its blocks (measured:
    ``1e-5`` - ``1e-4`` relative residuals here, at ``alpha`` 1e-3 and 1e-4)."""
    import projloss.estimators._newton as newton_module

    for dtype, rtol in ((np.float64, 1e-8), (np.float32, 1e-3)):
        monkeypatch.setattr(newton_module, "BLOCK_DTYPE", dtype)
        monkeypatch.setattr(newton_module, "_SPARSE_CACHE", {})  # pairs of this precision
        problem, J, Gt, R = _sparse_block_problem(name)
        precond = problem.preconditioner(J)
        assert problem.cheap_refresh  # the per-output blocks, not Jacobi
        Z = precond(R)
        assert Z.dtype == np.float64
        if name != "knapsack":
            np.testing.assert_allclose(problem.hvp(J, Z), R, rtol=rtol, atol=rtol)
        res = _block_residuals(Gt, J, Z, R)
        assert res.max() <= rtol, (dtype, res.max())
        if dtype == np.float32:
            assert res.max() > 1e-9  # not the float64 inverse after all


def test_sparse_blocks_indefinite_in_float32_are_factored_in_float64(monkeypatch):
    """A block whose float32 Cholesky factorization fails (its rounding made it
    indefinite) is formed and factored again in float64: exact, as in float64."""
    import projloss.estimators._newton as newton_module

    real = newton_module.cho_factor
    failed = []

    def fails_in_float32(M, *args, **kwargs):
        if M.dtype == np.float32 and len(failed) < 3:
            failed.append(M.shape)
            raise np.linalg.LinAlgError("not positive definite")
        return real(M, *args, **kwargs)

    monkeypatch.setattr(newton_module, "cho_factor", fails_in_float32)
    monkeypatch.setattr(newton_module, "_SPARSE_CACHE", {})
    problem, J, Gt, R = _sparse_block_problem("unit_cube")
    Z = problem.preconditioner(J)(R)
    res = _block_residuals(Gt, J, Z, R)
    assert len(failed) == 3
    assert res[:3].max() <= 1e-8  # the three float64 blocks: exact
    assert 1e-9 < res[3:].max() <= 1e-3  # the others: float32


@pytest.mark.parametrize("name", ["unit_cube", "knapsack"])
def test_sparse_newton_first_reaches_the_optimum_of_lbfgs_then_jacobi(name, monkeypatch):
    """A sparse linear multilabel fit of real data (tmc2007-500, an empty row, all-zero
    columns) at a small alpha, warm-started as the tune stage's grid: the Newton method
    with the per-output blocks, from the start, ends at the optimum that L-BFGS finished by
    the Jacobi-preconditioned Newton method reaches (the path of wide features before), both
    to ``max |grad| <= 1e-9``; without a single L-BFGS iteration; so does the Newton method
    with the two-level preconditioner of wider features (forced here); and where the Newton
    method does not converge within its first budget, L-BFGS then Newton reach it too."""
    import projloss.estimators._newton as newton_module
    import projloss.estimators._solver as solver_module
    from projloss.estimators._solver import _Problem
    from projloss.sets import get_set

    X, Y = tmc2007_slice()
    S = get_set(name, **({"upper": 3} if name == "knapsack" else {}))
    kw = dict(alpha=1e-3, fit_intercept=True, penalize_intercept=True, max_iter=500, tol=1e-9)
    start = fit_projection_model(X, Y, S, "euclidean", **{**kw, "alpha": 1e-2})
    warm = dict(coef_init=start.coef, intercept_init=start.intercept)
    blocks = fit_projection_model(X, Y, S, "euclidean", **kw, **warm)
    monkeypatch.setattr(solver_module, "NEWTON_FIRST_ITER", 1)  # not enough: the fallback
    fallback = fit_projection_model(X, Y, S, "euclidean", **kw, **warm)
    monkeypatch.setattr(solver_module, "NEWTON_FIRST_ITER", 50)
    monkeypatch.setattr(newton_module, "MAX_SPARSE_BLOCK", 0)  # the two-level one
    coarse = fit_projection_model(X, Y, S, "euclidean", **kw, **warm)
    monkeypatch.setattr(solver_module, "NEWTON_FIRST_ITER", 0)  # Jacobi, L-BFGS first
    monkeypatch.setattr(
        newton_module._BasisProblem,
        "coarse_preconditioner",
        newton_module._BasisProblem.jacobi_preconditioner,
    )
    jacobi = fit_projection_model(X, Y, S, "euclidean", **kw, **warm)
    assert blocks.converged and fallback.converged and jacobi.converged and coarse.converged
    assert blocks.n_iter == blocks.n_iter_newton <= 50  # Newton only
    assert coarse.n_iter == coarse.n_iter_newton <= 50
    assert jacobi.n_iter > jacobi.n_iter_newton  # L-BFGS first
    assert fallback.n_iter > fallback.n_iter_newton >= 1  # 1 Newton, L-BFGS, Newton
    assert fallback.message.startswith("Newton-CG first: iteration limit")
    problem = _Problem(X, Y, S, "euclidean", (22,), 1e-3, True, True)
    for fit in (blocks, fallback, jacobi, coarse):
        B = np.hstack([fit.coef, fit.intercept[:, None]])
        assert np.abs(problem.value_and_gradient(B)[1]).max() <= 1e-9
    for fit in (fallback, jacobi, coarse):
        np.testing.assert_allclose(blocks.coef, fit.coef, rtol=0, atol=1e-7)
        np.testing.assert_allclose(blocks.intercept, fit.intercept, rtol=0, atol=1e-7)


def test_sparse_fit_never_densifies_the_features(monkeypatch):
    """A sparse fit's peak memory (tracemalloc: numpy's and scipy's arrays) stays below a
    third of one dense copy of the features (64 MB), with the per-output blocks (their pair
    products: 5 nonzeros a row here) and with Jacobi (wider features)."""
    import tracemalloc

    import scipy.sparse as sp

    import projloss.estimators._newton as newton_module
    from projloss.sets import get_set

    n, d, k = 20_000, 400, 3
    X = sp.random(n, d, density=0.01, format="csr", random_state=2)
    rng = np.random.default_rng(2)
    Y = (X @ rng.standard_normal((d, k)) + 0.1 * rng.standard_normal((n, k)) > 0).astype(float)
    dense_bytes = n * d * 8  # 64 MB
    kw = dict(alpha=1e-3, fit_intercept=True, penalize_intercept=True, max_iter=200, tol=1e-9)
    cube = get_set("unit_cube")
    fit_projection_model(X[:200], Y[:200], cube, "euclidean", **kw)  # compiled (Numba)
    for block in (4000, 0):
        newton_module._SPARSE_CACHE.clear()  # the pair products are built within the fit
        monkeypatch.setattr(newton_module, "MAX_SPARSE_BLOCK", block)
        tracemalloc.start()
        try:
            fit = fit_projection_model(X, Y, cube, "euclidean", **kw)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert fit.converged and fit.n_iter_newton > 0
        assert peak < dense_bytes / 3, (block, peak)


def wide_sparse(n=600, d=1200, k=6, seed=0):
    """Random nonnegative CSR features wider than their samples (d > n: tf-idf like, about
    60 stored entries per row, rows of unit norm), an empty row and an all-zero column;
    labels of a planted linear model (about two per sample)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.05, format="csr", random_state=seed)
    X.data += 0.1
    X = sp.diags(np.r_[0.0, np.ones(n - 1)]) @ X @ sp.diags(np.r_[0.0, np.ones(d - 1)])
    X = sp.csr_matrix(X)
    X.eliminate_zeros()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / np.maximum(norms, 1e-12)) @ X)
    scores = X @ rng.standard_normal((d, k)) + 0.1 * rng.standard_normal((n, k))
    Y = (scores >= np.quantile(scores, 0.65, axis=0)).astype(float)
    assert np.diff(X.indptr)[0] == 0 and X[:, 0].nnz == 0
    return X, Y


def _wide_problem(name, alpha, X, Y):
    from projloss.estimators._newton import _BasisProblem
    from projloss.sets import get_set

    S = get_set(name, **({"upper": 3} if name == "knapsack" else {}))
    return _BasisProblem(X, Y, S, "euclidean", (Y.shape[1],), alpha, False, ones_column=True), S


@pytest.mark.parametrize("name", ["unit_cube", "knapsack"])
def test_coarse_preconditioner_is_exact_on_the_coarse_space(name):
    """The two-level preconditioner of wide sparse features: its coarse space holds the
    top right singular vector of the features (with the column of 1s), it inverts ``H``
    exactly there, is the Jacobi preconditioner on the complement, and is symmetric
    positive definite."""
    import scipy.sparse as sp

    from projloss.estimators._newton import COARSE_RANK

    X, Y = wide_sparse()
    problem, _ = _wide_problem(name, 1e-4, X, Y)
    Q, C = problem.coarse_basis()
    A = sp.hstack([X, np.ones((X.shape[0], 1))]).toarray()
    assert Q.shape == (A.shape[1], COARSE_RANK)
    np.testing.assert_allclose(Q.T @ Q, np.eye(COARSE_RANK), atol=1e-12)
    np.testing.assert_allclose(C, A @ Q, rtol=0, atol=1e-12)
    top = np.linalg.svd(A, full_matrices=False)[2][0]
    assert abs(float(top @ Q[:, 0])) > 1 - 1e-8
    rng = np.random.default_rng(1)
    B = rng.standard_normal((Y.shape[1], A.shape[1])) * 0.5
    _, _, theta, u = problem.value_and_gradient(B)
    J = problem.jacobians(theta, u)
    precond = problem.coarse_preconditioner(J)
    R, R2 = rng.standard_normal(B.shape), rng.standard_normal(B.shape)
    Z = precond(R)
    coarse = (Z @ Q) @ Q.T
    np.testing.assert_allclose(problem.hvp(J, coarse) @ Q, R @ Q, rtol=1e-9, atol=1e-12)
    jacobi = problem.jacobi_preconditioner(J)
    rest = jacobi(R - (R @ Q) @ Q.T)
    np.testing.assert_allclose(Z - coarse, rest - (rest @ Q) @ Q.T, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.sum(R2 * Z), np.sum(precond(R2) * R), rtol=1e-9)
    assert float(np.sum(R * Z)) > 0


def test_coarse_preconditioner_needs_fewer_cg_iterations_than_jacobi():
    """On wide sparse features at a small ``alpha`` the Jacobi preconditioner leaves the
    large curvature of the mean row (with the column of 1s) to CG; the two-level one
    takes it out: at most half the CG iterations (20 against 52 here) for a Newton step
    to a relative residual of 1e-6 (a knapsack model, samples inside and on the budget)."""
    from projloss.estimators._newton import _pcg

    X, Y = wide_sparse()
    problem, _ = _wide_problem("knapsack", 1e-3, X, Y)
    B = 0.3 * np.random.default_rng(2).standard_normal((Y.shape[1], X.shape[1] + 1))
    _, g, theta, u = problem.value_and_gradient(B)
    J = problem.jacobians(theta, u)
    assert 0 < float((J.v > 0).any(axis=1).mean()) < 1  # both kinds of samples
    _, n_coarse = _pcg(problem, J, g, problem.coarse_preconditioner(J), 1e-6, 1000)
    _, n_jacobi = _pcg(problem, J, g, problem.jacobi_preconditioner(J), 1e-6, 1000)
    assert 2 * n_coarse <= n_jacobi, (n_coarse, n_jacobi)


@pytest.mark.parametrize("name", ["unit_cube", "knapsack"])
def test_wide_sparse_newton_first_reaches_the_optimum_of_lbfgs_then_jacobi(name, monkeypatch):
    """Sparse features too wide for the per-output blocks (here forced by
    ``MAX_SPARSE_BLOCK = 0``; d > n random CSR): the Newton method with the two-level
    preconditioner runs first, from a warm start and from a cold one, without a single
    L-BFGS iteration, and ends at the optimum that L-BFGS finished by the
    Jacobi-preconditioned Newton method reaches (the path before), all to
    ``max |grad| <= 1e-9``."""
    import projloss.estimators._newton as newton_module
    import projloss.estimators._solver as solver_module
    from projloss.estimators._solver import _Problem

    X, Y = wide_sparse()
    _, S = _wide_problem(name, 1e-3, X, Y)
    monkeypatch.setattr(newton_module, "MAX_SPARSE_BLOCK", 0)
    kw = dict(alpha=1e-3, fit_intercept=True, penalize_intercept=True, max_iter=500, tol=1e-9)
    start = fit_projection_model(X, Y, S, "euclidean", **{**kw, "alpha": 1e-2})
    warm = dict(coef_init=start.coef, intercept_init=start.intercept)
    fits = {
        "warm": fit_projection_model(X, Y, S, "euclidean", **kw, **warm),
        "cold": fit_projection_model(X, Y, S, "euclidean", **kw),
    }
    for fit in fits.values():
        assert fit.converged and fit.n_iter == fit.n_iter_newton <= 50  # Newton only
    monkeypatch.setattr(solver_module, "NEWTON_FIRST_ITER", 0)  # L-BFGS first
    monkeypatch.setattr(
        newton_module._BasisProblem,
        "coarse_preconditioner",
        newton_module._BasisProblem.jacobi_preconditioner,
    )
    old = fit_projection_model(X, Y, S, "euclidean", **kw, **warm)
    assert old.converged and old.n_iter > old.n_iter_newton
    problem = _Problem(X, Y, S, "euclidean", (Y.shape[1],), 1e-3, True, True)
    for fit in (*fits.values(), old):
        B = np.hstack([fit.coef, fit.intercept[:, None]])
        assert np.abs(problem.value_and_gradient(B)[1]).max() <= 1e-9
    for fit in fits.values():
        np.testing.assert_allclose(fit.coef, old.coef, rtol=0, atol=1e-6)
        np.testing.assert_allclose(fit.intercept, old.intercept, rtol=0, atol=1e-6)


def test_wide_sparse_fits_of_the_same_features_share_what_they_derive(monkeypatch):
    """A lambda grid refits the same sparse features: the estimator's next fit reuses the
    previous one's squared entries and coarse space (:func:`sparse_derived`: the same
    contents), and ends where a fit that derives them afresh does, to the last bit; a copy
    shares them, the same arrays changed in place get their own."""
    import projloss.estimators._newton as newton_module

    X, Y = wide_sparse()
    monkeypatch.setattr(newton_module, "MAX_SPARSE_BLOCK", 0)
    kw = dict(projection_set="knapsack", knapsack_upper=3, penalize_intercept=True, tol=1e-9)
    est = ProjectionMultilabelClassifier(alpha=1e-2, warm_start=True, **kw)
    newton_module._SPARSE_CACHE.clear()
    est.fit(X, Y)
    derived = newton_module._SPARSE_CACHE["last"][1]
    assert derived.squared is not None and len(derived.coarse) == 1
    coarse = next(iter(derived.coarse.values()))
    start = est.coef_, est.intercept_
    est.set_params(alpha=1e-3).fit(X, Y)  # the next lambda of the grid
    assert newton_module._SPARSE_CACHE["last"][1] is derived
    assert next(iter(derived.coarse.values())) is coarse
    newton_module._SPARSE_CACHE.clear()
    fresh = ProjectionMultilabelClassifier(alpha=1e-2, warm_start=True, **kw)
    fresh.fit(X, Y)
    fresh.coef_, fresh.intercept_ = start
    fresh.set_params(alpha=1e-3).fit(X, Y)
    assert newton_module._SPARSE_CACHE["last"][1] is not derived
    np.testing.assert_array_equal(est.coef_, fresh.coef_)
    np.testing.assert_array_equal(est.intercept_, fresh.intercept_)
    derived = newton_module.sparse_derived(X)
    assert newton_module.sparse_derived(X) is derived
    assert newton_module.sparse_derived(X.copy()) is derived  # the same contents
    X.data[0] *= 2.0
    assert newton_module.sparse_derived(X) is not derived


def test_a_different_matrix_never_gets_the_derived_data_of_another(monkeypatch):
    """The one cache of what is derived from sparse features (:func:`sparse_derived`: the
    column norms, squared entries, coarse space and pair products) is keyed by the
    contents: a different matrix of the same shape written over the same arrays, with the
    same sums of its values, of their magnitudes and of its indices (two values of two
    columns swapped in place), gets its own, equal to a fresh one's; and so does its fit,
    to the last bit. (An address-and-sums key returned the first matrix's.)"""
    import projloss.estimators._newton as newton_module

    X, Y = wide_sparse(n=200, d=300, k=4)
    i, j = X.indptr[1], X.indptr[2]  # entries of rows 1 and 2 (row 0 is empty)
    assert X.indices[i] != X.indices[j] and X.data[i] != X.data[j]
    kw = dict(alpha=1e-2, projection_set="unit_cube", penalize_intercept=True, tol=1e-9)
    newton_module._SPARSE_CACHE.clear()
    est = ProjectionMultilabelClassifier(**kw).fit(X, Y)  # per-output blocks: pair products
    monkeypatch.setattr(newton_module, "MAX_SPARSE_BLOCK", 0)
    est.fit(X, Y)  # too wide for the blocks: squared entries, coarse space
    first = newton_module.sparse_derived(X)
    assert first.squared is not None and first.coarse
    arrays = (X.indptr, X.indices, X.data)
    sums = (X.data.sum(), np.abs(X.data).sum(), X.indices.sum(), X.indptr.sum())
    X.data[[i, j]] = X.data[[j, i]]  # another matrix, in place
    assert all(a is b for a, b in zip(arrays, (X.indptr, X.indices, X.data), strict=True))
    assert (X.data.sum(), np.abs(X.data).sum(), X.indices.sum(), X.indptr.sum()) == sums
    second = newton_module.sparse_derived(X)
    assert second is not first
    assert second.squared is None and not second.coarse and not second.pairs
    assert first.pairs  # the first fit's pair products were kept with the rest
    expected = np.bincount(X.indices, weights=X.data**2, minlength=X.shape[1])
    np.testing.assert_array_equal(second.column_sq, expected)
    assert not np.array_equal(second.column_sq, first.column_sq)
    est.fit(X, Y)
    newton_module._SPARSE_CACHE.clear()
    fresh = ProjectionMultilabelClassifier(**kw).fit(X.copy(), Y)
    np.testing.assert_array_equal(est.coef_, fresh.coef_)
    np.testing.assert_array_equal(est.intercept_, fresh.intercept_)


def test_pseudo_inverse_of_singular_and_regular_blocks():
    """The preconditioners' pseudo-inverse: the Moore-Penrose inverse of a singular PSD
    block (a direction without curvature), the inverse of a regular one."""
    from projloss.estimators._newton import _pseudo_inverse

    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 4))
    singular = A @ A.T  # rank 4 of 6
    np.testing.assert_allclose(_pseudo_inverse(singular), np.linalg.pinv(singular), atol=1e-10)
    regular = singular + np.eye(6)
    np.testing.assert_allclose(_pseudo_inverse(regular) @ regular, np.eye(6), atol=1e-12)
    np.testing.assert_array_equal(_pseudo_inverse(np.zeros((3, 3))), np.zeros((3, 3)))
