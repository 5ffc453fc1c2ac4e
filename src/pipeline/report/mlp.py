"""``python -m pipeline.report.mlp``: the paper's Tables 1, 2, 6 and 7 with the MLP beside
the linear model, and whether the paper's findings (which set is best) hold with it.

The MLP's cells are the evaluate stage's results of the experiment list
``conf/experiments/mlp.yaml`` (experiments ``<paper experiment>-mlp``: ``lr-mlp``,
``ml-mlp``, ``ml-tmc2007_500-mlp``, the same run ids as the paper's list, under
``data/eval/``); the linear cells are the committed paper report's (``reports/<table>.csv``,
column ``ours``: the results of ``make repro``), so this report needs no linear rerun.
Writes ``reports/mlp/`` (``--out``): ``<table>.csv`` and ``<table>.md`` (each cell
``linear / MLP``), ``findings.json``, ``run.json`` (the list's run time, machine and date,
``--run-time-s``) and ``README.md``. Run it after the list (``make repro-mlp`` does both
and measures the run time).

The findings, per table (``holds``: with the network; None where a cell has not run):

- Tables 1 and 2: the Birkhoff polytope (B/B) has the best average Hamming loss over the
  datasets (the paper's finding; the set that is best with the linear model is reported
  too);
- Table 6: the set with the best average accuracy with the linear model is the best with
  the network (the paper: "the unit cube is a strong baseline");
- Table 7: the knapsack polytope (K/K) improves F1 over the unit cube (cube/cube) on
  birds, emotions and scene (the paper: "especially with few labels per sample").
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import datetime
import json
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..fileio import make_dir, write_json, write_text
from .paper import Column, TableSpec
from .paper import tables as paper_tables
from .results import Results

log = logging.getLogger("pipeline.report.mlp")

#: the paper's tables this report compares
TABLES = ("table1", "table2", "table6", "table7")
#: the suffix of the MLP experiments (conf/experiments/mlp.yaml)
SUFFIX = "-mlp"
#: Table 7's datasets where the paper finds the knapsack polytope better in F1
FEW_LABELS = ("Birds", "Emotions", "Scene")


def mlp_spec(spec: TableSpec) -> TableSpec:
    """``spec`` with every experiment renamed ``<experiment>-mlp``."""
    rows = tuple(
        dataclasses.replace(r, experiment=r.experiment + SUFFIX if r.experiment else None)
        for r in spec.rows
    )
    return dataclasses.replace(spec, experiment=spec.experiment + SUFFIX, rows=rows)


def linear_values(reports: Path, key: str) -> dict[tuple[str, str], float]:
    """(row label, column id) -> the linear model's value, from ``reports/<key>.csv``."""
    path = reports / f"{key}.csv"
    if not path.is_file():
        return {}
    out = {}
    with open(path, encoding="utf-8", newline="") as f:
        for rec in csv.DictReader(f):
            if rec.get("ours"):
                out[(rec["row"], rec["column"])] = float(rec["ours"])
    return out


@dataclasses.dataclass
class Comparison:
    """One table: linear and MLP values per (row label, column id)."""

    spec: TableSpec
    linear: dict[tuple[str, str], float]
    mlp: dict[tuple[str, str], float | None]

    @property
    def rows(self) -> list[Any]:
        return [r for r in self.spec.rows if r.dataset is not None]

    def average(self, which: str, col: Column) -> float | None:
        values = getattr(self, which)
        vals = [values.get((r.label, col.id)) for r in self.rows]
        return None if not vals or None in vals else float(np.mean(vals))

    def best(self, which: str) -> str | None:
        """The paper column with the best average (None when a cell is missing)."""
        avg = {c.id: self.average(which, c) for c in self.spec.paper_cols}
        if None in avg.values():
            return None
        pick = min if self.spec.lower_is_better else max
        return pick(avg, key=lambda k: avg[k])

    def paper_best(self) -> str | None:
        cols = self.spec.paper_cols
        avg = {}
        for c in cols:
            vals = [self.spec.paper_value(r, c) for r in self.rows]
            if None in vals:
                return None
            avg[c.id] = float(np.mean(vals))
        pick = min if self.spec.lower_is_better else max
        return pick(avg, key=lambda k: avg[k])


def compare(root: Path, key: str, spec: TableSpec, results: Results) -> Comparison:
    linear = linear_values(root / "reports", key)
    ms = mlp_spec(spec)
    mlp: dict[tuple[str, str], float | None] = {}
    for row in ms.rows:
        for col in ms.columns:
            res = None
            if row.dataset is not None:
                res = results.get(ms.experiment_of(row), ms.run_of(row, col))
            mlp[(row.label, col.id)] = None if res is None else res.value(spec.metric)
    return Comparison(spec, linear, mlp)


