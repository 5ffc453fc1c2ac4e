"""The paper's tables: their layout over our experiments and the paper's values.

``paper.yaml`` (beside this module) describes each table of the paper (Blondel, NeurIPS
2019, §6 and Appendix B) in terms of the experiments of ``conf/experiments/paper.yaml``
and holds the paper's numbers, transcribed from the .tex. :func:`tex_tables` reads the
numbers back from the .tex source (the tests compare the two).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

LAYOUT = Path(__file__).with_name("paper.yaml")


@dataclass(frozen=True)
class Row:
    label: str
    dataset: str | None  # None: no offline data for this row (e.g. mediamill)
    experiment: str | None = None  # the row's own experiment (else the table's)


@dataclass(frozen=True)
class Column:
    id: str
    run: str
    projection: str = ""
    decoding: str = ""
    model: str = ""
    paper: bool = True  # False: our extra column, not in the paper


@dataclass(frozen=True)
class TableSpec:
    """One table: which run of which experiment fills each cell, and the paper's values."""

    key: str
    title: str
    metric: str
    lower_is_better: bool
    experiment: str
    rows: tuple[Row, ...]
    columns: tuple[Column, ...]
    paper: dict[str, list[float | None]]
    tex_label: str | None = None
    summary: tuple[str, ...] = ()
    paper_summary: dict[str, list[float]] = field(default_factory=dict)
    splits_experiment: str | None = None
    explain: dict[str, str] = field(default_factory=dict)
    row_explain: dict[str, str] = field(default_factory=dict)
    paper_columns: tuple[str, ...] | None = None  # diagnostics: the paper's columns they match
    diagnostic: bool = False

    @property
    def paper_cols(self) -> list[Column]:
        """The columns that have a paper value."""
        return [c for c in self.columns if c.paper]

    def paper_value(self, row: Row, column: Column) -> float | None:
        """The paper's value of a cell (None: the paper has no such cell)."""
        values = self.paper.get(row.label)
        if values is None or not column.paper:
            return None
        ids = self.paper_columns or [c.id for c in self.paper_cols]
        if column.id not in ids:
            return None
        return values[ids.index(column.id)]

    def experiment_of(self, row: Row) -> str:
        if row.experiment and not self.diagnostic:
            return row.experiment
        return self.experiment.format(dataset=row.dataset)

    def run_of(self, row: Row, column: Column) -> str:
        return column.run.format(dataset=row.dataset)


def _table(key: str, node: Mapping[str, Any], base: Mapping[str, Any] | None = None) -> TableSpec:
    merged = {**(base or {}), **node}
    columns = tuple(
        Column(**{k: v for k, v in c.items() if k in Column.__dataclass_fields__})
        for c in merged["columns"]
    )
    rows = tuple(Row(r["label"], r.get("dataset"), r.get("experiment")) for r in merged["rows"])
    paper_columns = node.get("paper_columns")
    paper = dict(merged.get("paper") or {})
    if base is not None and paper_columns is not None:
        # a diagnostic compares its columns with the base table's same-id columns
        base_ids = [c["id"] for c in base["columns"] if c.get("paper", True)]
        paper = {
            label: [vals[base_ids.index(cid)] for cid in paper_columns]
            for label, vals in (base.get("paper") or {}).items()
        }
    return TableSpec(
        key=key,
        title=merged["title"],
        metric=merged["metric"],
        lower_is_better=bool(merged["lower_is_better"]),
        experiment=merged["experiment"],
        rows=rows,
        columns=columns,
        paper=paper,
        tex_label=None if base is not None else merged.get("tex_label"),
        summary=tuple(merged.get("summary") or ()),
        paper_summary=dict(merged.get("paper_summary") or {}) if base is None else {},
        splits_experiment=merged.get("splits_experiment"),
        explain=dict(merged.get("explain") or {}),
        row_explain=dict(merged.get("row_explain") or {}),
        paper_columns=None if paper_columns is None else tuple(paper_columns),
        diagnostic=base is not None,
    )


@cache
def _layout(path: str) -> dict[str, Any]:
    import yaml

    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def layout(path: Path | None = None) -> dict[str, Any]:
    """``paper.yaml`` as a plain mapping."""
    return _layout(str(path or LAYOUT))


def tables(path: Path | None = None) -> dict[str, TableSpec]:
    """The paper's tables, then the diagnostic tables (key -> spec)."""
    node = layout(path)
    out = {key: _table(key, t) for key, t in node["tables"].items()}
    for key, d in (node.get("diagnostics") or {}).items():
        base = node["tables"][d["like"]]
        out[key] = _table(key, {k: v for k, v in d.items() if k != "like"}, base)
    return out


# ------------------------------------------------------------------ the .tex source
_NUMBER = re.compile(r"^(?:\\textbf\{)?\s*(-?\d+(?:\.\d+)?)\s*\}?$")


def _cell_value(cell: str) -> float | None:
    match = _NUMBER.match(cell.strip())
    return float(match.group(1)) if match else None


def tex_tables(tex: str) -> dict[str, dict[str, list[float]]]:
    """The numeric rows of every labelled table of the paper's .tex source: label ->
    row name -> values (``\\textbf`` stripped). Rows whose first cell is text and whose
    other cells are all numbers count; headers and rules do not."""
    out: dict[str, dict[str, list[float]]] = {}
    labels = [(m.start(), m.group(1)) for m in re.finditer(r"\\label\{(table:[^}]+)\}", tex)]
    for match in re.finditer(r"\\begin\{tabular\}\{[^}]*\}(.*?)\\end\{tabular\}", tex, re.S):
        if not labels:
            break

        # the label nearest the tabular (captions sit above or below it)
        def distance(pos: int, m: re.Match[str] = match) -> int:
            return m.start() - pos if pos < m.start() else pos - m.end()

        label = min(labels, key=lambda item: distance(item[0]))[1]
        rows: dict[str, list[float]] = {}
        for line in match.group(1).split("\\\\"):
            line = re.sub(r"\\(midrule|toprule|bottomrule)", "", line).strip()
            cells = [c.strip() for c in line.split("&")]
            if len(cells) < 2:
                continue
            values = [_cell_value(c) for c in cells[1:]]
            if all(v is not None for v in values):
                rows[cells[0]] = values  # type: ignore[assignment]
        if rows:
            out[label] = rows
    return out


def paper_tex(root: Path | None = None) -> Path | None:
    """The paper's .tex: ``$PROJLOSS_PAPER``, else ``shared/paper/projection-oracles.tex``
    beside the project root or one of its parents (as the dataset mirror); None if none."""
    import os

    from ..paths import project_root

    env = os.environ.get("PROJLOSS_PAPER")
    if env:
        return Path(env)
    for parent in (root or project_root()).resolve().parents:
        path = parent / "shared" / "paper" / "projection-oracles.tex"
        if path.is_file():
            return path
    return None
