"""``reports/repeated/``: the paper's tables over repeated splits, with sound tests.

For each table of the paper that compares compositions (Tables 1, 2, 3, 4, 6, 7) this
reads the tracked results of every split (:func:`pipeline.report.repeated_data.collect`),
writes them in long form to ``splits.csv``, reads that file back and computes everything
else from it (:mod:`.repeated_analysis`, :mod:`.repeated_findings`):

- ``splits.csv``: ``table, dataset, composition, seed, metric, value, n_test, n_train,
  lambda`` -- every per-split value (:mod:`.repeated_data`);
- ``<table>.md`` / ``<table>.csv``: mean ± std over the splits of each cell, the rank of
  each composition per dataset (ties as ties) and their average, the Friedman test, the
  Nemenyi critical difference; the paper's proposed composition against each other one:
  the hierarchical Bayesian test and the Wilcoxon test across datasets, the corrected
  resampled t-tests per dataset;
- ``<table>_tests.csv``: every test of the control, one line each;
- ``<table>_cd.png``: the critical-difference diagram;
- ``README.md``: each finding of the paper (reports/README.md), on the paper's split and
  over the repeated splits, with its verdict and evidence;
- ``metrics/repeated.json``: a small summary for ``dvc metrics show``.

Every dataset of the experiments (a user's too, conf/dataset/ + the experiment's
``datasets``) is a row. ``python -m pipeline.report.repeated report --from-splits FILE``
rebuilds the report from a splits.csv alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import significance as sig
from .repeated_analysis import Analysis, analyze, rope_of
from .repeated_data import SPLITS_FILE, TableData, collect, from_rows, read_splits, write_splits
from .repeated_findings import Finding, findings, p_text, posterior_text
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

__all__ = ["DIAGNOSTICS", "OUT_DIR", "TABLES", "Analysis", "Finding", "Report", "build",
           "build_from_splits", "cli_report"]  # fmt: skip


def _num(x: float) -> str:
    """A number for a CSV: the shortest decimal that reads back to the same float64
    (``repr`` of a Python float, never ``np.float64(...)``); empty for NaN."""
    return "" if x is None or not np.isfinite(x) else repr(float(x))


# --------------------------------------------------------------------------- rendering
def table_markdown(a: Analysis, png: str | None) -> str:
    """The table's Markdown: mean ± std, ranks, Friedman, Nemenyi, the control's tests."""
    spec, d = a.data.spec, a.data
    digits = 3 if spec.metric == "mae" else 2
    names = a.names
    title = spec.title.replace(", split 0", "")  # Table 4: its thirty splits here
    lines = [f"# {title}: {len(d.splits)} splits", ""]
    best = "lower" if spec.lower_is_better else "higher"
    lines += [
        f"Test {spec.metric} ({best} is better), mean ± std (ddof 1) over the splits "
        f"{_splits_text(d.splits)} of each dataset; the rank of each composition on the "
        "dataset's mean in brackets (1 = best; means equal within 1e-12 relative are ties).",
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
        flag = " (no spread: one outcome)" if d.rows[r].label in a.flagged else ""
        lines.append(f"| {d.rows[r].label}{flag} | " + " | ".join(cells) + f" | {a.n_splits[n]} |")
    if a.friedman is not None:
        lines.append(
            "| **average rank** (blocks: datasets) | "
            + " | ".join(f"**{x:.2f}**" for x in a.friedman.ranks)
            + " | |"
        )
    lines.append("")
    if a.flagged:
        lines += [
            f"No spread over the splits (every composition the same on every split): "
            f"{', '.join(a.flagged)}: one outcome, not {max(a.n_splits)}; left out of the "
            "per-dataset and hierarchical tests.",
            "",
        ]
    if a.not_run:
        lines += [f"Not run (no tracked result): {', '.join(a.not_run)}.", ""]
    if a.incomplete:
        lines += [f"Datasets without a complete split: {', '.join(a.incomplete)}.", ""]
    if a.friedman is None:
        lines += ["Too few complete datasets for the Friedman test.", ""]
        return "\n".join(lines) + "\n"
    lines += _friedman_lines(a, png)
    if a.control is not None and a.pairs:
        lines += _control_lines(a)
    return "\n".join(lines) + "\n"


def _friedman_lines(a: Analysis, png: str | None) -> list[str]:
    f, names = a.friedman, a.names
    lines = [
        "## Friedman test (blocks: the datasets, their mean over the splits)",
        "",
        f"N = {f.n_blocks} datasets, k = {f.k} compositions: chi2_F = {f.chi2:.2f} "
        f"(p = {p_text(f.p_chi2)}), Iman-Davenport F_F = {f.iman_davenport:.2f} with "
        f"({f.k - 1}, {(f.k - 1) * (f.n_blocks - 1)}) degrees of freedom, "
        f"**p = {p_text(f.p_value)}**"
        f" ({'the compositions differ' if f.p_value < sig.ALPHA else 'no difference detected'}"
        f" at {sig.ALPHA:g}); scipy.stats.friedmanchisquare (tie-corrected): "
        f"{f.chi2_scipy:.2f}, p = {p_text(f.p_scipy)}.",
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
        lines += ["Pairs that differ (average ranks; p of Nemenyi):", ""]
        for x, y, p in pairs:
            rx, ry = f.ranks[names.index(x)], f.ranks[names.index(y)]
            rel = "<" if rx < ry else ">"
            lines.append(f"- {x} ({rx:.2f}) {rel} {y} ({ry:.2f}): p = {p_text(p)}")
    else:
        lines.append("No pair of compositions differs significantly.")
    lines.append("")
    if png:
        lines += [f"![critical-difference diagram]({png})", ""]
    return lines


def _control_lines(a: Analysis) -> list[str]:
    names, ctrl = a.names, a.names[a.control]
    lines = [
        f"## {ctrl} (the paper's proposal) against each other composition",
        "",
        f"Difference = {ctrl} − other. Across datasets: the Bayesian hierarchical correlated "
        f"t-test (Benavoli et al. 2017; ROPE ±{a.rope:g}): the posterior mean of the mean "
        "difference with its 95% credible interval, and the probabilities that a new "
        f"dataset's difference is better than the ROPE for {ctrl}, within it, or worse; the "
        "verdict needs 0.95. Beside it the Wilcoxon signed-rank test with the datasets as "
        "blocks (two-sided, Holm over the comparisons).",
        "",
        "| other | mean difference [95%] | P(better) | P(ROPE) | P(worse) | verdict "
        "| Wilcoxon wins/losses | p | p Holm |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for p in a.pairs:
        h = p.hierarchical
        hier = (
            f"{h.delta0_mean:+.3g} [{h.delta0_low:+.3g}, {h.delta0_high:+.3g}] | "
            f"{h.posterior.better:.3f} | {h.posterior.rope:.3f} | {h.posterior.worse:.3f}"
            if h is not None
            else f"— ({p.note}) | — | — | —"
        )
        w = p.wilcoxon
        wil = (
            f"{w.wins}/{w.losses} | {p_text(w.p_value)} | {p_text(w.p_holm)}" if w else "— | — | —"
        )
        lines.append(f"| {names[p.other]} | {hier} | {p.verdict()} | {wil} |")
    lines += [
        "",
        "### Per dataset: corrected resampled t-tests",
        "",
        "Nadeau & Bengio's corrected resampled t-test (variance of the mean difference "
        "inflated by 1/R + n_test/n_train; Holm over the comparisons on the dataset) and the "
        f"Bayesian correlated t-test (ROPE ±{a.rope:g}).",
        "",
        "| dataset | other | difference [95%] | t | p | p Holm | P(better/ROPE/worse) |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for p in a.pairs:
        for t in p.per_dataset:
            c = t.test
            lines.append(
                f"| {t.dataset} | {names[p.other]} | {c.mean:+.3g} [{c.ci_low:+.3g}, "
                f"{c.ci_high:+.3g}] | {c.t:.2f} | {p_text(c.p_value)} | {p_text(t.p_holm)} | "
                f"{posterior_text(t.posterior).removeprefix('P(better/ROPE/worse) = ')} |"
            )
    lines.append("")
    return lines


def _splits_text(splits: Sequence[int]) -> str:
    s = list(splits)
    if s and s == list(range(s[0], s[-1] + 1)):
        return f"{s[0]}..{s[-1]}"
    return ", ".join(map(str, s))


def table_csv(a: Analysis) -> str:
    """One line per dataset and composition: mean, std, splits, rank (plain numbers)."""
    ranks = sig.block_ranks(a.means, a.data.spec.lower_is_better) if len(a.rows) else None
    lines = ["dataset,composition,mean,std,n_splits,rank"]
    for n, r in enumerate(a.rows):
        for k, name in enumerate(a.names):
            lines.append(
                f"{a.data.rows[r].label},{name},{_num(a.means[n, k])},{_num(a.stds[n, k])},"
                f"{a.n_splits[n]},{_num(ranks[n, k])}"
            )
    return "\n".join(lines) + "\n"


TESTS_HEADER = ("control,other,dataset,test,estimate,ci_low,ci_high,statistic,p,p_holm,"
                "p_better,p_rope,p_worse,rope")  # fmt: skip


def tests_csv(a: Analysis) -> str:
    """Every test of the control, one line each (``dataset`` empty: across datasets)."""
    lines = [TESTS_HEADER]
    if a.control is None:
        return lines[0] + "\n"
    ctrl = a.names[a.control]
    for p in a.pairs:
        other = a.names[p.other]
        if p.wilcoxon is not None:
            w = p.wilcoxon
            lines.append(
                ",".join(
                    [
                        ctrl,
                        other,
                        "",
                        "wilcoxon_datasets",
                        _num(w.mean_difference),
                        "",
                        "",
                        "",
                        _num(w.p_value),
                        _num(w.p_holm),
                        "",
                        "",
                        "",
                        "",
                    ]
                )
            )
        if p.hierarchical is not None:
            h = p.hierarchical
            lines.append(
                ",".join(
                    [
                        ctrl,
                        other,
                        "",
                        "bayes_hierarchical",
                        _num(h.delta0_mean),
                        _num(h.delta0_low),
                        _num(h.delta0_high),
                        "",
                        "",
                        "",
                        _num(h.posterior.better),
                        _num(h.posterior.rope),
                        _num(h.posterior.worse),
                        _num(a.rope),
                    ]
                )
            )
        for t in p.per_dataset:
            c, q = t.test, t.posterior
            lines.append(
                ",".join(
                    [
                        ctrl,
                        other,
                        t.dataset,
                        "corrected_t",
                        _num(c.mean),
                        _num(c.ci_low),
                        _num(c.ci_high),
                        _num(c.t),
                        _num(c.p_value),
                        _num(t.p_holm),
                        _num(q.better) if q else "",
                        _num(q.rope) if q else "",
                        _num(q.worse) if q else "",
                        _num(a.rope),
                    ]
                )
            )
    return "\n".join(lines) + "\n"  # fmt: skip


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
        "thirty orreview splits. A label-ranking seed s >= 1 draws a new 80/20 split; a "
        "multilabel seed s >= 1 pools the dataset's shipped train and test parts and draws a "
        "new test part of the shipped size (beyond the paper's protocol), so that every seed "
        "resamples the test sample. Every number here is a function of "
        "[splits.csv](splits.csv) (one line per table, dataset, composition and seed).",
        "",
        "**Verdicts.** Random splits of one dataset overlap, so their results are not "
        "independent: no test here treats them as such. A verdict is the Bayesian posterior "
        "probability, 0.95 or more, that the paper's composition is better than the other by "
        "more than the region of practical equivalence (ROPE: ±0.5 points of a percentage, "
        "±0.01 of MAE) -- *holds* --, within it -- *equivalent within the ROPE* --, or worse "
        "by more than it -- *reversed*; otherwise *not shown*. Across datasets the "
        "probabilities are those of the Bayesian hierarchical correlated t-test (Corani et "
        "al. 2017; Benavoli, Corani, Demšar & Zaffalon, JMLR 2017) for a new dataset; on one "
        "dataset, of the Bayesian correlated t-test (Corani & Benavoli 2015). Beside them: "
        "the Wilcoxon signed-rank test with the datasets as blocks (Demšar 2006; with six "
        "datasets a two-sided p cannot go below 0.031) and the per-dataset corrected "
        "resampled t-tests (Nadeau & Bengio 2003). Statistics: scipy.stats, scikit-posthocs "
        "(Nemenyi, the diagrams), statsmodels (Holm); see `src/pipeline/report/`.",
        "",
        "| finding | holds on the paper's split | over the repeated splits | evidence |",
        "|---|---|---|---|",
    ]
    for f in found:
        lines.append(f"| {f.claim} | {on[f.on_paper_split]} | {f.verdict} | {f.evidence} |")
    lines += ["", "## Tables", ""]
    for key, a in analyses.items():
        f = a.friedman
        test = (
            f"Friedman p = {p_text(f.p_value)}, Nemenyi CD = {a.cd:.2f}, best average rank: "
            f"{a.names[int(np.argmin(f.ranks))]} ({float(np.min(f.ranks)):.2f})"
            if f
            else "too few datasets"
        )
        flag = f"; no spread: {', '.join(a.flagged)}" if a.flagged else ""
        lines.append(
            f"- [{a.data.spec.title.replace(', split 0', '')}]({key}.md) ({len(a.rows)} datasets, "
            f"{len(a.data.splits)} splits): {test}{flag}"
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
    """Collect the tracked results under ``root``, write ``out/splits.csv`` and build the
    report from it (:func:`build_from_splits`)."""
    from .paper import tables
    from .seeds import repeated_experiments, seed_keys

    experiments = repeated_experiments() if experiments is None else experiments
    seeds = seed_keys(experiments, repeats)
    specs = tables()
    collected: dict[str, TableData] = {}
    for key in (*TABLES, *DIAGNOSTICS):
        if key in specs:
            data = collect(specs[key], experiments, seeds, root)
            if np.isfinite(data.values).any():
                collected[key] = data
    if not collected:
        raise FileNotFoundError(
            f"no tracked result of the repeated-split experiments under {root}/data/eval; "
            "run `make repro-repeated` first"
        )
    from ..fileio import make_dir

    make_dir(out)
    splits = write_splits(out / SPLITS_FILE, collected)
    report = build_from_splits(splits, out, repeats, figures=figures)
    report.files.insert(0, splits)
    return report


def build_from_splits(
    splits: Path, out: Path, repeats: int | None = None, figures: bool = True
) -> Report:
    """Every table, test and finding of the report from ``splits`` (splits.csv) alone,
    written to ``out`` (``repeats``: the seeds named in the README, default: as many as
    the file has)."""
    from ..fileio import make_dir, write_text
    from .paper import tables

    specs = tables()
    rows = read_splits(splits)
    analyses: dict[str, Analysis] = {}
    for key in (*TABLES, *DIAGNOSTICS):
        if key in rows and key in specs:
            analyses[key] = analyze(from_rows(specs[key], rows[key]), TABLES.get(key))
    if repeats is None:
        repeats = max((len(a.data.splits) for k, a in analyses.items() if k != "table4"),
                      default=0)  # fmt: skip
    found = findings(analyses)
    make_dir(out)
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
        texts = (("md", table_markdown(a, pngs.get(key))), ("csv", table_csv(a)))
        for name, text in ((f"{key}.{s}", t) for s, t in texts):
            write_text(out / name, text)
            files.append(out / name)
        write_text(out / f"{key}_tests.csv", tests_csv(a))
        files.append(out / f"{key}_tests.csv")
    tables_only = {k: a for k, a in analyses.items() if k not in DIAGNOSTICS}
    path = out / "README.md"
    write_text(path, readme(tables_only, found, repeats, pngs))
    files.append(path)
    return Report(analyses, found, files, summary(analyses, found, repeats))


def summary(analyses: Mapping[str, Analysis], found: Sequence[Finding], repeats: int) -> dict:
    """The small DVC metrics summary: per table the Friedman p-value and the best
    composition's average rank; per finding 1 when it holds, 0 when not."""
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
            "rope": rope_of(a.data.spec.metric),
        }
    for i, f in enumerate(found):
        if f.holds is not None:
            out["findings"][f"finding{i}"] = int(f.holds)
    return out


def cli_report(repeats: int, tracking: bool = True, from_splits: Path | None = None) -> None:
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
        if from_splits is not None:
            report = build_from_splits(Path(from_splits), root / OUT_DIR, repeats)
        else:
            report = build(root, root / OUT_DIR, repeats)
        write_json(root / METRICS_FILE, report.summary)
        for f in report.findings:
            log.info("%s: paper's split %s; repeated splits: %s", f.claim, f.on_paper_split,
                     f.verdict)  # fmt: skip
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
    from ..runs.mlflow_tracker import make_tracker

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
