"""What a stage logs to MLflow: the tracker interface, its no-op and its recorder.

**Layout.** One MLflow experiment per task (``projloss/<task>``); one parent run per
composition and dataset, created by the tune stage and resumed by evaluate (or by one
process, ``pipeline.train``); the lambda grid of a tuned run on the parent run (metric
histories ``tuning/*`` and the table ``tuning/grid.json``) and its best lambdas as nested
child runs (``tracking.child_runs``, :mod:`pipeline.runs.tuning_log`).

:class:`Tracker` is the interface and the no-op tracker (``tracking.enabled: false``);
:class:`RecordingTracker` records what a stage core logs in a worker process, to be
replayed by the stage's process; :class:`pipeline.runs.mlflow_tracker.MLflowTracker`
logs to MLflow, through its public API only. Where the store is and whether it can be
used: :mod:`pipeline.runs.store`; the parent run's owner, orphans and end:
:mod:`pipeline.runs.run_lifecycle`; a model directory: :mod:`pipeline.runs.model_packaging`.

Importing this module does not import MLflow: the tracker of a config comes from
:func:`pipeline.runs.mlflow_tracker.make_tracker`, which imports MLflow only when tracking
is enabled. MLflow's telemetry is off unless ``MLFLOW_DISABLE_TELEMETRY`` says
otherwise (the pipeline runs offline).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config.settings import TrackingSettings
from ..errors import TrackingError
from .store import run_url

__all__ = ["RecordingTracker", "Tracker", "TrackingError", "TrackingSettings"]


class Tracker:
    """The no-op tracker (``tracking.enabled: false``); :class:`MLflowTracker` logs."""

    enabled = False
    uri: str | None = None

    def __init__(self, settings: TrackingSettings | None = None) -> None:
        self.settings = settings or TrackingSettings(enabled=False)
        self.run_id: str | None = None

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
        """Start (or resume, given ``run_id``) the parent run of a composition; end it
        ``done`` on success (``SCHEDULED``: to be resumed by a later stage, as the tune
        stage's runs are by evaluate: never FINISHED without test metrics), KILLED with its
        child runs on SIGINT / SIGTERM, FAILED on an error. ``metrics``: the run's task
        metrics (:attr:`pipeline.config.run.RunConfig.metrics`), the view of a new
        experiment (:func:`pipeline.runs.mlflow_view.experiment_tags`)."""
        yield None

    def log_tuning(self, tuning: Mapping[str, Any], ties: str = "smallest") -> None:
        """Log a tuned run's lambda grid (``tuning``: what :func:`pipeline.runs.tune.run`
        returns; ``ties``: ``lambdas.ties``) to the active parent run: its metric histories
        and table, and the child runs ``tracking.child_runs`` asks for
        (:mod:`pipeline.runs.tuning_log`)."""

    def ensure_grid(self, tuning: Mapping[str, Any]) -> None:
        """The tuning grid's metric histories (``tuning/*``) on the active parent run when
        it has none: a run that the evaluate stage started anew because the tune stage's
        run is gone from the store. The validation curve of a run is these histories,
        logged once (by the tune stage), not again by the evaluate stage."""

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        """Log numeric metrics to the active parent run (non-finite values skipped), at
        ``step`` when given (e.g. the split index of a split sweep)."""

    def set_tags(self, tags: Mapping[str, str]) -> None:
        """Set tags of the active parent run."""

    def log_params(self, params: Mapping[str, Any]) -> None:
        """Log params of the active parent run (each key once)."""

    def log_input(self, dataset: Any, tags: Mapping[str, str] | None = None) -> None:
        """Log the run's dataset (``mlflow.log_input``: the UI's Dataset column)."""

    def log_model(
        self, model: Any, name: str, X_example: Any = None, registered_name: str | None = None
    ) -> None:
        """Log a fitted scikit-learn model (``mlflow.sklearn.log_model``), registered as
        ``registered_name`` when ``tracking.register`` is true."""

    def log_model_files(
        self, files: Mapping[str, bytes], name: str, registered_name: str | None = None
    ) -> None:
        """Log a model saved by :func:`.prepare_model` (``files``: its files' relative paths
        and bytes) as :meth:`log_model` logs the model: the same logged model and files."""

    def log_figure(self, figure: Any, artifact_file: str) -> None:
        """Log a matplotlib figure as an image artifact."""

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        """Log a local file as an artifact."""

    def log_dict(self, obj: Mapping[str, Any], artifact_file: str) -> None:
        """Log a mapping as a JSON/YAML artifact."""

    def log_batch(
        self,
        steps: Sequence[tuple[Mapping[str, float], int | None]] = (),
        params: Mapping[str, Any] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        """Log metrics (``steps``: (metrics, step) pairs, as :meth:`log_metrics` takes them),
        params and tags of the active parent run at once: what separate calls log, in one
        write where the store allows (:meth:`MLflowTracker.log_batch`)."""
        for metrics, step in steps:
            self.log_metrics(metrics, step=step)
        if params:
            self.log_params(params)
        if tags:
            self.set_tags(tags)

    def run_link(self, task: str, run_id: str | None) -> str:
        """``run <run_id>`` for a summary line, plus the run's page when a tracking server
        is used (:func:`run_url`); empty without tracking."""
        if run_id is None:
            return ""
        url = run_url(self.uri, self.experiment_id(task), run_id) if self.enabled else None
        return f"run {run_id}" + (f" {url}" if url else "")

    def experiment_id(self, task: str, metrics: Sequence[str] = ()) -> str:
        """The id of the task's MLflow experiment (none without tracking)."""
        return ""


