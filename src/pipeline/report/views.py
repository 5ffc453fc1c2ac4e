"""The report's DVC views: the summary metrics and the plots' data (``dvc.yaml``).

Written by :func:`pipeline.report.build.build_report` into the report directory
(``params.yaml`` ``report.dir``: ``reports/`` for the paper's list):

- ``summary/<table>.json`` (``dvc metrics show``/``diff``; one file per table, so DVC
  prints one row per table with the same few columns): ``cells`` (cells with our value
  and the paper's), ``match``, ``within_noise``, ``differs``, ``not_run`` (the paper's
  cells we have no value for), ``mean_abs_diff`` (mean ``|ours - paper|`` over ``cells``),
  ``best`` / ``best_avg`` (the paper column with our best average over the datasets: the
  lowest for a loss, the highest for a score) and ``paper_best`` / ``paper_best_avg`` (the
  same on the paper's values, over the same datasets);
- ``plots/tables/<table>.csv`` (``dvc plots``: a bar per cell, ours against the paper's
  tick): one row per cell with our value (``cell``, ``row``, ``column``, ``ours``,
  ``paper``), then one ``average`` row per column -- the average of each column;
- ``plots/validation/<experiment>.csv`` (``dvc plots``: the validation curves, from
  ``data/tuning/<experiment>.json``): one row per run, metric and lambda (``dataset``,
  ``run``, ``metric``, ``lambda``, ``log10_lambda``, ``value``, ``selected``); a split
  sweep's curve is the mean over its splits.

Examples:
    >>> summary_of([("match", 5.0, 5.0), ("differs", 7.0, 6.0), ("not run", None, 3.0)])
    {'cells': 2, 'match': 1, 'within_noise': 0, 'differs': 1, 'not_run': 1, 'mean_abs_diff': 0.5}
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..paths import TUNING_DIR
from .tables import DIFFERS, MATCH, NOISE, NOT_RUN, Table

SUMMARY_DIR = "summary"
TABLE_PLOTS_DIR = "plots/tables"
VALIDATION_PLOTS_DIR = "plots/validation"
#: the columns of the validation-curve CSV files
VALIDATION_FIELDS = ("dataset", "run", "metric", "lambda", "log10_lambda", "value", "selected")
TABLE_FIELDS = ("cell", "row", "column", "ours", "paper")


def summary_of(cells: Iterable[tuple[str, float | None, float | None]]) -> dict[str, Any]:
    """Counts of ``(status, ours, paper)`` cells (those with a paper value) and the mean
    ``|ours - paper|`` over the cells with both values."""
    counts = {"cells": 0, "match": 0, "within_noise": 0, "differs": 0, "not_run": 0}
    diffs = []
    for status, ours, paper in cells:
        if paper is None:
            continue
        if ours is None:
            counts["not_run"] += status == NOT_RUN
            continue
        counts["cells"] += 1
        key = {MATCH: "match", NOISE: "within_noise", DIFFERS: "differs"}.get(status)
        if key:
            counts[key] += 1
        diffs.append(abs(ours - paper))
    return {**counts, "mean_abs_diff": round(float(np.mean(diffs)), 4) if diffs else None}


def column_averages(table: Table) -> dict[str, tuple[float | None, float | None]]:
    """Per paper column: (our average, the paper's average) over the rows where both are
    known (None when no row has both)."""
    spec = table.spec
    out: dict[str, tuple[float | None, float | None]] = {}
    for col in spec.columns:
        pairs = [
            (c.ours, c.paper)
            for c in (table.cell(r, col) for r in spec.rows)
            if c.ours is not None and (c.paper is not None or not col.paper)
        ]
        if not pairs:
            out[col.id] = (None, None)
            continue
        ours = float(np.mean([o for o, _ in pairs]))
        papers = [p for _, p in pairs if p is not None]
        out[col.id] = (ours, float(np.mean(papers)) if len(papers) == len(pairs) else None)
    return out


def table_summary(table: Table) -> dict[str, Any]:
    """The summary metrics of one table (see the module docstring)."""
    spec = table.spec
    summary = summary_of((c.status, c.ours, c.paper) for c in table.cells.values())
    averages = {k: v for k, v in column_averages(table).items() if k in _paper_ids(table)}
    pick = min if spec.lower_is_better else max
    for name, index in (("best", 0), ("paper_best", 1)):
        known = {k: v[index] for k, v in averages.items() if v[index] is not None}
        best = pick(known, key=lambda k: known[k]) if known else None
        summary[name] = best
        summary[f"{name}_avg"] = None if best is None else round(known[best], 4)
    return summary


def _paper_ids(table: Table) -> set[str]:
    return {c.id for c in table.spec.paper_cols}


def table_rows(table: Table) -> list[dict[str, Any]]:
    """The bar-chart rows of a table: one per cell with our value, then the averages."""
    spec = table.spec
    rows = []
    for row in spec.rows:
        for col in spec.columns:
            cell = table.cell(row, col)
            if cell.ours is None:
                continue
            rows.append(
                {
                    "cell": f"{row.label} · {col.id}",
                    "row": row.label,
                    "column": col.id,
                    "ours": _num(cell.ours),
                    "paper": _num(cell.paper),
                }
            )
    for col_id, (ours, paper) in column_averages(table).items():
        if ours is not None:
            rows.append(
                {
                    "cell": f"average · {col_id}",
                    "row": "average",
                    "column": col_id,
                    "ours": _num(ours),
                    "paper": _num(paper),
                }
            )
    return rows


def validation_rows(tuning: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The validation-curve rows of one ``data/tuning/<experiment>.json``."""
    rows = []
    for rid, entry in tuning.get("runs", {}).items():
        tuned = entry.get("tune") or {}
        dataset = ((entry.get("config") or {}).get("dataset") or {}).get("name", "")
        if "splits" in tuned:  # a split sweep: the mean curve over its splits
            per_split = [t for t in tuned["splits"].values() if len(t.get("lambdas", [])) > 1]
            if not per_split:
                continue
            grid = per_split[0]["lambdas"]
            metrics = {
                m: list(np.mean([t["metrics"][m] for t in per_split], axis=0))
                for m in per_split[0]["metrics"]
            }
            selected: dict[str, Any] = {}
        else:
            grid = tuned.get("lambdas") or []
            metrics = tuned.get("metrics") or {}
            selected = tuned.get("selected") or {}
        if len(grid) < 2:  # no lambda (e.g. the median baseline): no curve
            continue
        for metric, values in metrics.items():
            chosen = (selected.get(metric) or {}).get("index")
            for i, (lam, value) in enumerate(zip(grid, values, strict=True)):
                rows.append(
                    {
                        "dataset": dataset,
                        "run": rid,
                        "metric": metric,
                        "lambda": _num(lam),
                        "log10_lambda": _num(math.log10(lam)),
                        "value": _num(value),
                        "selected": int(i == chosen),
                    }
                )
    return rows


def write_views(
    tables: Mapping[str, Table],
    out_dir: Path,
    root: Path,
    experiments: Sequence[str] | None = None,
) -> list[Path]:
    """Write the summary metrics and the plots' data of ``tables`` and of the tuning files
    of ``experiments`` (default: every ``data/tuning/*.json`` under ``root``) into
    ``out_dir``; stale files of these directories are removed. Returns the paths."""
    from ..fileio import write_text

    out_dir = Path(out_dir)
    files: list[Path] = []
    for key, table in tables.items():
        path = out_dir / SUMMARY_DIR / f"{key}.json"
        write_text(path, json.dumps(table_summary(table), indent=2) + "\n")
        files.append(path)
        path = out_dir / TABLE_PLOTS_DIR / f"{key}.csv"
        write_text(path, _csv(table_rows(table), TABLE_FIELDS))
        files.append(path)
    tuning_dir = root / TUNING_DIR
    if experiments is None:
        keys = sorted(p.stem for p in tuning_dir.glob("*.json"))
    else:
        keys = [k for k in experiments if (tuning_dir / f"{k}.json").is_file()]
    for key in keys:
        tuning = json.loads((tuning_dir / f"{key}.json").read_text(encoding="utf-8"))
        rows = validation_rows(tuning)
        if rows:
            path = out_dir / VALIDATION_PLOTS_DIR / f"{key}.csv"
            write_text(path, _csv(rows, VALIDATION_FIELDS))
            files.append(path)
    for sub in (SUMMARY_DIR, TABLE_PLOTS_DIR, VALIDATION_PLOTS_DIR):
        for stale in set((out_dir / sub).glob("*")) - set(files):
            if stale.is_file():
                stale.unlink()
    return files


def _csv(rows: list[dict[str, Any]], fields: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(fields), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _num(v: float | None) -> str:
    return "" if v is None or not math.isfinite(v) else repr(float(v))


__all__ = [
    "column_averages",
    "summary_of",
    "table_rows",
    "table_summary",
    "validation_rows",
    "write_views",
]
