"""Child runs written to an MLflow database store in one transaction.

A tuned run has one child run per lambda of its grid (2,140 in ``make repro``). MLflow's
client writes one in three transactions (``create_run``, ``log_batch``,
``set_terminated``), each reading the experiment or the run back: about 11 ms of CPU per
child run, more than some of the fits. :func:`insert_child_runs` writes the rows those
calls write -- the run (FINISHED), its tags (the parent link, the run name, the
composition), its params, its metrics and their latest values -- for a whole grid in one
transaction of the store's own SQLAlchemy session (Core inserts, one per table), with
MLflow's validation of the keys and values. It is for MLflow's ``SqlAlchemyStore``
(SQLite, PostgreSQL, MySQL); a tracking server's client logs the child runs one by one
(:meth:`pipeline.runs.tracking.MLflowTracker.child_runs`).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any


def is_sql_store(store: Any) -> bool:
    """Whether ``store`` is MLflow's database tracking store (``SqlAlchemyStore``)."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    return isinstance(store, SqlAlchemyStore)


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def insert_child_runs(
    store: Any,
    experiment_id: str,
    parent_run_id: str,
    tags: Mapping[str, str],
    children: Sequence[tuple[str, Mapping[str, Any], Mapping[str, float]]],
    not_before: int = 0,
) -> list[str]:
    """Write ``children`` (``(name, params, metrics)``; non-finite metrics skipped) as
    FINISHED child runs of ``parent_run_id`` in ``experiment_id`` with the extra ``tags``,
    in one transaction of ``store`` (a ``SqlAlchemyStore``); return their run ids.

    A child run gets what ``MlflowClient.create_run(experiment_id, run_name=name,
    tags={"mlflow.parentRunId": parent, **tags})``, ``log_batch(run_id, metrics at the
    start time and step 0, params)`` and ``set_terminated(run_id)`` give it: the same rows
    of the ``runs``, ``tags``, ``params``, ``metrics`` and ``latest_metrics`` tables
    (user ``unknown``, source UNKNOWN, artifact URI under the experiment's). The start
    times are a millisecond apart, in order, up to now but not before ``not_before`` (the
    parent run's start, in ms), and each run ends when it starts (the fits ran before:
    their seconds are the ``fit_seconds`` metric)."""
    from mlflow.entities import LifecycleStage, Metric, Param, RunStatus, RunTag, SourceType
    from mlflow.store.tracking.dbmodels.models import (
        SqlLatestMetric,
        SqlMetric,
        SqlParam,
        SqlRun,
        SqlTag,
    )
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID, MLFLOW_RUN_NAME
    from mlflow.utils.uri import append_to_uri_path
    from mlflow.utils.validation import (
        _validate_batch_log_data,
        _validate_batch_log_limits,
        _validate_param_keys_unique,
    )

    experiment = store.get_experiment(experiment_id)
    store._check_experiment_is_active(experiment)
    first = max(int(time.time() * 1000) - len(children) + 1, int(not_before))
    rows: dict[Any, list[dict[str, Any]]] = {
        table: [] for table in (SqlRun, SqlTag, SqlParam, SqlMetric, SqlLatestMetric)
    }
    ids = []
    for n, (name, params, metrics) in enumerate(children):
        run_id = uuid.uuid4().hex
        start = first + n
        mlist = [Metric(k, float(v), start, 0) for k, v in metrics.items() if _finite(v)]
        plist = [Param(k, str(v)) for k, v in params.items()]
        tlist = [
            RunTag(MLFLOW_PARENT_RUN_ID, parent_run_id),
            *(RunTag(k, str(v)) for k, v in tags.items() if k != MLFLOW_PARENT_RUN_ID),
            RunTag(MLFLOW_RUN_NAME, name),
        ]
        mlist, plist, tlist = _validate_batch_log_data(mlist, plist, tlist)
        _validate_batch_log_limits(mlist, plist, tlist)
        _validate_param_keys_unique(plist)
        rows[SqlRun].append(
            {
                "name": name,
                "artifact_uri": append_to_uri_path(
                    experiment.artifact_location, run_id, store.ARTIFACTS_FOLDER_NAME
                ),
                "run_uuid": run_id,
                "experiment_id": int(experiment_id),
                "source_type": SourceType.to_string(SourceType.UNKNOWN),
                "source_name": "",
                "entry_point_name": "",
                "user_id": "unknown",
                "status": RunStatus.to_string(RunStatus.FINISHED),
                "start_time": start,
                "end_time": start,
                "deleted_time": None,
                "source_version": "",
                "lifecycle_stage": LifecycleStage.ACTIVE,
            }
        )
        rows[SqlTag] += [{"key": t.key, "value": t.value, "run_uuid": run_id} for t in tlist]
        rows[SqlParam] += [{"key": p.key, "value": p.value, "run_uuid": run_id} for p in plist]
        # each key once (a mapping), at one step and time: its only value is its latest
        metric_rows = [_row(m, store, run_id) for m in mlist]
        rows[SqlMetric] += metric_rows
        rows[SqlLatestMetric] += metric_rows
        ids.append(run_id)
    # SQLAlchemy Core inserts, one executemany per table (the ORM's unit of work took 20 ms
    # for a grid of ten child runs, 2 ms this way): the runs first, for the foreign keys
    with store.ManagedSessionMaker(read_only=False) as session:
        for table, values in rows.items():
            if values:
                session.execute(table.__table__.insert(), values)
    return ids


def _row(metric: Any, store: Any, run_id: str) -> dict[str, Any]:
    """A ``metrics`` / ``latest_metrics`` row of ``metric`` (NaN stored as MLflow does)."""
    is_nan, value = store.sanitize_metric_value(metric.value)
    return {
        "key": metric.key,
        "value": value,
        "timestamp": metric.timestamp,
        "step": metric.step,
        "is_nan": is_nan,
        "run_uuid": run_id,
    }
