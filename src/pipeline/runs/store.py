"""The MLflow tracking store: where it is, and whether it can be used.

**Where.** The tracking URI is ``tracking.uri`` when set, else ``$MLFLOW_TRACKING_URI``,
else the embedded SQLite store ``sqlite:///<project root>/mlflow.db``. Relative local
paths (``sqlite:///mlflow.db``, ``file:mlruns``, a plain path) are made absolute against
the project root, never the working directory (Hydra may change it). New experiments of a
local store put their artifacts in ``tracking.artifacts``, by default ``mlartifacts/``
beside the SQLite file (MLflow would otherwise use ``./mlruns`` in the cwd).

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
``timeout``), and the schema and the experiments are created once (:func:`init_store`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import TrackingError
from ..paths import project_root, resolve

log = logging.getLogger(__name__)

DEFAULT_DB = "mlflow.db"
DEFAULT_ARTIFACTS = "mlartifacts"
#: seconds a SQLite connection waits for another process's write lock
SQLITE_TIMEOUT = 60


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
    if connection_lost(exc):
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


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says that a tracking server did not answer (refused, reset, timed
    out): one that may answer a moment later (restarting)."""
    text = " ".join(str(exc).split())
    return any(s in text for s in _CONNECTION_LOST)


def is_store_error(exc: BaseException) -> bool:
    """An error of the tracking store (MLflow's, SQLAlchemy's, the HTTP client's)."""
    module = type(exc).__module__
    return module.startswith(("mlflow", "sqlalchemy", "requests", "urllib3", "sqlite3")) or (
        isinstance(exc, ConnectionError)
    )


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


def warm_up() -> None:
    """Open an in-memory SQLite store once with MLflow's public client: it imports what
    MLflow's database store needs (its modules, alembic's migration scripts, the
    cryptography it loads; 0.4 s for each stage process) and builds its schema in memory.
    The preload server (:mod:`pipeline.preload_server`) calls it before it forks the
    stages, so that a stage opens ``mlflow.db`` without importing them. Nothing is
    written anywhere, and MLflow's schema messages are not shown."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # no telemetry thread
    from mlflow import MlflowClient

    # their INFO lines on creating the tables
    loggers = [logging.getLogger("mlflow.store.db.utils"), logging.getLogger("alembic")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        MlflowClient(tracking_uri="sqlite:///:memory:").search_experiments(max_results=1)
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


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
