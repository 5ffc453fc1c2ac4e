"""The committed reports read as data: plain numbers, and the repeated splits' seed 0 is
the paper's run.

- every CSV under ``reports/`` parses with the csv module and every numeric column's
  cells with ``float`` (no ``np.float64(...)`` reprs);
- ``reports/repeated/splits.csv`` has the documented columns, and its seed 0 (Table 4:
  orreview split 0) equals the cells of ``reports/`` for every table;
- the tables of ``reports/repeated/`` are a function of splits.csv: rebuilt from it,
  every file is the committed one.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from pipeline.report.repeated_data import COLUMNS, read_splits

ROOT = Path(__file__).resolve().parents[3]
REPORTS = ROOT / "reports"
REPEATED = REPORTS / "repeated"
CSVS = sorted(REPORTS.rglob("*.csv"))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("path", CSVS, ids=[str(p.relative_to(REPORTS)) for p in CSVS])
def test_committed_csv_holds_plain_numbers(path: Path) -> None:
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    assert body, f"{path}: no rows"
    assert all(len(r) == len(header) for r in body), f"{path}: ragged rows"
    for j, name in enumerate(header):
        cells = [r[j] for r in body if r[j] != ""]
        assert not [c for c in cells if "np." in c or "float64" in c], f"{path}: {name}"
        numeric = sum(_is_number(c) for c in cells)
        if cells and numeric * 2 >= len(cells):  # a numeric column: every cell a number
            bad = [c for c in cells if not _is_number(c)]
            assert not bad, f"{path}, column {name!r}: not numbers: {bad[:3]}"


def test_splits_csv_columns_and_seed0_equals_the_paper_run() -> None:
    path = REPEATED / "splits.csv"
    with open(path, encoding="utf-8", newline="") as f:
        header = next(csv.reader(f))
    assert tuple(header[:6]) == ("table", "dataset", "composition", "seed", "metric", "value")
    assert tuple(header) == COLUMNS
    splits = read_splits(path)
    compared = 0
    for table, rows in splits.items():
        seed0 = {(r["dataset"], r["composition"]): r for r in rows if r["seed"] == 0}
        assert seed0, f"{table}: no seed 0"
        with open(REPORTS / f"{table}.csv", encoding="utf-8", newline="") as f:
            cells = {(r["row"], r["column"]): r for r in csv.DictReader(f) if r["ours"]}
        assert set(seed0) <= set(cells), f"{table}: seed 0 cells not in reports/{table}.csv"
        for key, r in seed0.items():
            cell = cells[key]
            assert math.isclose(r["value"], float(cell["ours"]), rel_tol=1e-12, abs_tol=1e-12), (
                table, key, r["value"], cell["ours"]
            )  # fmt: skip
            assert r["n_test"] == float(cell["n_test"]), (table, key)
            compared += 1
        # every committed paper cell that the repeated tables compare is in seed 0
        columns = {c for _, c in seed0}
        datasets = {d for d, _ in seed0}
        missing = [k for k in cells if k[0] in datasets and k[1] in columns and k not in seed0]
        assert not missing, f"{table}: {missing[:3]}"
    assert compared > 200  # 239 cells: Tables 1-4, 6, 7 and the rounded bound


@pytest.mark.slow
def test_repeated_report_is_a_function_of_splits_csv(tmp_path: Path) -> None:
    from pipeline.report.repeated_report import build_from_splits

    report = build_from_splits(REPEATED / "splits.csv", tmp_path)
    written = [f for f in report.files if f.suffix in (".md", ".csv")]
    assert len(written) >= 13
    for f in written:
        committed = (REPEATED / f.name).read_text(encoding="utf-8")
        if f.suffix == ".md":  # rounded for display: the same text
            assert f.read_text(encoding="utf-8") == committed, f.name
            continue
        # full-precision numbers: equal to rounding (numpy's sums and the quadrature may
        # differ in the last bits on another CPU)
        got = list(csv.reader(f.read_text(encoding="utf-8").splitlines()))
        want = list(csv.reader(committed.splitlines()))
        assert len(got) == len(want), f.name
        for a, b in zip(got, want, strict=True):
            assert len(a) == len(b), (f.name, a, b)
            for x, y in zip(a, b, strict=True):
                if x != y:
                    assert _is_number(x) and _is_number(y), (f.name, x, y)
                    assert math.isclose(float(x), float(y), rel_tol=1e-9, abs_tol=1e-12), (
                        f.name, x, y
                    )  # fmt: skip
