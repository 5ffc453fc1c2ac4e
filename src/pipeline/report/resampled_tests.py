r"""Tests for learners compared on repeated random splits of the same datasets.

Repeated random train/test splits of one dataset overlap: their training sets share most
of their rows (and their test sets draw from the same finite pool), so the R per-split
differences of two learners are positively correlated, and a test that treats them as R
independent outcomes (a plain t-test over splits, or a signed-rank test over
(dataset, split) pairs) is anti-conservative (Dietterich 1998; Nadeau & Bengio 2003).
This module holds the tests that account for it:

- **Corrected resampled t-test** (Nadeau & Bengio, Machine Learning 2003; Bouckaert &
  Frank, PAKDD 2004), per dataset: with :math:`d_1..d_R` the per-split differences,
  :math:`\bar d` their mean and :math:`s^2` their variance (ddof 1),

  .. math::
      t = \frac{\bar d}{\sqrt{(1/R + n_\text{test}/n_\text{train})\, s^2}},
      \qquad \text{df} = R - 1,

  the variance of the mean inflated by :math:`n_\text{test}/n_\text{train}` for the
  correlation :math:`\rho = n_\text{test}/(n_\text{test}+n_\text{train})` of two splits;
  two-sided p-value and a confidence interval of the mean difference from Student's t.
- **Bayesian correlated t-test** (Corani & Benavoli, Machine Learning 2015), per dataset:
  the posterior of the mean difference is Student's t with the same location, scale and
  degrees of freedom, giving :math:`P(\text{left})`, :math:`P(\text{ROPE})`,
  :math:`P(\text{right})` for a region of practical equivalence ``[-rope, rope]``
  (baycomp's ``CorrelatedTTest``, with :math:`\rho` from the split sizes instead of
  ``1/folds``).
- **Bayesian hierarchical correlated t-test** (Corani, Benavoli, Demšar, Mangili &
  Zaffalon, Machine Learning 2017; Benavoli, Corani, Demšar & Zaffalon, JMLR 2017) across
  datasets: the per-split differences of dataset i are a correlated Gaussian around
  :math:`\delta_i`, the :math:`\delta_i` a Student t around :math:`\delta_0`; the
  posterior of the next dataset's difference gives the three probabilities
  (:func:`hierarchical`; baycomp's model, computed by quadrature in
  :mod:`pipeline.report.hierarchical`).
- :func:`holm`: Holm's step-down correction (statsmodels' arithmetic, :func:`holm_adjusted`).

The differences are *control minus other*; ``lower_is_better`` turns them into
"better" (positive) or "worse".

Examples
--------
Ten splits of 80/20 (:math:`n_\text{test}/n_\text{train} = 1/4`) whose differences have
mean 1 and variance 2/3: the plain t statistic over the splits would be
:math:`1/\sqrt{(2/3)/10} = 3.87` (p = 0.004), the corrected one is
:math:`1/\sqrt{(1/10 + 1/4)(2/3)} = 2.07` (p = 0.068):

>>> import numpy as np
>>> d = np.array([2.0, 0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 0.0, 1.0, 1.0])
>>> r = corrected_ttest(d, n_train=400, n_test=100)
>>> round(r.t, 3), r.df, round(r.p_value, 3)
(2.07, 9, 0.068)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: the probability a Bayesian verdict needs (Benavoli et al. 2017 use 0.95)
DECISIVE = 0.95


@dataclass(frozen=True)
class CorrectedT:
    """The corrected resampled t-test of one dataset's per-split differences."""

    mean: float  # mean difference (control - other)
    ci_low: float  # 95 % confidence interval of the mean difference (corrected variance)
    ci_high: float
    t: float
    df: int
    p_value: float  # two-sided; nan when the differences have no spread (see flat)
    n_splits: int
    flat: bool  # every split gave the same difference: one outcome, not R


def corrected_variance_factor(n_splits: int, n_train: float, n_test: float) -> float:
    r""":math:`1/R + n_\text{test}/n_\text{train}` (Nadeau & Bengio's correction)."""
    return 1.0 / n_splits + float(n_test) / float(n_train)


def corrected_ttest(
    diff: Sequence[float], n_train: float, n_test: float, alpha: float = 0.05
) -> CorrectedT:
    """The corrected resampled t-test of the differences ``diff`` (one per split) of a
    dataset whose splits have ``n_train`` training and ``n_test`` test rows (their means
    over the splits when they vary). Differences with no spread (identical on every
    split) are ``flat``: the test does not apply (``p_value`` is nan; 1.0 when they are
    all zero)."""
    from scipy import stats

    d = np.asarray(diff, dtype=np.float64)
    r = d.size
    if r < 2:
        raise ValueError(f"the corrected t-test needs 2 splits, got {r}")
    mean = float(d.mean())
    var = float(d.var(ddof=1))
    scale = np.sqrt(corrected_variance_factor(r, n_train, n_test) * var)
    flat = bool(var <= (1e-12 * max(1.0, abs(mean))) ** 2)
    if flat:
        p = 1.0 if mean == 0.0 else float("nan")
        return CorrectedT(mean, mean, mean, float("nan"), r - 1, p, r, True)
    t = mean / scale
    p = float(2.0 * stats.t.sf(abs(t), r - 1))
    half = float(stats.t.ppf(1.0 - alpha / 2.0, r - 1)) * scale
    return CorrectedT(mean, mean - half, mean + half, float(t), r - 1, p, r, False)