def findings(comps: Mapping[str, Comparison]) -> list[dict[str, Any]]:
    """Per table: the claim, the best set with each model, and whether it holds with the
    network (``holds``: True / False / None when cells are missing)."""
    out = []
    for key, comp in comps.items():
        best_lin, best_mlp, best_paper = comp.best("linear"), comp.best("mlp"), comp.paper_best()
        evidence = "average over the datasets, linear / MLP: " + ", ".join(
            f"{c.id} {_fmt(comp.average('linear', c))} / {_fmt(comp.average('mlp', c))}"
            for c in comp.spec.paper_cols
        )
        name = comp.spec.title.split(":")[0]
        if key in ("table1", "table2"):
            claim = f"{name}: Birkhoff/Birkhoff (B/B) best on average"
            holds = None if best_mlp is None else best_mlp == "B/B"
        elif key == "table6":
            claim = f"{name}: the linear model's best set on average ({best_lin}) is the best"
            holds = None if best_mlp is None or best_lin is None else best_mlp == best_lin
        else:
            claim = f"{name}: knapsack/knapsack beats cube/cube in F1 on {', '.join(FEW_LABELS)}"
            pairs = [(comp.mlp.get((d, "K/K")), comp.mlp.get((d, "cube/cube"))) for d in FEW_LABELS]
            holds = None if any(None in p for p in pairs) else all(k > c for k, c in pairs)
            evidence += "; MLP K/K vs cube/cube: " + ", ".join(
                f"{d} {_fmt(k)} vs {_fmt(c)}" for d, (k, c) in zip(FEW_LABELS, pairs, strict=True)
            )
        out.append(
            {
                "table": key,
                "claim": claim,
                "holds": holds,
                "best_paper": best_paper,
                "best_linear": best_lin,
                "best_mlp": best_mlp,
                "evidence": evidence,
            }
        )
    return out


def _fmt(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def to_markdown(comp: Comparison) -> str:
    spec = comp.spec
    cols = list(spec.columns)
    head = [f"{c.projection} / {c.decoding}" for c in cols]
    lines = [
        f"### {spec.title}: linear / MLP",
        "",
        "|  | " + " | ".join(head) + " |",
        "|---|" + "---|" * len(cols),
    ]
    for row in spec.rows:
        cells = []
        for c in cols:
            lin, mlp = comp.linear.get((row.label, c.id)), comp.mlp.get((row.label, c.id))
            cells.append(f"{_fmt(lin)} / {_fmt(mlp)}")
        lines.append(f"| {row.label} | " + " | ".join(cells) + " |")
    avg = [f"{_fmt(comp.average('linear', c))} / {_fmt(comp.average('mlp', c))}" for c in cols]
    lines.append("| average | " + " | ".join(avg) + " |")
    lines += [
        "",
        f"Cells: {spec.metric} ({'lower' if spec.lower_is_better else 'higher'} is better), "
        "the linear model (the paper's report, `reports/`) / the MLP (`conf/model/mlp.yaml`); "
        "`-`: not run (or no offline data).",
        "",
    ]
    return "\n".join(lines)


def to_csv(comp: Comparison) -> str:
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["table", "row", "dataset", "column", "metric", "linear", "mlp", "diff",
                "experiment", "run"])  # fmt: skip
    ms = mlp_spec(comp.spec)
    for row in ms.rows:
        for col in ms.columns:
            lin, mlp = comp.linear.get((row.label, col.id)), comp.mlp.get((row.label, col.id))
            diff = None if lin is None or mlp is None else mlp - lin
            w.writerow([
                comp.spec.key, row.label, row.dataset or "", col.id, comp.spec.metric,
                "" if lin is None else repr(lin), "" if mlp is None else repr(mlp),
                "" if diff is None else repr(diff),
                ms.experiment_of(row) if row.dataset else "",
                ms.run_of(row, col) if row.dataset else "",  # a row with no offline data
            ])  # fmt: skip
    return buf.getvalue()


def render_run(run: Mapping[str, Any] | None) -> list[str]:
    """The README's "The run" section: how long ``make repro-mlp`` took, where, when."""
    if not run:
        return ["## The run", "", "Run time not recorded (`--run-time-s` not given).", ""]
    minutes = run["run_time_s"] / 60
    return [
        "## The run",
        "",
        f"`make repro-mlp` (tune, refit and evaluate of the three experiments) took "
        f"{minutes:.0f} min on {run['machine']}, on {run['date']}"
        + (f" ({run['note']})" if run.get("note") else "")
        + ".",
        "",
    ]


