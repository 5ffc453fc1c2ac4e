"""Child runs and logged models written to an MLflow database store in one transaction.

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

The evaluate stage logs every refitted model (270 in ``make repro``): MLflow's client
writes a logged model in five transactions; :func:`insert_logged_model` writes the same
rows in one (:meth:`pipeline.runs.tracking.MLflowTracker.log_model_files`).
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


def insert_logged_model(
    store: Any,
    experiment: Any,
    run_id: str,
    name: str,
    params: Mapping[str, str],
    tags: Mapping[str, str],
    metrics: Sequence[Any],
    step: int = 0,
    model_id: str | None = None,
) -> tuple[str, str]:
    """Write a READY logged model ``name`` of run ``run_id`` (in ``experiment``, an
    ``mlflow.entities.Experiment``) to ``store`` (a ``SqlAlchemyStore``) in one
    transaction; return its id and artifact location.

    The rows are those that ``MlflowClient`` writes, in five transactions, when MLflow's
    ``Model.log`` logs a model of a run whose metrics are already logged:
    ``create_logged_model(experiment, name, run_id, tags, params)`` (the model, PENDING,
    its params and tags), ``log_outputs(run_id, [LoggedModelOutput(model_id, step)])`` (the
    run's output link), ``log_batch(run_id, metrics)`` of ``metrics`` (``Metric``\\ s of the
    run, each given ``model_id``: they exist as the run's metrics already, so only the
    ``logged_model_metrics`` rows are new; the client first tries to insert them again,
    fails on the primary key, rolls back and queries them: 20 ms per model) and
    ``finalize_logged_model(model_id, READY)``. Write the model's files to the artifact
    location first: a model is READY only once its files are there."""
    from mlflow.entities import LifecycleStage, LoggedModelStatus
    from mlflow.store.tracking.dbmodels.models import (
        SqlInput,
        SqlLoggedModel,
        SqlLoggedModelMetric,
        SqlLoggedModelParam,
        SqlLoggedModelTag,
        SqlRun,
    )
    from mlflow.utils.time import get_current_time_millis
    from mlflow.utils.validation import _validate_logged_model_name

    _validate_logged_model_name(name)
    store._check_experiment_is_active(experiment)
    model_id = model_id or new_model_id()
    location = model_artifact_location(store, experiment.artifact_location, model_id)
    experiment_id = int(experiment.experiment_id)
    now = get_current_time_millis()
    model = {
        "model_id": model_id,
        "experiment_id": experiment_id,
        "name": name,
        "artifact_location": location,
        "creation_timestamp_ms": now,
        "last_updated_timestamp_ms": now,
        "model_type": None,
        "status": LoggedModelStatus.READY.to_int(),
        "lifecycle_stage": LifecycleStage.ACTIVE,
        "source_run_id": run_id,
    }
    link = {
        "input_uuid": uuid.uuid4().hex,
        "source_type": "RUN_OUTPUT",
        "source_id": run_id,
        "destination_type": "MODEL_OUTPUT",
        "destination_id": model_id,
        "step": step,
    }
    rows: dict[Any, list[dict[str, Any]]] = {
        SqlLoggedModel: [model],
        SqlLoggedModelParam: [
            {"model_id": model_id, "experiment_id": experiment_id, "param_key": k, "param_value": v}
            for k, v in params.items()
        ],
        SqlLoggedModelTag: [
            {"model_id": model_id, "experiment_id": experiment_id, "tag_key": k, "tag_value": v}
            for k, v in tags.items()
        ],
        SqlInput: [link],
        SqlLoggedModelMetric: [
            {
                "model_id": model_id,
                "metric_name": m.key,
                "metric_timestamp_ms": m.timestamp,
                "metric_step": m.step,
                "metric_value": store.sanitize_metric_value(m.value)[1],
                "experiment_id": experiment_id,
                "run_id": run_id,
                "dataset_uuid": None,
                "dataset_name": m.dataset_name,
                "dataset_digest": m.dataset_digest,
            }
            for m in _unique(metrics)
        ],
    }
    with store.ManagedSessionMaker(read_only=False) as session:
        stage = session.query(SqlRun.lifecycle_stage).filter_by(run_uuid=run_id).scalar()
        if stage != LifecycleStage.ACTIVE:  # MLflow's errors (_get_run, _check_run_is_active)
            from mlflow.exceptions import MlflowException
            from mlflow.protos.databricks_pb2 import (
                INVALID_PARAMETER_VALUE,
                RESOURCE_DOES_NOT_EXIST,
            )

            if stage is None:
                raise MlflowException(f"Run with id={run_id} not found", RESOURCE_DOES_NOT_EXIST)
            raise MlflowException(
                f"The run {run_id} must be in the 'active' state. Current state is {stage}.",
                INVALID_PARAMETER_VALUE,
            )
        for table, values in rows.items():
            if values:
                session.execute(table.__table__.insert(), values)
    return model_id, location


def new_model_id() -> str:
    """A logged model id as MLflow's stores make them (``m-`` and 32 hex digits)."""
    return f"m-{uuid.uuid4().hex}"


def model_artifact_location(store: Any, experiment_location: str, model_id: str) -> str:
    """Where ``store`` keeps the files of logged model ``model_id`` of an experiment whose
    artifact location is ``experiment_location`` (``<location>/models/<id>/artifacts``)."""
    from mlflow.utils.uri import append_to_uri_path

    return append_to_uri_path(
        experiment_location, store.MODELS_FOLDER_NAME, model_id, store.ARTIFACTS_FOLDER_NAME
    )


def _unique(metrics: Sequence[Any]) -> list[Any]:
    """``metrics`` without repeats, in order (MLflow's ``log_batch`` drops them)."""
    seen: set[Any] = set()
    out = []
    for m in metrics:
        if m not in seen:
            seen.add(m)
            out.append(m)
    return out
