"""MLflow tracking of the runs: where, how, and a no-op stand-in.

**Where.** The tracking URI is ``tracking.uri`` when set, else ``$MLFLOW_TRACKING_URI``,
else the embedded SQLite store ``sqlite:///<project root>/mlflow.db``. Relative local
paths (``sqlite:///mlflow.db``, ``file:mlruns``, a plain path) are made absolute against
the project root, never the working directory (Hydra may change it). New experiments of a
local store put their artifacts in ``tracking.artifacts``, by default ``mlartifacts/``
beside the SQLite file (MLflow would otherwise use ``./mlruns`` in the cwd).

**Layout.** One MLflow experiment per task (``projloss/<task>``); one parent run per
composition and dataset, created by the tune stage and resumed by evaluate (or by one
process, ``pipeline.train``); one nested child run per lambda of the grid.

**Failures.** The store is checked once, before any work, and an unusable one stops
the run with a one-line :class:`TrackingError` naming the URI, the problem and the
remedy, instead of MLflow's minutes of retries and pages of traceback: a tracking server
(http/https URI) must answer ``/version`` with a version number within
``probe_timeout`` (:func:`probe`: unreachable, or a web service that is not MLflow); a
database URI needs its SQLAlchemy driver (:func:`check_driver`, e.g. ``psycopg2-binary``);
a SQLite file must take a write within ``probe_timeout`` (:func:`check_sqlite`:
read-only, immutable or locked by another process). A store that fails mid-run (a server
that dies) is a :class:`TrackingError` too (:func:`store_error`). Concurrent processes on
one SQLite file (the joblib launcher) wait for each other's writes (the connection's busy
``timeout``), and the schema and the experiments are created once.

**Run states.** A parent run ends FINISHED (or ``done``: SCHEDULED for the DVC tune stage,
which evaluate resumes), FAILED on an error, KILLED with its child runs on SIGINT /
SIGTERM (:mod:`pipeline.lifecycle`). It is tagged with its ``host`` and ``pid``: a new run
of the same name marks a RUNNING run of a dead process of this host KILLED, tagged
``superseded_by`` (:meth:`MLflowTracker.orphans`).

Importing this module does not import MLflow: :func:`make_tracker` does, and only when
tracking is enabled. MLflow's telemetry is off unless ``MLFLOW_DISABLE_TELEMETRY`` says
otherwise (the pipeline runs offline).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import math
import os
import re
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..config.settings import TrackingSettings
from ..errors import DiskError, TrackingError
from ..paths import project_root, resolve

#: the tag of a run closed by something else than its own end: ``signal SIGTERM`` (a signal
#: stopped its process), ``end of sweep: its worker was lost`` (pipeline.cluster.callbacks)
CLOSED_TAG = "projloss.closed_by"

log = logging.getLogger(__name__)

DEFAULT_DB = "mlflow.db"
DEFAULT_ARTIFACTS = "mlartifacts"
#: seconds a SQLite connection waits for another process's write lock
SQLITE_TIMEOUT = 60
#: parent-run tags copied to the child runs (so the UI can filter the children too)
CHILD_TAGS = ("task", "dataset", "set", "geometry", "decoder", "model", "composition", "group")


def resolve_uri(uri: str | None = None) -> str:
    """The tracking URI (see the module docstring), local paths made absolute."""
    uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or None
    root = project_root()
    if uri is None:
        return f"sqlite:///{(root / DEFAULT_DB).as_posix()}"
    if uri.startswith("sqlite:///"):
        path, sep, query = uri[len("sqlite:///") :].partition("?")
        if path in ("", ":memory:") or path.startswith("/"):
            return uri
        return f"sqlite:///{resolve(path, root).as_posix()}{sep}{query}"
    if uri.startswith("file:"):
        path = uri[len("file:") :]
        return uri if path.startswith("/") else resolve(path, root).as_uri()
    if "://" not in uri:  # a plain local path: MLflow's file store
        return resolve(uri, root).as_uri()
    return uri


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (None for other stores)."""
    if not uri.startswith("sqlite:///"):
        return None
    path = uri[len("sqlite:///") :].partition("?")[0]
    return None if path in ("", ":memory:") else Path(path)


def artifact_location(uri: str, artifacts: str | None = None) -> str | None:
    """Artifact root for new experiments: ``artifacts`` (resolved), else ``mlartifacts/``
    beside a SQLite file; None for other stores (the server or MLflow decides)."""
    if artifacts:
        return artifacts if "://" in artifacts else resolve(artifacts).as_uri()
    db = sqlite_path(uri)
    return (db.parent / DEFAULT_ARTIFACTS).as_uri() if db is not None else None


_REMEDY_LOCAL = "or unset both to use the local SQLite store"


