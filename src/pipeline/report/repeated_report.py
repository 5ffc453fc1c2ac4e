"""``reports/repeated/``: the paper's tables over repeated splits, with significance tests.

For each table of the paper that compares compositions (Tables 1, 2, 3, 4, 6, 7) this
reads the tracked results of every split (``data/eval/<key>/<run>/results.json`` of the
repeated-split experiments, :mod:`pipeline.report.seeds`; Table 4: the thirty splits
of ``ord-splits``) and writes:

- ``<table>.md`` / ``<table>.csv``: mean ± std over the splits of each cell (std with
  ddof 1), the rank of each composition per dataset and their average, the Friedman
  test, the Nemenyi critical difference, and the Holm-corrected Wilcoxon signed-rank tests
  of the paper's proposed composition against each other one (:mod:`.significance`);
- ``<table>_cd.png``: the critical-difference diagram;
- ``README.md``: each finding of the paper (reports/README.md) with "holds on the paper's
  split" and "holds with significance (p < 0.05)";
- ``metrics/repeated.json``: a small summary for ``dvc metrics show``.

Blocks: a dataset is a block of the Friedman test and of Nemenyi (Demšar 2006: the
splits of one dataset are not independent). A finding is about the paper's datasets, so
it is tested on the pairs (dataset, split) -- "does it hold beyond the noise of the
split, on these datasets?" -- with the across-datasets test (blocks = datasets, the
question "would it hold on other datasets?") reported beside it. Every dataset of the
experiments (a user's too, conf/dataset/ + the experiment's ``datasets``) is a row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import significance as sig
from .paper import Column, Row, TableSpec
from .results import RESULTS
from .tables import fmt as _fmt

#: the tables compared, and the paper's proposed composition of each (the control)
TABLES = {
    "table1": "B/B",
    "table2": "B/B",
    "table3": "B/B linear",
    "table4": "M/M",
    "table6": "K/K",
    "table7": "K/K",
}
#: the diagnostic table a finding needs (the rounded knapsack bound)
DIAGNOSTICS = ("table7_round",)
OUT_DIR = Path("reports/repeated")
METRICS_FILE = Path("metrics/repeated.json")


@dataclass
class TableData:
    """The per-split values of one table: ``values[dataset, column, split]`` (NaN: not run)."""

    spec: TableSpec
    rows: list[Row]
    columns: list[Column]
    splits: list[int]
    values: np.ndarray
    run_ids: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        return [r.label for r in self.rows]

    def col(self, cid: str) -> int:
        return [c.id for c in self.columns].index(cid)

    def row(self, label: str) -> int | None:
        return self.labels.index(label) if label in self.labels else None


def _rows(spec: TableSpec, experiments: Mapping[str, Any]) -> list[Row]:
    """The table's rows: the paper's rows whose experiment runs them, then every other
    dataset of the table's experiment (a user's dataset), labelled by its name."""

    def datasets_of(key: str) -> list[str]:
        item = experiments.get(key) or {}
        names = item.get("datasets")
        return list(names) if names else [item.get("dataset")] if item.get("dataset") else []

    key = spec.splits_experiment or spec.experiment
    rows = [
        Row(r.label, r.dataset, None if spec.splits_experiment else r.experiment)
        for r in spec.rows
        if r.dataset is not None
        and r.dataset in datasets_of(key if spec.splits_experiment else spec.experiment_of(r))
    ]
    known = {r.dataset for r in rows}
    rows += [Row(d, d) for d in datasets_of(key) if d not in known]
    return rows


def _load(root: Path, key: str, run: str) -> dict[str, Any] | None:
    from ..paths import EVAL_DIR

    path = root / EVAL_DIR / key / run / RESULTS
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def collect(
    spec: TableSpec,
    experiments: Mapping[str, Any],
    seeds: Mapping[str, Mapping[int, str]],
    root: Path,
) -> TableData:
    """The per-split test values of ``spec`` from the tracked results under ``root``.

    Seed ``s`` of a row comes from the experiment ``seeds[base][s]`` (``base`` the
    experiment of the row); a split sweep (``spec.splits_experiment``) gives its splits."""
    rows = _rows(spec, experiments)
    columns = list(spec.columns)
    if spec.splits_experiment:
        sweep = spec.splits_experiment
        per: dict[tuple[int, int], dict[int, float]] = {}
        run_ids: dict[tuple[str, str], list[str]] = {}
        for i, row in enumerate(rows):
            for j, col in enumerate(columns):
                data = _load(root, sweep, col.run.format(dataset=row.dataset)) or {}
                per[i, j] = {
                    int(s): float(r["headline"][spec.metric])
                    for s, r in (data.get("splits") or {}).items()
                    if spec.metric in (r.get("headline") or {})
                }
                if data.get("run_id"):
                    run_ids[row.label, col.id] = [data["run_id"]]
        splits = sorted({s for v in per.values() for s in v})
    else:
        per, run_ids = {}, {}
        for i, row in enumerate(rows):
            base = row.experiment or spec.experiment
            for j, col in enumerate(columns):
                per[i, j] = {}
                for s, key in (seeds.get(base) or {0: base}).items():
                    data = _load(root, key, col.run.format(dataset=row.dataset))
                    if data and spec.metric in (data.get("headline") or {}):
                        per[i, j][s] = float(data["headline"][spec.metric])
                        if data.get("run_id"):
                            run_ids.setdefault((row.label, col.id), []).append(data["run_id"])
        splits = sorted({s for v in per.values() for s in v})
    values = np.full((len(rows), len(columns), len(splits)), np.nan)
    for (i, j), by_split in per.items():
        for s, v in by_split.items():
            values[i, j, splits.index(s)] = v
    return TableData(spec, rows, columns, splits, values, run_ids)


@dataclass
class Analysis:
    """The statistics of one table (on its complete datasets and run columns)."""

    data: TableData
    cols: list[int]  # the columns compared (run on every complete dataset)
    rows: list[int]  # the complete datasets (every compared column on the same splits)
    means: np.ndarray  # (dataset, column): mean over the dataset's common splits
    stds: np.ndarray
    n_splits: list[int]
    pairs: np.ndarray  # (dataset x split, column): every common (dataset, split)
    friedman: sig.Friedman | None
    cd: float | None
    p_nemenyi: np.ndarray | None
    ranks_pairs: np.ndarray | None  # average rank over datasets x splits (descriptive)
    control: int | None  # position in cols
    vs_control_datasets: list[sig.Comparison]
    vs_control_pairs: list[sig.Comparison]
    not_run: list[str]
    incomplete: list[str]

    @property
    def names(self) -> list[str]:
        return [self.data.columns[j].id for j in self.cols]


def analyze(data: TableData, control: str | None) -> Analysis:
    """Friedman, Nemenyi and Holm-Wilcoxon on the table's complete part."""
    v = data.values
    ran = [j for j in range(v.shape[1]) if np.isfinite(v[:, j, :]).any()]
    not_run = [data.columns[j].id for j in range(v.shape[1]) if j not in ran]
    rows, incomplete, means, stds, n_splits, pairs = [], [], [], [], [], []
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
        pairs.append(block.T)
    means_a = np.array(means).reshape(len(rows), len(ran))
    stds_a = np.array(stds).reshape(len(rows), len(ran))
    pairs_a = np.concatenate(pairs) if pairs else np.zeros((0, len(ran)))
    lower = data.spec.lower_is_better
    ctrl = None
    if control is not None and control in [data.columns[j].id for j in ran]:
        ctrl = [data.columns[j].id for j in ran].index(control)
    fr = cd = p_nem = ranks_pairs = None
    vs_d: list[sig.Comparison] = []
    vs_p: list[sig.Comparison] = []
    if len(rows) >= 2 and len(ran) >= 2:
        fr = sig.friedman(means_a, lower)
        cd = sig.critical_difference(len(ran), len(rows))
        p_nem = sig.nemenyi(means_a, lower)
        if ctrl is not None:
            vs_d = sig.wilcoxon_holm(means_a, ctrl, lower, _paper_others(data, ran, ctrl))
    if len(pairs_a) >= 2 and len(ran) >= 2:
        ranks_pairs = sig.block_ranks(pairs_a, lower).mean(axis=0)
        if ctrl is not None:
            vs_p = sig.wilcoxon_holm(pairs_a, ctrl, lower, _paper_others(data, ran, ctrl))
    return Analysis(
        data, ran, rows, means_a, stds_a, n_splits, pairs_a, fr, cd, p_nem, ranks_pairs,
        ctrl, vs_d, vs_p, not_run, incomplete,
    )  # fmt: skip


