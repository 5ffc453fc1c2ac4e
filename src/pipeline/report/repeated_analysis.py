"""The statistics of one repeated-split table (:func:`analyze`).

On the table's complete part (the columns run on every complete dataset, each dataset on
the splits every compared column has):

- mean ± std (ddof 1) of every cell over the dataset's splits;
- across datasets (Demšar 2006: one block per dataset, its score the mean over the
  splits): ranks with ties (:func:`pipeline.report.significance.snap_ties`), the Friedman
  test with Iman and Davenport's F, Nemenyi's critical difference, and the Wilcoxon
  signed-rank test of the paper's proposed composition (the control) against each other
  one, Holm-corrected;
- per dataset: the corrected resampled t-test of the control against each other one
  (Nadeau & Bengio 2003), Holm-corrected within the dataset, and the Bayesian correlated
  t-test's probabilities (:mod:`pipeline.report.resampled_tests`);
- across datasets, Bayesian: the hierarchical correlated t-test (Benavoli et al. 2017,
  :mod:`pipeline.report.hierarchical`) of the control against each other one.

A dataset whose every compared column gives the same value on every split (no spread)
is *flagged*: one outcome, not R; its per-dataset tests are not run and the hierarchical
model leaves it out (it still is one block of the across-datasets tests).

The region of practical equivalence (:data:`ROPE`): 0.5 points for the metrics in
percent (Hamming loss, accuracy, F1), 0.01 for the mean absolute error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from . import resampled_tests as rt
from . import significance as sig
from .repeated_data import TableData

#: the region of practical equivalence of each metric: half a point of a percentage (the
#: change of one test sample's Hamming loss on a test set of 200 rankings, or of a
#: multilabel accuracy on 200 samples), a hundredth of a class of MAE (one sample in a
#: hundred off by one class)
ROPE = {"hamming": 0.5, "accuracy": 0.5, "f1_samples": 0.5, "f1_micro": 0.5, "f1_macro": 0.5,
        "mae": 0.01}  # fmt: skip


def rope_of(metric: str) -> float:
    """The ROPE half-width of ``metric`` (0.5 for an unknown metric in percent)."""
    return ROPE.get(metric, 0.5)


@dataclass(frozen=True)
class DatasetTest:
    """The control against one other composition on one dataset."""

    dataset: str
    test: rt.CorrectedT
    p_holm: float  # Holm over the control's comparisons on this dataset
    posterior: rt.Posterior | None  # Bayesian correlated t-test (None: no spread)


@dataclass(frozen=True)
class PairTests:
    """The control against one other composition (``other``: position in ``cols``)."""

    other: int
    wilcoxon: sig.Comparison | None  # blocks: datasets
    per_dataset: list[DatasetTest]
    hierarchical: rt.Hierarchical | None
    note: str = ""  # why a test was not run

    def verdict(self) -> str:
        return "not shown" if self.hierarchical is None else self.hierarchical.posterior.verdict()


@dataclass
class Analysis:
    """The statistics of one table (on its complete datasets and run columns)."""

    data: TableData
    cols: list[int]  # the columns compared (run on every complete dataset)
    rows: list[int]  # the complete datasets (every compared column on the same splits)
    means: np.ndarray  # (dataset, column): mean over the dataset's common splits
    stds: np.ndarray
    n_splits: list[int]
    blocks: list[np.ndarray]  # per dataset: (split, column) values of its common splits
    sizes: list[tuple[float, float]]  # per dataset: mean (n_train, n_test) of its splits
    flagged: list[str]  # datasets with no spread over their splits (one outcome)
    friedman: sig.Friedman | None
    cd: float | None
    p_nemenyi: np.ndarray | None
    control: int | None  # position in cols
    pairs: list[PairTests] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [self.data.columns[j].id for j in self.cols]

    @property
    def labels(self) -> list[str]:
        return [self.data.rows[r].label for r in self.rows]

    @property
    def rope(self) -> float:
        return rope_of(self.data.spec.metric)

    def values(self, cid: str, dataset: str) -> np.ndarray | None:
        """The per-split values of column ``cid`` on ``dataset`` (its common splits)."""
        if cid not in self.names or dataset not in self.labels:
            return None
        return self.blocks[self.labels.index(dataset)][:, self.names.index(cid)]

    def seeds(self, dataset: str) -> list[int]:
        """The split seeds of ``dataset``'s common splits."""
        i = self.rows[self.labels.index(dataset)]
        ran = np.all(np.isfinite(self.data.values[i][self.cols]), axis=0)
        return [s for s, ok in zip(self.data.splits, ran, strict=True) if ok]


def _no_spread(block: np.ndarray) -> bool:
    """Every column of ``block`` (split, column) the same on every split."""
    if block.shape[0] < 2:
        return True
    scale = np.maximum(1.0, np.abs(block).max(axis=0))
    return bool(np.all(block.std(axis=0) <= 1e-12 * scale))


