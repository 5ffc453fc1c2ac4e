"""Knapsack polytope {mu in [0,1]^k : l <= sum(mu) <= u} (paper §4, Proposition 3).

Independent references used here (no code shared with projloss):
- a generic constrained solver (scipy SLSQP) in mu-space, which knows nothing of Prop. 3;
- bisection on the threshold of the capped-simplex projection to float resolution;
- a vertex-free optimality certificate: u = P(theta) iff <g, u> <= min_{v in C} <g, v> with
  g = grad Psi(u) - theta, the minimum taken by sorting g (the l smallest, then the negative
  ones among the next u - l);
- brute force over the vertices for MAP.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import brute_force_argmax
from scipy.optimize import minimize

from projloss.sets import Knapsack, Simplex, UnitCube, get_set
from projloss.sets.knapsack import kl_project_capped_simplex, project_capped_simplex


# ---------------------------------------------------------------------- references
def _bisect(h, lo, hi, m):
    """Root of the non-increasing h(t) = m in [lo, hi], to float resolution."""
    for _ in range(400):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if h(mid) > m:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def euclidean_bisection(theta, l, u):
    k = len(theta)
    nu = np.clip(theta, 0, 1)
    if l <= nu.sum() <= u:
        return nu
    m = u if nu.sum() > u else l
    if m == 0 or m == k:
        return np.full(k, float(m > 0))
    tau = _bisect(lambda t: np.clip(theta - t, 0, 1).sum(), theta.min() - 1.0, theta.max(), m)
    return np.clip(theta - tau, 0, 1)


def kl_bisection(theta, l, u):
    k = len(theta)
    nu = np.exp(np.minimum(theta - 1, 0))
    if l <= nu.sum() <= u:
        return nu
    m = u if nu.sum() > u else l
    if m == 0 or m == k:
        return np.full(k, float(m > 0))
    t = _bisect(
        lambda t: np.exp(np.minimum(theta - t, 0)).sum(),
        theta.min(),
        theta.max() + np.log(k / m),
        m,
    )
    return np.exp(np.minimum(theta - t, 0))


def slsqp_projection(theta, l, u, geometry):
    """Generic solver on the constraints themselves (no Prop. 3, no vertices)."""
    k = len(theta)
    if geometry == "euclidean":

        def fun(mu):
            d = mu - theta
            return 0.5 * d @ d, d

        lb = 0.0
    else:

        def fun(mu):
            lm = np.log(mu)
            return mu @ lm - mu @ theta, lm + 1 - theta

        lb = 1e-12
    res = minimize(
        fun,
        np.full(k, (l + u) / (2 * k)).clip(lb, 1),
        jac=True,
        method="SLSQP",
        bounds=[(lb, 1.0)] * k,
        constraints=[
            {"type": "ineq", "fun": lambda mu: u - mu.sum(), "jac": lambda mu: -np.ones(k)},
            {"type": "ineq", "fun": lambda mu: mu.sum() - l, "jac": lambda mu: np.ones(k)},
        ],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    return res.x


def linear_min(g, l, u):
    """min of <g, v> over the knapsack polytope (it is attained at a vertex)."""
    gs = np.sort(g)
    return gs[:l].sum() + np.minimum(gs[l:u], 0).sum()


def certificate_gap(mu, theta, l, u, geometry):
    """min_v <g, v - mu> (>= 0 iff mu is the projection), g = grad Psi(mu) - theta."""
    g = mu - theta if geometry == "euclidean" else np.log(mu) + 1 - theta
    return linear_min(g, l, u) - g @ mu


REFERENCES = {"euclidean": euclidean_bisection, "kl": kl_bisection}


# ---------------------------------------------------------------------- closed forms
def test_registry_and_params():
    s = get_set("knapsack", lower=1, upper=3)
    assert s == Knapsack(1, 3) and s.get_params() == {"lower": 1, "upper": 3}
    assert Knapsack(1.0, 2.0).get_params() == {"lower": 1, "upper": 2}
    assert isinstance(Knapsack(np.int64(1)).lower, int)
    assert repr(Knapsack(0, 2)) == "Knapsack(lower=0, upper=2)"


def test_closed_forms():
    s = Knapsack(0, 1)
    np.testing.assert_allclose(s.project([0.9, 0.8, 0.1]), [0.55, 0.45, 0.0], atol=1e-15)
    np.testing.assert_allclose(
        Knapsack(2, 3).project([0.5, 0.0, -0.2, -5.0]), [1.0, 0.6, 0.4, 0.0], atol=1e-15
    )
    np.testing.assert_allclose(
        Knapsack(2, 2).project([10.0, 0.0, 0.0], "kl"), [1.0, 0.5, 0.5], atol=1e-15
    )
    for g in ("euclidean", "kl"):
        for l, u, c in [(0, 2, 5.0), (3, 4, -5.0), (1, 1, 0.3)]:
            m = u if c > 0 else l
            np.testing.assert_allclose(Knapsack(l, u).project(np.full(5, c), g), m / 5, atol=1e-15)
    np.testing.assert_allclose(Knapsack(0, 1).project([1e3, 1e3], "kl"), [0.5, 0.5])
    # Entries far above the m-th largest (the KL solver's overflow guard).
    np.testing.assert_allclose(
        Knapsack(2, 2).project([[1e3, 0.0, 0.0], [0.0, 1e3, 1e3 - np.log(2)]], "kl"),
        [[1.0, 0.5, 0.5], [0.0, 1.0, 1.0]],
        atol=1e-15,
    )
    # 2e3 is capped; the two 1e3 and 999 share the remaining mass 2.
    a = 2.0 + np.exp(-1.0)
    np.testing.assert_allclose(
        Knapsack(0, 3).project([1e3, 999.0, 0.0, -1e3, 1e3, 2e3], "kl"),
        [2 / a, 2 * np.exp(-1.0) / a, 0.0, 0.0, 2 / a, 1.0],
        rtol=1e-12,
    )
    np.testing.assert_array_equal(Knapsack(0, 1).project([1e3, -1e3, 0.0], "kl"), [1, 0, 0])


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_whole_cube_equals_unit_cube_projection(geometry):
    theta = 3.0 * np.random.default_rng(0).standard_normal((50, 6))
    cube = UnitCube().project(theta, geometry)
    # Two code paths (the cube's vectorized exponential, the knapsack kernel's libm one):
    # equal up to rounding.
    np.testing.assert_allclose(Knapsack(0, 6).project(theta, geometry), cube, rtol=1e-14)
    np.testing.assert_allclose(Knapsack().project(theta, geometry), cube, rtol=1e-14)
    np.testing.assert_array_equal(Knapsack(0, 6).argmax(theta), UnitCube().argmax(theta))


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_l_equals_u_equals_one_is_the_simplex(geometry):
    # {mu in [0,1]^k : sum mu = 1} is the simplex: sparsemax / softmax, other algorithms.
    theta = 2.0 * np.random.default_rng(1).standard_normal((40, 7))
    np.testing.assert_allclose(
        Knapsack(1, 1).project(theta, geometry), Simplex().project(theta, geometry), atol=1e-13
    )


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_single_vertex_sets(geometry):
    theta = np.array([[1e3, -1e3, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0], [-1e3, -1e3, 5.0, 0.0]])
    np.testing.assert_array_equal(Knapsack(0, 0).project(theta, geometry), 0.0)
    np.testing.assert_array_equal(Knapsack(4, 4).project(theta, geometry), 1.0)
    np.testing.assert_array_equal(Knapsack(0, 0).argmax(theta), 0.0)
    np.testing.assert_array_equal(Knapsack(4, 4).argmax(theta), 1.0)


# ---------------------------------------------------------------------- references
@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_matches_generic_solver_in_mu_space(geometry):
    rng = np.random.default_rng(2)
    for k in (6, 8):
        for _ in range(12):
            l = int(rng.integers(0, k + 1))
            u = int(rng.integers(l, k + 1))
            theta = rng.standard_normal(k) * rng.choice([0.5, 2.0]) + rng.choice([-1, 0, 1])
            mu = Knapsack(l, u).project(theta, geometry)
            ref = slsqp_projection(theta, l, u, geometry)
            np.testing.assert_allclose(mu, ref, atol=1e-6, err_msg=f"l={l} u={u}")


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_matches_bisection_and_certificate_for_larger_k(geometry):
    rng = np.random.default_rng(3)
    for k in (2, 10, 50, 200):
        for l, u in {(0, 1), (1, k // 2 + 1), (k // 2, k // 2), (k - 1, k), (0, k - 1)}:
            s = Knapsack(l, u)
            theta = rng.standard_normal((10, k)) * 3.0 + rng.choice([-2, 0, 2], size=(10, 1))
            mu = s.project(theta, geometry)
            for t, m in zip(theta, mu, strict=True):
                np.testing.assert_allclose(m, REFERENCES[geometry](t, l, u), atol=1e-12)
                assert certificate_gap(m, t, l, u, geometry) >= -1e-10
            assert s.contains(mu, atol=1e-12).all()


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
@pytest.mark.parametrize("p_inside", [0.2, 0.9])  # mostly capped / mostly inside [l, u]
def test_branches_mixed_within_one_batch(geometry, p_inside):
    rng = np.random.default_rng(4)
    l, u, k = 2, 3, 6
    s = Knapsack(l, u)
    p_out = (1 - p_inside) / 2
    mid = 0.5 if p_inside < 0.5 else (0.42 if geometry == "euclidean" else 0.12)  # sum ~ 2.5
    shift = rng.choice([-1.5, mid, 2.5], size=(300, 1), p=[p_out, p_inside, p_out])
    theta = rng.standard_normal((300, k)) * (1.5 if p_inside < 0.5 else 0.15) + shift
    nu = UnitCube().project(theta, geometry).sum(axis=-1)
    over, under = nu > u, nu < l
    inside = ~over & ~under
    assert over.sum() > 5 and under.sum() > 5 and inside.sum() > 20
    assert (inside.mean() > 0.5) == (p_inside > 0.5)  # both code paths are exercised
    mu = s.project(theta.reshape(10, 30, k), geometry).reshape(300, k)
    np.testing.assert_allclose(mu[over].sum(-1), u, atol=1e-12)
    np.testing.assert_allclose(mu[under].sum(-1), l, atol=1e-12)
    # The compiled kernel and numpy's exp may differ in the last bit (CPU-dependent), and
    # so may a batch and a single row: compare with a tolerance, not bit for bit.
    np.testing.assert_allclose(
        mu[inside], UnitCube().project(theta[inside], geometry), rtol=1e-14, atol=1e-300
    )
    for t, m in zip(theta, mu, strict=True):
        np.testing.assert_allclose(m, REFERENCES[geometry](t, l, u), atol=1e-12)
        np.testing.assert_allclose(m, s.project(t, geometry), rtol=1e-14, atol=1e-300)


@pytest.mark.parametrize("fn", [project_capped_simplex, kl_project_capped_simplex])
def test_capped_simplex_functions_with_mixed_budgets(fn):
    rng = np.random.default_rng(5)
    k = 5
    theta = rng.standard_normal((2, 3, k))
    m = np.array([[0, 1, 2], [3, 5, 4]])
    out = fn(theta, m)
    assert out.shape == theta.shape
    np.testing.assert_allclose(out.sum(axis=-1), m, atol=1e-12)
    assert ((out >= 0) & (out <= 1)).all()
    np.testing.assert_array_equal(out[0, 0], 0.0)
    np.testing.assert_array_equal(out[1, 1], 1.0)
    np.testing.assert_allclose(  # batched vs per row: a tolerance, not last-bit equality
        fn(theta, 2), np.stack([fn(t, 2) for t in theta]), rtol=1e-14, atol=1e-300
    )


# ---------------------------------------------------------------------- properties
@st.composite
def knapsack_case(draw):
    k = draw(st.integers(1, 8))
    l = draw(st.integers(0, k))
    u = draw(st.integers(l, k))
    levels = draw(st.lists(st.integers(-3, 3), min_size=1, max_size=3))
    idx = draw(st.lists(st.integers(0, len(levels) - 1), min_size=k, max_size=k))
    mag = draw(st.sampled_from([1e-3, 0.5, 1.0, 10.0, 1e3]))
    theta = mag * np.array([levels[i] for i in idx], dtype=float)
    if draw(st.booleans()):
        theta += draw(st.sampled_from([1e-9, 1e-3, 0.3])) * np.random.default_rng(
            draw(st.integers(0, 2**16))
        ).standard_normal(k)
    return k, l, u, theta


@settings(max_examples=300, deadline=None)
@given(case=knapsack_case(), geometry=st.sampled_from(["euclidean", "kl"]))
def test_property_ties_extreme_magnitudes_and_all_bounds(case, geometry):
    k, l, u, theta = case
    s = Knapsack(l, u)
    mu = s.project(theta, geometry)
    assert mu.shape == theta.shape and np.isfinite(mu).all()
    # Float64 accuracy is relative to the input's scale: with theta = (~1e-10, ..., 2e3),
    # the budget holds to ~k * eps * 2e3 (the solution depends on differences of entries).
    scale = max(1.0, np.abs(theta).max())
    assert s.contains(mu, atol=1e-12 * scale).all()
    np.testing.assert_allclose(mu, REFERENCES[geometry](theta, l, u), atol=1e-12 * scale)
    if geometry == "euclidean" or (mu > 1e-200).all():
        assert certificate_gap(mu, theta, l, u, geometry) >= -1e-10 * scale
    # Tied coordinates are treated alike.
    for a in np.unique(theta):
        assert np.ptp(mu[theta == a]) <= 1e-12
    # MAP: a vertex of the set with the brute-force value.
    v = s.argmax(theta)
    assert s.contains(v).all() and ((v == 0) | (v == 1)).all()
    np.testing.assert_allclose(
        v @ theta, brute_force_argmax(s.vertices(k), theta), rtol=1e-12, atol=1e-12
    )


# ---------------------------------------------------------------------- MAP and encoding
def test_map_formula_and_ties():
    np.testing.assert_array_equal(Knapsack(1, 1).argmax([2.0, 2.0, 0.0]), [1, 0, 0])
    np.testing.assert_array_equal(Knapsack(1, 2).argmax([-3.0, -1.0, -2.0]), [0, 1, 0])
    np.testing.assert_array_equal(Knapsack(0, 2).argmax([3.0, 1.0, 2.0]), [1, 0, 1])
    np.testing.assert_array_equal(Knapsack(2, 3).argmax([-1.0, 5.0, -2.0, 0.0]), [0, 1, 0, 1])
    np.testing.assert_array_equal(Knapsack(0, 3).argmax([-1.0, 5.0, -2.0, 0.0]), [0, 1, 0, 0])


def test_map_matches_brute_force_batched():
    rng = np.random.default_rng(6)
    k = 7
    for l, u in [(0, 2), (1, 3), (3, 3), (2, 7), (0, 0), (7, 7)]:
        s = Knapsack(l, u)
        verts = s.vertices(k)
        theta = np.round(rng.standard_normal((60, k)), 1)  # many ties
        v = s.argmax(theta)
        best = (verts @ theta.T).max(axis=0)
        np.testing.assert_allclose((v * theta).sum(-1), best, atol=1e-12)
        assert s.contains(v).all()


def test_vertices_encode_decode():
    s = Knapsack(1, 2)
    verts = s.vertices(4)
    assert len(verts) == 4 + 6 and len({v.tobytes() for v in verts}) == 10
    y = np.array([[1, 0, 0, 1], [0, 1, 0, 0]])
    np.testing.assert_array_equal(s.decode(s.encode(y, 4)), y)
    assert s.decode(s.encode(y)).dtype == np.int64
    assert Knapsack(0, 0).vertices(3).shape == (1, 3)
    assert Knapsack(3, 3).vertices(3).shape == (1, 3)
    assert Knapsack().vertices(3).shape == (8, 3)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: Knapsack(3, 2), "lower <= upper"),
        (lambda: Knapsack(-1), "non-negative"),
        (lambda: Knapsack(0, -2), "non-negative"),
        (lambda: Knapsack(0, 1.5), "upper bound must be an integer"),
        (lambda: Knapsack(0.5, 1), "lower bound must be an integer"),
        (lambda: Knapsack("1", 2), "must be an integer"),
        (lambda: Knapsack(True, 2), "must be an integer"),
        (lambda: Knapsack(0, np.nan), "must be an integer"),
        (lambda: Knapsack(0, 3).project(np.zeros(2)), "upper bound u = 3 exceeds the size k = 2"),
        (lambda: Knapsack(3).project(np.zeros(2), "kl"), "lower bound l = 3 exceeds .* k = 2"),
        (lambda: Knapsack(0, 3).argmax(np.zeros((5, 2))), "u = 3 exceeds"),
        (lambda: Knapsack(0, 3).vertices(2), "u = 3 exceeds"),
        (lambda: Knapsack(0, 1).project([np.nan, 0.0]), "NaN"),
        (lambda: Knapsack(0, 1).project(1.0), "scalar"),
        (lambda: Knapsack(0, 1).encode([1, 1, 0]), "between l = 0 and u = 1"),
        (lambda: Knapsack(2, 3).encode([[1, 1, 0], [1, 0, 0]]), "between l = 2 and u = 3"),
        (lambda: Knapsack(0, 1).encode([0.5, 0]), "0/1"),
        (lambda: Knapsack(0, 1).encode([1, 0], 3), "k = 3"),
        (lambda: Knapsack(0, 3).encode([1, 0]), "u = 3 exceeds"),
        (lambda: Knapsack(1, 2).decode([0, 0, 0]), "between l = 1 and u = 2"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("level", [3.0, 3e3, -3e3])
def test_kl_tied_large_entries_sum_exactly_to_the_budget(level):
    # Regression: the threshold used to be formed as c + log(...) and subtracted from
    # theta, which rounds ~|theta| * eps away (sum off by 1e-12 at 3e3).
    mu = Knapsack(4, 4).project(np.full(5, level), "kl")
    np.testing.assert_allclose(mu, 0.8, rtol=0, atol=1e-15)
    assert abs(mu.sum() - 4.0) <= 1e-15


# ---------------------------------------------------------------------- compiled kernels
def test_kl_tiny_coordinates_keep_full_relative_precision():
    # Regression for the cap-fixing kernel: with l = u = 1 (no cap active) the projection
    # is the softmax, and with one entry capped the rest is a softmax with budget 1; the
    # small coordinates (1e-20 .. 1e-70) must come out exactly, not rounded to 0 (a
    # log-loss would be infinite), also when they are far below a capped maximum.
    from scipy.special import softmax

    theta = np.array([[129.7, -34.6, 85.5, -48.9], [1000.0, 10.0, -20.0, -30.0]])
    mu = Knapsack(1, 1).project(theta[0], "kl")
    np.testing.assert_allclose(mu, softmax(theta[0]), rtol=1e-13, atol=0)
    mu = Knapsack(2, 2).project(theta[1], "kl")
    np.testing.assert_allclose(mu, np.r_[1.0, softmax(theta[1, 1:])], rtol=1e-13, atol=0)
    # Entries at many scales: check the exact optimality structure mu_i = min(1, e^{x_i - t})
    # (bisection cannot resolve coordinates far below an ulp of the sum): every clearly
    # uncapped entry gives the same t = x_i - log(mu_i), to relative precision, and the
    # entries at 1 have x_i >= t.
    rng = np.random.default_rng(8)
    for _ in range(50):
        x = rng.standard_normal(9) * np.geomspace(1, 300, 9)[rng.permutation(9)]
        mu = Knapsack(3, 3).project(x, "kl")
        assert abs(mu.sum() - 3.0) <= 1e-14
        free = (mu < 1 - 1e-9) & (mu > 1e-290)
        t = x[free] - np.log(mu[free])
        assert free.sum() >= 1 and np.ptp(t) <= 1e-12 * max(1.0, abs(t).max())
        assert np.all(x[mu >= 1 - 1e-9] >= t[0] - 1e-8 * max(1.0, abs(t[0])))


@settings(max_examples=200, deadline=None)
@given(
    k=st.integers(1, 9),
    data=st.data(),
    mag=st.sampled_from([1e-3, 1.0, 30.0, 1e3]),
    geometry=st.sampled_from(["euclidean", "kl"]),
)
def test_property_capped_simplex_with_real_budgets(k, data, mag, geometry):
    """The capped-simplex functions at any real budget m in [0, k], against bisection."""
    levels = data.draw(st.lists(st.integers(-3, 3), min_size=k, max_size=k))
    theta = mag * np.array(levels, dtype=float)
    m = data.draw(st.floats(0.0, float(k)))
    fn = project_capped_simplex if geometry == "euclidean" else kl_project_capped_simplex
    mu = fn(theta, m)
    ref = REFERENCES[geometry](theta, m, m)
    assert np.isfinite(mu).all() and (mu >= 0).all() and (mu <= 1).all()
    assert abs(mu.sum() - m) <= 1e-12 * max(1.0, m) * k
    np.testing.assert_allclose(mu, ref, atol=1e-12 * max(1.0, mag))
