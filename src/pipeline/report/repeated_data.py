"""The per-split values of the repeated-split tables, and ``reports/repeated/splits.csv``.

:func:`collect` reads the tracked results of every split
(``data/eval/<key>/<run>/results.json`` of the repeated-split experiments,
:mod:`pipeline.report.seeds`; Table 4: the thirty splits of ``ord-splits``) into a
:class:`TableData`. Every table and statistic of ``reports/repeated/`` is computed from
``splits.csv`` -- the same values in long form, one line per (table, dataset,
composition, seed), written by :func:`write_splits` and read back by
:func:`read_splits` -- so anyone can recompute them from a clone:

``table, dataset, composition, seed, metric, value, n_test, n_train, lambda``

``dataset`` is the table's row label (e.g. ``Authorship``), ``composition`` its column
(``B/B``), ``seed`` the split seed (Table 4: the orreview split index), ``value`` the
test metric (``metric``) as a plain decimal that reads back to the same float64,
``n_test`` / ``n_train`` the sizes of the test and refit (train + validation) parts of
that split, ``lambda`` the chosen regularization (empty when the model has none). MLflow
run ids are not in it: they change with every run, the values do not (MLflow has them).

Examples
--------
>>> row = {"table": "table1", "dataset": "Iris", "composition": "B/B", "seed": 0,
...        "metric": "hamming", "value": 0.1 + 0.2, "n_test": 30, "n_train": 120,
...        "lambda": None}
>>> format_row(row)
'table1,Iris,B/B,0,hamming,0.30000000000000004,30,120,'
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .paper import Column, Row, TableSpec
from .results import RESULTS

#: the columns of splits.csv, in order
COLUMNS = ("table", "dataset", "composition", "seed", "metric", "value", "n_test", "n_train",
           "lambda")  # fmt: skip
SPLITS_FILE = "splits.csv"


@dataclass
class TableData:
    """The per-split values of one table: ``values[dataset, column, split]`` (NaN: not
    run), with the split sizes and the chosen lambda of each cell."""

    spec: TableSpec
    rows: list[Row]
    columns: list[Column]
    splits: list[int]
    values: np.ndarray
    n_test: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    n_train: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    lam: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))

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


def _cell(result: Mapping[str, Any], metric: str) -> tuple[float, float, float, float] | None:
    """(value, n_test, n_train, lambda) of one evaluated split (NaN: not recorded)."""
    if metric not in (result.get("headline") or {}):
        return None
    lambdas = result.get("lambda") or {}
    lam = lambdas.get(metric, next(iter(lambdas.values()), None))
    return (
        float(result["headline"][metric]),
        float(result.get("n_test", np.nan)),
        float(result.get("n_train", np.nan)),
        np.nan if lam is None else float(lam),
    )


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
    per: dict[tuple[int, int], dict[int, tuple[float, float, float, float]]] = {}
    for i, row in enumerate(rows):
        for j, col in enumerate(columns):
            per[i, j] = {}
            run = col.run.format(dataset=row.dataset)
            if spec.splits_experiment:
                data = _load(root, spec.splits_experiment, run) or {}
                for s, res in (data.get("splits") or {}).items():
                    if (cell := _cell(res, spec.metric)) is not None:
                        per[i, j][int(s)] = cell
                continue
            base = row.experiment or spec.experiment
            for s, key in (seeds.get(base) or {0: base}).items():
                data = _load(root, key, run)
                if data and (cell := _cell(data, spec.metric)) is not None:
                    per[i, j][s] = cell
    return _table(spec, rows, columns, per)


def _table(
    spec: TableSpec,
    rows: list[Row],
    columns: list[Column],
    per: Mapping[tuple[int, int], Mapping[int, tuple[float, float, float, float]]],
) -> TableData:
    splits = sorted({s for v in per.values() for s in v})
    shape = (len(rows), len(columns), len(splits))
    arrays = [np.full(shape, np.nan) for _ in range(4)]
    for (i, j), by_split in per.items():
        for s, cell in by_split.items():
            for a, v in zip(arrays, cell, strict=True):
                a[i, j, splits.index(s)] = v
    values, n_test, n_train, lam = arrays
    return TableData(spec, rows, columns, splits, values, n_test, n_train, lam)


# --------------------------------------------------------------------------- splits.csv
def _number(v: float) -> str:
    """A float as the shortest decimal that reads back to it; an integer-valued size as
    an integer; NaN as an empty field."""
    if v is None or not np.isfinite(v):
        return ""
    return repr(float(v))


def format_row(row: Mapping[str, Any]) -> str:
    """One line of splits.csv (no line end)."""
    out = io.StringIO()
    sizes = [
        "" if row[k] is None or not np.isfinite(row[k]) else str(int(row[k]))
        for k in ("n_test", "n_train")
    ]
    csv.writer(out, lineterminator="").writerow(
        [row["table"], row["dataset"], row["composition"], int(row["seed"]), row["metric"],
         _number(row["value"]), *sizes, _number(row["lambda"])]
    )  # fmt: skip
    return out.getvalue()


def to_rows(key: str, data: TableData) -> list[dict[str, Any]]:
    """The long-form rows of one table (row, column and split order; cells run only)."""
    out = []
    for i, row in enumerate(data.rows):
        for j, col in enumerate(data.columns):
            for k, seed in enumerate(data.splits):
                if not np.isfinite(data.values[i, j, k]):
                    continue
                out.append(
                    {
                        "table": key,
                        "dataset": row.label,
                        "composition": col.id,
                        "seed": seed,
                        "metric": data.spec.metric,
                        "value": float(data.values[i, j, k]),
                        "n_test": float(data.n_test[i, j, k]),
                        "n_train": float(data.n_train[i, j, k]),
                        "lambda": float(data.lam[i, j, k]),
                    }
                )
    return out


def write_splits(path: Path, tables: Mapping[str, TableData]) -> Path:
    """Write splits.csv (atomically) with the rows of every table."""
    from ..fileio import write_text

    lines = [",".join(COLUMNS)]
    for key, data in tables.items():
        lines += [format_row(r) for r in to_rows(key, data)]
    write_text(Path(path), "\n".join(lines) + "\n")
    return Path(path)


def read_splits(path: Path) -> dict[str, list[dict[str, Any]]]:
    """splits.csv as ``{table: [row, ...]}`` in file order (numbers parsed)."""
    path = Path(path)
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise ValueError(
                f"{path}: its header is {reader.fieldnames}, expected {list(COLUMNS)}; "
                "rebuild it with `python -m pipeline.report.repeated report`"
            )
        out: dict[str, list[dict[str, Any]]] = {}
        for n, r in enumerate(reader, start=2):
            try:
                row = {
                    **r,
                    "seed": int(r["seed"]),
                    "value": float(r["value"]),
                    "n_test": float(r["n_test"]) if r["n_test"] else np.nan,
                    "n_train": float(r["n_train"]) if r["n_train"] else np.nan,
                    "lambda": float(r["lambda"]) if r["lambda"] else np.nan,
                }
            except ValueError as exc:
                raise ValueError(f"{path}, line {n}: {exc}; every number must be plain") from None
            out.setdefault(r["table"], []).append(row)
    return out


def from_rows(spec: TableSpec, rows: Sequence[Mapping[str, Any]]) -> TableData:
    """The :class:`TableData` of ``spec`` from its splits.csv rows: the datasets in file
    order (the paper's row when the label is one of its rows), every column of the spec."""
    labels = list(dict.fromkeys(r["dataset"] for r in rows))
    by_label = {r.label: r for r in spec.rows}
    table_rows = [by_label.get(lb, Row(lb, lb)) for lb in labels]
    columns = list(spec.columns)
    col_of = {c.id: j for j, c in enumerate(columns)}
    per: dict[tuple[int, int], dict[int, tuple[float, float, float, float]]] = {}
    for r in rows:
        if r["composition"] not in col_of:
            raise ValueError(
                f"splits.csv: composition {r['composition']!r} is not a column of "
                f"{spec.key} ({sorted(col_of)})"
            )
        cell = (r["value"], r["n_test"], r["n_train"], r["lambda"])
        per.setdefault((labels.index(r["dataset"]), col_of[r["composition"]]), {})[r["seed"]] = cell
    return _table(spec, table_rows, columns, per)
