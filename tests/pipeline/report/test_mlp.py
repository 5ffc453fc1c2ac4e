"""``python -m pipeline.report.mlp``: linear vs MLP per cell of Tables 1, 2, 6 and 7 and
the per-table findings, from fake MLP results beside the committed paper report."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from pipeline.report import mlp as report
from pipeline.report.paper import tables

from ..conftest import ROOT


def _result(root: Path, experiment: str, run: str, metric: str, value: float) -> None:
    path = root / "data/eval" / experiment / run / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"run_id": f"id-{run}", "headline": {metric: value}, "lambda": {metric: 1.0}}
    path.write_text(json.dumps({**record, "n_test": 30, "y_shape": [3]}))


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "reports").mkdir()
    for key in report.TABLES:
        shutil.copy(ROOT / "reports" / f"{key}.csv", tmp_path / "reports" / f"{key}.csv")
    monkeypatch.setenv("PROJLOSS_ROOT", str(tmp_path))
    return tmp_path


def test_side_by_side_and_findings(root: Path) -> None:
    specs = tables()
    spec = report.mlp_spec(specs["table1"])
    assert spec.experiment == "lr-mlp"
    # Table 1 with the MLP: B/B best on every dataset (holds); Table 2: cube/B best (does
    # not hold); Tables 6-7 not run
    for key, best in (("table1", "B/B"), ("table2", "cube/B")):
        s = report.mlp_spec(specs[key])
        for row in s.rows:
            for col in s.columns:
                value = 1.0 if col.id == best else 5.0 + len(col.id)
                _result(root, s.experiment_of(row), s.run_of(row, col), "hamming", value)
    report.main(["--out", str(root / "reports/mlp")])
    out = root / "reports/mlp"
    found = {f["table"]: f for f in json.loads((out / "findings.json").read_text())}
    assert found["table1"]["holds"] is True and found["table1"]["best_mlp"] == "B/B"
    assert found["table2"]["holds"] is False and found["table2"]["best_mlp"] == "cube/B"
    assert found["table1"]["best_paper"] == "B/B"  # the paper's own averages
    assert found["table6"]["holds"] is None and found["table7"]["holds"] is None
    # each cell: the committed linear value beside the MLP's, with the MLP run's id
    with open(out / "table1.csv", encoding="utf-8", newline="") as f:
        rows = {(r["row"], r["column"]): r for r in csv.DictReader(f)}
    with open(ROOT / "reports/table1.csv", encoding="utf-8", newline="") as f:
        linear = {(r["row"], r["column"]): r["ours"] for r in csv.DictReader(f)}
    cell = rows[("Iris", "B/B")]
    assert float(cell["linear"]) == float(linear[("Iris", "B/B")]) and float(cell["mlp"]) == 1.0
    assert cell["experiment"] == "lr-mlp" and cell["run"] == "iris/t1-birkhoff-birkhoff"
    assert "mlflow_run_id" not in cell  # a function of code and data: no run id
    readme = (out / "README.md").read_text()
    assert "| table1 | Table 1: Birkhoff/Birkhoff (B/B) best on average | B/B / " in readme
    assert "does NOT hold" in readme and "not run" in readme
    md = (out / "table1.md").read_text()
    assert "| Iris | " in md and " / 1.00 |" in md


def test_the_run_time_is_recorded_and_kept_by_a_rebuild(root: Path) -> None:
    out = root / "reports/mlp"
    report.main(["--out", str(out)])
    assert "Run time not recorded" in (out / "README.md").read_text()
    assert not (out / "run.json").exists()
    report.main(["--out", str(out), "--run-time-s", "3725", "--note", "load 4"])
    run = json.loads((out / "run.json").read_text())
    assert run["run_time_s"] == 3725.0 and run["note"] == "load 4"
    assert "CPU cores" in run["machine"]
    readme = (out / "README.md").read_text()
    assert f"took 62 min on {run['machine']}, on {run['date']} (load 4)." in readme
    report.main(["--out", str(out)])  # a rebuild without --run-time-s keeps the record
    assert json.loads((out / "run.json").read_text()) == run
    assert "took 62 min" in (out / "README.md").read_text()


@pytest.mark.parametrize("key", report.TABLES)
def test_committed_report_agrees_with_the_paper_report_and_its_findings(key: str) -> None:
    """The committed ``reports/mlp`` (one run of ``make repro-mlp``): its linear column is the
    committed paper report's ``ours`` cell for cell (rel 1e-12), its averages and findings are
    those of its own cells, and the README shows them."""
    out = ROOT / "reports/mlp"
    with open(out / f"{key}.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    with open(ROOT / "reports" / f"{key}.csv", encoding="utf-8", newline="") as f:
        ours = {(r["row"], r["column"]): r["ours"] for r in csv.DictReader(f)}
    rows = [r for r in rows if r["dataset"]]  # Mediamill: no offline data, empty cells
    assert rows and all(r["linear"] and r["mlp"] and r["run"] for r in rows)
    for r in rows:
        assert float(r["linear"]) == pytest.approx(float(ours[(r["row"], r["column"])]), 1e-12)
        assert float(r["diff"]) == pytest.approx(float(r["mlp"]) - float(r["linear"]), abs=1e-9)
    found = {f["table"]: f for f in json.loads((out / "findings.json").read_text())}[key]
    by_column: dict[str, list[float]] = {}
    for r in rows:
        by_column.setdefault(r["column"], []).append(float(r["mlp"]))
    averages = {c: sum(v) / len(v) for c, v in by_column.items()}
    for column, value in averages.items():
        if f"{column} " in found["evidence"] and key != "table7":
            assert f"{column} " in found["evidence"] and f"/ {value:.2f}" in found["evidence"]
    readme = (out / "README.md").read_text()
    assert f"| {key} | {found['claim']} |" in readme
    assert json.loads((out / "run.json").read_text())["run_time_s"] > 0
