"""``runs.csv`` beside the report: the MLflow runs the tables cite, readable without the
store (issue 13, Build 3), from the uncommitted index of run ids (the tracked results and
the tables have none: issue 34). Real MLflow runs in a temporary SQLite store."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from pipeline.report.build import build_report
from pipeline.runs import index

RUNS = {  # run -> (composition, set, decoder, test hamming, chosen lambda)
    "iris/t1-cube-cube": ("cube->cube", "cube", "cube", 27.78, 1e-4),
    "iris/t1-birkhoff-birkhoff": ("birkhoff->birkhoff", "birkhoff", "birkhoff", 5.56, 1e-2),
    "wine/t1-birkhoff-birkhoff": ("birkhoff->birkhoff", "birkhoff", "birkhoff", 3.7, 1.0),
}


def _results(root: Path, uri: str) -> dict[str, str]:
    """Tracked results of three runs of the paper's experiment ``lr`` (Table 1 cells),
    two of them with a FINISHED run in the store ``uri``, the third with an id the store
    does not know, written as the stages write them (the run ids in the index under
    ``root``, not in the files). Returns run -> MLflow run id."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.create_experiment("projloss/label_ranking")
    ids, tuning = {}, {"experiment": "lr", "runs": {}}
    for run, (comp, set_, decoder, value, lam) in RUNS.items():
        dataset = run.split("/")[0]
        if dataset == "wine":
            ids[run] = "0" * 32  # a run deleted from the store (or another store's)
        else:
            made = client.create_run(exp, run_name=f"{comp} @ {dataset}")
            client.set_terminated(made.info.run_id, "FINISHED")
            ids[run] = made.info.run_id
        composition = {"task": "label_ranking", "dataset": dataset, "set": set_,
                       "geometry": "euclidean", "decoder": decoder, "model": "linear",
                       "composition": comp}  # fmt: skip
        results = {"experiment": "lr", "run": run, "run_id": ids[run],
                   "headline": {"hamming": value}, "lambda": {"hamming": lam},
                   "composition": composition, "n_test": 30, "y_shape": [3]}  # fmt: skip
        path = root / "data/eval/lr" / run / "results.json"
        index.write_json(path, results, root)
        assert "run_id" not in json.loads(path.read_text(encoding="utf-8"))
        task = {"name": "label_ranking", "target_loss": "hamming_ranking"}
        tuning["runs"][run] = {"config": {"task": task}, "run_id": ids[run]}
    index.write_json(root / "data/tuning/lr.json", tuning, root)
    return ids


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_runs_table_names_every_cited_run(tmp_path: Path, store_uri: str) -> None:
    uri = store_uri
    ids = _results(tmp_path, uri)
    out = tmp_path / "reports"
    report = build_report(tmp_path, out, figures=False, experiments=["lr"], tracking_uri=uri)
    assert out / "runs.csv" in report.files
    rows = {r["run"]: r for r in _read(out / "runs.csv")}
    assert set(rows) == set(RUNS)
    for run, (comp, set_, decoder, value, lam) in RUNS.items():
        row = rows[run]
        assert row["mlflow_run_id"] == ids[run] and row["experiment"] == "lr"
        assert row["dataset"] == run.split("/")[0] and row["composition"] == comp
        assert (row["set"], row["decoder"], row["model"]) == (set_, decoder, "linear")
        assert row["target_loss"] == "hamming_ranking" and row["task"] == "label_ranking"
        assert "table1" in row["tables"].split()
        assert float(row["test.hamming"]) == pytest.approx(value)
        assert float(row["lambda.hamming"]) == pytest.approx(lam)
    # what the store says, when the report was built
    iris = rows["iris/t1-cube-cube"]
    assert iris["mlflow_run_name"] == "cube->cube @ iris"
    assert iris["mlflow_experiment"] == "projloss/label_ranking" and iris["status"] == "FINISHED"
    assert rows["wine/t1-birkhoff-birkhoff"]["status"] == "not in store"
    # a table names no run id (a function of code and data); its cells join runs.csv on
    # experiment and run (the join of the README), which gives each cell its run id
    table = _read(out / "table1.csv")
    assert "mlflow_run_id" not in table[0]
    by_cell = {(r["experiment"], r["run"]): r["mlflow_run_id"] for r in rows.values()}
    cited = {by_cell[(r["experiment"], r["run"])] for r in table if r["ours"] and r["run"]}
    assert cited == set(ids.values())
    assert "join a table's `experiment` and `run`" in (out / "README.md").read_text()


def test_runs_table_without_the_store(tmp_path: Path) -> None:
    """A fresh clone (no mlflow.db): the tracked columns, empty store columns, and no
    store created; tracking off: the same."""
    _results(tmp_path, f"sqlite:///{tmp_path / 'elsewhere.db'}")
    missing = tmp_path / "mlflow.db"
    for uri in (f"sqlite:///{missing}", False):
        out = tmp_path / f"reports-{bool(uri)}"
        build_report(tmp_path, out, figures=False, experiments=["lr"], tracking_uri=uri)
        rows = _read(out / "runs.csv")
        assert len(rows) == len(RUNS)
        assert all(r["composition"] and r["test.hamming"] for r in rows)
        assert not any(r["mlflow_run_name"] or r["status"] for r in rows)
    assert not missing.exists()
