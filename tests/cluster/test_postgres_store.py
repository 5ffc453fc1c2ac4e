"""The pipeline's own writes to a PostgreSQL tracking store (``tracking.uri`` a
``postgresql+psycopg2://`` URI, no MLflow server): a throwaway PostgreSQL cluster on
127.0.0.1, stopped by PID."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.cluster import services
from pipeline.runs.tracking import (
    MLflowTracker,
    Tracker,
    TrackingSettings,
    prepare_model,
    run_params_and_step_metrics,
)

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]


@pytest.fixture(scope="module")
def postgres_uri() -> Iterator[str]:
    if services.pg_bindir() is None:
        pytest.skip("PostgreSQL server binaries (initdb, postgres) are not installed")
    with services.postgres() as uri:
        yield uri


def test_child_runs_in_one_transaction_on_postgresql(postgres_uri: str, tmp_path: Path) -> None:
    """A grid's child runs written in one transaction
    (:func:`pipeline.runs.mlflow_bulk.insert_child_runs`) on PostgreSQL are the client's
    runs: the same params, metrics (NaN skipped), tags and parent link, FINISHED, found by
    the UI's metric filter; a new parent run's orphan search works on the store."""
    from mlflow.tracking import MlflowClient

    tracker = MLflowTracker(TrackingSettings(uri=postgres_uri, artifacts=str(tmp_path)))
    children = [
        (f"lambda={lam:g}", {"lambda": lam}, {"val.mae": 0.5 - 0.1 * i, "bad": float("nan")})
        for i, lam in enumerate([1e-4, 1.0, 1e4])
    ]
    with tracker.parent_run(task="ordinal", name="p", tags={"set": "reals"}) as parent:
        one_by_one = Tracker.child_runs(tracker, children)
        at_once = tracker.child_runs(children)
    client = MlflowClient(postgres_uri)
    for a, b in zip(one_by_one, at_once, strict=True):
        ra, rb = client.get_run(a), client.get_run(b)
        assert rb.data.to_dictionary() == ra.data.to_dictionary()
        assert rb.data.tags["mlflow.parentRunId"] == parent and rb.data.tags["set"] == "reals"
        assert rb.info.status == "FINISHED" and rb.info.run_name == ra.info.run_name
    exp = client.get_run(parent).info.experiment_id
    found = client.search_runs(
        [exp], filter_string=f"tags.mlflow.parentRunId = '{parent}' and metrics.`val.mae` < 0.45"
    )
    assert sorted(r.info.run_id for r in found) == sorted([*one_by_one[1:], *at_once[1:]])


def test_a_logged_model_in_one_transaction_on_postgresql(postgres_uri: str, tmp_path: Path) -> None:
    """A model logged to a database store in one transaction
    (:func:`pipeline.runs.mlflow_bulk.insert_logged_model`) on PostgreSQL is MLflow's
    client's logged model (:meth:`MLflowTracker._log_model_client`): READY, the same name,
    params, metrics linked from the run, tags and run output; it loads and predicts."""
    import numpy as np
    from mlflow.entities import LoggedModelStatus
    from mlflow.tracking import MlflowClient
    from sklearn.linear_model import Ridge

    X = np.arange(12.0).reshape(6, 2)
    model = Ridge().fit(X, X @ [1.0, -2.0])
    tracker = MLflowTracker(TrackingSettings(uri=postgres_uri, artifacts=str(tmp_path)))
    saved = prepare_model(model, tmp_path / "saved", X[:2])
    logged = {}
    for how in ("rows", "client"):
        with tracker.parent_run(task="ordinal", name=how, params={"p": "1"}) as run_id:
            tracker.log_metrics({"test.mae": 0.25, "curve": 4.0})
            tracker.log_metrics({"curve": 3.0}, step=1)
            if how == "rows":
                tracker.log_model(model, "ridge", X_example=X[:2])
            else:  # MLflow's client calls (as to a tracking server), the same saved files
                read = run_params_and_step_metrics(tracker.client, run_id)
                local = str(tmp_path / "client")
                tracker._log_model_client(saved, local, "ridge", run_id, *read)
        logged[how] = run_id
    client = MlflowClient(postgres_uri)
    exp = client.get_run(logged["rows"]).info.experiment_id
    a, b = (
        client.search_logged_models([exp], filter_string=f"source_run_id = '{logged[h]}'")[0]
        for h in ("rows", "client")
    )
    assert a.status == b.status == LoggedModelStatus.READY
    assert a.name == b.name == "ridge" and a.params == b.params == {"p": "1"}
    assert a.tags == b.tags
    assert (
        sorted((m.key, m.value, m.step) for m in a.metrics)
        == sorted((m.key, m.value, m.step) for m in b.metrics)
        == [("curve", 4.0, 0), ("test.mae", 0.25, 0)]
    )
    outputs = client.get_run(logged["rows"]).outputs.model_outputs
    assert [o.model_id for o in outputs] == [a.model_id]
    import mlflow.sklearn

    loaded = mlflow.sklearn.load_model(f"models:/{a.model_id}")
    np.testing.assert_allclose(loaded.predict(X), model.predict(X))