def _paper_others(data: TableData, ran: Sequence[int], ctrl: int) -> list[int]:
    """The compared columns the control is tested against: the paper's columns."""
    return [k for k, j in enumerate(ran) if k != ctrl and data.columns[j].paper]


# --------------------------------------------------------------------------- findings
@dataclass
class Finding:
    claim: str
    on_paper_split: bool | None
    significant: bool | None  # None: not a comparison, or not run
    verdict: str  # the third column's text
    evidence: str


def _pair_values(a: Analysis, ci: str, cj: str, dataset: str | None = None) -> np.ndarray | None:
    """(pairs, 2) values of columns ci, cj over the (dataset, split) pairs."""
    names = a.names
    if ci not in names or cj not in names:
        return None
    i, j = names.index(ci), names.index(cj)
    if dataset is None:
        return a.pairs[:, [i, j]]
    labels = [a.data.rows[r].label for r in a.rows]
    if dataset not in labels:
        return None
    k = labels.index(dataset)
    start = sum(a.n_splits[:k])
    return a.pairs[start : start + a.n_splits[k]][:, [i, j]]


def _p(x: float) -> str:
    return "—" if x is None or not np.isfinite(x) else (f"{x:.2g}" if x < 0.001 else f"{x:.3f}")


def _seed0(a: Analysis, cid: str) -> np.ndarray | None:
    """The column's values on the first split (the paper's split) of each dataset."""
    if cid not in a.names or 0 not in a.data.splits:
        return None
    s = a.data.splits.index(0)
    vals = a.data.values[a.rows, a.cols[a.names.index(cid)], s]
    return None if not np.all(np.isfinite(vals)) else vals


