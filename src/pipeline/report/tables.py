"""The paper's tables filled with our results: cells, noise, summary rows, Markdown, CSV.

Each cell holds our value (the run's test metric, lambda chosen by that metric on
validation), the paper's value, the difference, and the cell's *noise*: the change one
test sample can make, so that a difference can be judged:

- label ranking (Hamming loss, %): one test sample with two labels swapped,
  ``400 / (k^2 n_test)`` (iris, k = 3 and 30 test samples: 1.48);
- ordinal regression (MAE): the standard deviation of the cell over the thirty orreview
  splits when they ran, else one test sample off by one class, ``1 / n_test``;
- multilabel accuracy (%): one label of one test sample, ``100 / (k n_test)``;
- multilabel F1 (%): one test sample's F1 going from 0 to 1, ``100 / n_test``.

A cell *matches* when our value rounded or truncated to the paper's two decimals is the
paper's value (the paper rounds most numbers and truncates some), is *within noise* when
the difference is at most the noise, and otherwise *differs*; a differing cell names its
explanation (``paper.yaml``: ``explain`` per column, ``row_explain`` per row).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .paper import Column, Row, TableSpec
from .results import Results, RunResult

MATCH, NOISE, DIFFERS, NO_PAPER, NOT_RUN, NO_DATA = (
    "match",
    "within noise",
    "differs",
    "no paper value",
    "not run",
    "no data offline",
)


#: the mark after a cell whose fit (tuning at the chosen lambda, or refit) did not converge
NOT_CONVERGED = " †"


@dataclass
class Cell:
    row: Row
    column: Column
    ours: float | None
    paper: float | None
    noise: float | None
    result: RunResult | None
    std: float | None = None  # split sweeps: the std over the splits
    explanation: str | None = None
    status: str = ""

    @property
    def converged(self) -> bool | None:
        """Whether the cell's fits converged (None: not recorded)."""
        if self.result is None:
            return None
        return self.result.converged(self.column_metric)

    column_metric: str = ""

    @property
    def diff(self) -> float | None:
        if self.ours is None or self.paper is None:
            return None
        return self.ours - self.paper


@dataclass
class Table:
    spec: TableSpec
    cells: dict[tuple[str, str], Cell]
    summary: dict[str, list[float | None]] = field(default_factory=dict)
    paper_summary: dict[str, list[float | None]] = field(default_factory=dict)
    title: str = ""

    def cell(self, row: Row, column: Column) -> Cell:
        return self.cells[(row.label, column.id)]

    def column_values(self, column: Column) -> list[float | None]:
        return [self.cell(r, column).ours for r in self.spec.rows]


def matches(ours: float, paper: float) -> bool:
    """Our value rounded or truncated to two decimals is the paper's."""
    rounded = round(ours + 0.0, 2)
    truncated = math.floor(ours * 100 + 1e-9) / 100 if ours >= 0 else -math.floor(-ours * 100) / 100
    return abs(rounded - paper) < 1e-9 or abs(truncated - paper) < 1e-9


def noise_of(metric: str, result: RunResult | None, std: float | None = None) -> float | None:
    """The noise of a cell (see the module docstring)."""
    if result is None or not result.n_test:
        return None
    n = result.n_test
    if metric == "hamming":
        k = result.y_shape[0] if result.y_shape else None
        return None if not k else 400.0 / (k * k * n)
    if metric == "mae":
        return std if std is not None else 1.0 / n
    if metric == "accuracy":
        k = result.y_shape[0] if result.y_shape else 1
        return 100.0 / (k * n)
    if metric.startswith("f1"):
        return 100.0 / n
    return None


