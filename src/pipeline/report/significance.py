"""Comparing k compositions over N blocks (Demšar, JMLR 2006): ranks, the Friedman test,
the Nemenyi and Holm-Wilcoxon post-hoc tests and the critical-difference diagram.

A *block* is one dataset: its score is the mean of the composition's test metric over
the repeated splits of the dataset. Demšar (§3.2.3) ranks once per dataset because the
repeated splits of one dataset are not independent (their training data overlap), so
the splits are not blocks of their own; they enter as the per-dataset mean (and its
std, reported beside it). Conventions (Demšar §3.2.2):

- ranks per block, 1 = best, ties averaged (:func:`scipy.stats.rankdata`); scores within
  :data:`TIE_RTOL` of each other are ties (:func:`snap_ties`);
- Friedman's statistic from the average ranks R_j,
  chi2_F = 12 N / (k (k+1)) [sum_j R_j^2 - k (k+1)^2 / 4], and Iman and Davenport's
  F_F = (N-1) chi2_F / (N (k-1) - chi2_F) with its p-value from F(k-1, (k-1)(N-1))
  (:data:`scipy.stats.f`); :func:`scipy.stats.friedmanchisquare` (which corrects for
  ties, so it is larger when blocks have ties) is reported beside it;
- Nemenyi: all pairs, p-values by :func:`scikit_posthocs.posthoc_nemenyi_friedman`,
  critical difference CD = q_alpha sqrt(k (k+1) / (6 N)) with q_alpha the studentized
  range quantile / sqrt(2) (:data:`scipy.stats.studentized_range`);
- against a control (the paper's proposed composition): Wilcoxon signed-rank
  (:func:`scipy.stats.wilcoxon`) of the control against each other composition,
  Holm-corrected (statsmodels' arithmetic, :func:`.resampled_tests.holm_adjusted`).

Examples
--------
Demšar's Table 6 (AUC of four C4.5 variants on 14 data sets; higher is better):

>>> import numpy as np
>>> auc = np.array([[.763, .768, .771, .798], [.599, .591, .590, .569],
...     [.954, .971, .968, .967], [.628, .661, .654, .657], [.882, .888, .886, .898],
...     [.936, .931, .916, .931], [.661, .668, .609, .685], [.583, .583, .563, .625],
...     [.775, .838, .866, .875], [1., 1., 1., 1.], [.940, .962, .965, .962],
...     [.619, .666, .614, .669], [.972, .981, .975, .9749], [.957, .978, .946, .970]])
>>> f = friedman(auc, lower_is_better=False)
>>> [round(float(r), 3) for r in f.ranks], round(f.chi2, 2), round(f.iman_davenport, 2)
([3.143, 2.0, 2.893, 1.964], 9.28, 3.69)
>>> round(critical_difference(4, 14), 2)
1.25
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: the significance level of every test of the report
ALPHA = 0.05


@dataclass(frozen=True)
class Friedman:
    """The Friedman test over N blocks (rows) and k compositions (columns)."""

    ranks: np.ndarray  # average rank of each composition (1 = best)
    n_blocks: int
    k: int
    chi2: float  # Friedman's chi2_F from the average ranks (Demšar's formula)
    p_chi2: float
    iman_davenport: float  # F_F
    p_value: float  # of F_F: the test's p-value
    chi2_scipy: float  # scipy.stats.friedmanchisquare (tie-corrected)
    p_scipy: float


#: two scores of one block within this relative distance are one value (a tie): a metric
#: that is a count over n (MAE, a Hamming loss, an accuracy) averaged in another order, or
#: over the splits, differs from an equal one in its last bits only
TIE_RTOL = 1e-12


def snap_ties(scores: np.ndarray, rtol: float = TIE_RTOL) -> np.ndarray:
    """A copy of ``scores`` (blocks x compositions) in which the values of a block that
    agree within ``rtol`` (relative; chained in sorted order) are set to the smallest of
    them, so that ranks, signed differences and the tests see them as ties.

    Examples
    --------
    >>> a = np.array([[0.1 + 0.2 + 0.3, 0.3 + 0.2 + 0.1, 0.7]])  # 0.6000000000000001, 0.6
    >>> bool(a[0, 0] == a[0, 1]), bool((snap_ties(a)[0, 0] == snap_ties(a)[0, 1]))
    (False, True)
    """
    a = np.array(scores, dtype=np.float64, ndmin=2)
    if a.shape[1] < 2:
        return a
    order = np.argsort(a, axis=1, kind="stable")
    s = np.take_along_axis(a, order, axis=1)
    out = s.copy()
    for j in range(1, s.shape[1]):
        tied = np.abs(s[:, j] - s[:, j - 1]) <= rtol * np.maximum(
            np.abs(s[:, j]), np.abs(s[:, j - 1])
        )
        out[:, j] = np.where(tied, out[:, j - 1], s[:, j])
    result = np.empty_like(a)
    np.put_along_axis(result, order, out, axis=1)
    return result


def block_ranks(scores: np.ndarray, lower_is_better: bool) -> np.ndarray:
    """Ranks within each block (row), 1 = best, ties (:func:`snap_ties`) averaged."""
    from scipy.stats import rankdata

    a = snap_ties(scores)
    return rankdata(a if lower_is_better else -a, axis=1)


def friedman(scores: np.ndarray, lower_is_better: bool) -> Friedman:
    """The Friedman test of ``scores`` (N blocks x k compositions)."""
    from scipy import stats

    a = snap_ties(scores)
    n, k = a.shape
    if n < 2 or k < 2:
        raise ValueError(f"the Friedman test needs 2 blocks and 2 compositions, got {n} x {k}")
    ranks = block_ranks(a, lower_is_better).mean(axis=0)
    chi2 = 12.0 * n / (k * (k + 1)) * (float(np.sum(ranks**2)) - k * (k + 1) ** 2 / 4.0)
    denom = n * (k - 1) - chi2
    ff = float("inf") if denom <= 0 else (n - 1) * chi2 / denom
    p_ff = 0.0 if np.isinf(ff) else float(stats.f.sf(ff, k - 1, (k - 1) * (n - 1)))
    if np.all(a == a[:, :1]):  # every block tied: scipy divides by zero
        chi2_s, p_s = 0.0, 1.0
    elif k < 3:  # scipy's friedmanchisquare needs three compositions
        chi2_s, p_s = float("nan"), float("nan")
    else:
        res = stats.friedmanchisquare(*a.T)
        chi2_s, p_s = float(res.statistic), float(res.pvalue)
    return Friedman(
        ranks=ranks,
        n_blocks=n,
        k=k,
        chi2=float(chi2),
        p_chi2=float(stats.chi2.sf(chi2, k - 1)),
        iman_davenport=float(ff),
        p_value=p_ff,
        chi2_scipy=chi2_s,
        p_scipy=p_s,
    )


def critical_difference(k: int, n_blocks: int, alpha: float = ALPHA) -> float:
    """Nemenyi's critical difference of average ranks (Demšar eq. in §3.2.2)."""
    from scipy.stats import studentized_range

    q = float(studentized_range.ppf(1.0 - alpha, k, np.inf)) / np.sqrt(2.0)
    return float(q * np.sqrt(k * (k + 1) / (6.0 * n_blocks)))


