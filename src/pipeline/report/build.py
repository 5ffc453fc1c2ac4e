"""Build ``reports/`` from the tracked results: the paper's tables, figures and README.

:func:`build_report` reads ``data/eval/<experiment>/<run>/results.json`` (the evaluate
stage's outputs; see :mod:`pipeline.report.results`), fills every table of
``paper.yaml`` (:mod:`pipeline.report.tables`), and writes, in ``out_dir``:

- ``<table>.md`` and ``<table>.csv`` for the paper's Tables 1, 2, 3, 4, 6, 7, Table 4 over
  the thirty ordinal splits (``table4_splits``) and the diagnostic tables;
- ``figure3_soft_permutation.png`` (paper Figure 3) and one comparison plot per task;
- the DVC views (:mod:`pipeline.report.views`): ``summary/<table>.json`` (``dvc metrics``),
  ``plots/tables/<table>.csv`` and ``plots/validation/<experiment>.csv`` (``dvc plots``);
- ``runs.csv`` (:mod:`pipeline.report.runs`): one row per MLflow run the tables cite (run
  id and name, status, composition, chosen lambdas, test metrics), the map from a table
  cell (its experiment and run) to its MLflow run; not committed, not a DVC output (the
  run ids differ on every run; the tables do not);
- ``README.md``: the paper's findings checked on our tables, the protocol choices, the
  F1 averages and the birds comparison, every cell that differs by more than its noise
  with its explanation, and an index of the files.

Nothing here fits a model: the report is a pure function of the tracked results (and of
one saved model, for Figure 3).
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..paths import EVAL_DIR
from . import paper as paper_mod
from .results import Results
from .tables import DIFFERS, MATCH, NOISE, Table, build, to_csv, to_markdown
from .tables import fmt as _fmt

NOTES = Path(__file__).with_name("notes.yaml")
F1_AVERAGES = ("f1_micro", "f1_macro", "f1_samples")


@dataclass
class Report:
    tables: dict[str, Table]
    files: list[Path]
    findings: list[dict[str, Any]]


def build_report(
    root: Path,
    out_dir: Path,
    *,
    layout: Path | None = None,
    figures: bool = True,
    experiments: list[str] | None = None,
    tracking_uri: str | bool | None = False,
) -> Report:
    """Write the report of the results under ``root`` into ``out_dir`` (validation curves
    of ``experiments``: default every ``data/tuning/*.json``; ``runs.csv`` with the run
    names and statuses of the tracking store ``tracking_uri``: None the default store,
    False none)."""
    import yaml

    from ..fileio import make_dir

    out_dir = make_dir(Path(out_dir))
    specs = paper_mod.tables(layout)
    results = Results(root)
    built: dict[str, Table] = {}
    for key, spec in specs.items():
        splits = None
        if spec.splits_experiment:
            split_spec = dataclasses.replace(
                spec,
                key=f"{key}_splits",
                title=spec.title.replace("split 0", "mean ± std over the thirty splits")
                + " (the paper's values: one split)",
                experiment=spec.splits_experiment,
                splits_experiment=None,
                # a mean over thirty splits against the paper's one split
                explain={c.id: "one-split" for c in spec.columns},
                row_explain={},
            )
            splits = built[split_spec.key] = build(split_spec, results)
        built[key] = build(spec, results, splits)
    order = [k for k in specs if not specs[k].diagnostic]
    order += [f"{k}_splits" for k in specs if specs[k].splits_experiment]
    order += [k for k in specs if specs[k].diagnostic]
    built = {k: built[k] for k in order}

    notes = yaml.safe_load(NOTES.read_text(encoding="utf-8"))
    markers = _markers(built, notes["explanations"])
    files: list[Path] = []
    for key, table in built.items():
        files.append(_write(out_dir / f"{key}.md", to_markdown(table, markers) + _legend(table)))
        files.append(_write(out_dir / f"{key}.csv", to_csv(table)))
    from .views import write_views

    files += write_views(built, out_dir, root, experiments)
    from .runs import write_runs

    files.append(write_runs(built, out_dir, root, tracking_uri))
    figure_files: list[Path] = []
    if figures:
        from . import figures as fig_mod

        figure_files = fig_mod.write_all(root, out_dir, built, paper_mod.layout(layout))
        files += figure_files
    findings = check_findings(built)
    readme = render_readme(
        built, notes, markers, findings, results, figure_files, files, experiments
    )
    files.append(_write(out_dir / "README.md", readme))
    return Report(built, files, findings)


def _write(path: Path, text: str) -> Path:
    from ..fileio import write_text

    write_text(path, text)
    return path


def _markers(tables: Mapping[str, Table], explanations: Mapping[str, Any]) -> dict[str, str]:
    """A letter per explanation id, in the order of ``notes.yaml``."""
    return {eid: string.ascii_lowercase[i] for i, eid in enumerate(explanations)}


def _legend(table: Table) -> str:
    spec = table.spec
    digits = "3" if spec.metric == "mae" else "2"
    lines = [
        "",
        f"Cells: ours / the paper's (difference), {spec.metric}, {digits} decimals"
        + (
            ", ± std over the splits"
            if any(c.std is not None for c in table.cells.values())
            else ""
        )
        + ". Bold: the best of the row (ours among the paper's columns; the paper's own).",
        "`=`: matches the paper to its two decimals; `[x]`: differs by more than the noise "
        "of the cell, explanation x in README.md (`?`: none). Source of every number: "
        f"`{spec.key}.csv` (experiment, run, MLflow run id).",
    ]
    if any(c.converged is False for c in table.cells.values()):
        lines.append(
            "`†`: the fit of the cell (tuning at the chosen lambda, or the refit) stopped "
            "before the solver's tolerance (`converged` = false in the CSV)."
        )
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the paper's findings
def _averages(table: Table) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for col in table.spec.paper_cols:
        values = [table.cell(r, col).ours for r in table.spec.rows if r.dataset is not None]
        out[col.id] = None if not values or None in values else float(np.mean(values))
    return out


def check_findings(tables: Mapping[str, Table]) -> list[dict[str, Any]]:
    """The paper's findings (issue 6), checked on our tables: each a dict with
    ``claim``, ``holds`` (True/False/None when not run) and ``evidence``."""
    out: list[dict[str, Any]] = []
    t1, t2, t3, t4 = (tables.get(k) for k in ("table1", "table2", "table3", "table4"))
    t7 = tables.get("table7")
    if t1 is not None:
        col = next(c for c in t1.spec.columns if c.id == "B/B")
        cells = [t1.cell(r, col) for r in t1.spec.rows]
        diffs = [c.diff for c in cells]
        ok = None if any(d is None for d in diffs) else all(abs(d) <= 0.5 for d in diffs)
        out.append(
            {
                "claim": "Table 1: Birkhoff/Birkhoff within 0.5 of the paper on all six datasets",
                "holds": ok,
                "evidence": ", ".join(
                    f"{c.row.label} {_signed(c.diff)}" + _in_samples(c) for c in cells
                ),
            }
        )
    for name, table in (("Table 1", t1), ("Table 2", t2)):
        if table is None:
            continue
        avg = _averages(table)
        ok = None if None in avg.values() else min(avg, key=lambda k: avg[k]) == "B/B"
        out.append(
            {
                "claim": f"{name}: Birkhoff/Birkhoff best on average",
                "holds": ok,
                "evidence": "average over the datasets: "
                + ", ".join(f"{k} {_fmt(v)}" for k, v in avg.items()),
            }
        )
    if t3 is not None:
        avg = _averages(t3)
        ok = None if None in avg.values() else avg["B/B linear"] < avg["P/P linear"]
        out.append(
            {
                "claim": "Table 3: with a linear model the Birkhoff polytope beats the "
                "permutahedron (the paper: 'by a large margin')",
                "holds": ok,
                "evidence": "average over the datasets: "
                + ", ".join(f"{k} {_fmt(v)}" for k, v in avg.items()),
            }
        )
    if t4 is not None:
        avg = t4.summary.get("average") or [None] * 5
        ids = [c.id for c in t4.spec.paper_cols]
        a = dict(zip(ids, avg, strict=True))
        rank = dict(zip(ids, t4.summary.get("rank") or [None] * 5, strict=True))
        known = None not in a.values()
        out.append(
            {
                "claim": "Table 4: the order simplex (M/M) best on average MAE",
                "holds": None if not known else min(a, key=lambda k: a[k]) == "M/M",
                "evidence": "average MAE: "
                + ", ".join(f"{k} {_fmt(v, 3)}" for k, v in a.items())
                + "; average rank: "
                + ", ".join(f"{k} {_fmt(v)}" for k, v in rank.items()),
            }
        )
        order = None
        if known:
            order = a["ridge"] > a["R/M"] > a["cube/M"] >= a["M/M"]
        out.append(
            {
                "claim": "Table 4: average MAE ridge > (R, M) > (cube, M) >= (M, M)",
                "holds": order,
                "evidence": " > ".join(
                    f"{k} {_fmt(a.get(k), 3)}" for k in ("ridge", "R/M", "cube/M", "M/M")
                ),
            }
        )
    for key, label in (("table7", "headline"), ("table7_round", "rounded knapsack bound")):
        table = tables.get(key)
        if table is None or t7 is None:
            continue
        for ds in ("Emotions", "Scene"):
            row = next(r for r in table.spec.rows if r.label == ds)
            base = t7.cell(row, next(c for c in t7.spec.columns if c.id == "cube/cube")).ours
            kk = table.cell(row, next(c for c in table.spec.columns if c.id == "K/K")).ours
            out.append(
                {
                    "claim": f"Table 7 ({label}): knapsack/knapsack beats cube/cube in F1 on {ds}",
                    "holds": None if base is None or kk is None else kk > base,
                    "evidence": f"K/K {_fmt(kk)} vs cube/cube {_fmt(base)}",
                }
            )
    return out


def _in_samples(cell: Any) -> str:
    """`` (n test samples)`` after a difference above 0.5: the difference in units of the
    cell's noise (one test sample with two labels swapped)."""
    if cell.diff is None or abs(cell.diff) <= 0.5 or not cell.noise:
        return ""
    return f" ({abs(cell.diff) / cell.noise:.1f} test sample)"


def _signed(v: float | None) -> str:
    return "—" if v is None else f"{v:+.2f}"


# ------------------------------------------------------------------ README
def f1_comparison(table7: Table, results: Results) -> tuple[str, dict[str, float]]:
    """Markdown comparing the F1 averages with the paper's Table 7, and the mean absolute
    difference of each average over the cells the paper has."""
    spec = table7.spec
    lines = [
        "| dataset | column | paper | " + " | ".join(F1_AVERAGES) + " | closest |",
        "|---|---|---|" + "---|" * (len(F1_AVERAGES) + 1),
    ]
    errors: dict[str, list[float]] = {a: [] for a in F1_AVERAGES}
    for row in spec.rows:
        if row.dataset is None:
            continue
        for col in spec.paper_cols:
            paper = spec.paper_value(row, col)
            res = results.get(spec.experiment_of(row), spec.run_of(row, col))
            if res is None or paper is None:
                continue
            values = {a: res.value(a) for a in F1_AVERAGES}
            if None in values.values():
                continue
            for a, v in values.items():
                errors[a].append(abs(v - paper))
            closest = min(values, key=lambda a: abs(values[a] - paper))
            lines.append(
                f"| {row.label} | {col.id} | {paper:.2f} | "
                + " | ".join(f"{values[a]:.2f}" for a in F1_AVERAGES)
                + f" | {closest} |"
            )
    mean = {a: float(np.mean(v)) for a, v in errors.items() if v}
    lines.append(
        "| *mean abs. difference* | | | "
        + " | ".join(_fmt(mean.get(a)) for a in F1_AVERAGES)
        + " | "
        + (min(mean, key=lambda a: mean[a]) if mean else "—")
        + " |"
    )
    return "\n".join(lines) + "\n", mean


def render_readme(
    tables: Mapping[str, Table],
    notes: Mapping[str, Any],
    markers: Mapping[str, str],
    findings: list[dict[str, Any]],
    results: Results,
    figure_files: list[Path],
    files: list[Path],
    experiments: Sequence[str] | None = None,
) -> str:
    lines = [
        "# Reproducing the paper's tables",
        "",
        "Generated by `python -m pipeline.report` (the `report` stage of `dvc repro`) from "
        "the tracked results of the experiments in `conf/experiments/paper.yaml`; the "
        "paper's values and the table layouts are in `src/pipeline/report/paper.yaml`. "
        "Every cell of every table is in the table's CSV file with its experiment, run and "
        "MLflow run id (`mlflow ui --backend-store-uri sqlite:///mlflow.db`).",
        "",
        "## The paper's findings, on our tables",
        "",
        "| finding | holds | evidence |",
        "|---|---|---|",
    ]
    for f in findings:
        holds = {True: "yes", False: "**no**", None: "not run"}[f["holds"]]
        lines.append(f"| {f['claim']} | {holds} | {f['evidence']} |")
    lines.append("")
    for f in findings:  # why a finding does not hold (notes.yaml `findings`)
        why = next((w["text"] for w in notes.get("findings", []) if w["claim"] == f["claim"]), None)
        if f["holds"] is False and why:
            lines += [f"**{f['claim']}: why not.** {why}", ""]
    n_fits = n_bad = 0
    for path in results.files(experiments):  # not another list's leftovers
        parts = path.relative_to(results.root / EVAL_DIR).parts  # experiment, run..., file
        res = results.get(parts[0], "/".join(parts[1:-1]))
        if res is not None:
            fits, bad = res.fit_counts()
            n_fits, n_bad = n_fits + fits, n_bad + bad
    lines += [
        f"Non-converged fits: {n_bad} (of the {n_fits} tuning and refit fits recorded in "
        "`data/eval`; a cell whose fit did not converge is marked `†`).",
        "",
    ]
    lines += ["## Tables", ""]
    for key, table in tables.items():
        counts = _status_counts(table)
        lines.append(
            f"- [{table.title}]({key}.md) ([csv]({key}.csv)): "
            + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        )
    lines += [
        "- [Dataset statistics, the paper's Table 5](dataset_stats.md) (written by the "
        "preprocess stage)",
        "- `runs.csv` (beside the tables, not committed: run ids differ on every run): the "
        "MLflow runs the tables cite, one row each (run id and name, MLflow experiment, "
        "status, composition, target loss, chosen lambdas, test metrics): join a table's "
        "`experiment` and `run` to it",
    ]
    if figure_files:
        lines += ["", "## Figures", ""]
        lines += [f"- [{p.name}]({p.name})" for p in figure_files]
    lines += ["", "## Protocol choices needed to match the paper", ""]
    for i, item in enumerate(notes["protocol"], 1):
        lines += [f"{i}. **{item['title']}.** {item['text']}", ""]
    t7 = tables.get("table7")
    if t7 is not None:
        text, mean = f1_comparison(t7, results)
        lines += [
            "## F1 averages",
            "",
            "Our F1 under each average (lambda chosen by that average) against the paper's "
            "Table 7. Closest overall: "
            + (min(mean, key=lambda a: mean[a]) if mean else "not run")
            + f"; Table 7 uses `{t7.spec.metric}`.",
            "",
            text,
        ]
    birds = tables.get("birds_keep_empty")
    if birds is not None and t7 is not None:
        lines += _birds_section(birds, tables, results)
    lines += ["## Cells that differ from the paper by more than their noise", ""]
    lines += [
        "The noise of a cell is the change one test sample can make: label ranking, one "
        "test sample with two labels swapped (400 / (k² n_test) points); ordinal, the "
        "standard deviation over the thirty splits; multilabel accuracy, one label of one "
        "sample (100 / (k n_test)); F1, one sample (100 / n_test). A cell matches when "
        "our value rounded or truncated to two decimals is the paper's.",
        "",
    ]
    groups: dict[str, list[str]] = {}
    for key, table in tables.items():
        for cell in table.cells.values():
            if cell.status == DIFFERS:
                where = (
                    f"{key} {cell.row.label} {cell.column.id}: {cell.ours:.3f} vs {cell.paper:.2f}"
                )
                groups.setdefault(cell.explanation or "?", []).append(where)
    for eid, expl in notes["explanations"].items():
        cells = groups.pop(eid, [])
        lines += [f"### [{markers[eid]}] {expl['title']}", "", expl["text"], ""]
        if cells:
            lines += [f"{len(cells)} cell(s): " + "; ".join(cells), ""]
    for eid, cells in groups.items():
        lines += [f"### [?] Not explained ({eid})", ""]
        if eid == "?" and notes.get("unexplained"):
            lines += [notes["unexplained"], ""]
        lines += [f"{len(cells)} cell(s): " + "; ".join(cells), ""]
    return "\n".join(lines).rstrip() + "\n"


def _status_counts(table: Table) -> dict[str, int]:
    counts = {MATCH: 0, NOISE: 0, DIFFERS: 0}
    for cell in table.cells.values():
        if cell.status in counts:
            counts[cell.status] += 1
    return counts


def _birds_section(birds: Table, tables: Mapping[str, Table], results: Results) -> list[str]:
    """Birds with and without its label-less samples, accuracy and F1, and the paper."""
    cols = birds.spec.paper_cols
    lines = [
        "## Birds: with or without its label-less samples",
        "",
        "| setting | metric | " + " | ".join(c.id for c in cols) + " |",
        "|---|---|" + "---|" * len(cols),
    ]
    row = birds.spec.rows[0]
    for key in ("table6", "table7"):
        t = tables.get(key)
        if t is None:
            continue
        r = next(x for x in t.spec.rows if x.label == row.label)
        keep = build(dataclasses.replace(birds.spec, metric=t.spec.metric), results)
        for setting, values in (
            ("without label-less samples (headline)", [t.cell(r, c).ours for c in cols]),
            ("with them (`ml-birds-keep-empty`)", [keep.cell(row, c).ours for c in cols]),
            ("paper", [t.cell(r, c).paper for c in cols]),
        ):
            lines.append(
                f"| {setting} | {t.spec.metric} | " + " | ".join(_fmt(v) for v in values) + " |"
            )
    return [*lines, ""]