def build(spec: TableSpec, results: Results, splits: Table | None = None) -> Table:
    """Fill ``spec`` from ``results``; ``splits``: the same table over the thirty splits
    (its stds are the noise of the cells)."""
    cells: dict[tuple[str, str], Cell] = {}
    for row in spec.rows:
        for col in spec.columns:
            paper = spec.paper_value(row, col)
            if row.dataset is None:
                cells[(row.label, col.id)] = Cell(row, col, None, paper, None, None, status=NO_DATA)
                continue
            res = results.get(spec.experiment_of(row), spec.run_of(row, col))
            ours = None if res is None else res.value(spec.metric)
            std = None if res is None or res.std is None else res.std.get(spec.metric)
            split_std = None
            if splits is not None:
                split_std = splits.cell(row, col).std
            cell = Cell(row, col, ours, paper, noise_of(spec.metric, res, split_std), res, std)
            cell.column_metric = spec.metric
            cell.status = _status(cell)
            if cell.status == DIFFERS:
                cell.explanation = spec.row_explain.get(row.label) or spec.explain.get(col.id)
            cells[(row.label, col.id)] = cell
    table = Table(spec, cells, title=spec.title)
    if spec.summary:
        _summaries(table)
    return table


def _status(cell: Cell) -> str:
    if cell.ours is None:
        return NOT_RUN
    if cell.paper is None:
        return NO_PAPER
    if matches(cell.ours, cell.paper):
        return MATCH
    if cell.noise is not None and abs(cell.ours - cell.paper) <= cell.noise + 1e-9:
        return NOISE
    return DIFFERS


def average_ranks(matrix: np.ndarray, lower_is_better: bool) -> np.ndarray:
    """Average over rows of each column's rank within its row (1 = best; ties get the
    average of their ranks, as ``scipy.stats.rankdata``)."""
    from scipy.stats import rankdata

    m = np.asarray(matrix, dtype=np.float64)
    ranks = rankdata(m if lower_is_better else -m, axis=1, method="average")
    return ranks.mean(axis=0)


def _summaries(table: Table) -> None:
    spec = table.spec
    cols = spec.paper_cols
    complete = [r for r in spec.rows if all(table.cell(r, c).ours is not None for c in cols)]
    if len(complete) == len(spec.rows):
        m = np.array([[table.cell(r, c).ours for c in cols] for r in complete])
        if "average" in spec.summary:
            table.summary["average"] = list(m.mean(axis=0))
        if "rank" in spec.summary:
            table.summary["rank"] = list(average_ranks(m, spec.lower_is_better))
    else:
        table.summary = {k: [None] * len(cols) for k in spec.summary}
    table.paper_summary = {
        k: list(spec.paper_summary.get(k) or [None] * len(cols)) for k in spec.summary
    }


SUMMARY_LABELS = {"average": "Average", "rank": "Average rank"}


# ------------------------------------------------------------------ rendering
def fmt(v: float | None, digits: int = 2) -> str:
    """A table cell: ``digits`` decimals, ``—`` when there is no (finite) value.

    >>> fmt(3.14159), fmt(None), fmt(float("nan"), 3), fmt(0.5, 3)
    ('3.14', '—', '—', '0.500')
    """
    return "—" if v is None or not math.isfinite(v) else f"{v:.{digits}f}"


_fmt = fmt


def _best(values: Sequence[float | None], lower: bool) -> float | None:
    finite = [v for v in values if v is not None]
    if not finite:
        return None
    return min(finite) if lower else max(finite)


def column_heading(col: Column) -> str:
    text = f"{col.projection} / {col.decoding}" if col.decoding else col.projection
    if col.model:
        text += f" ({col.model})"
    return text


def to_markdown(table: Table, markers: dict[str, str]) -> str:
    """The table as Markdown: per cell ``ours / paper (diff)``, our best per row in bold
    (among the paper's columns), the paper's best in bold too; a marker after each cell
    that differs by more than its noise (``markers``: explanation id -> marker; ``?``
    when unexplained); ``=`` after a match."""
    spec = table.spec
    digits = 3 if spec.metric == "mae" else 2
    lines = [f"### {table.title}", ""]
    head = ["", *(column_heading(c) for c in spec.columns)]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lower = spec.lower_is_better
    for row in spec.rows:
        ours_best = _best([table.cell(row, c).ours for c in spec.paper_cols], lower)
        paper_best = _best([table.cell(row, c).paper for c in spec.paper_cols], lower)
        cells = [row.label]
        for col in spec.columns:
            cell = table.cell(row, col)
            cells.append(_cell_md(cell, ours_best, paper_best, digits, markers))
        lines.append("| " + " | ".join(cells) + " |")
    for key, values in table.summary.items():
        paper_values = table.paper_summary.get(key, [])
        best = _best(values, lower)
        pbest = _best(paper_values, lower)
        cells = [f"*{SUMMARY_LABELS.get(key, key)}*"]
        for i, _col in enumerate(spec.paper_cols):
            ours = values[i] if i < len(values) else None
            paper = paper_values[i] if i < len(paper_values) else None
            o = _bold(_fmt(ours, digits), ours is not None and ours == best)
            p = _bold(_fmt(paper, 2), paper is not None and paper == pbest)
            cells.append(f"{o} / {p}")
        cells += [""] * (len(spec.columns) - len(spec.paper_cols))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _bold(text: str, on: bool) -> str:
    return f"**{text}**" if on else text