@dataclass(frozen=True)
class Posterior:
    """Posterior probabilities that the control is better, practically equivalent
    (within the ROPE) or worse than the other composition."""

    better: float
    rope: float
    worse: float

    def verdict(self) -> str:
        """``holds`` / ``equivalent within the ROPE`` / ``reversed`` when one of the three
        reaches :data:`DECISIVE`, else ``not shown``."""
        if self.better >= DECISIVE:
            return "holds"
        if self.worse >= DECISIVE:
            return "reversed"
        if self.rope >= DECISIVE:
            return "equivalent within the ROPE"
        return "not shown"


def _oriented(left: float, rope: float, right: float, lower_is_better: bool) -> Posterior:
    # left: P(control - other < -rope): the control lower, i.e. better when lower is better
    return Posterior(left, rope, right) if lower_is_better else Posterior(right, rope, left)


def bayes_correlated_ttest(
    diff: Sequence[float], n_train: float, n_test: float, rope: float, lower_is_better: bool
) -> Posterior | None:
    r"""The Bayesian correlated t-test (Corani & Benavoli 2015) of one dataset's per-split
    differences (control - other): the posterior of the mean difference is Student's t
    with :math:`R-1` degrees of freedom, location :math:`\bar d` and scale
    :math:`\sqrt{(1/R + n_\text{test}/n_\text{train}) s^2}` (``None`` when the
    differences have no spread)."""
    from scipy import stats

    d = np.asarray(diff, dtype=np.float64)
    r = d.size
    mean, var = float(d.mean()), float(d.var(ddof=1))
    if var <= (1e-12 * max(1.0, abs(mean))) ** 2:
        return None
    scale = float(np.sqrt(corrected_variance_factor(r, n_train, n_test) * var))
    left = float(stats.t.cdf(-rope, r - 1, mean, scale))
    right = float(stats.t.sf(rope, r - 1, mean, scale))
    return _oriented(left, max(0.0, 1.0 - left - right), right, lower_is_better)


def holm_adjusted(p_values: np.ndarray) -> np.ndarray:
    r"""Holm's step-down adjusted p-values of finite ``p_values``: sorted increasingly,
    :math:`\tilde p_{(i)} = \min(1, \max_{j \le i} (m - j + 1)\, p_{(j)})`.

    The arithmetic of :func:`statsmodels.stats.multitest.multipletests` (``method="holm"``)
    to the last bit (a test compares them), without its ``gc.collect()`` on every call: 0.14
    s each in a process holding a large heap, 114 calls per repeated-splits report.

    >>> holm_adjusted(np.array([0.01, 0.04, 0.03])).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p, kind="mergesort")
    adjusted = np.maximum.accumulate(p[order] * np.arange(p.size, 0, -1))
    adjusted[adjusted > 1] = 1
    out = np.empty_like(adjusted)
    out[order] = adjusted
    return out


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (:func:`holm_adjusted`); nan entries stay nan
    and do not count as hypotheses."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = holm_adjusted(p[ok])
    return [float(x) for x in out]


@dataclass(frozen=True)
class Hierarchical:
    r"""The Bayesian hierarchical test of a control against another composition over
    several datasets: the posterior of the difference on a new dataset, and of the mean
    difference :math:`\delta_0` (control - other)."""

    posterior: Posterior
    n_datasets: int
    delta0_mean: float
    delta0_low: float  # 95 % credible interval
    delta0_high: float


def hierarchical(
    diffs: np.ndarray, rho: float | np.ndarray, rope: float, lower_is_better: bool
) -> Hierarchical:
    r"""The Bayesian hierarchical correlated t-test (Corani et al. 2017; Benavoli et al.
    2017) of ``diffs`` (datasets x splits, control - other) with the correlation ``rho``
    of two splits of each dataset (:math:`n_\text{test}/(n_\text{test}+n_\text{train})`):
    baycomp's model and decision rule, computed by quadrature
    (:func:`pipeline.report.hierarchical.hierarchical_test`: Stan, which baycomp needs,
    does not build in reasonable time on these machines)."""
    from .hierarchical import hierarchical_test

    d = np.asarray(diffs, dtype=np.float64)
    r = hierarchical_test(d, rho, rope)  # right: control - other > rope
    return Hierarchical(
        _oriented(r.left, r.rope, r.right, lower_is_better),
        d.shape[0], r.delta0_mean, r.delta0_low, r.delta0_high,
    )  # fmt: skip
