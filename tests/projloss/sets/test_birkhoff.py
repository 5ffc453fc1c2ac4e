"""Birkhoff polytope: what the generic tests in test_common.py do not cover.

Independent references: POT (smooth OT semi-dual with l2 regularization, log-domain
Sinkhorn), the vertex-based reference solver of reference.py at k = 5, a KKT certificate
found by linear programming (k = 5..9), invariances of the projections (row/column shifts
of theta, permutations of rows and columns), and the log-domain optimality structure of
the KL projection.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import optimality_gap, reference_projection
from scipy.optimize import linprog
from sklearn.exceptions import ConvergenceWarning

from projloss.sets import Birkhoff, get_set
from projloss.sets._birkhoff_solvers import solve

GEOMETRIES = ("euclidean", "kl")


def marginal_violation(P):
    return max(np.abs(P.sum(-1) - 1).max(), np.abs(P.sum(-2) - 1).max())


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_marginals_on_large_random_batches(geometry):
    """k = 11, n = 1000, std 2 (the benchmark setting of issue 7), and a looser tol."""
    theta = 2.0 * np.random.default_rng(0).standard_normal((1000, 11, 11))
    for tol in (1e-9, 1e-6):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            P = Birkhoff(tol=tol).project(theta, geometry)
        assert P.min() >= 0
        assert marginal_violation(P) <= tol
        assert marginal_violation(P) <= 1e-6


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # POT passes `disp` to scipy
@pytest.mark.parametrize("k", [5, 8, 11])
def test_euclidean_agrees_with_pot_smooth_ot(k):
    ot = pytest.importorskip("ot")
    rng = np.random.default_rng(k)
    ones = np.ones(k)
    for scale in (0.5, 2.0):
        theta = scale * rng.standard_normal((2, k, k))
        P = Birkhoff().project(theta)
        for t, p in zip(theta, P, strict=True):
            # POT: min <T, M> + reg * 1/2 ||T||^2 with M = -theta, reg = 1, i.e.
            # min 1/2 ||T - theta||^2 + const over the doubly stochastic T.
            ref = ot.smooth.smooth_ot_semi_dual(
                ones, ones, -t, reg=1.0, reg_type="l2", stopThr=1e-14, numItermax=100000
            )
            np.testing.assert_allclose(p, ref, atol=1e-6)


@pytest.mark.parametrize("k", [5, 8, 11])
def test_kl_agrees_with_pot_sinkhorn(k):
    ot = pytest.importorskip("ot")
    rng = np.random.default_rng(k)
    ones = np.ones(k)
    for scale in (0.5, 2.0):
        theta = scale * rng.standard_normal((2, k, k))
        P = Birkhoff().project(theta, "kl")
        for t, p in zip(theta, P, strict=True):
            # POT's entropic OT with M = -theta, reg = 1 scales exp(theta); the projection
            # of exp(theta - 1) is the same (the constant is absorbed by the scalings): we
            # check both shifts against POT.
            for shift in (0.0, 1.0):
                ref = ot.sinkhorn(
                    ones,
                    ones,
                    -(t - shift),
                    reg=1.0,
                    method="sinkhorn_log",
                    stopThr=1e-13,
                    numItermax=100000,
                )
                np.testing.assert_allclose(p, ref, atol=1e-9)


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_optimal_against_all_vertices_at_k5(geometry):
    """k = 5 (120 vertices): the variational inequality against every vertex, and for
    Euclidean the NNLS reference (the SLSQP KL reference is too slow at 120 vertices;
    POT and the KKT certificate cover KL)."""
    k = 5
    s = Birkhoff()
    verts = s.vertices(k)
    assert len(verts) == 120
    rng = np.random.default_rng(5)
    for scale in (0.5, 2.0, 10.0):
        theta = scale * rng.standard_normal((k, k))
        u = s.project(theta, geometry)
        assert optimality_gap(u, theta, verts, geometry) >= -1e-8 * scale
        if geometry == "euclidean":
            ref = reference_projection(verts, theta, geometry)
            np.testing.assert_allclose(u, ref, atol=1e-6)


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_invariances(geometry):
    """Row/column shifts of theta do not move the projection (the marginals are fixed);
    permuting rows and columns of theta permutes the projection."""
    rng = np.random.default_rng(3)
    k = 7
    s = Birkhoff()
    for scale in (1.0, 30.0):
        theta = scale * rng.standard_normal((4, k, k))
        P = s.project(theta, geometry)
        shifted = theta + 5 * rng.standard_normal((4, k, 1)) + 5 * rng.standard_normal((4, 1, k))
        np.testing.assert_allclose(s.project(shifted, geometry), P, atol=1e-8)
        r, c = rng.permutation(k), rng.permutation(k)
        np.testing.assert_allclose(
            s.project(theta[:, r][:, :, c], geometry), P[:, r][:, :, c], atol=1e-8
        )


def test_kl_huge_range_is_stable_and_optimal():
    """|theta| up to 1e3 mixed with tiny entries: no overflow, marginals hold, and
    log P - theta has the additive form a_i + b_j of the Sinkhorn scaling wherever P does
    not underflow."""
    rng = np.random.default_rng(7)
    k = 6
    theta = rng.standard_normal((20, k, k)) * rng.choice([1e-3, 1.0, 1e2, 1e3], size=(20, k, k))
    theta[0] = 1e3 * np.round(rng.standard_normal((k, k)))  # ties at large magnitude
    theta[1] = 0.0
    theta[1, 0, 0] = -1e3
    P = Birkhoff().project(theta, "kl")
    assert np.isfinite(P).all() and P.min() >= 0
    assert marginal_violation(P) <= 1e-9
    for t, p in zip(theta, P, strict=True):
        mask = p > 1e-250
        i, j = np.nonzero(mask)
        # Least-squares fit of log p - theta = a_i + b_j on the support.
        A = np.zeros((len(i), 2 * k))
        A[np.arange(len(i)), i] = 1
        A[np.arange(len(i)), k + j] = 1
        rhs = np.log(p[mask]) - t[mask]
        coef, *_ = np.linalg.lstsq(A, rhs, rcond=None)
        assert np.abs(A @ coef - rhs).max() <= 1e-6 * max(1.0, np.abs(t).max())
        # Entries that underflowed must be far below the additive model's prediction bound.
        a, b = coef[:k], coef[k:]
        pred = t + a[:, None] + b[None, :]
        assert np.all(pred[~mask] < -500)
    # The exact optimality check against all 720 vertices on the non-underflowed support.
    verts = Birkhoff().vertices(k).reshape(-1, k * k)
    for t, p in zip(theta[:3], P[:3], strict=True):
        keep = p.reshape(-1) > 1e-200
        v = verts[np.all(verts[:, ~keep] == 0, axis=1)][:, keep]
        gap = optimality_gap(p.reshape(-1)[keep], t.reshape(-1)[keep], v, "kl")
        assert gap >= -1e-7 * max(1.0, np.abs(t).max())


def test_euclidean_large_magnitude_reaches_a_vertex():
    """The Euclidean projection of s * A reaches the optimal face of the assignment LP
    at a finite s: for random A at s = 1e3 (a unique optimal assignment, with a margin in
    the hundreds) it is exactly the MAP permutation matrix."""
    rng = np.random.default_rng(11)
    s = Birkhoff()
    theta = 1e3 * rng.standard_normal((10, 9, 9))
    np.testing.assert_allclose(s.project(theta), s.argmax(theta), atol=1e-9)


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_convergence_warning_names_the_violation(geometry):
    theta = 3.0 * np.random.default_rng(0).standard_normal((50, 11, 11))
    with pytest.warns(ConvergenceWarning, match=r"marginal violation \d\.\d+e[-+]\d+ > tol"):
        Birkhoff(max_iter=1).project(theta, geometry)


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_warm_start_agrees_with_cold_start(geometry):
    rng = np.random.default_rng(4)
    theta = 2.0 * rng.standard_normal((30, 6, 6))
    warm, cold = Birkhoff(warm_start=True), Birkhoff()
    for step in (0.0, 1e-3, 1e-1, 10.0):  # nearby and far-away thetas
        theta = theta + step * rng.standard_normal(theta.shape)
        np.testing.assert_allclose(
            warm.project(theta, geometry), cold.project(theta, geometry), atol=1e-8
        )
    # A different batch shape is not warm-started from the previous one.
    np.testing.assert_allclose(
        warm.project(theta[:3], geometry), cold.project(theta[:3], geometry), atol=1e-8
    )


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_warm_start_saves_iterations(geometry):
    rng = np.random.default_rng(5)
    theta = 2.0 * rng.standard_normal((200, 11, 11))
    _, alpha, cold = solve(theta, geometry, 1e-9, 200)
    theta2 = theta + 1e-2 * rng.standard_normal(theta.shape)
    P2, _, warm = solve(theta2, geometry, 1e-9, 200, init=alpha)
    assert warm.converged.all()
    assert warm.n_iter < cold.n_iter
    np.testing.assert_allclose(P2, solve(theta2, geometry, 1e-9, 200)[0], atol=1e-8)


def test_empty_batch_and_leading_axes():
    s = Birkhoff()
    for g in GEOMETRIES:
        assert s.project(np.zeros((0, 3, 3)), g).shape == (0, 3, 3)
        assert s.project(np.zeros((2, 0, 4, 4)), g).shape == (2, 0, 4, 4)
    np.testing.assert_allclose(s.project(np.zeros((2, 3, 4, 4))), np.full((2, 3, 4, 4), 0.25))


def test_encode_decode():
    s = Birkhoff()
    y = np.array([[2, 0, 1], [0, 1, 2]])
    Y = s.encode(y)
    expected = np.zeros((2, 3, 3))
    expected[0, [0, 1, 2], [2, 0, 1]] = 1
    expected[1] = np.eye(3)
    np.testing.assert_array_equal(Y, expected)
    np.testing.assert_array_equal(s.decode(Y), y)
    assert s.decode(Y).dtype == np.int64
    np.testing.assert_array_equal(s.encode(y.astype(float), 3), expected)
    for perm in itertools.permutations(range(4)):
        np.testing.assert_array_equal(s.decode(s.encode(perm)), perm)


@pytest.mark.parametrize(
    ("y", "k", "match"),
    [
        ([0, 0, 1], None, "permutation"),
        ([0, 1, 3], None, "permutation"),
        ([-1, 0, 1], None, "permutation"),
        ([0.5, 1, 2], None, "integer"),
        ([0, 1, 2], 4, r"shape \(\.\.\., 4\)"),
        (3, None, "scalar"),
        (np.zeros((2, 0)), None, "k >= 1"),
    ],
)
def test_encode_rejects_non_permutations(y, k, match):
    with pytest.raises(ValueError, match=match):
        Birkhoff().encode(y, k)


def test_vertices_are_the_permutation_matrices():
    s = Birkhoff()
    for k in (1, 2, 3, 4):
        V = s.vertices(k)
        assert V.shape == (np.prod(range(1, k + 1)), k, k)
        assert s.contains(V).all()
        assert len({v.tobytes() for v in V}) == len(V)


def test_contains():
    s = Birkhoff()
    assert s.contains(np.full((3, 3), 1 / 3)).all()
    assert not s.contains(np.eye(3) * 2).any()
    bad = np.full((3, 3), 1 / 3)
    bad[0, 0], bad[0, 1] = -0.1, 1 / 3 + 0.1
    assert not s.contains(bad).any()  # rows/columns sum to one but an entry is negative
    bad = np.full((3, 3), 1 / 3)
    bad[0] = [1, 0, 0]
    assert not s.contains(bad).any()


def test_parameters_registry_and_validation():
    s = get_set("birkhoff", tol=1e-6, max_iter=50)
    assert isinstance(s, Birkhoff) and s.matrix and s.name == "birkhoff"
    assert s.get_params() == {"tol": 1e-6, "max_iter": 50, "warm_start": False}
    assert s == Birkhoff(tol=1e-6, max_iter=50)
    for bad in (0.0, -1.0, float("nan"), float("inf"), "1e-6"):
        with pytest.raises(ValueError, match="tol"):
            Birkhoff(tol=bad)
    for bad in (0, -3, 2.5):
        with pytest.raises(ValueError, match="max_iter"):
            Birkhoff(max_iter=bad)


def kkt_feasible(P: np.ndarray, theta: np.ndarray, geometry: str, atol: float) -> bool:
    """Whether multipliers (a, b) certify P as the projection, found by an LP (HiGHS).

    P is the projection iff P is doubly stochastic and, for some a, b in R^k,
    Euclidean: P = max(theta + a 1^T + 1 b^T, 0); KL: log P = theta + a 1^T + 1 b^T
    (entries of P that underflow to 0 then need theta + a_i + b_j < log(1e-300)).
    """
    k = P.shape[-1]
    i, j = np.indices((k, k))
    A = np.zeros((k * k, 2 * k))
    A[np.arange(k * k), i.ravel()] = 1
    A[np.arange(k * k), k + j.ravel()] = 1
    t = theta.ravel()
    if geometry == "euclidean":
        supp = P.ravel() > 0
        target, ceiling = P.ravel()[supp] - t[supp], 0.0
    else:
        supp = P.ravel() > 1e-300
        target, ceiling = np.log(P.ravel()[supp]) - t[supp], np.log(1e-300)
    # |A_s z - target| <= atol on the support; A_o z <= ceiling - theta off the support.
    A_ub = np.vstack([A[supp], -A[supp], A[~supp]])
    b_ub = np.concatenate([target + atol, -target + atol, ceiling - t[~supp] + atol])
    res = linprog(np.zeros(2 * k), A_ub=A_ub, b_ub=b_ub, bounds=(None, None), method="highs")
    return res.status == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    k=st.integers(5, 9),
    levels=st.lists(st.integers(-3, 3), min_size=1, max_size=4),
    mag=st.sampled_from([1e-3, 0.5, 2.0, 30.0, 1e3]),
    noise=st.sampled_from([0.0, 1e-3, 1.0]),
    seed=st.integers(0, 2**16),
    geometry=st.sampled_from(GEOMETRIES),
)
def test_property_kkt_certificate_beyond_vertex_enumeration(k, levels, mag, noise, seed, geometry):
    """k = 5..9 with ties and |theta| up to 1e3: marginals, and optimality certified by
    an LP over the multipliers (no vertex enumeration)."""
    rng = np.random.default_rng(seed)
    theta = mag * np.array(levels, dtype=float)[rng.integers(0, len(levels), size=(k, k))]
    theta += noise * rng.standard_normal((k, k))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        P = Birkhoff().project(theta, geometry)
    assert np.isfinite(P).all() and P.min() >= 0
    assert marginal_violation(P) <= 1e-9
    scale = max(1.0, np.abs(theta).max())
    assert kkt_feasible(P, theta, geometry, atol=1e-9 * scale)


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_kkt_certificate_rejects_a_perturbed_projection(geometry):
    """The certificate can fail: moving mass along a 2x2 cycle keeps P doubly stochastic
    but makes it suboptimal."""
    theta = np.random.default_rng(1).standard_normal((6, 6))
    P = Birkhoff().project(theta, geometry)
    assert kkt_feasible(P, theta, geometry, atol=1e-9)
    i, ii, j, jj = next(
        (i, ii, j, jj)
        for i, ii, j, jj in itertools.product(range(6), repeat=4)
        if i < ii and j < jj and P[np.ix_([i, ii], [j, jj])].min() > 1e-3
    )
    Q = P.copy()
    eps = 1e-4
    Q[[i, ii], [j, jj]] += eps
    Q[[i, ii], [jj, j]] -= eps
    assert Q.min() >= 0 and marginal_violation(Q) <= 1e-9
    assert not kkt_feasible(Q, theta, geometry, atol=1e-9)


def test_chunked_batches_equal_unchunked(monkeypatch):
    from projloss.sets import _birkhoff_solvers

    theta = 2.0 * np.random.default_rng(8).standard_normal((50, 5, 5))
    for g in GEOMETRIES:
        P, alpha, _ = solve(theta, g, 1e-9, 200)
        monkeypatch.setattr(_birkhoff_solvers, "_CHUNK", 16)
        Pc, _, infoc = solve(theta, g, 1e-9, 200)
        Pw, _, _ = solve(theta, g, 1e-9, 200, init=alpha)
        monkeypatch.undo()
        np.testing.assert_allclose(Pc, P, atol=1e-12)
        np.testing.assert_allclose(Pw, P, atol=1e-8)
        assert infoc.converged.shape == (50,) and infoc.converged.all()