def dataset_tests(
    blocks: Sequence[np.ndarray],
    labels: Sequence[str],
    sizes: Sequence[tuple[float, float]],
    flagged: Sequence[str],
    ctrl: int,
    others: Sequence[int],
    rope: float,
    lower: bool,
) -> dict[int, list[DatasetTest]]:
    """Per dataset, the corrected t-test of the control against each of ``others`` (Holm
    within the dataset) and the Bayesian correlated t-test."""
    out: dict[int, list[DatasetTest]] = {o: [] for o in others}
    for block, label, (n_train, n_test) in zip(blocks, labels, sizes, strict=True):
        if label in flagged or block.shape[0] < 2 or not np.isfinite(n_train + n_test):
            continue
        snapped = sig.snap_ties(block)  # ties per split as ties
        tests = {o: rt.corrected_ttest(snapped[:, ctrl] - snapped[:, o], n_train, n_test)
                 for o in others}  # fmt: skip
        holm = rt.holm([t.p_value for t in tests.values()])
        for (o, t), h in zip(tests.items(), holm, strict=True):
            post = rt.bayes_correlated_ttest(
                snapped[:, ctrl] - snapped[:, o], n_train, n_test, rope, lower
            )
            out[o].append(DatasetTest(label, t, h, post))
    return out


def hierarchical_pair(
    blocks: Sequence[np.ndarray],
    labels: Sequence[str],
    sizes: Sequence[tuple[float, float]],
    flagged: Sequence[str],
    ctrl: int,
    other: int,
    rope: float,
    lower: bool,
) -> tuple[rt.Hierarchical | None, str]:
    """The hierarchical test of the control against ``other`` on the datasets that are
    not flagged (each with its own correlation n_test / (n_test + n_train))."""
    keep = [k for k, lb in enumerate(labels) if lb not in flagged]
    if len(keep) < 2:
        return None, "fewer than two datasets with spread over their splits"
    r = {blocks[k].shape[0] for k in keep}
    if len(r) != 1 or min(r) < 3:
        return None, "the datasets need the same number of splits, at least 3"
    diffs = np.stack([sig.snap_ties(blocks[k])[:, ctrl] - sig.snap_ties(blocks[k])[:, other]
                      for k in keep])  # fmt: skip
    n_train = np.array([sizes[k][0] for k in keep])
    n_test = np.array([sizes[k][1] for k in keep])
    if not np.all(np.isfinite(n_train + n_test)):
        return None, "the split sizes are not recorded"
    try:
        return rt.hierarchical(diffs, n_test / (n_test + n_train), rope, lower), ""
    except ValueError as exc:
        return None, str(exc)


def analyze(data: TableData, control: str | None) -> Analysis:
    """The statistics of ``data`` with ``control`` (the paper's proposal) as control."""
    v = data.values
    ran = [j for j in range(v.shape[1]) if np.isfinite(v[:, j, :]).any()]
    not_run = [data.columns[j].id for j in range(v.shape[1]) if j not in ran]
    rows, incomplete, means, stds, n_splits, blocks, sizes = [], [], [], [], [], [], []
    for i in range(v.shape[0]):
        common = np.all(np.isfinite(v[i][ran]), axis=0) if ran else np.zeros(0, bool)
        if not common.any():
            incomplete.append(data.rows[i].label)
            continue
        block = v[i][ran][:, common]  # (column, split)
        rows.append(i)
        means.append(block.mean(axis=1))
        stds.append(block.std(axis=1, ddof=1) if block.shape[1] > 1 else np.full(len(ran), np.nan))
        n_splits.append(int(common.sum()))
        blocks.append(block.T)
        sizes.append(
            (float(np.nanmean(data.n_train[i][ran][:, common])),
             float(np.nanmean(data.n_test[i][ran][:, common])))
            if np.isfinite(data.n_train[i][ran][:, common]).any() else (np.nan, np.nan)
        )  # fmt: skip
    means_a = np.array(means).reshape(len(rows), len(ran))
    stds_a = np.array(stds).reshape(len(rows), len(ran))
    labels = [data.rows[i].label for i in rows]
    flagged = [lb for lb, b in zip(labels, blocks, strict=True) if _no_spread(b)]
    lower = data.spec.lower_is_better
    names = [data.columns[j].id for j in ran]
    ctrl = names.index(control) if control in names else None
    a = Analysis(data, ran, rows, means_a, stds_a, n_splits, blocks, sizes, flagged,
                 None, None, None, ctrl, [], not_run, incomplete)  # fmt: skip
    if len(rows) >= 2 and len(ran) >= 2:
        a.friedman = sig.friedman(means_a, lower)
        a.cd = sig.critical_difference(len(ran), len(rows))
        a.p_nemenyi = sig.nemenyi(means_a, lower)
    if ctrl is None or len(ran) < 2:
        return a
    others = [k for k, j in enumerate(ran) if k != ctrl and data.columns[j].paper]
    wil = {c.other: c for c in sig.wilcoxon_holm(means_a, ctrl, lower, others)} if (
        len(rows) >= 2) else {}  # fmt: skip
    per = dataset_tests(blocks, labels, sizes, flagged, ctrl, others, a.rope, lower)
    for o in others:
        hier, note = hierarchical_pair(blocks, labels, sizes, flagged, ctrl, o, a.rope, lower)
        a.pairs.append(PairTests(o, wil.get(o), per[o], hier, note))
    return a