def best_on_average(a: Analysis, claim: str) -> Finding:
    """The control is the best column on average (over the paper's columns)."""
    if a.control is None or not a.vs_control_pairs:
        return Finding(claim, None, None, "not run", "")
    lower = a.data.spec.lower_is_better
    others = [c.other for c in a.vs_control_pairs]
    ctrl_name = a.names[a.control]
    sign = 1.0 if lower else -1.0
    s0 = {n: _seed0(a, n) for n in [ctrl_name, *(a.names[o] for o in others)]}
    paper_split = None
    if all(v is not None for v in s0.values()):
        m = {n: float(np.mean(v)) for n, v in s0.items()}
        paper_split = all(sign * m[ctrl_name] < sign * m[n] for n in m if n != ctrl_name)
    mean_all = a.pairs.mean(axis=0)
    direction = all(sign * mean_all[a.control] < sign * mean_all[o] for o in others)
    sig_pairs = direction and all(c.p_holm < sig.ALPHA for c in a.vs_control_pairs)
    sig_ds = (
        bool(a.vs_control_datasets)
        and direction
        and all(c.p_holm < sig.ALPHA for c in a.vs_control_datasets)
    )
    worst = max(a.vs_control_pairs, key=lambda c: c.p_holm)
    worst_d = max(a.vs_control_datasets, key=lambda c: c.p_holm) if a.vs_control_datasets else None
    verdict = "yes" if sig_pairs else ("no (not significant)" if direction else "no")
    evidence = (
        f"mean over {len(a.pairs)} (dataset, split) pairs: "
        + ", ".join(
            f"{n} {mean_all[k]:.3g}" for k, n in enumerate(a.names) if k in [*others, a.control]
        )
        + f"; weakest Holm-Wilcoxon {ctrl_name} vs {a.names[worst.other]}: p = {_p(worst.p_holm)}"
        + " on the pairs"
        + (
            f", p = {_p(worst_d.p_holm)} across the {len(a.rows)} datasets "
            f"(vs {a.names[worst_d.other]}; {'significant' if sig_ds else 'not significant'})"
            if worst_d
            else ""
        )
    )  # fmt: skip
    return Finding(claim, paper_split, sig_pairs, verdict, evidence)


