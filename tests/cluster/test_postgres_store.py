"""The pipeline's own writes to a PostgreSQL tracking store (``tracking.uri`` a
``postgresql+psycopg2://`` URI, no MLflow server): a throwaway PostgreSQL cluster on
127.0.0.1, stopped by PID."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.cluster import services
from pipeline.runs.tracking import MLflowTracker, Tracker, TrackingSettings

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
