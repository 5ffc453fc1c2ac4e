"""The vectorized exponential (projloss._fastexp) and the kernels built on it: the
softmax, the cube projections (with their fused finiteness check) and the KL oracle of the
Birkhoff solver, against independent references (math.exp, extended precision, the
numpy formulas) with ties and extreme magnitudes."""

from __future__ import annotations

import math
import sys

import numba
import numpy as np
import pytest

from projloss._fastexp import (
    count_outside,
    div_by,
    exp_fast,
    exp_inplace,
    exp_into,
    row_max,
    row_sum,
)
from projloss.sets import MatrixCube, Simplex, UnitCube
from projloss.sets._birkhoff_solvers import _oracle_kl
from projloss.sets.simplex import softmax


@numba.njit(cache=False)
def _exp_scalar_loop(x, out):
    for i in range(x.size):
        out[i] = exp_fast(x[i])


def _ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    return np.abs(got - ref) / np.spacing(np.abs(ref))


def test_exp_fast_within_one_ulp_of_the_c_library_with_subnormals_and_limits():
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            -rng.uniform(0, 1, 20000),
            rng.uniform(-50, 50, 20000),
            rng.uniform(-745.5, -700, 5000),  # subnormal and underflowing results
            rng.uniform(250, 300, 2000),
            -rng.exponential(1e-12, 1000),  # tiny |d|: r carries everything
            [0.0, -0.0, -math.log(2) / 2, math.log(2) / 2, -708.39, -708.4, -745.13, -745.14],
            [-746.0, -1e4, -1e300, -np.inf, 300.0, 1e-300, -1e-300, 5e-324],
        ]
    )
    out = np.empty_like(x)
    exp_into(x, out)
    ref = np.array([math.exp(v) for v in x])
    normal = ref >= np.finfo(float).tiny
    assert _ulps(out[normal], ref[normal]).max() <= 1.0
    # subnormal results: the last bit (one rounding of the final scaling)
    np.testing.assert_allclose(out[~normal], ref[~normal], rtol=0, atol=5e-324)
    assert out[x == 0].tolist() == [1.0, 1.0]  # e^0 = 1 exactly: a softmax max is 1
    assert out[x <= -746].tolist() == [0.0] * 4
    # the same numbers in place and through the scalar function in another loop
    inplace = x.copy()
    exp_inplace(inplace)
    scalar = np.empty_like(x)
    _exp_scalar_loop(x, scalar)
    np.testing.assert_array_equal(inplace, out)
    np.testing.assert_array_equal(scalar, out)


@pytest.mark.parametrize("k", [1, 2, 7, 8, 9, 16, 17, 33])
def test_row_reductions_and_count(k):
    rng = np.random.default_rng(k)
    v = rng.standard_normal(k) * 10.0 ** rng.integers(-5, 5, k)
    assert row_max(v) == v.max()
    np.testing.assert_allclose(row_sum(v), math.fsum(v), rtol=1e-12, atol=1e-12 * np.abs(v).sum())
    assert row_max(np.full(k, -3.5)) == -3.5  # ties
    big = np.finfo(float).max
    assert count_outside(v, big) == 0
    w = v.copy()
    w[0] = np.nan
    w[-1] = np.inf if k > 1 else np.nan
    assert count_outside(w, big) == (2 if k > 1 else 1)
    assert count_outside(np.array([-2.0, 2.0, 2.5, -3.0]), 2.0) == 2


@numba.njit(cache=False)
def _div_by_loop(a, s, out):
    for i in range(a.size):
        out[i] = div_by(a[i], s[i], 1.0 / s[i])