def beats(
    a: Analysis, b: Analysis, ci: str, cj: str, claim: str, dataset: str | None = None
) -> Finding:
    """Column ``ci`` of ``a`` beats column ``cj`` of ``b`` (one Wilcoxon signed-rank test
    over the common (dataset, split) pairs; ``dataset``: that dataset's splits only)."""
    from scipy.stats import wilcoxon

    va = _pair_values(a, ci, ci, dataset)
    vb = _pair_values(b, cj, cj, dataset)
    if va is None or vb is None or len(va) != len(vb) or len(va) == 0:
        return Finding(claim, None, None, "not run", "")
    x, y = va[:, 0], vb[:, 0]
    lower = a.data.spec.lower_is_better
    better = (x < y) if lower else (x > y)
    direction = (x.mean() < y.mean()) if lower else (x.mean() > y.mean())
    p = 1.0 if np.all(x == y) else float(wilcoxon(x, y).pvalue)
    signif = bool(direction and p < sig.ALPHA)
    s0a = _seed0_pair(a, ci, dataset)
    s0b = _seed0_pair(b, cj, dataset)
    on0 = None
    if s0a is not None and s0b is not None:
        on0 = bool(np.mean(s0a) < np.mean(s0b)) if lower else bool(np.mean(s0a) > np.mean(s0b))
    n = len(x)
    where = f"the {n} splits of {dataset}" if dataset else f"{n} (dataset, split) pairs"
    evidence = (
        f"{ci} {x.mean():.3g} ± {x.std(ddof=1) if n > 1 else 0:.2g} vs {cj} {y.mean():.3g} ± "
        f"{y.std(ddof=1) if n > 1 else 0:.2g} over {where}; better on {int(better.sum())}/{n};"
        f" Wilcoxon p = {_p(p)}"
    )
    if n < 6:
        evidence += f" (with {n} pairs the smallest two-sided p is {2 / 2**n:.3g})"
    verdict = "yes" if signif else ("no (not significant)" if direction else "no")
    return Finding(claim, on0, signif, verdict, evidence)


def _seed0_pair(a: Analysis, cid: str, dataset: str | None) -> np.ndarray | None:
    if dataset is None:
        return _seed0(a, cid)
    labels = [a.data.rows[r].label for r in a.rows]
    if cid not in a.names or 0 not in a.data.splits or dataset not in labels:
        return None
    i = a.rows[labels.index(dataset)]
    v = a.data.values[i, a.cols[a.names.index(cid)], a.data.splits.index(0)]
    return None if not np.isfinite(v) else np.array([v])