def _cell_md(
    cell: Cell, ours_best: float | None, paper_best: float | None, digits: int, markers: dict
) -> str:
    if cell.status == NO_DATA:
        return f"n/a / {_fmt(cell.paper)}"
    if cell.ours is None:
        return f"not run / {_fmt(cell.paper)}"
    ours = _fmt(cell.ours, digits)
    if cell.std is not None:
        ours += f" ± {cell.std:.{digits}f}"
    ours = _bold(ours, cell.column.paper and ours_best is not None and cell.ours == ours_best)
    if cell.converged is False:
        ours += NOT_CONVERGED
    if cell.paper is None:
        return ours
    paper = _bold(_fmt(cell.paper), paper_best is not None and cell.paper == paper_best)
    text = f"{ours} / {paper} ({cell.diff:+.{digits}f})"
    if cell.status == MATCH:
        text += " ="
    elif cell.status == DIFFERS:
        text += f" [{markers.get(cell.explanation or '', '?')}]"
    return text


CSV_FIELDS = [
    "table",
    "row",
    "dataset",
    "column",
    "projection",
    "decoding",
    "model",
    "metric",
    "ours",
    "ours_std",
    "paper",
    "diff",
    "noise",
    "status",
    "converged",
    "explanation",
    "lambda",
    "lambda_ties",
    "n_test",
    "experiment",
    "run",
]


def to_csv(table: Table) -> str:
    """One line per cell (and per summary value): ours, the paper's, the difference, the
    noise, the status, and where the number comes from (experiment, run: ``runs.csv``
    maps them to the MLflow run, which is not here: the file is a function of the code and
    the data, a run id is new on every run)."""
    spec = table.spec
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in spec.rows:
        for col in spec.columns:
            cell = table.cell(row, col)
            res = cell.result
            writer.writerow(
                {
                    "table": spec.key,
                    "row": row.label,
                    "dataset": row.dataset or "",
                    "column": col.id,
                    "projection": col.projection,
                    "decoding": col.decoding,
                    "model": col.model,
                    "metric": spec.metric,
                    "ours": _num(cell.ours),
                    "ours_std": _num(cell.std),
                    "paper": _num(cell.paper),
                    "diff": _num(cell.diff),
                    "noise": _num(cell.noise),
                    "status": cell.status,
                    "converged": {None: "", True: "true", False: "false"}[cell.converged],
                    "explanation": cell.explanation or "",
                    "lambda": _num(res.lambdas.get(spec.metric) if res else None),
                    "lambda_ties": res.ties(spec.metric) if res and res.tune else "",
                    "n_test": res.n_test if res else "",
                    "experiment": spec.experiment_of(row) if row.dataset else "",
                    "run": spec.run_of(row, col) if row.dataset else "",
                }
            )
    for key, values in table.summary.items():
        paper_values = table.paper_summary.get(key, [])
        for i, col in enumerate(spec.paper_cols):
            ours = values[i] if i < len(values) else None
            paper = paper_values[i] if i < len(paper_values) else None
            writer.writerow(
                {
                    "table": spec.key,
                    "row": SUMMARY_LABELS.get(key, key),
                    "column": col.id,
                    "projection": col.projection,
                    "decoding": col.decoding,
                    "model": col.model,
                    "metric": spec.metric,
                    "ours": _num(ours),
                    "paper": _num(paper),
                    "diff": _num(None if ours is None or paper is None else ours - paper),
                }
            )
    return buf.getvalue()


def _num(v: float | None) -> str:
    return "" if v is None else repr(float(v))
