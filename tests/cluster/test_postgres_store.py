"""The pipeline's writes to a PostgreSQL tracking store (``tracking.uri`` a
``postgresql+psycopg2://`` URI, no MLflow server; MLflow's public client only): an empty
database in the session's throwaway PostgreSQL cluster on 127.0.0.1 (conftest.py), stopped
by PID."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.runs.mlflow_tracker import MLflowTracker
from pipeline.runs.tracking import TrackingSettings

from .conftest import fresh_database

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]


@pytest.fixture(scope="module")
def postgres_uri(postgres_cluster: str) -> str:
    """An empty database (the store's schema is created by the test's first write) in the
    session's PostgreSQL cluster, which the tracking server's tests share."""
    return fresh_database(postgres_cluster, "store_test")


def test_a_tuned_and_evaluated_run_on_postgresql(postgres_uri: str, tmp_path: Path) -> None:
    """A tuned run's grid (``tracking.child_runs: best-2``: the two best lambdas as
    FINISHED child runs, found by the UI's metric filter) and a logged model (READY, its
    params and the run's step-0 metrics, the run's output; it loads and predicts) on
    PostgreSQL; a new parent run's orphan search works on the store."""
    import mlflow.sklearn
    import numpy as np
    from mlflow.entities import LoggedModelStatus
    from mlflow.tracking import MlflowClient
    from sklearn.linear_model import Ridge

    X = np.arange(12.0).reshape(6, 2)
    model = Ridge().fit(X, X @ [1.0, -2.0])
    settings = TrackingSettings(uri=postgres_uri, artifacts=str(tmp_path), child_runs="best-2")
    tracker = MLflowTracker(settings)
    tuning = {
        "lambdas": [1e-4, 1.0, 1e4],
        "metrics": {"mae": [0.5, 0.3, float("nan")]},
        "greater_is_better": {"mae": False},
        "select_by": ["mae"],
        "selected": {"mae": {"index": 1, "lambda": 1.0, "value": 0.3}},
    }
    with tracker.parent_run(task="ordinal", name="p", tags={"set": "reals"}) as parent:
        tracker.log_tuning(tuning)
        tracker.log_metrics({"test.mae": 0.25})
        tracker.log_model(model, "ridge", X_example=X[:2])
    client = MlflowClient(postgres_uri)
    exp = client.get_run(parent).info.experiment_id
    kids = client.search_runs([exp], filter_string=f"tags.mlflow.parentRunId = '{parent}'")
    assert sorted(k.data.params["lambda"] for k in kids) == ["0.0001", "1.0"]
    assert {k.info.status for k in kids} == {"FINISHED"}
    found = client.search_runs(
        [exp], filter_string=f"tags.mlflow.parentRunId = '{parent}' and metrics.`val.mae` < 0.45"
    )
    assert [r.data.params["lambda"] for r in found] == ["1.0"]
    (logged,) = client.search_logged_models([exp], filter_string=f"source_run_id = '{parent}'")
    assert logged.status == LoggedModelStatus.READY and logged.name == "ridge"
    assert [(m.key, m.value) for m in logged.metrics] == [("test.mae", 0.25)]
    outputs = client.get_run(parent).outputs.model_outputs
    assert [o.model_id for o in outputs] == [logged.model_id]
    loaded = mlflow.sklearn.load_model(f"models:/{logged.model_id}")
    np.testing.assert_allclose(loaded.predict(X), model.predict(X))