def findings(analyses: Mapping[str, Analysis]) -> list[Finding]:
    """The paper's findings of reports/README.md (pipeline.report.build.check_findings),
    each with the paper's split and the repeated-split significance."""
    out: list[Finding] = []
    t1 = analyses.get("table1")
    if t1 is not None:
        out.append(_within_paper(t1))
    for key, name in (("table1", "Table 1"), ("table2", "Table 2")):
        if key in analyses:
            out.append(best_on_average(analyses[key], f"{name}: Birkhoff/Birkhoff best on average"))
    t3 = analyses.get("table3")
    if t3 is not None:
        claim = (
            "Table 3: with a linear model the Birkhoff polytope beats the permutahedron "
            "(the paper: 'by a large margin')"
        )
        out.append(beats(t3, t3, "B/B linear", "P/P linear", claim))
    t4 = analyses.get("table4")
    if t4 is not None:
        out.append(best_on_average(t4, "Table 4: the order simplex (M/M) best on average MAE"))
        parts = [
            beats(t4, t4, "R/M", "ridge", "R/M < ridge"),
            beats(t4, t4, "cube/M", "R/M", "cube/M < R/M"),
        ]
        last = beats(t4, t4, "cube/M", "M/M", "cube/M < M/M")  # must NOT hold significantly
        strict = all(p.significant for p in parts)
        ok = strict and not last.significant
        on0 = None
        if all(p.on_paper_split is not None for p in [*parts, last]):
            on0 = all(p.on_paper_split for p in parts) and not last.on_paper_split
        out.append(
            Finding(
                "Table 4: average MAE ridge > (R, M) > (cube, M) >= (M, M)",
                on0,
                ok,
                "yes" if ok else "no",
                "; ".join(f"{p.claim}: {p.evidence}" for p in [*parts, last])
                + " (the last must not be significant)",
            )
        )
    t7 = analyses.get("table7")
    for key, label in (("table7", "headline"), ("table7_round", "rounded knapsack bound")):
        a = analyses.get(key)
        if a is None or t7 is None:
            continue
        for ds in ("Emotions", "Scene"):
            claim = f"Table 7 ({label}): knapsack/knapsack beats cube/cube in F1 on {ds}"
            out.append(beats(a, t7, "K/K", "cube/cube", claim, dataset=ds))
    return out


def _within_paper(a: Analysis) -> Finding:
    claim = "Table 1: Birkhoff/Birkhoff within 0.5 of the paper on all six datasets"
    if "B/B" not in a.names:
        return Finding(claim, None, None, "not run", "")
    k = a.names.index("B/B")
    col = a.data.columns[a.cols[k]]
    parts, on0 = [], []
    s0 = _seed0(a, "B/B")
    for n, r in enumerate(a.rows):
        row = a.data.rows[r]
        paper = a.data.spec.paper_value(row, col)
        if paper is None:
            continue
        parts.append(f"{row.label} {a.means[n, k]:.2f} ± {a.stds[n, k]:.2f} (paper {paper:.2f})")
        if s0 is not None:
            on0.append(abs(s0[n] - paper) <= 0.5 + 1e-9)
    return Finding(
        claim,
        None if not on0 else all(on0),
        None,
        "n/a (a reproduction check, not a comparison)",
        "mean ± std over the splits: " + ", ".join(parts),
    )