def probe(uri: str, timeout: float) -> None:
    """Fail fast with a clear :class:`TrackingError` when a tracking server is unusable.

    ``GET <uri>/version`` must answer 200 with a version number, as an MLflow server
    does; a refused or timed out connection means no server, any other answer (a 404 of
    a web server, an HTML page) a service that is not MLflow. A 401/403 is accepted when
    credentials are configured (``MLFLOW_TRACKING_USERNAME`` / ``_TOKEN``), as MLflow's
    client will send them. Local stores are not probed here (see :func:`check_store`).
    """
    if not uri.startswith(("http://", "https://")):
        return
    url = uri.rstrip("/") + "/version"
    local = f"{_REMEDY_LOCAL} {project_root() / DEFAULT_DB}"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            body = answer.read(200).decode("utf-8", "replace").strip()
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            if os.environ.get("MLFLOW_TRACKING_USERNAME") or os.environ.get(
                "MLFLOW_TRACKING_TOKEN"
            ):
                return
            raise TrackingError(
                f"tracking server {uri} asks for credentials (HTTP {exc.code}); set "
                "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or "
                f"MLFLOW_TRACKING_TOKEN), {local}"
            ) from None
        raise TrackingError(
            f"tracking URI {uri} answers but is not an MLflow server (GET /version: HTTP "
            f"{exc.code}); point tracking.uri / MLFLOW_TRACKING_URI at an `mlflow server`, "
            f"{local}"
        ) from None
    except (TimeoutError, urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise TrackingError(
            f"MLflow tracking server {uri} is unreachable ({reason}); start it (mlflow server "
            "--host ... --port ...), fix tracking.uri / MLFLOW_TRACKING_URI, "
            f"{local}"
        ) from None
    if not re.fullmatch(r"\d+\.\d+[\w.+-]*", body):
        shown = " ".join(body.split())[:40]
        raise TrackingError(
            f"tracking URI {uri} answers but is not an MLflow server (GET /version answered "
            f"{shown!r}, not a version number); point tracking.uri / MLFLOW_TRACKING_URI at "
            f"an `mlflow server`, {local}"
        )


#: the pip package of each SQLAlchemy driver an MLflow database store may use
DRIVER_PACKAGES = {
    "psycopg2": "psycopg2-binary",
    "psycopg": "psycopg[binary]",
    "pg8000": "pg8000",
    "asyncpg": "asyncpg",
    "pymysql": "PyMySQL",
    "mysqldb": "mysqlclient",
    "mysqlconnector": "mysql-connector-python",
    "pyodbc": "pyodbc",
    "pymssql": "pymssql",
}


def check_driver(uri: str) -> None:
    """A database URI (``postgresql://``, ``mysql+pymysql://`` ...) whose SQLAlchemy
    dialect or Python driver is missing: a :class:`TrackingError` naming the package to
    install (MLflow would fail later with a long traceback)."""
    scheme = uri.partition("://")[0]
    if "://" not in uri or scheme in ("sqlite", "file", "http", "https") or "sql" not in scheme:
        return
    from sqlalchemy.engine import make_url

    try:
        url = make_url(uri)
        dialect = url.get_dialect()
    except Exception as exc:  # NoSuchModuleError, ArgumentError
        raise TrackingError(
            f"tracking URI {_hide_password(uri)}: SQLAlchemy has no driver "
            f"{scheme!r} ({' '.join(str(exc).split())}); use one of "
            "postgresql://, postgresql+psycopg2://, mysql+pymysql://, sqlite:///<file>"
        ) from None
    driver = getattr(dialect, "driver", "") or url.get_driver_name()
    try:
        dialect.import_dbapi()
    except ImportError as exc:
        package = DRIVER_PACKAGES.get(driver, driver)
        other = ""
        if url.get_backend_name() == "postgresql" and driver != "psycopg2":
            other = " (or write postgresql+psycopg2:// and `pip install psycopg2-binary`)"
        raise TrackingError(
            f"tracking URI {_hide_password(uri)} needs the database driver {driver} "
            f"(missing: {exc}); install it with `pip install '{package}'` in this "
            f"environment{other}"
        ) from None


def _hide_password(uri: str) -> str:
    return re.sub(r"(://[^:/@]+:)[^@]+@", r"\1***@", uri)


def check_sqlite(uri: str, timeout: float) -> None:
    """A SQLite store that cannot take a write (a read-only or immutable file or
    directory, or a file another process holds locked for longer than ``timeout``
    seconds): a :class:`TrackingError` naming the file and the remedy."""
    import sqlite3

    db = sqlite_path(uri)
    if db is None:
        return
    where = f"tracking store {db}"
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.closing(sqlite3.connect(str(db), timeout=timeout)) as conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("CREATE TABLE IF NOT EXISTS _projloss_probe (x INTEGER)")
            conn.execute("DROP TABLE _projloss_probe")
            conn.rollback()
    except sqlite3.OperationalError as exc:
        text = str(exc)
        if "locked" in text or "busy" in text:
            raise TrackingError(
                f"{where} is locked by another process (still locked after {timeout:g} s: "
                f"{text}); wait for it to finish or stop it, raise tracking.probe_timeout, or "
                "use another tracking.uri"
            ) from None
        if "readonly" in text or "read-only" in text or "unable to open" in text:
            raise TrackingError(
                f"{where} cannot be written ({text}); make the file and its directory "
                f"writable (ls -l / lsattr {db}), or use another tracking.uri"
            ) from None
        raise TrackingError(f"{where} cannot be used ({text}); use another tracking.uri") from None
    except sqlite3.DatabaseError as exc:
        raise TrackingError(
            f"{where} is not a usable SQLite database ({exc}); move it away or use another "
            "tracking.uri"
        ) from None
    except OSError as exc:
        raise TrackingError(
            f"{where} cannot be created ({exc.strerror or exc}); make {db.parent} writable or "
            "use another tracking.uri"
        ) from None


#: what MLflow's HTTP client says when a server stopped answering
_CONNECTION_LOST = (
    "Connection refused",
    "Max retries exceeded",
    "Connection reset",
    "Connection aborted",
    "RemoteDisconnected",
    "IncompleteRead",  # killed while answering (urllib3 ProtocolError)
    "Connection broken",
    "timed out",
)


#: what SQLite says when its file cannot grow (SQLITE_FULL: the disk is full)
_STORE_FULL = "database or disk is full"


class _QuietStoreFull(logging.Filter):
    """Drops the ``ERROR mlflow.store.db.utils`` record (and its 40-line SQLAlchemy
    traceback) that MLflow logs before raising when a SQLite store's disk is full: the
    exception it raises becomes the one-line :class:`TrackingError` of
    :func:`store_error`, and the record would only bury it. Kept under the debug switches
    (:func:`pipeline.errors.debug`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from ..errors import debug

        exc = record.exc_info[1] if record.exc_info else None
        return exc is None or _STORE_FULL not in str(exc) or debug()


def quiet_store_full() -> None:
    """Install :class:`_QuietStoreFull` on MLflow's database-session logger (once)."""
    logger = logging.getLogger("mlflow.store.db.utils")
    if not any(isinstance(f, _QuietStoreFull) for f in logger.filters):
        logger.addFilter(_QuietStoreFull())


def store_error(uri: str, exc: BaseException, doing: str) -> TrackingError:
    """One-line :class:`TrackingError` for a store that failed while ``doing`` something
    (a server that died mid-run, a database error): the URI, the cause, the remedy."""
    text = " ".join(str(exc).split())
    db = sqlite_path(uri)
    if db is not None and _STORE_FULL in text:
        from ..fileio import space_left

        free, mount = space_left(db)
        return TrackingError(
            f"tracking store {uri} failed while {doing}: its disk is full (SQLite: {_STORE_FULL}; "
            f"{free}); free some space on {mount} or use another tracking.uri, then re-run "
            "(the transaction was rolled back: the store is intact)"
        )
    if any(s in text for s in _CONNECTION_LOST):
        cause = "the server stopped answering (connection refused or reset)"
        remedy = (
            "the run stays RUNNING there: restart the server and re-run (the new run marks "
            "it KILLED, tag superseded_by)"
        )
    else:
        cause = text[:200] + ("..." if len(text) > 200 else "")
        remedy = "check the store, then re-run (PROJLOSS_DEBUG=1 shows the traceback)"
    return TrackingError(
        f"tracking store {_hide_password(uri)} failed while {doing}: {cause}; {remedy}"
    )


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

    def child_run(
        self, name: str, params: Mapping[str, Any], metrics: Mapping[str, float]
    ) -> str | None:
        """Record one nested run (one lambda) under the active parent run."""
        return None

    def child_runs(
        self, children: Sequence[tuple[str, Mapping[str, Any], Mapping[str, float]]]
    ) -> list[str | None]:
        """:meth:`child_run` for each ``(name, params, metrics)`` of ``children``, in order
        (:class:`MLflowTracker`: in one write of a database store)."""
        return [self.child_run(name, params, metrics) for name, params, metrics in children]

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
        """Log a model saved by :func:`prepare_model` (``files``: its files' relative paths
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
    """Records what a stage core logs (every logging method of :class:`Tracker`: child runs,
    metrics, params, tags, artifacts, the dataset, models ...; picklable data) so that it
    can be logged later, by another process, with :meth:`replay`: the DVC stages tune and
    evaluate the runs of an experiment in worker processes and log them from the stage's
    process (one writer to the tracking store). Mappings are copied when recorded.

    ``settings``: the tracking settings the core sees (what to log: figures, models); given,
    the recorder is ``enabled`` as they say, so that the core logs what it would log to the
    real tracker (the evaluate stage); else it is disabled (the tune stage's child runs and
    metrics are recorded all the same)."""

    def __init__(self, settings: TrackingSettings | None = None) -> None:
        super().__init__(settings)
        self.enabled = settings is not None and settings.enabled
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def log_model(
        self, model: Any, name: str, X_example: Any = None, registered_name: str | None = None
    ) -> None:
        """Save the model here (:func:`prepare_model`: its signature, the skops file, the
        input example, the requirements: the costly part of logging a model, done by the
        worker process) and record a :meth:`Tracker.log_model_files` call with its files."""
        import tempfile

        from ..fileio import writing

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
        """Log the recorded ``calls`` to ``tracker`` (inside its active parent run), in
        order, but the parent run's metrics, params and tags: those are gathered and logged
        at the end in one :meth:`Tracker.log_batch` (an evaluated run logs a dozen of such
        calls -- its test values, the validation curve step by step, the chosen lambdas,
        tags --, each a transaction of the store otherwise). Their order does not matter
        to MLflow: metrics keep their steps, a param is logged once, a tag is a value.
        Consecutive child runs (a tuned run's, one per lambda) are logged by one
        :meth:`Tracker.child_runs`."""
        steps: list[tuple[Mapping[str, float], int | None]] = []
        params: dict[str, Any] = {}
        tags: dict[str, str] = {}
        children: list[tuple[str, Mapping[str, Any], Mapping[str, float]]] = []
        for method, args, kwargs in calls:
            if method == "child_run":  # consecutive child runs: one Tracker.child_runs
                bound = _bind(Tracker.child_run, args, kwargs)
                children.append((bound["name"], bound["params"], bound["metrics"]))
                continue
            if children:
                tracker.child_runs(children)
                children = []
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
                getattr(tracker, method)(*args, **kwargs)
        if children:
            tracker.child_runs(children)
        if steps or params or tags:
            tracker.log_batch(steps, params, tags)


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


class MLflowTracker(Tracker):
    """Logs to MLflow (see the module docstring for the layout)."""

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
        from mlflow.tracking import MlflowClient

        self._mlflow = mlflow
        quiet_store_full()
        store_uri = connection_uri(self.uri)
        try:
            init_store(store_uri, settings.probe_timeout)
            mlflow.set_tracking_uri(store_uri)
            self.client = MlflowClient(tracking_uri=store_uri)
        except Exception as exc:  # MlflowException, SQLAlchemy, requests
            if not _is_store_error(exc):
                raise
            raise store_error(self.uri, exc, "opening the store") from None
        self._experiments: dict[str, str] = {}
        self._exp_id: str | None = None
        self._child_tags: dict[str, str] = {}
        self._start_time = 0  # the active parent run's, in ms
        self._experiment_entities: dict[str, Any] = {}
        self._model_tags: dict[str, str] | None = None

    def experiment_id(self, task: str, metrics: Sequence[str] = ()) -> str:
        """The id of ``<prefix>/<task>``, created (once, race-free) when missing, its view
        made of the task's ``metrics``."""
        name = f"{self.settings.experiment_prefix}/{task}"
        if name not in self._experiments:
            self._experiments[name] = get_or_create_experiment(
                self.client, name, artifact_location(self.uri, self.settings.artifacts)
            )
            self._tag_experiment(self._experiments[name], task, metrics)
        return self._experiments[name]

    def _tag_experiment(self, exp_id: str, task: str, metrics: Sequence[str]) -> None:
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
                run = self._start(task, name, tags, params, run_id, metrics)
        except Exception as exc:
            if not _is_store_error(exc):
                raise
            raise store_error(self.uri or "", exc, f"starting the run {name!r}") from None
        self.run_id = run.info.run_id
        try:
            yield self.run_id
        except KeyboardInterrupt as exc:  # SIGINT, or SIGTERM (pipeline.lifecycle.Terminated)
            from ..lifecycle import signal_name

            self._end("KILLED", kill_children=True, quiet=True, why=f"signal {signal_name(exc)}")
            raise
        except TrackingError:  # the store failed: ending the run may fail too
            self._end("FAILED", quiet=True)
            raise
        except BaseException:
            self._end("FAILED", quiet=True)
            raise
        else:
            self._end(done)
        finally:
            self.run_id = None

    def _start(
        self,
        task: str,
        name: str,
        tags: Mapping[str, str] | None,
        params: Mapping[str, Any] | None,
        run_id: str | None,
        metrics: Sequence[str] = (),
    ) -> Any:
        mlflow = self._mlflow
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
        if run is None:
            stale = self.orphans(exp_id, name)
            run = mlflow.start_run(experiment_id=exp_id, run_name=name, tags=all_tags)
            if params:
                mlflow.log_params(dict(params))
            for old in stale:
                self._supersede(old, run.info.run_id)
        else:
            if all_tags:
                mlflow.set_tags(all_tags)
            all_tags = {**run.data.tags, **all_tags}
        self._exp_id = exp_id
        self._child_tags = {k: str(v) for k, v in all_tags.items() if k in CHILD_TAGS}
        self._start_time = int(run.info.start_time or 0)
        return run

    def _end(
        self,
        status: str,
        *,
        kill_children: bool = False,
        quiet: bool = False,
        why: str | None = None,
    ) -> None:
        """End the active parent run with ``status`` (and its children: KILLED); ``why``:
        the tag :data:`CLOSED_TAG` of the run and of its children still running (what
        stopped them: ``signal SIGTERM``)."""
        from ..lifecycle import critical

        run_id = self.run_id
        try:
            with critical():
                if why is not None and run_id is not None:
                    self.client.set_tag(run_id, CLOSED_TAG, why)
                if kill_children and run_id is not None:
                    self._kill_children(run_id, why)
                self._mlflow.end_run(status)
        except Exception as exc:
            if quiet:
                log.debug("could not end run %s as %s: %s", run_id, status, exc)
                return
            raise store_error(self.uri or "", exc, f"ending the run {run_id} as {status}") from None

    def _kill_children(self, run_id: str, why: str | None = None) -> None:
        if self._exp_id is None:
            raise RuntimeError(f"the run {run_id} has no experiment: it was never started")
        children = self.client.search_runs(
            [self._exp_id], filter_string=f"tags.mlflow.parentRunId = '{run_id}'"
        )
        for child in children:
            if why is not None and child.info.status == "RUNNING":
                self.client.set_tag(child.info.run_id, CLOSED_TAG, why)
            if child.info.status != "KILLED":
                self.client.set_terminated(child.info.run_id, "KILLED")

    def orphans(self, exp_id: str, name: str) -> list[str]:
        """RUNNING parent runs named ``name`` whose process is gone: started on this host
        (tags ``host``, ``pid``) by a process that no longer exists (killed with
        ``kill -9``, a lost server, a power cut). Runs of other hosts are left alone.

        The store is asked for the experiment's RUNNING runs and the name is compared
        here: a filter on the name (a tag, or the run-name attribute) makes a database
        store scan every run's tags, 16 ms per new run in an experiment of 6,000 runs
        (3 ms without it); a RUNNING run is rare (this stage's, or a lost process's)."""
        runs: list[Any] = []
        token = None
        while True:
            page = self.client.search_runs(
                [exp_id], filter_string="attributes.status = 'RUNNING'", page_token=token
            )
            runs.extend(page)
            token = page.token
            if not token:
                break
        out = []
        for r in runs:
            tags = r.data.tags
            if tags.get("mlflow.runName") != name:
                continue
            if "mlflow.parentRunId" in tags or tags.get("host") != socket.gethostname():
                continue
            if not pid_alive(tags.get("pid")):
                out.append(r.info.run_id)
        return out

    def _supersede(self, old: str, new: str) -> None:
        """Mark an orphaned run (and its children) KILLED, tagged ``superseded_by``; left
        alone when another job of the same name superseded it first (both saw it
        orphaned: a database's unique key refuses the second tag)."""
        try:
            self.client.set_tag(old, "superseded_by", new)
        except Exception:
            if "superseded_by" in self.client.get_run(old).data.tags:
                return
            raise
        prev, self._exp_id = self._exp_id, self.client.get_run(old).info.experiment_id
        try:
            self._kill_children(old)
        finally:
            self._exp_id = prev
        self.client.set_terminated(old, "KILLED")
        log.warning(
            "MLflow run %s was left RUNNING by a dead process: marked KILLED, superseded by %s",
            old,
            new,
        )

    def child_run(
        self, name: str, params: Mapping[str, Any], metrics: Mapping[str, float]
    ) -> str | None:
        if self.run_id is None or self._exp_id is None:
            raise TrackingError("child_run needs an active parent run")
        with self._store(f"logging the child run {name!r} of run {self.run_id}"):
            return self._child_run(name, params, metrics)

    def child_runs(
        self, children: Sequence[tuple[str, Mapping[str, Any], Mapping[str, float]]]
    ) -> list[str | None]:
        """The child runs of :meth:`child_run`, written in one transaction of a database
        store (:func:`insert_child_runs`: a tuned run's grid of 10-30 lambdas, each three
        transactions of MLflow's client otherwise); one by one on another store (a tracking
        server)."""
        if self.run_id is None or self._exp_id is None:
            raise TrackingError("child_runs needs an active parent run")
        if not children:
            return []
        with self._store(f"logging {len(children)} child runs of run {self.run_id}"):
            from .mlflow_bulk import insert_child_runs, is_sql_store

            store = self.client._tracking_client.store
            if is_sql_store(store):
                return insert_child_runs(
                    store,
                    self._exp_id,
                    self.run_id,
                    self._child_tags,
                    children,
                    not_before=self._start_time,
                )
            return [self._child_run(name, params, metrics) for name, params, metrics in children]

    def _child_run(
        self, name: str, params: Mapping[str, Any], metrics: Mapping[str, float]
    ) -> str | None:
        from mlflow.entities import Metric, Param

        if self.run_id is None or self._exp_id is None:
            raise RuntimeError(f"the child run {name} needs a started parent run")
        child = self.client.create_run(
            self._exp_id,
            run_name=name,
            tags={"mlflow.parentRunId": self.run_id, **self._child_tags},
        )
        ts = child.info.start_time
        self.client.log_batch(
            child.info.run_id,
            metrics=[Metric(k, float(v), ts, 0) for k, v in metrics.items() if _finite(v)],
            params=[Param(k, str(v)) for k, v in params.items()],
        )
        self.client.set_terminated(child.info.run_id)
        return child.info.run_id

    @contextlib.contextmanager
    def _store(self, doing: str) -> Iterator[None]:
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
            disk = self._disk_error(exc)
            if disk is not None:
                raise disk from None
            if not _is_store_error(exc):
                raise
            raise store_error(self.uri or "", exc, doing) from None

    def _disk_error(self, exc: BaseException) -> DiskError | None:
        """A disk fault of an artifact write (MLflow copying a file to the run's local
        artifact directory, or to a temporary directory before an upload: full, read-only,
        not writable) as the one-line :class:`DiskError` of
        :func:`pipeline.fileio.disk_error`, naming the path MLflow wrote (when it says) or
        the run's artifact directory; None for any other error."""
        from ..fileio import disk_error

        if not isinstance(exc, OSError) or exc.errno is None:
            return None
        if not exc.filename:
            where = self._artifact_dir()
        elif exc.errno in (errno.ENOSPC, errno.EDQUOT):  # the directory, not MLflow's temporary
            where = Path(os.fsdecode(exc.filename)).parent
        else:
            where = Path(os.fsdecode(exc.filename))
        return disk_error(exc, where)

    def _artifact_dir(self) -> Path:
        """The active run's local artifact directory, else the temporary directory where
        MLflow writes the files it uploads."""
        import tempfile

        return self._local_artifact_dir() or Path(tempfile.gettempdir())

    def _local_artifact_dir(self) -> Path | None:
        """The active run's artifact directory when it is local (a ``file:`` artifact URI
        or a plain path), else None (a tracking server's, a cloud store's)."""
        try:
            uri = self._mlflow.get_artifact_uri()
        except Exception:  # no active run
            return None
        return _local_path(uri)

    @contextlib.contextmanager
    def _artifact(self, artifact_file: str) -> Iterator[None]:
        """Remove ``artifact_file`` from the run's local artifact directory when the block
        that logs it fails after changing it: a half-copied file (an MLflow that copies in
        place, without a temporary: a full disk leaves part of it). A file the failed
        write did not touch (MLflow's atomic copy: the earlier version stays) is kept."""
        root = self._local_artifact_dir()
        dest = root / artifact_file if root is not None else None
        before = _file_state(dest)
        try:
            yield
        except BaseException:
            if dest is not None and _file_state(dest) not in (before, None):
                with contextlib.suppress(OSError):
                    dest.unlink()
            raise

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        clean = {k: float(v) for k, v in metrics.items() if _finite(v)}
        if clean:
            with self._store(f"logging metrics to run {self.run_id}"):
                self._mlflow.log_metrics(clean, step=step)

    def log_batch(
        self,
        steps: Sequence[tuple[Mapping[str, float], int | None]] = (),
        params: Mapping[str, Any] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        """One ``MlflowClient.log_batch`` (in chunks within MLflow's limits: 1000 metrics,
        100 params, 100 tags per call) instead of a call per :meth:`log_metrics` step,
        :meth:`log_params` and :meth:`set_tags`: the same rows (non-finite metrics
        skipped)."""
        import time

        from mlflow.entities import Metric, Param, RunTag

        if self.run_id is None:
            raise TrackingError("log_batch needs an active parent run")
        # a millisecond apart per call, as the calls would be: a metric logged twice at a
        # step keeps both values, the later one its latest (MLflow: max step, timestamp)
        ts = int(time.time() * 1000) - len(steps)
        rows = [
            Metric(k, float(v), ts + n, int(step or 0))
            for n, (metrics, step) in enumerate(steps)
            for k, v in metrics.items()
            if _finite(v)
        ]
        plist = [Param(k, str(v)) for k, v in (params or {}).items()]
        tlist = [RunTag(k, str(v)) for k, v in (tags or {}).items()]
        with self._store(f"logging metrics, params and tags to run {self.run_id}"):
            while rows or plist or tlist:
                self.client.log_batch(
                    self.run_id, metrics=rows[:900], params=plist[:50], tags=tlist[:50]
                )
                rows, plist, tlist = rows[900:], plist[50:], tlist[50:]

    def set_tags(self, tags: Mapping[str, str]) -> None:
        with self._store(f"tagging run {self.run_id}"):
            self._mlflow.set_tags(dict(tags))

    def log_params(self, params: Mapping[str, Any]) -> None:
        with self._store(f"logging params to run {self.run_id}"):
            self._mlflow.log_params({k: str(v) for k, v in params.items()})

    def log_input(self, dataset: Any, tags: Mapping[str, str] | None = None) -> None:
        """``mlflow.log_input``. MLflow's store inserts a dataset it did not find, so two jobs
        logging the same dataset (experiment, name, digest) at once can both insert it and
        the second gets a unique-key error (PostgreSQL ``dataset_pk``): then the dataset
        exists, and the call is retried once (it only links it to the run)."""
        with self._store(f"logging the dataset of run {self.run_id}"):
            try:
                self._mlflow.log_input(dataset, tags=dict(tags or {}))
            except Exception as exc:
                text = str(exc).lower()
                if "duplicate key" not in text and "unique constraint" not in text:
                    raise
                self._mlflow.log_input(dataset, tags=dict(tags or {}))

    def log_model(
        self, model: Any, name: str, X_example: Any = None, registered_name: str | None = None
    ) -> None:
        """:func:`prepare_model`, then :meth:`log_model_files`: what
        ``mlflow.sklearn.log_model`` logs, without MLflow's check that the input example
        serves (it reloads the model just saved and predicts the example, a third of the
        call's time; the signature predicted the same rows already)."""
        import tempfile

        from ..fileio import writing

        with tempfile.TemporaryDirectory(prefix="projloss-model-") as tmp:
            with writing(Path(tmp)):  # a full temporary directory: one DiskError line
                path = prepare_model(model, Path(tmp) / "model", X_example)
            self._log_prepared(path, name, registered_name)

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
            self._log_prepared(path, name, registered_name)

    def _log_prepared(self, path: Path, name: str, registered_name: str | None) -> None:
        """Log the model saved in ``path`` (:func:`prepare_model`) to the active run as
        MLflow's ``Model.log`` does: a logged model (named ``name``, the run's params) linked
        to the run as an output with the run's metrics at step 0, its files (the saved ones,
        their MLmodel written with the logged model's identity), READY, and registered as
        ``registered_name`` when ``tracking.register`` is true. ``Model.log`` reads the run's
        params and metrics back with a query per metric (the whole run, then each metric's
        history: the validation curves, every earlier evaluation's values); from a database
        store they are read here with one query each (:func:`run_params_and_step_metrics`),
        and the logged model's rows are written in one transaction
        (:func:`pipeline.runs.mlflow_bulk.insert_logged_model`: five of MLflow's client
        otherwise, 45 ms a model); a tracking server's client logs it as ``Model.log``."""
        import tempfile

        from mlflow.tracking._model_registry import DEFAULT_AWAIT_MAX_SLEEP_SECONDS
        from mlflow.tracking._model_registry.fluent import _register_model

        from .mlflow_bulk import is_sql_store

        if not self.settings.register:
            registered_name = None
        run_id = self.run_id
        if run_id is None:
            raise TrackingError("logging a model needs an active parent run")
        with (
            self._store(f"logging the model {name!r} of run {run_id}"),
            tempfile.TemporaryDirectory(prefix="projloss-model-") as tmp,
        ):
            local = os.path.join(tmp, "model")
            store = self.client._tracking_client.store
            params, metrics = run_params_and_step_metrics(self.client, run_id, step=0)
            saved = (path, local, name, run_id, params, metrics)
            if is_sql_store(store) and self._exp_id is not None:
                model_id = self._log_model_rows(store, self._exp_id, *saved)
            else:
                model_id = self._log_model_client(*saved)
            if registered_name is not None:
                _register_model(
                    f"models:/{model_id}",
                    registered_name,
                    await_registration_for=DEFAULT_AWAIT_MAX_SLEEP_SECONDS,
                    local_model_path=local,
                )

    def _log_model_rows(
        self,
        store: Any,
        exp_id: str,
        path: Path,
        local: str,
        name: str,
        run_id: str,
        params: dict[str, str],
        metrics: list[Any],
    ) -> str:
        """:meth:`_log_prepared` to a database store: the files to the logged model's
        artifact location, then its rows in one transaction; return its id."""
        from mlflow.entities import LoggedModelOutput
        from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository
        from mlflow.tracking.context import registry as context_registry

        from .mlflow_bulk import insert_logged_model, model_artifact_location, new_model_id

        if exp_id not in self._experiment_entities:
            self._experiment_entities[exp_id] = self.client.get_experiment(exp_id)
        experiment = self._experiment_entities[exp_id]
        if self._model_tags is None:  # the process's user, source and commit: once
            self._model_tags = context_registry.resolve_tags(None)
        model_id = new_model_id()
        location = model_artifact_location(store, experiment.artifact_location, model_id)
        _model_files(local, path, run_id, model_id, location)
        try:
            get_artifact_repository(location, tracking_uri=self.client.tracking_uri).log_artifacts(
                local
            )
        except BaseException:  # a full disk: no half-copied model left (no rows point to it)
            where = _local_path(location)
            if where is not None:
                import shutil

                shutil.rmtree(where, ignore_errors=True)
            raise
        linked = _linked_metrics(metrics, model_id)
        insert_logged_model(
            store, experiment, run_id, name, params, self._model_tags, linked, model_id=model_id
        )
        self._add_active_output(run_id, LoggedModelOutput(model_id, step=0))
        return model_id

    def _log_model_client(
        self,
        path: Path,
        local: str,
        name: str,
        run_id: str,
        params: dict[str, str],
        metrics: list[Any],
    ) -> str:
        """:meth:`_log_prepared` with MLflow's client calls (a tracking server); return the
        logged model's id."""
        import mlflow
        from mlflow.entities import LoggedModelOutput
        from mlflow.tracking.fluent import _create_logged_model, _use_logged_model
        from mlflow.utils.mlflow_tags import MLFLOW_MODEL_IS_EXTERNAL

        model = _create_logged_model(
            name=name,
            source_run_id=run_id,
            params=params,
            flavor="mlflow.sklearn",
            serialization_format=mlflow.sklearn._get_default_serialization_format(),
        )
        with _use_logged_model(model=model):
            output = LoggedModelOutput(model.model_id, step=0)
            self.client.log_outputs(run_id=run_id, models=[output])
            self._add_active_output(run_id, output)
            if metrics:
                linked = _linked_metrics(metrics, model.model_id)
                self.client.log_batch(run_id=run_id, metrics=linked)
            _model_files(local, path, run_id, model.model_id, model.artifact_location)
            self.client.log_model_artifacts(model.model_id, local)
            if model.tags.get(MLFLOW_MODEL_IS_EXTERNAL, "false").lower() == "true":
                self.client.delete_logged_model_tag(model.model_id, MLFLOW_MODEL_IS_EXTERNAL)
        return model.model_id

    def _add_active_output(self, run_id: str, output: Any) -> None:
        """Add ``output`` to the fluent API's active run (what ``Model.log`` leaves there)."""
        from mlflow.entities.run_outputs import RunOutputs

        active = self._mlflow.active_run()
        if active is not None and active.info.run_id == run_id:
            if active.outputs is None:
                active._outputs = RunOutputs(model_outputs=[output])
            else:
                active.outputs.model_outputs.append(output)

    def log_figure(self, figure: Any, artifact_file: str) -> None:
        with (
            self._store(f"logging {artifact_file} to run {self.run_id}"),
            self._artifact(artifact_file),
        ):
            self._mlflow.log_figure(figure, artifact_file)

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        name = f"{artifact_path}/{path.name}" if artifact_path else path.name
        with self._store(f"logging {path.name} to run {self.run_id}"), self._artifact(name):
            self._mlflow.log_artifact(str(path), artifact_path)

    def log_dict(self, obj: Mapping[str, Any], artifact_file: str) -> None:
        """``mlflow.log_dict``: the same file, a YAML one (``.yaml``, ``.yml``) written by
        libyaml's emitter when PyYAML has it (:func:`dict_text`)."""
        with (
            self._store(f"logging {artifact_file} to run {self.run_id}"),
            self._artifact(artifact_file),
        ):
            text = dict_text(obj, artifact_file)
            if text is None:
                self._mlflow.log_dict(dict(obj), artifact_file)
            else:
                self._mlflow.log_text(text, artifact_file)


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


def owner_tags() -> dict[str, str]:
    """Tags naming the process of a run (``host``, ``pid``), to recognise orphans."""
    return {"host": socket.gethostname(), "pid": str(os.getpid())}


def pid_alive(pid: Any) -> bool:
    """Whether process ``pid`` (a tag value) exists on this host (unknown: assume so)."""
    try:
        n = int(pid)
    except (TypeError, ValueError):
        return True
    if n == os.getpid():
        return True
    try:
        os.kill(n, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _file_state(path: Path | None) -> tuple[int, int, int] | None:
    """(inode, size, mtime in ns) of the file at ``path``, None when there is none."""
    try:
        st = os.stat(path) if path is not None else None
    except OSError:
        return None
    return None if st is None else (st.st_ino, st.st_size, st.st_mtime_ns)


def _local_path(uri: str) -> Path | None:
    """The local path of an artifact URI (``file:`` or a plain absolute path), else None.

    Examples
    --------
    >>> _local_path("file:///tmp/ml%20artifacts/1/abc/artifacts")
    PosixPath('/tmp/ml artifacts/1/abc/artifacts')
    >>> _local_path("mlflow-artifacts:/1/abc/artifacts") is None
    True
    """
    import urllib.parse

    if uri.startswith("file:"):
        return Path(urllib.parse.unquote(urllib.parse.urlparse(uri).path))
    if uri.startswith("/"):
        return Path(uri)
    return None


def _is_store_error(exc: BaseException) -> bool:
    """An error of the tracking store (MLflow's, SQLAlchemy's, the HTTP client's)."""
    module = type(exc).__module__
    return module.startswith(("mlflow", "sqlalchemy", "requests", "urllib3", "sqlite3")) or (
        isinstance(exc, ConnectionError)
    )


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def trusted_types(model: Any) -> list[str]:
    """The types of ``model`` that skops (MLflow's default sklearn serialization) does not
    trust by default and that this project defines (``projloss.*``) or registered
    (:func:`projloss.sets.register_set`): our estimators, sets and target losses, and a
    user's set. Anything else stays untrusted, so logging fails loudly on it."""
    import skops.io

    from projloss import SETS

    registered = {f"{c.__module__}.{c.__qualname__}" for c in SETS.values()}
    untrusted = skops.io.get_untrusted_types(data=skops.io.dumps(model))
    return [t for t in untrusted if t.startswith("projloss.") or t in registered]


def run_params_and_step_metrics(
    client: Any, run_id: str, step: int = 0
) -> tuple[dict[str, str], list[Any]]:
    """The params of run ``run_id`` and every value its metrics were logged with at
    ``step`` (``mlflow.entities.Metric``, in each metric's history order), as MLflow's
    ``Model.log`` reads them to copy them onto a logged model: from a database store in
    one query each, else with the client (the run, then each metric's history)."""
    from .mlflow_bulk import is_sql_store

    store = client._tracking_client.store
    if not is_sql_store(store):
        run = client.get_run(run_id)
        metrics = [
            m
            for key in run.data.metrics
            for m in client.get_metric_history(run_id, key)
            if m.step == step and m.model_id is None
        ]
        return {k: str(v) for k, v in run.data.params.items()}, metrics
    from mlflow.store.tracking.dbmodels.models import SqlMetric, SqlParam

    with store.ManagedSessionMaker() as session:
        params = {p.key: str(p.value) for p in session.query(SqlParam).filter_by(run_uuid=run_id)}
        rows = (
            session.query(SqlMetric)
            .filter_by(run_uuid=run_id, step=step)
            .order_by(SqlMetric.key, SqlMetric.timestamp, SqlMetric.step, SqlMetric.value)
        )
        metrics = [row.to_mlflow_entity() for row in rows]
    return params, metrics


def prepare_model(model: Any, path: Path, X_example: Any = None) -> Path:
    """Save ``model`` to ``path`` (a new folder) as ``mlflow.sklearn.log_model`` would before
    logging it: the skops file (this project's types trusted, :func:`trusted_types`), the
    MLmodel with the signature inferred from ``X_example`` and its predictions, the input
    example, the pinned requirements (:func:`_requirements`). The costly part of logging a
    model (serializing it three times: to find its types, to save it, to check that it
    loads), which a worker process can do (:class:`RecordingTracker`); the logged model's
    identity is written by :meth:`MLflowTracker.log_model_files`."""
    import mlflow.sklearn

    signature = None
    if X_example is not None:
        try:
            from mlflow.models import infer_signature

            signature = infer_signature(X_example, model.predict(X_example))
        except Exception as exc:  # a signature is a nicety
            log.debug("no model signature: %s", exc)
    # Explicit requirements: MLflow's inference would re-import the model in a subprocess
    # (seconds per model); they are the installed versions (no check against them).
    with _requirements_unchecked():
        mlflow.sklearn.save_model(
            sk_model=model,
            path=str(path),
            serialization_format=mlflow.sklearn._get_default_serialization_format(),
            signature=signature,
            input_example=X_example,
            pip_requirements=_requirements(),
            skops_trusted_types=trusted_types(model),
        )
    return path


@contextlib.contextmanager
def _requirements_unchecked() -> Iterator[None]:
    """Without MLflow's check of a model's requirements against the installed packages
    (``warn_dependency_requirement_mismatches``, at every save): :func:`_requirements` are
    the installed versions, read in this process, so it cannot find a mismatch, and it
    cost a third of a small model's save and, the first time in a process, a scan of
    every installed distribution (0.9 s: once in each evaluate worker)."""
    import mlflow.utils.environment as environment

    original = environment.warn_dependency_requirement_mismatches
    environment.warn_dependency_requirement_mismatches = _pinned_here
    try:
        yield
    finally:
        environment.warn_dependency_requirement_mismatches = original


def _pinned_here(requirements: Sequence[str]) -> None:
    """The requirements check of :func:`_requirements_unchecked`: nothing to check."""


def _linked_metrics(metrics: list[Any], model_id: str) -> list[Any]:
    """The run's ``metrics`` (``mlflow.entities.Metric``) linked to logged model ``model_id``."""
    from mlflow.entities import Metric

    return [Metric(m.key, m.value, m.timestamp, m.step, model_id=model_id) for m in metrics]


def _model_files(local: str, prepared: Path, run_id: str, model_id: str, location: str) -> None:
    """The files of logged model ``model_id`` (of run ``run_id``, stored at ``location``) in
    ``local``: those :func:`prepare_model` saved in ``prepared``, their MLmodel given the
    logged model's identity (:func:`_copy_prepared_model`)."""
    from mlflow.models import Model

    identity = Model(artifact_path=location, model_uuid=model_id, run_id=run_id, model_id=model_id)
    _copy_prepared_model(path=local, mlflow_model=identity, prepared=str(prepared))


#: the attributes of an MLmodel that name the logged model (the rest: the saved files')
_MODEL_IDENTITY = frozenset(
    {"artifact_path", "run_id", "model_uuid", "model_id", "utc_time_created"}
)


def _copy_prepared_model(*, path: str, mlflow_model: Any, prepared: str, **_kwargs: Any) -> None:
    """The ``save_model`` of :data:`_PREPARED_FLAVOR`, as ``Model.log`` calls it: copy the
    files :func:`prepare_model` saved to ``path`` and write their MLmodel with
    ``mlflow_model``'s identity (logged model id, run, artifact location, creation time).

    The MLmodel is read and written as ``Model.load`` and ``Model.save`` do (``from_dict``
    of its YAML, ``to_dict`` dumped by ``yaml.safe_dump(..., default_flow_style=False)``)
    with libyaml's parser and emitter when PyYAML has them (the same text; the pure-Python
    ones took 20 ms a model, a third of logging it)."""
    import shutil

    import yaml
    from mlflow.models import Model

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    with open(os.path.join(prepared, "MLmodel")) as f:
        saved = Model.from_dict(yaml.load(f, Loader=loader))
    shutil.copytree(prepared, path)
    for key, value in vars(saved).items():
        if key not in _MODEL_IDENTITY:
            setattr(mlflow_model, key, value)
    with open(os.path.join(path, "MLmodel"), "w") as out:
        yaml.dump(mlflow_model.to_dict(), out, Dumper=dumper, default_flow_style=False)


#: ``mlflow.sklearn`` as the flavor of ``mlflow.models.Model.log`` for a model saved by
#: :func:`prepare_model` (its ``save_model`` copies the files)
_PREPARED_FLAVOR = SimpleNamespace(__name__="mlflow.sklearn", save_model=_copy_prepared_model)


def _requirements() -> list[str]:
    """The model's pip requirements: this project and its numerical stack, pinned."""
    return list(_pinned_requirements())


@functools.cache
def _pinned_requirements() -> tuple[str, ...]:
    """:func:`_requirements`, looked up once per process (the installed versions)."""
    from importlib.metadata import PackageNotFoundError, version

    reqs = []
    for pkg in ("projloss", "numpy", "scipy", "scikit-learn"):
        try:
            reqs.append(f"{pkg}=={version(pkg)}")
        except PackageNotFoundError:
            reqs.append(pkg)
    return tuple(reqs)


def connection_uri(uri: str) -> str:
    """A SQLite URI with a busy timeout, so parallel jobs wait instead of failing with
    "database is locked"; other URIs unchanged."""
    if sqlite_path(uri) is not None and "timeout=" not in uri:
        return uri + ("&" if "?" in uri else "?") + f"timeout={SQLITE_TIMEOUT}"
    return uri


def get_or_create_experiment(client: Any, name: str, artifact_location: str | None) -> str:
    """The experiment's id; created if missing (another process may create it first)."""
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    try:
        return client.create_experiment(name, artifact_location=artifact_location)
    except Exception:  # created concurrently: RESOURCE_ALREADY_EXISTS
        exp = client.get_experiment_by_name(name)
        if exp is None:
            raise
        return exp.experiment_id


_WAL_HOOKED = False
#: the SQLite connections this process opened (:func:`close_sqlite_connections`)
_SQLITE_CONNECTIONS: list[Any] = []


def _sqlite_wal() -> None:
    """Open every SQLite connection of this process in WAL mode with ``synchronous=NORMAL``.

    A run logs a few hundred small transactions (a child run per lambda is three); in the
    default rollback-journal mode each commit syncs the file twice, which made logging
    cost more than fitting on small datasets. WAL commits append to a log (readers and
    one writer no longer block each other, which also helps parallel jobs), and NORMAL
    syncs at checkpoints only: a power cut may lose the last commits, never corrupt the
    store. WAL needs a local file system (a cluster uses a tracking server instead)."""
    global _WAL_HOOKED
    if _WAL_HOOKED:
        return
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    @event.listens_for(Engine, "connect")
    def _pragmas(dbapi_connection: Any, _record: Any) -> None:
        if type(dbapi_connection).__module__.startswith(("sqlite3", "pysqlite")):
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()
            _SQLITE_CONNECTIONS.append(dbapi_connection)

    _WAL_HOOKED = True


def close_sqlite_connections() -> None:
    """Close every SQLite connection this process opened (a process that ends without the
    interpreter's clean-up, :func:`pipeline.stage.main`): the last one to close copies
    the write-ahead log into the database file and removes it (a checkpoint), so that
    ``mlflow.db`` alone holds every run. A transaction left open is rolled back; closing
    a connection twice does nothing."""
    while _SQLITE_CONNECTIONS:
        connection = _SQLITE_CONNECTIONS.pop()
        try:
            connection.close()
        except Exception as exc:  # e.g. closed from another thread's pool
            log.debug("could not close a SQLite connection: %s", exc)


def init_store(uri: str, timeout: float = 5.0) -> None:
    """Create (or migrate) a SQLite store's schema once, under an exclusive file lock,
    so that parallel first runs do not race on it, after checking that the file can be
    written (:func:`check_sqlite`, waiting ``timeout`` seconds for another process's
    lock). Other stores need nothing."""
    db = sqlite_path(uri)
    if db is None:
        return
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TrackingError(
            f"tracking store {db}: cannot create {db.parent} ({exc.strerror or exc}); use "
            "another tracking.uri"
        ) from None
    _sqlite_wal()
    from mlflow.tracking import MlflowClient

    try:
        with _file_lock(db.with_name(db.name + ".lock")):
            check_sqlite(uri, timeout)
            MlflowClient(tracking_uri=uri).search_experiments(max_results=1)
    except OSError as exc:  # e.g. no lock file in a read-only directory
        check_sqlite(uri, timeout)  # names the problem when it is the database
        raise TrackingError(
            f"tracking store {db}: {exc.strerror or exc} ({exc.filename or db.parent}); make "
            "the directory writable or use another tracking.uri"
        ) from None


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock (one process at a time is fine)
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run_url(uri: str | None, experiment_id: str, run_id: str) -> str | None:
    """The run's page on a tracking server (``<uri>/#/experiments/<id>/runs/<run_id>``, the
    MLflow UI's address), None for a local store (no server to open).

    Examples
    --------
    >>> run_url("http://127.0.0.1:5000/", "3", "ab12")
    'http://127.0.0.1:5000/#/experiments/3/runs/ab12'
    >>> run_url("sqlite:///mlflow.db", "3", "ab12") is None
    True
    """
    if not uri or not uri.startswith(("http://", "https://")):
        return None
    return f"{uri.rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}"


def make_tracker(node: Mapping[str, Any] | TrackingSettings | None) -> Tracker:
    """The tracker the ``tracking`` config asks for (probing a server first)."""
    settings = node if isinstance(node, TrackingSettings) else TrackingSettings.from_config(node)
    if not settings.enabled:
        return Tracker(settings)
    return MLflowTracker(settings)
