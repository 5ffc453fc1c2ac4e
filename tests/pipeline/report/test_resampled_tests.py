"""The tests for overlapping splits (pipeline.report.resampled_tests, .hierarchical).

- the corrected resampled t-test against a worked example done by hand here;
- the Bayesian correlated t-test against baycomp's ``CorrelatedTTest`` (10-fold
  cross-validation: rho = 1/10, i.e. n_test/n_train = 1/9);
- the hierarchical test against baycomp's Stan sampler on the same data (numbers
  recorded from ``baycomp.HierarchicalTest`` with pystan 3.10, 4 chains x 20,000 draws:
  Stan does not build within a test's time here), and its grid against a finer one;
- a simulation under the null with overlapping resamples: the sound tests reject at
  most about 5 %, the pooled (dataset, split) Wilcoxon test far more;
- a dataset with the same outcome on every split is flagged, not counted R times.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pipeline.report import hierarchical as hier
from pipeline.report import resampled_tests as rt
from pipeline.report import significance as sig


def test_corrected_ttest_worked_example() -> None:
    # Five splits of 100 rows, 75 train / 25 test: n_test / n_train = 1/3.
    d = np.array([1.0, 3.0, 2.0, 4.0, 0.0])
    # mean = 10 / 5 = 2; squared deviations 1, 1, 0, 4, 4 -> s^2 = 10 / 4 = 2.5
    # corrected variance of the mean: (1/5 + 1/3) * 2.5 = (8/15) * 2.5 = 4/3
    # t = 2 / sqrt(4/3) = sqrt(3) = 1.7320508...; df = 4
    # (the uncorrected t would be 2 / sqrt(2.5 / 5) = 2 sqrt(2) = 2.83, p = 0.047)
    r = rt.corrected_ttest(d, n_train=75, n_test=25)
    assert r.mean == 2.0 and r.df == 4 and not r.flat
    assert r.t == pytest.approx(np.sqrt(3.0), rel=1e-12)
    assert r.p_value == pytest.approx(2 * stats.t.sf(np.sqrt(3.0), 4), rel=1e-12)
    assert r.p_value == pytest.approx(0.1583, abs=5e-4)  # t table: P(|T_4| > 1.732)
    half = stats.t.ppf(0.975, 4) * np.sqrt(4.0 / 3.0)  # 2.776 * 1.1547 = 3.206
    assert (r.ci_low, r.ci_high) == pytest.approx((2.0 - half, 2.0 + half), rel=1e-12)
    assert half == pytest.approx(3.206, abs=1e-3)
    uncorrected = stats.ttest_1samp(d, 0.0)
    assert uncorrected.pvalue < 0.05 < r.p_value


def test_corrected_ttest_flat_differences() -> None:
    flat = rt.corrected_ttest(np.full(10, 0.7), 400, 100)
    assert flat.flat and np.isnan(flat.p_value)  # one outcome: no test
    zero = rt.corrected_ttest(np.zeros(10), 400, 100)
    assert zero.flat and zero.p_value == 1.0
    with pytest.raises(ValueError, match="2 splits"):
        rt.corrected_ttest([1.0], 400, 100)


@pytest.mark.parametrize("rope", [0.0, 0.05])
@pytest.mark.parametrize("shift", [0.0, 0.04, -0.2])
def test_bayesian_correlated_ttest_equals_baycomp(rope: float, shift: float) -> None:
    baycomp = pytest.importorskip("baycomp")
    rng = np.random.default_rng(3)
    x = rng.normal(0.8, 0.05, 10)
    y = x + shift + rng.normal(0.0, 0.03, 10)
    probs = baycomp.CorrelatedTTest.probs(x, y, rope=rope, runs=1)  # 10 folds: rho = 0.1
    # ours on y - x (right: y higher); 10-fold CV has n_test / n_train = 1 / 9
    p = rt.bayes_correlated_ttest(y - x, n_train=9, n_test=1, rope=rope, lower_is_better=False)
    if rope:
        assert (p.worse, p.rope, p.better) == pytest.approx(probs, abs=1e-12)
    else:
        assert (p.worse, p.better) == pytest.approx(probs, abs=1e-12)
    # lower is better swaps the sides
    q = rt.bayes_correlated_ttest(y - x, 9, 1, rope, lower_is_better=True)
    assert (q.better, q.worse) == pytest.approx((p.worse, p.better), abs=1e-15)


def test_posterior_verdicts() -> None:
    assert rt.Posterior(0.96, 0.03, 0.01).verdict() == "holds"
    assert rt.Posterior(0.01, 0.97, 0.02).verdict() == "equivalent within the ROPE"
    assert rt.Posterior(0.0, 0.04, 0.96).verdict() == "reversed"
    assert rt.Posterior(0.9, 0.05, 0.05).verdict() == "not shown"


# recorded from baycomp 1.0.3 + pystan 3.10.0 (Stan's NUTS), 4 chains x 20,000 draws,
# random_state=1, on the cases of _stan_cases(); P(left), P(rope), P(right)
STAN = {
    "baycomp-like": (0.0004375, 0.3551375, 0.644425),
    "better": (0.0006625, 0.0045625, 0.994775),
    "equivalent": (0.0001125, 0.999325, 0.0005625),
}


def _stan_cases() -> dict[str, tuple[np.ndarray, float, float]]:
    rng = np.random.default_rng(0)
    x = rng.normal(0.8, 0.02, (6, 10))
    y = x + rng.normal(0.01, 0.01, (6, 10))
    rng = np.random.default_rng(0)
    better = 1.0 + 0.3 * rng.standard_normal((6, 1)) + 0.8 * rng.standard_normal((6, 10))
    equivalent = 0.3 * rng.standard_normal((16, 1)) + 0.8 * rng.standard_normal((16, 30))
    return {
        "baycomp-like": (y - x, 0.1, 0.01),  # 6 datasets, 10-fold CV
        "better": (better, 0.2, 0.5),  # 6 datasets x 10 splits of 80/20
        "equivalent": (equivalent, 0.2, 0.5),  # 16 datasets x 30 splits
    }


@pytest.mark.parametrize("name", sorted(STAN))
def test_hierarchical_matches_baycomp_stan(name: str) -> None:
    d, rho, rope = _stan_cases()[name]
    ours = hier.hierarchical_probs(d, rho, rope)
    assert sum(ours) == pytest.approx(1.0, abs=1e-12)
    # Stan's winner shares vary by several points between runs on the funnel-shaped
    # posterior of "baycomp-like" (2 chains x 2,000 draws gave 0.269 for the ROPE, 4 x
    # 20,000 0.355; ours 0.284); on the other two they agree to 1e-3
    np.testing.assert_allclose(ours, STAN[name], atol=0.08 if name == "baycomp-like" else 0.005)


def test_hierarchical_grid_is_converged() -> None:
    rng = np.random.default_rng(0)
    d = 0.3 + 0.5 * rng.standard_normal((6, 1)) + 0.2 * rng.standard_normal((6, 10))
    coarse = hier.hierarchical_test(d, 0.2, 0.2)
    saved = hier._NODES, hier._N_DELTA0, hier._N_SIGMA0, hier._N_NU
    try:
        hier._NODES, hier._N_DELTA0, hier._N_SIGMA0, hier._N_NU = 40, 201, 90, 36
        fine = hier.hierarchical_test(d, 0.2, 0.2)
    finally:
        hier._NODES, hier._N_DELTA0, hier._N_SIGMA0, hier._N_NU = saved
    assert (coarse.left, coarse.rope, coarse.right) == pytest.approx(
        (fine.left, fine.rope, fine.right), abs=5e-3
    )
    assert coarse.delta0_mean == pytest.approx(fine.delta0_mean, abs=0.01)
    assert coarse.delta0_low < coarse.delta0_mean < coarse.delta0_high


def test_hierarchical_limits() -> None:
    rng = np.random.default_rng(1)
    noise = 0.3 * rng.standard_normal((8, 10))
    clear = hier.hierarchical_test(2.0 + noise, 0.2, 0.5)  # every dataset +2, rope 0.5
    assert clear.right > 0.99 and 1.7 < clear.delta0_mean < 2.3
    tiny = hier.hierarchical_test(0.01 * noise, 0.2, 0.5)  # everything far inside the rope
    assert tiny.rope > 0.99
    # swapping the learners mirrors the result
    mirrored = hier.hierarchical_test(-(2.0 + noise), 0.2, 0.5)
    assert (mirrored.left, mirrored.rope) == pytest.approx((clear.right, clear.rope), abs=1e-9)
    # a dataset with no spread contributes the density at its value, no error
    flat = np.vstack([2.0 + noise[:7], np.full((1, 10), 2.0)])
    assert hier.hierarchical_test(flat, 0.2, 0.5).right > 0.99
    with pytest.raises(ValueError, match="no dataset has any spread"):
        hier.hierarchical_test(np.ones((3, 10)), 0.2, 0.5)
    with pytest.raises(ValueError, match="3 splits"):
        hier.hierarchical_test(noise[:, :2], 0.2, 0.5)


def _null_worlds(n_worlds: int, seed: int) -> tuple[np.ndarray, float, float]:
    """Per world, per dataset, per split: the error difference of two learners with the
    same true error (0.2 each, independent per sample) on overlapping 80/20 random
    splits of a dataset of 300 samples (the splits share the finite sample)."""
    rng = np.random.default_rng(seed)
    n, n_test, q, r = 300, 60, 6, 10
    wrong_a = rng.random((n_worlds, q, n)) < 0.2
    wrong_b = rng.random((n_worlds, q, n)) < 0.2
    d = wrong_a.astype(np.float64) - wrong_b  # per sample
    # the test part of each split: n_test of the n samples, drawn anew per split
    keys = rng.random((n_worlds, q, r, n))
    test = np.argsort(keys, axis=-1)[..., :n_test]
    diffs = np.take_along_axis(d[:, :, None, :], test, axis=-1).mean(axis=-1)  # (w, q, r)
    return diffs, float(n - n_test), float(n_test)


def test_sound_tests_hold_their_level_under_the_null_and_pooled_pairs_do_not() -> None:
    diffs, n_train, n_test = _null_worlds(400, seed=7)
    n_worlds, _, r = diffs.shape
    # per dataset: the corrected resampled t-test
    mean, var = diffs.mean(axis=-1), diffs.var(axis=-1, ddof=1)
    t = mean / np.sqrt(rt.corrected_variance_factor(r, n_train, n_test) * var)
    corrected = float(np.mean(2 * stats.t.sf(np.abs(t), r - 1) < 0.05))
    # the plain t-test over the splits (no correction): anti-conservative
    t_plain = mean / np.sqrt(var / r)
    plain = float(np.mean(2 * stats.t.sf(np.abs(t_plain), r - 1) < 0.05))
    # across datasets: Wilcoxon with the datasets as blocks (6 blocks, exact p)
    blocks = float(np.mean([stats.wilcoxon(m).pvalue < 0.05 for m in mean]))
    # the old verdict: Wilcoxon over the 60 (dataset, split) pairs
    pooled = float(np.mean([stats.wilcoxon(w.ravel()).pvalue < 0.05 for w in diffs]))
    # the spot checks agree with the module's function
    one = rt.corrected_ttest(diffs[0, 0], n_train, n_test)
    assert one.p_value == pytest.approx(2 * stats.t.sf(abs(t[0, 0]), r - 1), rel=1e-12)
    print(f"rejection rates at 0.05: corrected t {corrected:.3f}, plain t {plain:.3f}, "
          f"Wilcoxon datasets {blocks:.3f}, Wilcoxon pooled pairs {pooled:.3f}")  # fmt: skip
    # 400 worlds x 6 datasets: the binomial standard error of 0.05 is 0.0045
    assert corrected <= 0.065
    assert blocks <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / n_worlds)
    # (measured: corrected t 0.050, Wilcoxon datasets 0.037, pooled pairs 0.235, plain t
    # 0.263): one dataset's chance difference counted ten times
    assert pooled > 3 * 0.05
    assert plain > 3 * 0.05


def test_identical_outcomes_on_every_split_are_flagged() -> None:
    from pipeline.report.paper import Column, Row, TableSpec
    from pipeline.report.repeated_analysis import analyze
    from pipeline.report.repeated_data import TableData

    spec = TableSpec(
        key="t", title="t", metric="hamming", lower_is_better=True, experiment="e",
        rows=(Row("A", "a"), Row("B", "b"), Row("C", "c")),
        columns=(Column("X", "x"), Column("Y", "y")), paper={},
    )  # fmt: skip
    rng = np.random.default_rng(0)
    values = 10 + rng.standard_normal((3, 2, 10))
    values[1] = [[4.5] * 10, [5.0] * 10]  # B: one outcome, counted ten times
    sizes = np.full(values.shape, 1.0)
    data = TableData(spec, list(spec.rows), list(spec.columns), list(range(10)), values,
                     sizes * 30, sizes * 120, sizes * 0.1)  # fmt: skip
    a = analyze(data, "X")
    assert a.flagged == ["B"]
    (pair,) = a.pairs
    assert [t.dataset for t in pair.per_dataset] == ["A", "C"]  # B not tested per dataset
    assert pair.hierarchical is not None and pair.hierarchical.n_datasets == 2
    assert pair.wilcoxon is not None  # B still one block of the across-datasets test


def test_ties_of_a_count_metric_share_a_rank() -> None:
    # MAE = (sum of |errors|) / n: equal counts averaged in another order differ in the
    # last bit; as ties they share the rank (Demšar: ties get the average rank)
    errors = np.array([1, 0, 2, 1, 0, 0, 3, 1, 0, 1] * 3, dtype=np.float64) / 10.0
    mae_a = float(np.mean(errors))
    mae_b = float(sum(errors[::-1]) / errors.size)
    assert mae_a != mae_b  # one ulp apart
    scores = np.array([[mae_a, mae_b, 0.5], [0.2, 0.3, 0.1]])
    ranks = sig.block_ranks(scores, lower_is_better=True)
    np.testing.assert_array_equal(ranks, [[1.5, 1.5, 3.0], [2.0, 3.0, 1.0]])
    w = sig.wilcoxon_holm(np.array([[mae_a, mae_b]] * 6), 0, True)[0]
    assert (w.wins, w.losses, w.p_value) == (0, 0, 1.0)


def test_fast_holm_is_statsmodels_to_the_last_bit() -> None:
    from statsmodels.stats.multitest import multipletests

    from pipeline.report.resampled_tests import holm, holm_adjusted

    rng = np.random.default_rng(3)
    for m in (1, 2, 5, 17):
        p = rng.random(m) ** 3
        p[: m // 3] = p[m // 2]  # ties
        assert holm_adjusted(p).tolist() == multipletests(p, method="holm")[1].tolist()
    out = holm([0.01, float("nan"), 0.04])
    assert out[0] == 0.02 and np.isnan(out[1]) and out[2] == 0.04


def test_in_place_quadrature_kernel_is_scipys_logsumexp() -> None:
    from scipy.special import logsumexp

    from pipeline.report.hierarchical import _log_kernel, _logsumexp_kernel

    rng = np.random.default_rng(4)
    for scale in (30.0, 1e-3, 1e-9):  # tiny z: log(1 + x) where log1p would be exact
        z = rng.normal(scale=scale, size=(7, 5, 3, 24))
        for df in (3.0, rng.uniform(1.01, 1e4, size=(1, 1, 3, 1)), 1e4):
            want = logsumexp(_log_kernel(z, df), axis=-1)
            # the absolute error of log(1 + x) in log space, times (df + 1) / 2
            atol = 1e-13 + (np.max(df) + 1) * 2.0**-52
            np.testing.assert_allclose(_logsumexp_kernel(z.copy(), df), want, rtol=1e-13, atol=atol)