# --------------------------------------------------------------------------- rendering
def table_markdown(a: Analysis, png: str | None) -> str:
    """The table's Markdown: mean ± std, ranks, Friedman, Nemenyi, Holm-Wilcoxon."""
    spec, d = a.data.spec, a.data
    digits = 3 if spec.metric == "mae" else 2
    names = a.names
    title = spec.title.replace(", split 0", "")  # Table 4: its thirty splits here
    lines = [f"# {title}: {len(d.splits)} splits", ""]
    best = "lower" if spec.lower_is_better else "higher"
    lines += [
        f"Test {spec.metric} ({best} is better), mean ± std (ddof 1) over the splits "
        f"{_splits_text(d.splits)} of each dataset; "
        f"the rank of each composition on the dataset's mean in brackets (1 = best).",
        "",
        "| dataset | " + " | ".join(names) + " | splits |",
        "|---|" + "---:|" * len(names) + "---:|",
    ]
    ranks = sig.block_ranks(a.means, spec.lower_is_better) if len(a.rows) else None
    for n, r in enumerate(a.rows):
        cells = [
            f"{_fmt(a.means[n, k], digits)} ± {_fmt(a.stds[n, k], digits)} ({ranks[n, k]:g})"
            for k in range(len(names))
        ]
        lines.append(f"| {d.rows[r].label} | " + " | ".join(cells) + f" | {a.n_splits[n]} |")
    if a.friedman is not None:
        f = a.friedman
        lines.append(
            "| **average rank** (blocks: datasets) | "
            + " | ".join(f"**{x:.2f}**" for x in f.ranks)
            + " | |"
        )
    if a.ranks_pairs is not None:
        lines.append(
            "| average rank over datasets × splits (descriptive) | "
            + " | ".join(f"{x:.2f}" for x in a.ranks_pairs)
            + " | |"
        )
    lines.append("")
    if a.not_run:
        lines += [f"Not run (no tracked result): {', '.join(a.not_run)}.", ""]
    if a.incomplete:
        lines += [f"Datasets without a complete split: {', '.join(a.incomplete)}.", ""]
    if a.friedman is None:
        lines += ["Too few complete datasets for the Friedman test.", ""]
        return "\n".join(lines) + "\n"
    f = a.friedman
    lines += [
        "## Friedman test (blocks: the datasets, their mean over the splits)",
        "",
        f"N = {f.n_blocks} datasets, k = {f.k} compositions: chi2_F = {f.chi2:.2f} "
        f"(p = {_p(f.p_chi2)}), Iman-Davenport F_F = {f.iman_davenport:.2f} with "
        f"({f.k - 1}, {(f.k - 1) * (f.n_blocks - 1)}) degrees of freedom, **p = {_p(f.p_value)}**"
        f" ({'the compositions differ' if f.p_value < sig.ALPHA else 'no difference detected'}"
        f" at {sig.ALPHA:g}); scipy.stats.friedmanchisquare (tie-corrected): "
        f"{f.chi2_scipy:.2f}, p = {_p(f.p_scipy)}.",
        "",
        f"## Nemenyi post-hoc test: critical difference CD = {a.cd:.2f} (alpha {sig.ALPHA:g})",
        "",
    ]
    pairs = [
        (names[i], names[j], a.p_nemenyi[i, j])
        for i in range(len(names))
        for j in range(i + 1, len(names))
        if a.p_nemenyi[i, j] < sig.ALPHA
    ]
    if pairs:
        better = {True: "<", False: ">"}
        lines.append("Pairs that differ (average ranks; p of Nemenyi):")
        lines.append("")
        for x, y, p in pairs:
            rx, ry = f.ranks[names.index(x)], f.ranks[names.index(y)]
            lines.append(f"- {x} ({rx:.2f}) {better[rx < ry]} {y} ({ry:.2f}): p = {_p(p)}")
    else:
        lines.append("No pair of compositions differs significantly.")
    lines.append("")
    if png:
        lines += [f"![critical-difference diagram]({png})", ""]
    if a.control is not None:
        lines += [
            f"## {names[a.control]} (the paper's proposal) against each other composition",
            "",
            "Wilcoxon signed-rank, two-sided, Holm-corrected over the comparisons; "
            "difference = control − other (mean); wins/losses: blocks where the control is "
            "better/worse.",
            "",
            "| other | blocks: datasets — diff | wins/losses | p | p Holm "
            "| blocks: (dataset, split) — diff | wins/losses | p | p Holm |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        by_d = {c.other: c for c in a.vs_control_datasets}
        for c in a.vs_control_pairs:
            cd_ = by_d.get(c.other)
            left = (
                f"{cd_.mean_difference:+.3g} | {cd_.wins}/{cd_.losses} | {_p(cd_.p_value)} | "
                f"{_p(cd_.p_holm)}"
                if cd_
                else "— | — | — | —"
            )
            lines.append(
                f"| {names[c.other]} | {left} | {c.mean_difference:+.3g} | {c.wins}/{c.losses} "
                f"| {_p(c.p_value)} | {_p(c.p_holm)} |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def _splits_text(splits: Sequence[int]) -> str:
    s = list(splits)
    if s and s == list(range(s[0], s[-1] + 1)):
        return f"{s[0]}..{s[-1]}"
    return ", ".join(map(str, s))


def table_csv(a: Analysis) -> str:
    """One line per dataset and composition: mean, std, splits, rank."""
    ranks = sig.block_ranks(a.means, a.data.spec.lower_is_better) if len(a.rows) else None
    lines = ["dataset,composition,mean,std,n_splits,rank"]
    for n, r in enumerate(a.rows):
        for k, name in enumerate(a.names):
            lines.append(
                f"{a.data.rows[r].label},{name},{a.means[n, k]!r},{a.stds[n, k]!r},"
                f"{a.n_splits[n]},{ranks[n, k]!r}"
            )
    return "\n".join(lines) + "\n"


def readme(
    analyses: Mapping[str, Analysis], found: Sequence[Finding], repeats: int, pngs: Mapping
) -> str:
    on = {True: "yes", False: "**no**", None: "—"}
    lines = [
        "# Are the paper's findings significant? (repeated splits)",
        "",
        "Generated by `python -m pipeline.report.repeated report` (`make repro-repeated`) from "
        "the tracked runs of `conf/experiments/paper-repeated.yaml`: Tables 1-3 and 6-7 on "
        f"the split seeds 0..{repeats - 1} (seed 0 is the paper's split), Table 4 on its "
        "thirty orreview splits. The multilabel datasets keep their own test part (the "
        "paper's protocol): their seed redraws the train/validation split only, and since "
        "the refit set (train + validation) is then the same for every seed, their spread "
        "is that of the choice of lambda, not of the test sample. "
        "Statistics: scipy.stats (Friedman, Wilcoxon), "
        "scikit-posthocs (Nemenyi, the diagrams), statsmodels (Holm); see "
        "`src/pipeline/report/significance.py`.",
        "",
        "A finding holds with significance when its direction holds on the mean over the "
        "splits and a two-sided Wilcoxon signed-rank test over the (dataset, split) pairs "
        "(Holm-corrected when the claim compares one composition with several) rejects at "
        "p < 0.05: the finding is real on the paper's datasets, beyond the noise of one "
        "split. Across datasets (Demšar: one block per dataset, the splits averaged) the "
        "evidence column gives the same test; with six datasets no Holm-corrected comparison "
        "can reach 0.05 (the smallest two-sided p with six blocks is 0.031).",
        "",
        "| finding | holds on the paper's split | holds with significance (p < 0.05) | evidence |",
        "|---|---|---|---|",
    ]
    for f in found:
        lines.append(f"| {f.claim} | {on[f.on_paper_split]} | {f.verdict} | {f.evidence} |")
    lines += ["", "## Tables", ""]
    for key, a in analyses.items():
        f = a.friedman
        test = (
            f"Friedman p = {_p(f.p_value)}, Nemenyi CD = {a.cd:.2f}, best average rank: "
            f"{a.names[int(np.argmin(f.ranks))]} ({float(np.min(f.ranks)):.2f})"
            if f
            else "too few datasets"
        )
        lines.append(
            f"- [{a.data.spec.title.replace(', split 0', '')}]({key}.md) ({len(a.rows)} datasets, "
            f"{len(a.data.splits)} splits): {test}"
            + (f"; [diagram]({pngs[key]})" if key in pngs else "")
        )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the report
@dataclass
class Report:
    analyses: dict[str, Analysis]
    findings: list[Finding]
    files: list[Path]
    summary: dict[str, Any]


def build(
    root: Path,
    out: Path,
    repeats: int,
    experiments: Mapping[str, Any] | None = None,
    figures: bool = True,
) -> Report:
    """Collect, analyze and write ``out`` (``reports/repeated``); return the report."""
    from ..fileio import write_text
    from .paper import tables
    from .seeds import repeated_experiments, seed_keys

    experiments = repeated_experiments() if experiments is None else experiments
    seeds = seed_keys(experiments, repeats)
    specs = tables()
    analyses: dict[str, Analysis] = {}
    for key in (*TABLES, *DIAGNOSTICS):
        if key not in specs:
            continue
        data = collect(specs[key], experiments, seeds, root)
        if not np.isfinite(data.values).any():
            continue
        analyses[key] = analyze(data, TABLES.get(key))
    if not analyses:
        raise FileNotFoundError(
            f"no tracked result of the repeated-split experiments under {root}/data/eval; "
            "run `make repro-repeated` first"
        )
    found = findings(analyses)
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    pngs: dict[str, str] = {}
    for key, a in analyses.items():
        if key in DIAGNOSTICS:
            continue
        if figures and a.friedman is not None:
            png = sig.cd_diagram(
                a.friedman.ranks, a.names, a.p_nemenyi, a.cd, out / f"{key}_cd.png",
                f"{a.data.spec.title} ({len(a.rows)} datasets, {len(a.data.splits)} splits)",
            )  # fmt: skip
            pngs[key] = png.name
            files.append(png)
        for suffix, text in (("md", table_markdown(a, pngs.get(key))), ("csv", table_csv(a))):
            path = out / f"{key}.{suffix}"
            write_text(path, text)
            files.append(path)
    tables_only = {k: a for k, a in analyses.items() if k not in DIAGNOSTICS}
    path = out / "README.md"
    write_text(path, readme(tables_only, found, repeats, pngs))
    files.append(path)
    return Report(analyses, found, files, summary(analyses, found, repeats))


def summary(analyses: Mapping[str, Analysis], found: Sequence[Finding], repeats: int) -> dict:
    """The small DVC metrics summary: per table the Friedman p-value and the best
    composition's average rank; per finding 1/0 (significant or not)."""
    out: dict[str, Any] = {"repeats": repeats, "tables": {}, "findings": {}}
    for key, a in analyses.items():
        if key in DIAGNOSTICS or a.friedman is None:
            continue
        f = a.friedman
        best = int(np.argmin(f.ranks))
        out["tables"][key] = {
            "n_datasets": f.n_blocks,
            "n_splits": len(a.data.splits),
            "friedman_p": round(f.p_value, 6),
            "nemenyi_cd": round(a.cd, 4),
            "best": a.names[best],
            "best_rank": round(float(f.ranks[best]), 4),
        }
    for i, f in enumerate(found):
        if f.significant is not None:
            out["findings"][f"finding{i}"] = int(f.significant)
    return out


def cli_report(repeats: int, tracking: bool = True) -> None:
    """``python -m pipeline.report.repeated report``: build, write the metrics, log."""
    import logging
    import sys

    from .._hydra import expected_errors
    from ..fileio import write_json
    from ..paths import project_root

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    log = logging.getLogger("pipeline.report.repeated")
    root = project_root()
    try:
        report = build(root, root / OUT_DIR, repeats)
        write_json(root / METRICS_FILE, report.summary)
        for f in report.findings:
            log.info("%s: paper's split %s; significant: %s", f.claim, f.on_paper_split, f.verdict)
        log.info("wrote %d files to %s", len(report.files), root / OUT_DIR)
        if tracking:
            log_report(report, root / METRICS_FILE)
    except (*expected_errors(), FileNotFoundError, ValueError) as exc:
        log.error("error: %s", exc)
        sys.exit(1)


def log_report(report: Report, metrics_path: Path) -> None:
    """One MLflow run (experiment ``<prefix>/report``, run name ``repeated splits``) with
    the tables, diagrams and README as artifacts and the summary as metrics."""
    from ..config.experiments import load_params
    from ..runs.tracking import make_tracker

    tracker = make_tracker(load_params().get("tracking"))
    if not tracker.enabled:
        return
    metrics = {f"{k}.friedman_p": v["friedman_p"] for k, v in report.summary["tables"].items()}
    metrics.update({f"{k}.best_rank": v["best_rank"] for k, v in report.summary["tables"].items()})
    metrics.update({f"finding.{k}": float(v) for k, v in report.summary["findings"].items()})
    repeats = str(report.summary["repeats"])
    tags = {"entry_point": "report", "report": "repeated", "repeats": repeats}
    with tracker.parent_run(task="report", name="repeated splits", tags=tags):
        tracker.log_metrics(metrics)
        for path in [*report.files, metrics_path]:
            tracker.log_artifact(path, "repeated")
