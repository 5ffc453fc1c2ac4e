"""The tracker that logs to MLflow, through MLflow's public API only.

:class:`MLflowTracker` implements :class:`pipeline.runs.tracking.Tracker` with
``mlflow``'s fluent functions (the active parent run) and ``MlflowClient`` (child runs,
logged models, batches): no store internals, so a new MLflow release or schema migration
cannot be broken by this project writing rows behind MLflow's back. The calls are few per
run: a parent run's metrics, params and tags are kept and written when it ends, in one
``log_batch`` (in chunks within MLflow's limits; a logged model's copies of the run's
metrics with them), a tuned run's grid table in one artifact call (the file and the run
tag ``log_table`` writes, the tag with the batch) and its child runs in
three calls each (``create_run``, ``log_batch``, ``set_terminated``; 3 child runs by
default, ``tracking.child_runs``), a model in four (``create_logged_model``,
``log_outputs``, ``log_model_artifacts``, ``finalize_logged_model``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config.settings import TrackingSettings
from ..errors import DiskError, TrackingError
from . import run_lifecycle, tuning_log
from .artifact_faults import disk_fault, local_path, no_half_file
from .run_lifecycle import CLOSED_TAG, PARENT_TAG, owner_tags
from .store import (
    artifact_location,
    check_driver,
    connection_uri,
    get_or_create_experiment,
    init_store,
    is_store_error,
    probe,
    quiet_store_full,
    resolve_uri,
    store_error,
)
from .tracking import Tracker

log = logging.getLogger(__name__)

#: parent-run tags copied to the child runs (so the UI can filter the children too)
CHILD_TAGS = ("task", "dataset", "set", "geometry", "decoder", "model", "composition", "group")
#: the parent run's tags a logged model gets too (what ``Model.log`` resolves: who, where)
CONTEXT_TAGS = ("mlflow.user", "mlflow.source.name", "mlflow.source.type", "mlflow.source.git")
#: MLflow's limits per ``log_batch`` call (metrics, params, tags), with a margin
BATCH = (900, 50, 50)


class MLflowTracker(Tracker):
    """Logs to MLflow (see :mod:`pipeline.runs.tracking` for the layout)."""

    enabled = True

    def __init__(self, settings: TrackingSettings) -> None:
        super().__init__(settings)
        self.uri = resolve_uri(settings.uri)
        probe(self.uri, settings.probe_timeout)
        check_driver(self.uri)
        os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
        # A server that dies mid-run: a few quick retries, not minutes of backoff.
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
        import mlflow
        from mlflow import MlflowClient

        self.mlflow = mlflow
        quiet_store_full()
        store_uri = connection_uri(self.uri)
        try:
            init_store(store_uri, settings.probe_timeout)
            mlflow.set_tracking_uri(store_uri)
            self.client = MlflowClient(tracking_uri=store_uri)
        except Exception as exc:  # MlflowException, SQLAlchemy, requests
            if not is_store_error(exc):
                raise
            raise store_error(self.uri, exc, "opening the store") from None
        self.experiments: dict[str, str] = {}
        self.exp_id: str | None = None
        self.child_tags: dict[str, str] = {}
        #: the active parent run's params, its context tags, its artifact URI, the metrics
        #: logged at step 0 by this process (what a logged model copies)
        self.run_params: dict[str, str] = {}
        self.context_tags: dict[str, str] = {}
        self.artifact_uri: str | None = None
        #: the active run's tag listing its tables (``mlflow.loggedArtifacts``)
        self.logged_artifacts: str | None = None
        #: whether the active run has the tuning grid's metric histories
        self.has_grid = False
        self.step0: dict[str, Any] = {}
        #: what the run's next ``log_batch`` writes (:meth:`flush`): metrics, params, tags
        self.pending: list[Any] = []
        self.pending_params: dict[str, str] = {}
        self.pending_tags: dict[str, str] = {}

    def experiment_id(self, task: str, metrics: Sequence[str] = ()) -> str:
        """The id of ``<prefix>/<task>``, created (once, race-free) when missing, its view
        made of the task's ``metrics``."""
        name = f"{self.settings.experiment_prefix}/{task}"
        if name not in self.experiments:
            self.experiments[name] = get_or_create_experiment(
                self.client, name, artifact_location(self.uri, self.settings.artifacts)
            )
            self.tag_experiment(self.experiments[name], task, metrics)
        return self.experiments[name]

    def tag_experiment(self, exp_id: str, task: str, metrics: Sequence[str] = ()) -> None:
        """The tags of :func:`pipeline.runs.mlflow_view.experiment_tags` (model-training view,
        primary metric, description, saved runs view), set once: a user's edits stay."""
        from .mlflow_view import experiment_tags

        tags = experiment_tags(task, metrics)
        if not tags:
            return
        have = self.client.get_experiment(exp_id).tags
        for key, value in tags.items():
            if key in have:
                continue
            try:
                self.client.set_experiment_tag(exp_id, key, value)
            except Exception:  # a concurrent job set it first (a database's unique key)
                if key not in self.client.get_experiment(exp_id).tags:
                    raise

    # ------------------------------------------------------------------ the parent run

    @contextlib.contextmanager
    def parent_run(
        self,
        *,
        task: str,
        name: str,
        tags: Mapping[str, str] | None = None,
        params: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        done: str = "FINISHED",
        metrics: Sequence[str] = (),
    ) -> Iterator[str | None]:
        from ..lifecycle import critical

        try:
            with critical():
                run = self.start(task, name, tags, params, run_id, metrics)
        except Exception as exc:
            if not is_store_error(exc):
                raise
            raise store_error(self.uri or "", exc, f"starting the run {name!r}") from None
        self.run_id = run.info.run_id
        try:
            yield self.run_id
        except KeyboardInterrupt as exc:  # SIGINT, or SIGTERM (pipeline.lifecycle.Terminated)
            from ..lifecycle import signal_name

            self.end("KILLED", kill_children=True, quiet=True, why=f"signal {signal_name(exc)}")
            raise
        except BaseException:  # TrackingError (the store failed: ending may fail too) ...
            self.end("FAILED", quiet=True)
            raise
        else:
            self.end(done)
        finally:
            self.run_id = None

    def start(
        self,
        task: str,
        name: str,
        tags: Mapping[str, str] | None,
        params: Mapping[str, Any] | None,
        run_id: str | None,
        metrics: Sequence[str] = (),
    ) -> Any:
        """Resume run ``run_id`` (a new run when it is gone) or start a new one, marking
        the orphans of its name KILLED (:func:`pipeline.runs.run_lifecycle.orphans`)."""
        mlflow = self.mlflow
        exp_id = self.experiment_id(task, metrics)
        run = None
        if run_id is not None:  # resumed (MLflow reads the run: no lookup of ours first)
            try:
                run = mlflow.start_run(run_id=run_id)
            except Exception:  # MlflowException (no such run) or a store error
                log.warning("MLflow run %s not found in %s: logging to a new run", run_id, self.uri)
        all_tags = dict(tags or {})
        if self.settings.group:
            all_tags.setdefault("group", self.settings.group)
        all_tags.update(owner_tags())
        self.run_params = {k: str(v) for k, v in (params or {}).items()}
        if run is None:
            stale = run_lifecycle.orphans(self.client, exp_id, name)
            run = mlflow.start_run(experiment_id=exp_id, run_name=name, tags=all_tags)
            for old in stale:
                run_lifecycle.supersede(self.client, old, run.info.run_id)
            self.pending_params, self.pending_tags = dict(self.run_params), {}
        else:  # its params are logged; its tags updated
            self.pending_params = {}
            self.pending_tags = {k: str(v) for k, v in all_tags.items()}
            self.run_params = {**run.data.params, **self.run_params}
            all_tags = {**run.data.tags, **all_tags}
        self.exp_id = exp_id
        self.child_tags = {k: str(v) for k, v in all_tags.items() if k in CHILD_TAGS}
        self.context_tags = {
            k: str(v) for k, v in run.data.tags.items() if k.startswith(CONTEXT_TAGS)
        }
        self.artifact_uri = run.info.artifact_uri
        self.logged_artifacts = run.data.tags.get(tuning_log.LOGGED_ARTIFACTS)
        self.has_grid = tuning_log.GRID_METRIC in run.data.metrics  # a resumed tuned run
        self.step0, self.pending = {}, []
        return run

    def end(
        self,
        status: str,
        *,
        kill_children: bool = False,
        quiet: bool = False,
        why: str | None = None,
    ) -> None:
        """End the active parent run with ``status`` (and its children: KILLED) after
        writing what is pending (:meth:`flush`, asynchronous writes: a run whose data
        cannot be written ends FAILED, and the error is raised); ``why``: the tag
        :data:`~pipeline.runs.run_lifecycle.CLOSED_TAG` of the run and of its children
        still running (what stopped them: ``signal SIGTERM``)."""
        from ..lifecycle import critical

        run_id = self.run_id
        unwritten: BaseException | None = None
        try:
            with critical():
                try:
                    self.flush()
                    with self.store(f"logging to run {run_id}"):
                        self.mlflow.flush_async_logging()
                except (TrackingError, DiskError) as exc:
                    unwritten, status = exc, "KILLED" if status == "KILLED" else "FAILED"
                if why is not None and run_id is not None:
                    self.client.set_tag(run_id, CLOSED_TAG, why)
                if kill_children and run_id is not None:
                    if self.exp_id is None:
                        raise RuntimeError(f"the run {run_id} has no experiment")
                    run_lifecycle.kill_children(self.client, self.exp_id, run_id, why)
                self.mlflow.end_run(status)
        except Exception as exc:
            if quiet or unwritten is not None:
                log.debug("could not end run %s as %s: %s", run_id, status, exc)
            else:
                raise store_error(
                    self.uri or "", exc, f"ending the run {run_id} as {status}"
                ) from None
        finally:
            self.pending, self.pending_params, self.pending_tags = [], {}, {}
            self.artifact_uri = None
        if unwritten is not None and not quiet:
            raise unwritten

    # ------------------------------------------------------------------ the tuning grid

    def log_tuning(self, tuning: Mapping[str, Any], ties: str = "smallest") -> None:
        """The grid as metric histories of the parent run (with its batch) and the table
        ``tuning/grid.json`` (the file and run tag of ``log_table``, written with one
        artifact call and the batch); the lambdas ``tracking.child_runs`` picks as child
        runs (:mod:`pipeline.runs.tuning_log`)."""
        if self.run_id is None or self.exp_id is None:
            raise TrackingError("log_tuning needs an active parent run")
        children = tuning_log.child_indices(tuning, self.settings.child_runs, ties)
        tag = tuning_log.logged_artifacts_tag(self.logged_artifacts)
        self.logged_artifacts, self.has_grid = tag, True
        self.log_batch(tuning_log.grid_steps(tuning), tags={tuning_log.LOGGED_ARTIFACTS: tag})
        text = tuning_log.table_text(tuning_log.grid_table(tuning, children))
        with (
            self.store(f"logging the tuning grid of run {self.run_id}"),
            self.artifact(tuning_log.TABLE),
        ):
            self.mlflow.log_text(text, tuning_log.TABLE)
        for i in children:
            self.child_run(*tuning_log.child_run(tuning, i))

    def ensure_grid(self, tuning: Mapping[str, Any]) -> None:
        if self.run_id is not None and not self.has_grid:
            self.has_grid = True
            self.log_batch(tuning_log.grid_steps(tuning))

    def child_run(self, name: str, params: Mapping[str, Any], metrics: Mapping[str, float]) -> str:
        """A FINISHED child run of the active parent run: ``create_run``, ``log_batch``,
        ``set_terminated``. Synchronous: MLflow's asynchronous ``log_batch`` measured no
        faster here (a SQLite store: one writer), and its thread would outlive the call
        in a stage process that forks workers."""
        from mlflow.entities import Metric, Param

        if self.run_id is None or self.exp_id is None:
            raise RuntimeError(f"the child run {name} needs a started parent run")
        with self.store(f"logging the child run {name!r} of run {self.run_id}"):
            child = self.client.create_run(
                self.exp_id, run_name=name, tags={PARENT_TAG: self.run_id, **self.child_tags}
            )
            ts = child.info.start_time
            self.client.log_batch(
                child.info.run_id,
                metrics=[Metric(k, float(v), ts, 0) for k, v in metrics.items() if finite(v)],
                params=[Param(k, str(v)) for k, v in params.items()],
            )
            self.client.set_terminated(child.info.run_id)
        return child.info.run_id

    # ------------------------------------------------------------------ metrics, params, tags

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        self.log_batch([(metrics, step)])

    def log_batch(
        self,
        steps: Sequence[tuple[Mapping[str, float], int | None]] = (),
        params: Mapping[str, Any] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        """Keep the metrics (non-finite ones skipped), params and tags for the run's
        ``log_batch`` (:meth:`flush`, when the run ends): one write instead of one per
        :meth:`log_metrics` step, :meth:`log_params` and :meth:`set_tags`, the same rows.
        A param given again with another value is written at once (MLflow refuses it)."""
        from mlflow.entities import Metric

        if self.run_id is None:
            raise TrackingError("log_batch needs an active parent run")
        # a millisecond apart per call, as the calls would be: a metric logged twice at a
        # step keeps both values, the later one its latest (MLflow: max step, timestamp)
        ts = int(time.time() * 1000) - len(steps)
        rows = [
            Metric(k, float(v), ts + n, int(step or 0))
            for n, (metrics, step) in enumerate(steps)
            for k, v in metrics.items()
            if finite(v)
        ]
        for m in rows:
            if m.step == 0 and not m.key.startswith(tuning_log.PREFIX + "/"):
                self.step0[m.key] = m
        self.pending.extend(rows)
        for k, v in (params or {}).items():
            if self.pending_params.get(k, str(v)) != str(v):
                self.flush()
            self.pending_params[k] = self.run_params[k] = str(v)
        self.pending_tags.update({k: str(v) for k, v in (tags or {}).items()})

    def flush(self) -> None:
        """Write what :meth:`log_batch` kept: ``MlflowClient.log_batch`` of the active run,
        in chunks of :data:`BATCH`."""
        from mlflow.entities import Param, RunTag

        rows = self.pending
        plist = [Param(k, v) for k, v in self.pending_params.items()]
        tlist = [RunTag(k, v) for k, v in self.pending_tags.items()]
        self.pending, self.pending_params, self.pending_tags = [], {}, {}
        if self.run_id is None:
            return
        nm, np_, nt = BATCH
        with self.store(f"logging metrics, params and tags to run {self.run_id}"):
            while rows or plist or tlist:
                self.client.log_batch(
                    self.run_id, metrics=rows[:nm], params=plist[:np_], tags=tlist[:nt]
                )
                rows, plist, tlist = rows[nm:], plist[np_:], tlist[nt:]

    def set_tags(self, tags: Mapping[str, str]) -> None:
        self.log_batch(tags=tags)

    def log_params(self, params: Mapping[str, Any]) -> None:
        self.log_batch(params=params)

    def log_input(self, dataset: Any, tags: Mapping[str, str] | None = None) -> None:
        """``mlflow.log_input``. MLflow's store inserts a dataset it did not find, so two jobs
        logging the same dataset (experiment, name, digest) at once can both insert it and
        the second gets a unique-key error (PostgreSQL ``dataset_pk``): then the dataset
        exists, and the call is retried once (it only links it to the run)."""
        with self.store(f"logging the dataset of run {self.run_id}"):
            try:
                self.mlflow.log_input(dataset, tags=dict(tags or {}))
            except Exception as exc:
                text = str(exc).lower()
                if "duplicate key" not in text and "unique constraint" not in text:
                    raise
                self.mlflow.log_input(dataset, tags=dict(tags or {}))

    # ------------------------------------------------------------------ models

    def log_model(
        self, model: Any, name: str, X_example: Any = None, registered_name: str | None = None
    ) -> None:
        """:func:`~pipeline.runs.model_packaging.prepare_model`, then the logged model of
        :meth:`log_prepared`: what ``mlflow.sklearn.log_model`` logs, without MLflow's check
        that the input example serves (it reloads the model just saved and predicts the
        example, a third of the call's time; the signature predicted the same rows)."""
        import tempfile

        from ..fileio import writing
        from .model_packaging import prepare_model

        with tempfile.TemporaryDirectory(prefix="projloss-model-") as tmp:
            with writing(Path(tmp)):  # a full temporary directory: one DiskError line
                path = prepare_model(model, Path(tmp) / "model", X_example)
            self.log_prepared(path, name, registered_name)

    def log_model_files(
        self, files: Mapping[str, bytes], name: str, registered_name: str | None = None
    ) -> None:
        import tempfile

        from ..fileio import writing

        with tempfile.TemporaryDirectory(prefix="projloss-model-") as tmp:
            path = Path(tmp) / "model"
            with writing(path):  # a full temporary directory: one DiskError line
                for rel, data in files.items():
                    target = path / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
            self.log_prepared(path, name, registered_name)

    def log_prepared(self, path: Path, name: str, registered_name: str | None) -> None:
        """Log the model saved in ``path`` to the active run as MLflow's ``Model.log``
        does, with ``MlflowClient``'s public calls: a logged model (``create_logged_model``:
        named ``name``, with the run's params and context tags) linked to the run as an
        output (``log_outputs``), its files (``log_model_artifacts``: the saved ones, their
        MLmodel with the logged model's identity), READY (``finalize_logged_model``; FAILED
        when a step fails), registered as ``registered_name`` when ``tracking.register``
        (``mlflow.register_model``). The run's metrics logged at step 0 by this process
        are copied onto the model (``Model.log`` reads every metric's history back from the
        store; here they are known) and logged with the run's next batch."""
        import tempfile

        from mlflow.entities import LoggedModelOutput, Metric

        from .model_packaging import model_files

        if not self.settings.register:
            registered_name = None
        run_id, exp_id = self.run_id, self.exp_id
        if run_id is None or exp_id is None:
            raise TrackingError("logging a model needs an active parent run")
        with (
            self.store(f"logging the model {name!r} of run {run_id}"),
            tempfile.TemporaryDirectory(prefix="projloss-model-") as tmp,
        ):
            local = os.path.join(tmp, "model")
            model = self.client.create_logged_model(
                exp_id,
                name=name,
                source_run_id=run_id,
                tags=self.context_tags,
                params=self.run_params,
            )
            try:
                self.client.log_outputs(run_id, [LoggedModelOutput(model.model_id, step=0)])
                model_files(local, path, run_id, model.model_id, model.artifact_location)
                self.client.log_model_artifacts(model.model_id, local)
            except BaseException:
                with contextlib.suppress(Exception):
                    self.client.finalize_logged_model(model.model_id, "FAILED")
                raise
            self.client.finalize_logged_model(model.model_id, "READY")
            self.pending.extend(
                Metric(m.key, m.value, m.timestamp, m.step, model_id=model.model_id)
                for m in self.step0.values()
            )
            if registered_name is not None:
                self.mlflow.register_model(f"models:/{model.model_id}", registered_name)

    # ------------------------------------------------------------------ artifacts

    def log_figure(self, figure: Any, artifact_file: str) -> None:
        with (
            self.store(f"logging {artifact_file} to run {self.run_id}"),
            self.artifact(artifact_file),
        ):
            self.mlflow.log_figure(figure, artifact_file)

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        name = f"{artifact_path}/{path.name}" if artifact_path else path.name
        with self.store(f"logging {path.name} to run {self.run_id}"), self.artifact(name):
            self.mlflow.log_artifact(str(path), artifact_path)

    def log_dict(self, obj: Mapping[str, Any], artifact_file: str) -> None:
        """``mlflow.log_dict``: the same file, a YAML one (``.yaml``, ``.yml``) written by
        libyaml's emitter when PyYAML has it (:func:`dict_text`)."""
        with (
            self.store(f"logging {artifact_file} to run {self.run_id}"),
            self.artifact(artifact_file),
        ):
            text = dict_text(obj, artifact_file)
            if text is None:
                self.mlflow.log_dict(dict(obj), artifact_file)
            else:
                self.mlflow.log_text(text, artifact_file)

    # ------------------------------------------------------------------ failures

    @contextlib.contextmanager
    def store(self, doing: str) -> Iterator[None]:
        """Turn a store failure (a server that died, a database error) into a one-line
        :class:`TrackingError`; other errors pass through. A signal waits for the end of
        the call (:func:`pipeline.lifecycle.critical`)."""
        from ..lifecycle import critical

        try:
            with critical():
                yield
        except TrackingError:
            raise
        except Exception as exc:
            disk = self.disk_error(exc)
            if disk is not None:
                raise disk from None
            if not is_store_error(exc):
                raise
            raise store_error(self.uri or "", exc, doing) from None

    def disk_error(self, exc: BaseException) -> DiskError | None:
        """:func:`pipeline.runs.artifact_faults.disk_fault` of the active run."""
        return disk_fault(exc, self.local_artifact_dir())

    def local_artifact_dir(self) -> Path | None:
        """The active run's artifact directory when it is local (a ``file:`` artifact URI
        or a plain path), else None (a tracking server's, a cloud store's)."""
        return None if self.artifact_uri is None else local_path(self.artifact_uri)

    def artifact(self, artifact_file: str) -> contextlib.AbstractContextManager[None]:
        """:func:`pipeline.runs.artifact_faults.no_half_file` in the active run's folder."""
        return no_half_file(self.local_artifact_dir(), artifact_file)


def dict_text(obj: Mapping[str, Any], artifact_file: str) -> str | None:
    """The text ``mlflow.log_dict(obj, artifact_file)`` writes for a YAML file, emitted by
    libyaml (``yaml.CDumper``: the same text as MLflow's ``yaml.dump(obj, indent=2,
    default_flow_style=False)``, 20x faster -- a run's config took 20 ms, as much as
    the rest of logging a tuned run); ``None`` for other files or without libyaml.

    Examples
    --------
    >>> print(dict_text({"b": [1, 2], "a": {"x": 0.5}}, "config.yaml"), end="")
    a:
      x: 0.5
    b:
    - 1
    - 2
    >>> dict_text({"a": 1}, "config.json") is None
    True
    """
    import yaml

    if not artifact_file.endswith((".yaml", ".yml")) or not getattr(
        yaml, "__with_libyaml__", False
    ):
        return None
    return yaml.dump(dict(obj), Dumper=yaml.CDumper, indent=2, default_flow_style=False)


def finite(v: Any) -> bool:
    """A real number, finite (not a bool, not NaN or infinite)."""
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def make_tracker(node: Mapping[str, Any] | TrackingSettings | None) -> Tracker:
    """The tracker the ``tracking`` config asks for (probing a server first)."""
    settings = node if isinstance(node, TrackingSettings) else TrackingSettings.from_config(node)
    if not settings.enabled:
        return Tracker(settings)
    return MLflowTracker(settings)