class RecordingTracker(Tracker):
    """Records what a stage core logs (every logging method of :class:`Tracker`: the tuning
    grid, metrics, params, tags, artifacts, the dataset, models ...; picklable data) so that it
    can be logged later, by another process, with :meth:`replay`: the DVC stages tune and
    evaluate the runs of an experiment in worker processes and log them from the stage's
    process (one writer to the tracking store). Mappings are copied when recorded.

    ``settings``: the tracking settings the core sees (what to log: figures, models); given,
    the recorder is ``enabled`` as they say, so that the core logs what it would log to the
    real tracker (the evaluate stage); else it is disabled (the tune stage's grid and
    metrics are recorded all the same)."""

    def __init__(self, settings: TrackingSettings | None = None) -> None:
        super().__init__(settings)
        self.enabled = settings is not None and settings.enabled
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def log_model(
        self, model: Any, name: str, X_example: Any = None, registered_name: str | None = None
    ) -> None:
        """Save the model here (:func:`.prepare_model`: its signature, the skops file, the
        input example, the requirements: the costly part of logging a model, done by the
        worker process) and record a :meth:`Tracker.log_model_files` call with its files."""
        import tempfile

        from ..fileio import writing
        from .model_packaging import prepare_model

        with tempfile.TemporaryDirectory(prefix="projloss-model-") as tmp:
            with writing(Path(tmp)):  # a full temporary directory: one DiskError line
                path = prepare_model(model, Path(tmp) / "model", X_example)
            files = {
                p.relative_to(path).as_posix(): p.read_bytes()
                for p in sorted(path.rglob("*"))
                if p.is_file()
            }
        self.calls.append(("log_model_files", (files, name), {"registered_name": registered_name}))

    @staticmethod
    def replay(calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]], tracker: Tracker) -> None:
        """Log the recorded ``calls`` to ``tracker`` (inside its active parent run): the
        parent run's metrics, params and tags first, gathered in one
        :meth:`Tracker.log_batch` (an evaluated run logs a dozen of such calls -- its test
        values, the validation curve step by step, the chosen lambdas, tags --, each a
        transaction of the store otherwise; a model logged after them is linked to its
        run's metrics), then the other calls in order. The order of the first does not
        matter to MLflow: metrics keep their steps, a param is logged once, a tag is a
        value."""
        steps: list[tuple[Mapping[str, float], int | None]] = []
        params: dict[str, Any] = {}
        tags: dict[str, str] = {}
        rest = []
        for method, args, kwargs in calls:
            if method == "log_metrics":
                bound = _bind(Tracker.log_metrics, args, kwargs)
                steps.append((bound["metrics"], bound.get("step")))
            elif method == "log_params":
                params.update(_bind(Tracker.log_params, args, kwargs)["params"])
            elif method == "set_tags":
                tags.update(_bind(Tracker.set_tags, args, kwargs)["tags"])
            elif method == "log_batch":
                bound = _bind(Tracker.log_batch, args, kwargs)
                steps.extend(bound.get("steps", ()))
                params.update(bound.get("params") or {})
                tags.update(bound.get("tags") or {})
            else:
                rest.append((method, args, kwargs))
        if steps or params or tags:
            tracker.log_batch(steps, params, tags)
        for method, args, kwargs in rest:
            getattr(tracker, method)(*args, **kwargs)


def _bind(method: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of a recorded call of a :class:`Tracker` method, by name."""
    import inspect

    return dict(inspect.signature(method).bind(None, *args, **kwargs).arguments)


#: the methods of :class:`Tracker` that are not logging calls (not recorded), and
#: :meth:`RecordingTracker.log_model` (recorded as the files it saves)
_NOT_RECORDED = frozenset({"parent_run", "run_link", "experiment_id", "log_model"})


def _recorder(name: str) -> Any:
    def record(self: RecordingTracker, *args: Any, **kwargs: Any) -> None:
        args = tuple(dict(a) if isinstance(a, Mapping) else a for a in args)
        kwargs = {k: dict(v) if isinstance(v, Mapping) else v for k, v in kwargs.items()}
        self.calls.append((name, args, kwargs))

    record.__name__ = record.__qualname__ = name
    record.__doc__ = f"Record a :meth:`Tracker.{name}` call (for :meth:`replay`)."
    return record


for _name, _method in list(vars(Tracker).items()):
    if callable(_method) and not _name.startswith("_") and _name not in _NOT_RECORDED:
        setattr(RecordingTracker, _name, _recorder(_name))