def machine() -> str:
    """``<n> CPU cores (<model>)`` of this machine."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cores} CPU cores" + (f" ({model})" if model else "")


def render_readme(
    found: list[dict[str, Any]],
    comps: Mapping[str, Comparison],
    run: Mapping[str, Any] | None = None,
) -> str:
    verdict = {True: "holds", False: "does NOT hold", None: "not run"}
    lines = [
        "# The paper's label-ranking and multilabel tables with a neural network",
        "",
        "Tables 1, 2, 6 and 7 of Blondel (NeurIPS 2019) with a multilayer perceptron",
        "(`model=mlp`, `conf/model/mlp.yaml`: one hidden layer of 100 ReLU units, Adam,",
        "early stopping on 10% of the training part, lambda = the L2 penalty of the weights,",
        "tuned on the validation split over the paper's grid) beside the linear model of the",
        "paper's report (`reports/`). Same splits, compositions, decoders and protocol; only",
        "theta differs. Built by `python -m pipeline.report.mlp` from the runs of",
        "`conf/experiments/mlp.yaml` (`make repro-mlp`).",
        "",
        "## Findings",
        "",
        "| table | claim | best set: paper / linear / MLP | with the MLP |",
        "|---|---|---|---|",
    ]
    for f in found:
        lines.append(
            f"| {f['table']} | {f['claim']} | {f['best_paper'] or '-'} / "
            f"{f['best_linear'] or '-'} / {f['best_mlp'] or '-'} | {verdict[f['holds']]} |"
        )
    lines += ["", "Evidence:", ""]
    lines += [f"- {f['table']}: {f['evidence']}" for f in found]
    lines += ["", *render_run(run)]
    lines += ["## Tables", ""]
    for comp in comps.values():
        lines.append(to_markdown(comp))
    return "\n".join(lines) + "\n"


def build(
    root: Path, out: Path, run: Mapping[str, Any] | None = None
) -> tuple[list[Path], list[dict[str, Any]]]:
    """Write the report into ``out``; return the files and the findings. ``run``: how the
    list was run (``run_time_s``, ``machine``, ``date``, ``note``); None keeps the record of
    the report already in ``out`` (``run.json``), if any."""
    specs = paper_tables()
    results = Results(root)
    comps = {key: compare(root, key, specs[key], results) for key in TABLES}
    found = findings(comps)
    make_dir(out)  # a full or read-only disk: one DiskError line
    run_file = out / "run.json"
    if run is None and run_file.is_file():
        run = json.loads(run_file.read_text(encoding="utf-8"))
    files = []
    for key, comp in comps.items():
        for suffix, text in ((".csv", to_csv(comp)), (".md", to_markdown(comp))):
            path = out / f"{key}{suffix}"
            write_text(path, text)
            files.append(path)
    path = out / "findings.json"
    write_json(path, found)
    files.append(path)
    if run is not None:
        write_json(run_file, dict(run))
        files.append(run_file)
    readme = out / "README.md"
    write_text(readme, render_readme(found, comps, run))
    files.append(readme)
    return files, found


def main(argv: Sequence[str] | None = None) -> None:
    from ..paths import project_root

    parser = argparse.ArgumentParser(prog="python -m pipeline.report.mlp", description=__doc__)
    parser.add_argument("--out", type=Path, default=None, help="default: reports/mlp")
    parser.add_argument(
        "--run-time-s",
        type=float,
        default=None,
        help="how long the list's stages took (make repro-mlp measures it); recorded with "
        "this machine and today's date in run.json and the README (default: keep the record)",
    )
    parser.add_argument("--note", default="", help="a remark on the run (e.g. the load)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    start = time.perf_counter()
    root = project_root()
    out = args.out or root / "reports" / "mlp"
    run = None
    if args.run_time_s is not None:
        run = {
            "run_time_s": round(args.run_time_s, 1),
            "machine": machine(),
            "date": datetime.date.today().isoformat(),
            "note": args.note,
        }
    files, found = build(root, out, run)
    for f in found:
        holds = {True: "holds", False: "DOES NOT HOLD", None: "not run"}[f["holds"]]
        log.info("%s: %s (%s)", f["claim"], holds, f["evidence"])
    log.info("wrote %d files to %s in %.1f s", len(files), out, time.perf_counter() - start)


if __name__ == "__main__":
    main()