def nemenyi(scores: np.ndarray, lower_is_better: bool) -> np.ndarray:
    """Nemenyi p-values of every pair (k x k) by scikit-posthocs."""
    import scikit_posthocs as sp

    a = snap_ties(scores)
    # scikit-posthocs ranks each block itself; the sign makes rank 1 the best either way
    p = sp.posthoc_nemenyi_friedman(a if lower_is_better else -a)
    return np.asarray(p, dtype=np.float64)


@dataclass(frozen=True)
class Comparison:
    """The control against one other composition (paired over blocks)."""

    other: int
    mean_difference: float  # mean(control - other) over blocks
    wins: int  # blocks where the control is strictly better
    losses: int
    p_value: float  # Wilcoxon signed-rank, two-sided (1.0 when every pair ties)
    p_holm: float  # Holm-corrected over the comparisons with the control


def wilcoxon_holm(
    scores: np.ndarray, control: int, lower_is_better: bool, others: Sequence[int] | None = None
) -> list[Comparison]:
    """Wilcoxon signed-rank tests of ``control`` against ``others`` (default: every
    other column), Holm-corrected together (Demšar §3.2.2, comparisons with a control)."""
    from scipy.stats import wilcoxon

    from .resampled_tests import holm_adjusted

    a = snap_ties(scores)
    others = [j for j in range(a.shape[1]) if j != control] if others is None else list(others)
    rows = []
    for j in others:
        d = a[:, control] - a[:, j]
        better = -d if lower_is_better else d
        p = 1.0 if np.all(d == 0) else float(wilcoxon(a[:, control], a[:, j]).pvalue)
        rows.append((j, float(d.mean()), int(np.sum(better > 0)), int(np.sum(better < 0)), p))
    if not rows:
        return []
    holm = holm_adjusted(np.array([r[4] for r in rows]))
    return [
        Comparison(other=j, mean_difference=m, wins=w, losses=lo, p_value=p, p_holm=float(h))
        for (j, m, w, lo, p), h in zip(rows, holm, strict=True)
    ]


def cd_diagram(
    ranks: Sequence[float],
    names: Sequence[str],
    p_nemenyi: np.ndarray,
    cd: float,
    path: Path,
    title: str,
    alpha: float = ALPHA,
) -> Path:
    """The critical-difference diagram (Demšar Fig. 1) as a PNG, drawn by
    :func:`scikit_posthocs.critical_difference_diagram`: the average ranks on the axis,
    bars joining the compositions that Nemenyi does not separate at ``alpha``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    import scikit_posthocs as sp

    from ..fileio import atomic_path

    names = list(names)
    sig = pd.DataFrame(np.asarray(p_nemenyi, dtype=np.float64), index=names, columns=names)
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(names) + 1.4))
    try:
        sp.critical_difference_diagram(
            pd.Series([float(r) for r in ranks], index=names), sig, ax=ax, alpha=alpha, cd=cd
        )
        ax.set_title(f"{title}\nNemenyi CD = {cd:.2f} at alpha = {alpha:g}", fontsize=9)
        fig.tight_layout()
        path = Path(path)
        with atomic_path(path) as tmp:  # makes the directory
            fig.savefig(tmp, dpi=110, format="png")
    finally:
        plt.close(fig)
    return path
