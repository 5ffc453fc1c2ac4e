"""``tracking.child_runs``: the lambdas of a tuned run logged as child runs, and the whole
grid on the parent run (:mod:`pipeline.runs.tuning_log`), against a real SQLite store."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pipeline.errors import ConfigError
from pipeline.runs import tuning_log
from pipeline.runs.tracking import TrackingSettings

#: a grid of 6 lambdas, an error metric (smaller is better) with a tie and a NaN
TUNING = {
    "lambdas": [1e-4, 1e-2, 1.0, 1e2, 1e4, 1e6],
    "metrics": {"mae": [0.5, 0.3, 0.3, 0.2, float("nan"), 0.9], "acc": [0.1] * 6},
    "greater_is_better": {"mae": False, "acc": True},
    "select_by": ["mae", "acc"],
    "selected": {
        "mae": {"index": 3, "lambda": 1e2, "value": 0.2},
        "acc": {"index": 0, "lambda": 1e-4, "value": 0.1},
    },
    "fit_seconds": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
    "n_iter": [5, 6, None, 8, 9, 10],
    "converged": [True, True, False, True, True, True],
}


@pytest.mark.parametrize(
    ("setting", "ties", "expected"),
    [
        ("best-1", "smallest", [3]),  # the selection's lambda
        ("best-2", "smallest", [1, 3]),  # the tie 0.3 at 1e-2 and 1: the smaller
        ("best-2", "largest", [2, 3]),  # ... the larger
        ("best-3", "smallest", [1, 2, 3]),
        ("best-5", "smallest", [0, 1, 2, 3, 5]),  # NaN last
        ("best-9", "smallest", [0, 1, 2, 3, 4, 5]),  # more than the grid: all of it
        ("all", "smallest", [0, 1, 2, 3, 4, 5]),
        ("none", "smallest", []),
    ],
)
def test_child_indices_pick_the_k_best_by_the_selection_metric(
    setting: str, ties: str, expected: list[int]
) -> None:
    assert tuning_log.child_indices(TUNING, setting, ties) == expected


def test_the_best_child_is_the_selected_lambda_and_greater_is_better() -> None:
    acc = {**TUNING, "select_by": ["acc"], "metrics": {"acc": [0.2, 0.9, 0.5, 0.9, 0.1, 0.0]}}
    assert tuning_log.child_indices(acc, "best-1") == [1]
    assert tuning_log.child_indices(acc, "best-1", "largest") == [3]
    assert tuning_log.child_indices(acc, "best-3") == [1, 2, 3]


@pytest.mark.parametrize("bad", ["best-0", "best", "best-x", "top-5", "ALL", 5, None])
def test_a_bad_child_runs_value_is_one_line_naming_the_key(bad) -> None:
    with pytest.raises(ConfigError) as err:
        TrackingSettings.from_config({"child_runs": bad})
    text = str(err.value)
    assert "\n" not in text and text.startswith("tracking.child_runs=")
    assert "best-<k>" in text and "all" in text and "none" in text


def test_the_default_is_the_three_best() -> None:
    assert TrackingSettings().child_runs == "best-3"
    assert TrackingSettings.from_config({"child_runs": "all"}).child_runs == "all"


def test_child_runs_and_the_grid_in_a_sqlite_store(tmp_path: Path, store_uri: str) -> None:
    """For each setting, the child runs of the chosen lambdas (FINISHED, named after the
    lambda, their params and validation metrics, the composition tags, found by the UI's
    metric filter), and on the parent run every lambda as a step of the metric histories
    ``tuning/*`` and a row of the table ``tuning/grid.json`` (shown by the UI as a
    table: MLflow's ``log_table``, readable with ``load_table``)."""
    from mlflow.tracking import MlflowClient

    from pipeline.runs.mlflow_tracker import MLflowTracker

    uri = store_uri
    tracker = MLflowTracker(TrackingSettings(uri=uri))
    parents = {}
    for setting in ("best-2", "all", "none"):
        tracker.settings = dataclasses.replace(tracker.settings, child_runs=setting)
        tags = {"set": "reals", "task": "ordinal"}
        with tracker.parent_run(task="ordinal", name=setting, tags=tags) as run_id:
            tracker.log_tuning(TUNING, ties="largest")
        parents[setting] = run_id
    client = MlflowClient(uri)
    exp = client.get_run(parents["all"]).info.experiment_id

    def children(parent: str, extra: str = "") -> list:
        runs = client.search_runs([exp], f"tags.mlflow.parentRunId = '{parent}'{extra}")
        return sorted(runs, key=lambda r: float(r.data.params["lambda"]))

    best = children(parents["best-2"])
    assert [float(r.data.params["lambda"]) for r in best] == [1.0, 1e2]  # ties: largest
    assert [r.info.run_name for r in best] == ["lambda=1", "lambda=100"]
    kid = best[0]
    assert kid.info.status == "FINISHED" and kid.data.tags["set"] == "reals"
    assert kid.data.metrics == {
        "val.mae": 0.3,
        "val.acc": 0.1,
        "fit_seconds": 0.3,
        "converged": 0.0,
    }
    assert len(children(parents["all"])) == 6
    assert "val.mae" not in children(parents["all"])[4].data.metrics  # NaN: not logged
    assert children(parents["none"]) == []
    found = children(parents["all"], " and metrics.`val.mae` < 0.35")
    assert [r.data.params["lambda"] for r in found] == ["0.01", "1.0", "100.0"]
    for parent in parents.values():
        history = client.get_metric_history(parent, "tuning/val.mae")
        assert sorted((m.step, m.value) for m in history) == [
            (0, 0.5),
            (1, 0.3),
            (2, 0.3),
            (3, 0.2),
            (5, 0.9),
        ]
        lams = client.get_metric_history(parent, "tuning/lambda")
        assert [m.value for m in sorted(lams, key=lambda m: m.step)] == TUNING["lambdas"]
        assert {"tuning/fit_seconds", "tuning/n_iter", "tuning/converged"} <= set(
            client.get_run(parent).data.metrics
        )
        logged = json.loads(client.get_run(parent).data.tags["mlflow.loggedArtifacts"])
        assert logged == [{"path": "tuning/grid.json", "type": "table"}]
    table = client.load_table(exp, "tuning/grid.json", run_ids=[parents["best-2"]])
    assert list(table["lambda"]) == TUNING["lambdas"]
    assert list(table["child_run"]) == [False, False, True, True, False, False]
    assert list(table["selected_by"]) == ["acc", "", "", "mae", "", ""]
    assert table["val.mae"].isna().tolist() == [False] * 4 + [True, False]


def test_the_grid_is_logged_once_and_again_only_on_a_new_run(
    tmp_path: Path, store_uri: str
) -> None:
    """The evaluate stage resumes the tune stage's run, which has the grid: ``ensure_grid``
    adds nothing (one step per lambda, not two); when that run is gone from the store the
    stage logs into a new run, and ``ensure_grid`` gives it the grid."""
    from mlflow.tracking import MlflowClient

    from pipeline.runs.mlflow_tracker import MLflowTracker

    uri = store_uri
    tracker = MLflowTracker(TrackingSettings(uri=uri, child_runs="none"))
    with tracker.parent_run(task="ordinal", name="tuned", done="SCHEDULED") as tuned:
        tracker.log_tuning(TUNING)
    with tracker.parent_run(task="ordinal", name="tuned", run_id=tuned) as resumed:
        tracker.ensure_grid(TUNING)
    with tracker.parent_run(task="ordinal", name="gone", run_id="0" * 32) as fresh:
        tracker.ensure_grid(TUNING)
    client = MlflowClient(uri)
    assert resumed == tuned and fresh != tuned
    for run_id in (tuned, fresh):
        lams = client.get_metric_history(run_id, tuning_log.GRID_METRIC)
        assert sorted(m.step for m in lams) == list(range(len(TUNING["lambdas"])))