def test_div_by_gives_the_bits_of_the_division():
    """The reciprocal and its exact correction give the correctly rounded quotient, as
    ``a / s`` does, over the range the softmax uses it in (entries and sums in
    [2^-900, 2^900]), with the hard cases: significands of all ones, powers of two,
    a = s, a just below s, a tiny against s and 0."""
    rng = np.random.default_rng(0)
    m = 1_000_000
    a = rng.uniform(1, 2, m) * 2.0 ** rng.integers(-900, 900, m)
    s = rng.uniform(1, 2, m) * 2.0 ** rng.integers(-900, 900, m)
    terms = rng.exponential(1.0, (m // 10, 10))  # a softmax row: entries over their sum
    ones = np.nextafter(2.0, 0.0) * 2.0 ** rng.integers(-60, 60, 1000)  # 1.11...1 x 2^e
    a = np.concatenate(
        [a, terms.ravel(), ones, ones, 2.0 ** rng.integers(-60, 60, 1000), [0.0, 3.0]]
    )
    s = np.concatenate(
        [
            s,
            np.repeat(terms.sum(axis=1), 10),
            ones,
            np.nextafter(ones, 0.0) * 3.0,
            ones * 7.0,
            [5.0, np.nextafter(3.0, 4.0)],
        ]
    )
    with np.errstate(over="ignore", under="ignore"):
        ok = (np.abs(a / s) < 2.0**900) & ((a == 0) | (np.abs(a / s) > 2.0**-900))
    got = np.empty(ok.sum())
    _div_by_loop(a[ok], s[ok], got)
    assert ok.sum() > 1_000_000
    np.testing.assert_array_equal(got, a[ok] / s[ok])


def _softmax_extended(theta: np.ndarray) -> np.ndarray:
    """Softmax in x87 extended precision (64-bit significand), rounded to float64."""
    t = theta.astype(np.longdouble)
    e = np.exp(t - t.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float64)


@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 60, reason="needs x87 extended precision")
@pytest.mark.parametrize("k", [1, 3, 10, 31, 100])
def test_softmax_matches_extended_precision_on_both_paths(k):
    rng = np.random.default_rng(k)
    n = 9000 // k + 7  # several blocks of the kernel
    theta = rng.standard_normal((n, k))
    theta[:, 0] = theta[:, -1]  # ties
    theta[n // 3] *= 1e3  # one row outside [-300, 300]: its block takes the shifted path
    theta[n // 2] = 1e300
    theta[-1] = -1e-300
    theta[1] *= 200.0  # far from the others, still in the unshifted range
    theta[2] = np.linspace(-700.0, 700.0, k)  # shifted: the smallest entries underflow
    got = Simplex().project(theta, "kl")
    ref = _softmax_extended(theta)
    big = ref > 1e-290
    # A row shifted by its max carries the rounding of theta - max: relative error
    # ~ eps |theta|, inherent to the shift (the former kernel's too); a few ulp otherwise.
    scale = np.maximum(1.0, np.abs(theta).max(axis=1, keepdims=True)) * np.ones_like(theta)
    assert (_ulps(got[big], ref[big]) <= 8 * scale[big]).all()
    np.testing.assert_allclose(got[~big], ref[~big], rtol=0, atol=1e-290)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(softmax(theta.T, axis=0), got.T, rtol=0, atol=0)


@pytest.mark.parametrize("cls", [UnitCube, MatrixCube])
def test_cube_projections_match_numpy_at_extreme_magnitudes(cls):
    rng = np.random.default_rng(3)
    theta = rng.standard_normal((40, 5, 5)) * 10.0 ** rng.integers(-300, 300, (40, 5, 5))
    theta[0, 0] = [0.0, 1.0, 1.0 + 1e-15, 1.0 - 1e-15, -0.0]  # the kinks and ties
    theta[1, 1] = [-744.0, -746.0, -708.5, 1e308, -1e308]
    x = theta if cls is MatrixCube else theta.reshape(40, 25)
    S = cls()
    np.testing.assert_array_equal(S.project(x), np.clip(x, 0.0, 1.0))
    ref = np.exp(np.minimum(x - 1.0, 0.0))
    got = S.project(x, "kl")
    normal = ref >= np.finfo(float).tiny
    assert _ulps(got[normal], ref[normal]).max() <= 1.5
    np.testing.assert_allclose(got[~normal], ref[~normal], rtol=0, atol=5e-324)
    # non-contiguous input: the same numbers
    np.testing.assert_array_equal(S.project(np.asfortranarray(x), "kl"), got)
    np.testing.assert_array_equal(S.project(x[::-1], "kl"), got[::-1])


@pytest.mark.parametrize(
    "S, geometry, shape",
    [
        (UnitCube(), "euclidean", (7, 3)),
        (UnitCube(), "kl", (2, 3, 5)),
        (MatrixCube(), "kl", (4, 3, 3)),
        (Simplex(), "kl", (5000, 3)),  # the bad entry in the second block of the kernel
    ],
)
@pytest.mark.parametrize(
    "bad, word", [(np.nan, "NaN"), (np.inf, "infinite"), (-np.inf, "infinite")]
)
def test_fused_finiteness_check_raises_the_usual_error(S, geometry, shape, bad, word):
    theta = np.zeros(shape)
    theta.reshape(-1)[-2] = bad
    with pytest.raises(ValueError, match=f"theta contains {word} values"):
        S.project(theta, geometry)
    with pytest.raises(ValueError, match=f"theta contains {word} values"):
        S.project(np.asfortranarray(theta), geometry)


def _oracle_kl_numpy(thetaT: np.ndarray, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The former whole-batch formula: column softmax and the semi-dual value."""
    x = thetaT + alpha[:, None, :]
    m = x.max(axis=2, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(axis=2, keepdims=True)
    G = (m[..., 0] + np.log(s[..., 0])).sum(axis=1) - alpha.sum(axis=1)
    return G, e / s


@pytest.mark.parametrize("scale", [1e-3, 1.0, 100.0, 1e4])
def test_birkhoff_kl_oracle_matches_the_numpy_formula(scale):
    rng = np.random.default_rng(int(scale * 1000) % 97)
    thetaT = scale * rng.standard_normal((30, 7, 7))
    thetaT[0] = thetaT[0, 0]  # ties: identical columns
    alpha = scale * rng.standard_normal((30, 7))
    G, P = _oracle_kl(thetaT, alpha)
    G0, P0 = _oracle_kl_numpy(thetaT, alpha)
    np.testing.assert_allclose(G, G0, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(P, P0, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(P.sum(axis=2), 1.0, rtol=1e-14)


def test_softmax_helper_gives_nan_rows_for_non_finite_entries():
    theta = np.array([[0.0, 1.0], [np.nan, 1.0], [np.inf, 0.0], [2.0, 2.0]])
    out = softmax(theta)
    np.testing.assert_allclose(out[[0, 3]], [[1 / (1 + np.e), np.e / (1 + np.e)], [0.5, 0.5]])
    assert np.isnan(out[1:3]).all()


@pytest.mark.parametrize("scale", [0.1, 2.0, 30.0])
def test_fused_kl_newton_matches_the_batched_newton(scale):
    from projloss.sets._birkhoff_solvers import _hessian_kl, _newton, _newton_kl

    rng = np.random.default_rng(int(scale * 10))
    theta = scale * rng.standard_normal((60, 7, 7))
    theta[0] = 0.0  # ties: every entry equal (the solution is uniform)
    theta[1, :, 0] = theta[1, :, 1]  # two equal columns
    thetaT = np.ascontiguousarray(np.swapaxes(theta, 1, 2))
    alpha0 = rng.standard_normal((60, 7))
    PT0, a0, v0, it0 = _newton(_oracle_kl, _hessian_kl, thetaT, alpha0, 1e-10, 60)
    PT, a, v, it = _newton_kl(thetaT, alpha0, 1e-10, 60)
    np.testing.assert_allclose(PT, PT0, rtol=0, atol=1e-12)
    if scale <= 2.0:  # (peaked plans: the multipliers of near-zero entries are loose)
        center = lambda x: x - x.mean(axis=1, keepdims=True)  # noqa: E731 (up to a shift)
        np.testing.assert_allclose(center(a), center(a0), rtol=0, atol=1e-9)
    assert (v <= 1e-10).all() == (v0 <= 1e-10).all()
    assert abs(it - it0) <= 1
    np.testing.assert_allclose(PT[0], np.full((7, 7), 1 / 7), atol=1e-12)


_SNIPPET = """
import sys, numpy as np
from projloss.sets import Birkhoff, Simplex, UnitCube
x = 5 * np.random.default_rng(0).standard_normal((500, 13))
t = 2 * np.random.default_rng(1).standard_normal((50, 6, 6))
out = [Simplex().project(x, "kl"), UnitCube().project(x, "kl"), Birkhoff().project(t, "kl")]
sys.stdout.write("".join(a.tobytes().hex() for a in out))
"""


def test_same_bits_when_compiled_for_a_generic_cpu(tmp_path):
    """No fastmath, explicit fused multiply-adds: the kernels built on exp_fast give the
    same bits compiled for this CPU and for a generic x86-64 (no AVX, no FMA unit)."""
    import os
    import subprocess

    here = {}
    exec(_SNIPPET.replace("sys.stdout.write", "here['out'] = "), {"here": here})
    env = dict(os.environ, NUMBA_CPU_NAME="generic", NUMBA_CACHE_DIR=str(tmp_path))
    res = subprocess.run(
        [sys.executable, "-c", _SNIPPET], env=env, capture_output=True, text=True, check=True
    )
    assert res.stdout == here["out"]
