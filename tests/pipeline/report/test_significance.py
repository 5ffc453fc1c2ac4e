"""The statistics of reports/repeated/ (pipeline.report.significance).

Demšar (JMLR 2006, §3.2.2, Table 6 and Figure 1) is the published worked example: the
AUC of C4.5, C4.5+m, C4.5+cf and C4.5+m+cf on 14 data sets (values and ranks transcribed
from the paper's Table 6), average ranks 3.143, 2.000, 2.893, 1.964, chi2_F = 9.28,
F_F = 3.69 (F(3, 39), critical value 2.85 at 0.05), Nemenyi CD = 1.25 (q = 2.569) and
1.12 at 0.10, and "the post-hoc test is not powerful enough to detect any significant
differences" at 0.05.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pipeline.report import significance as sig

NAMES = ["C4.5", "C4.5+m", "C4.5+cf", "C4.5+m+cf"]
# Demšar's Table 6. Voting prints 0.975 for both C4.5+cf and C4.5+m+cf but ranks them 2
# and 3 (the unprinted digits differ): 0.9749 keeps the paper's ranks.
AUC = np.array(
    [
        [0.763, 0.768, 0.771, 0.798],  # adult (sample)
        [0.599, 0.591, 0.590, 0.569],  # breast cancer
        [0.954, 0.971, 0.968, 0.967],  # breast cancer wisconsin
        [0.628, 0.661, 0.654, 0.657],  # cmc
        [0.882, 0.888, 0.886, 0.898],  # ionosphere
        [0.936, 0.931, 0.916, 0.931],  # iris
        [0.661, 0.668, 0.609, 0.685],  # liver disorders
        [0.583, 0.583, 0.563, 0.625],  # lung cancer
        [0.775, 0.838, 0.866, 0.875],  # lymphography
        [1.000, 1.000, 1.000, 1.000],  # mushroom
        [0.940, 0.962, 0.965, 0.962],  # primary tumor
        [0.619, 0.666, 0.614, 0.669],  # rheum
        [0.972, 0.981, 0.975, 0.9749],  # voting
        [0.957, 0.978, 0.946, 0.970],  # wine
    ]
)
# the ranks printed in Table 6 (in parentheses)
PAPER_RANKS = np.array(
    [
        [4, 3, 2, 1], [1, 2, 3, 4], [4, 1, 2, 3], [4, 1, 3, 2], [4, 2, 3, 1],
        [1, 2.5, 4, 2.5], [3, 2, 4, 1], [2.5, 2.5, 4, 1], [4, 3, 2, 1],
        [2.5, 2.5, 2.5, 2.5], [4, 2.5, 1, 2.5], [3, 2, 4, 1], [4, 1, 2, 3], [3, 1, 4, 2],
    ]
)  # fmt: skip


def test_demsar_table6_ranks_friedman_and_iman_davenport() -> None:
    np.testing.assert_array_equal(sig.block_ranks(AUC, lower_is_better=False), PAPER_RANKS)
    f = sig.friedman(AUC, lower_is_better=False)
    np.testing.assert_allclose(f.ranks, [3.143, 2.000, 2.893, 1.964], atol=5e-4)
    assert (f.n_blocks, f.k) == (14, 4)
    assert f.chi2 == pytest.approx(9.28, abs=5e-3)
    assert f.iman_davenport == pytest.approx(3.69, abs=5e-3)
    # F_F = 3.69 > 2.85, the critical value of F(3, 39) at 0.05: the null is rejected
    assert 0.01 < f.p_value < 0.05
    # scipy corrects for the ties (iris, lung cancer, mushroom, primary tumor): larger
    assert f.chi2_scipy > f.chi2 and f.p_scipy < f.p_chi2


def test_demsar_nemenyi_critical_difference() -> None:
    assert sig.critical_difference(4, 14) == pytest.approx(1.25, abs=5e-3)
    assert sig.critical_difference(4, 14) / np.sqrt(4 * 5 / (6 * 14)) == pytest.approx(
        2.569, abs=5e-4
    )
    assert sig.critical_difference(4, 14, alpha=0.10) == pytest.approx(1.12, abs=5e-3)
    p = sig.nemenyi(AUC, lower_is_better=False)
    assert p.shape == (4, 4)
    np.testing.assert_allclose(p, p.T)
    # at 0.05 no pair differs (the largest rank difference, 1.179, is below CD = 1.25) ...
    assert p[~np.eye(4, dtype=bool)].min() > 0.05
    # ... at 0.10 "pure C4.5 is significantly worse than C4.5+m and C4.5+m+cf" (and only them)
    assert p[0, 1] < 0.10 and p[0, 3] < 0.10
    assert p[0, 2] > 0.10 and p[1, 2] > 0.10 and p[2, 3] > 0.10 and p[1, 3] > 0.10


def test_direction_does_not_change_the_ranks() -> None:
    """Lower-is-better scores are ranked like their negation with higher-is-better."""
    a = sig.friedman(AUC, lower_is_better=False)
    b = sig.friedman(-AUC, lower_is_better=True)
    np.testing.assert_allclose(a.ranks, b.ranks)
    np.testing.assert_allclose(
        sig.nemenyi(AUC, lower_is_better=False), sig.nemenyi(-AUC, lower_is_better=True)
    )


def _scores(rng: np.random.Generator, n: int, k: int, shift: float) -> np.ndarray:
    """n blocks x k compositions: a block effect, unit noise, composition 0 lower by shift."""
    x = rng.normal(size=(n, 1)) * 3.0 + rng.normal(size=(n, k))
    x[:, 0] -= shift
    return x


def test_a_clearly_better_composition_is_detected() -> None:
    """Composition 0 better by 3 noise sds on 12 blocks: Friedman, Nemenyi against each
    other composition and Holm-Wilcoxon detect it in (nearly) every replication."""
    rng = np.random.default_rng(0)
    hits = {"friedman": 0, "nemenyi": 0, "holm": 0}
    reps = 20
    for _ in range(reps):
        x = _scores(rng, 12, 4, shift=3.0)
        f = sig.friedman(x, lower_is_better=True)
        hits["friedman"] += f.p_value < 0.05 and int(np.argmin(f.ranks)) == 0
        hits["nemenyi"] += bool(np.all(sig.nemenyi(x, lower_is_better=True)[0, 1:] < 0.05))
        holm = sig.wilcoxon_holm(x, 0, lower_is_better=True)
        hits["holm"] += all(c.p_holm < 0.05 and c.mean_difference < 0 for c in holm)
    assert hits["friedman"] >= 0.95 * reps
    assert hits["nemenyi"] >= 0.9 * reps
    assert hits["holm"] >= 0.95 * reps


def test_exchangeable_compositions_are_not_detected() -> None:
    """The null (every composition alike): each test rejects at about its level, 5%."""
    rng = np.random.default_rng(1)
    reps = 80
    rejected = {"friedman": 0, "nemenyi": 0, "holm": 0}
    for _ in range(reps):
        x = _scores(rng, 12, 4, shift=0.0)
        rejected["friedman"] += sig.friedman(x, lower_is_better=True).p_value < 0.05
        p = sig.nemenyi(x, lower_is_better=True)
        rejected["nemenyi"] += bool(p[~np.eye(4, dtype=bool)].min() < 0.05)
        rejected["holm"] += any(c.p_holm < 0.05 for c in sig.wilcoxon_holm(x, 0, True))
    # binomial(80, 0.05): mean 4, sd 1.9; 12 is four sds above (a real difference of one
    # noise sd is rejected in most replications: see the test above)
    assert rejected["friedman"] <= 12
    assert rejected["nemenyi"] <= 12  # Nemenyi controls the family-wise error
    assert rejected["holm"] <= 12


def test_holm_wilcoxon_counts_and_ties() -> None:
    x = np.array([[1.0, 2.0, 1.0], [1.0, 3.0, 1.0], [2.0, 2.5, 2.0], [0.5, 0.7, 0.5]])
    out = sig.wilcoxon_holm(x, 0, lower_is_better=True)
    assert [c.other for c in out] == [1, 2]
    assert (out[0].wins, out[0].losses) == (4, 0)
    assert out[0].mean_difference == pytest.approx(-0.925)
    assert out[1].p_value == 1.0 and out[1].wins == out[1].losses == 0  # identical columns
    assert all(c.p_holm >= c.p_value for c in out)


def test_friedman_needs_two_blocks() -> None:
    with pytest.raises(ValueError, match="2 blocks"):
        sig.friedman(np.ones((1, 3)), lower_is_better=True)
    f = sig.friedman(np.ones((3, 3)), lower_is_better=True)  # every block tied
    assert f.chi2 == 0.0 and f.p_value == pytest.approx(1.0)


def test_cd_diagram_png(tmp_path: Path) -> None:
    f = sig.friedman(AUC, lower_is_better=False)
    p = sig.nemenyi(AUC, lower_is_better=False)
    path = sig.cd_diagram(
        f.ranks, NAMES, p, sig.critical_difference(4, 14), tmp_path / "cd.png", "Demšar Table 6"
    )
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert [q.name for q in tmp_path.iterdir()] == ["cd.png"]  # no temporary file left
