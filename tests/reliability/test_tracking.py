"""Reliability of the MLflow tracking store (issue 11, items 5 and 6): every fault of the
store is one line naming the URI, the problem and the remedy, with real components (a
plain web server, a real ``mlflow server`` killed mid-run, an immutable or locked SQLite
file, a database URI without its driver); runs end KILLED / FAILED, orphans are
superseded, and no run is left RUNNING or FINISHED without test metrics."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

from pipeline.errors import TrackingError
from pipeline.runs.mlflow_tracker import MLflowTracker, make_tracker
from pipeline.runs.run_lifecycle import owner_tags
from pipeline.runs.tracking import TrackingSettings
from stores import empty_store

from ._run_fixtures import (
    FAST,
    assert_no_misleading_runs,
    data_overrides,
    free_port,
    http_server,
    mlflow_server,
    one_error_line,
    parents,
    prepare_iris,
    running,
    runs,
    spawn_train,
    train,
    wait_for,
)


@pytest.fixture(scope="module")
def iris(tmp_path_factory: pytest.TempPathFactory):
    return prepare_iris(tmp_path_factory.mktemp("iris"))


def _fails(args: list[str], iris, cwd: Path) -> str:
    done = train([*args, *FAST, *data_overrides(iris)], cwd)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    return one_error_line(out)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- servers
def test_unreachable_server(iris, tmp_path: Path) -> None:
    """(Worked before) a closed port: one line, seconds not minutes, nothing written."""
    uri = f"http://127.0.0.1:{free_port()}"
    line = _fails([f"tracking.uri={uri}", "tracking.probe_timeout=2"], iris, tmp_path)
    assert f"{uri} is unreachable" in line and "mlflow server" in line
    assert list(tmp_path.iterdir()) == []


def test_a_plain_web_server_is_not_mlflow(iris, tmp_path: Path) -> None:
    """Item 6: ``python -m http.server`` at the URI passed the probe, then MLflow printed
    a long traceback."""
    (tmp_path / "www").mkdir()
    with running(http_server(tmp_path / "www")) as server:
        line = _fails([f"tracking.uri={server.uri}"], iris, tmp_path)
    assert f"tracking URI {server.uri} answers but is not an MLflow server" in line
    assert "HTTP 404" in line and "mlflow server" in line


def test_a_web_page_answering_200_is_not_mlflow(tmp_path: Path) -> None:
    """A service answering 200 with a page (not a version number) is refused too."""
    (tmp_path / "version").write_text("<html>hello</html>")
    with running(http_server(tmp_path)) as server:
        with pytest.raises(TrackingError, match=r"not an MLflow server.*not a version number"):
            make_tracker({"uri": server.uri, "probe_timeout": 5.0})


def _runs_in(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute("select count(*) from runs").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
def test_a_server_dying_mid_run_then_the_rerun_supersedes(iris, tmp_path: Path) -> None:
    """Item 6 and 5: a server killed mid-run was a long traceback and left the run
    RUNNING forever. Now: one line naming the URI and the remedy; the run is RUNNING
    (never FINISHED without test metrics) until the re-run marks it KILLED with a
    ``superseded_by`` tag."""
    db = tmp_path / "server.db"
    port = free_port()
    srv = mlflow_server(tmp_path, db, port)
    args = [f"tracking.uri={srv.uri}", "progress=false", *FAST, "lambdas.num=400"]
    proc = spawn_train([*args, *data_overrides(iris)], tmp_path)
    try:
        wait_for(lambda: _runs_in(db), 120, "the parent run")
        srv.kill()
        stdout, stderr = proc.communicate(timeout=180)
    finally:
        srv.stop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = stdout + stderr
    assert proc.returncode == 1, out
    line = one_error_line(out)
    assert f"tracking store {srv.uri} failed while" in line
    assert "stopped answering" in line and "restart the server and re-run" in line
    store = f"sqlite:///{db}"
    (orphan,) = parents(runs(store))
    assert orphan.info.status == "RUNNING" and not orphan.data.metrics.get("test.hamming")
    # the server comes back; the re-run supersedes the orphan of the dead process
    # (a run into a real server works: FINISHED, with its test metrics, host and pid)
    with running(mlflow_server(tmp_path, db, port)) as again:
        done = train([f"tracking.uri={again.uri}", *FAST, *data_overrides(iris)], tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    all_runs = runs(store)
    by_id = {r.info.run_id: r for r in parents(all_runs)}
    old = by_id[orphan.info.run_id]
    assert old.info.status == "KILLED"
    new = by_id[old.data.tags["superseded_by"]]
    assert new.info.status == "FINISHED" and "test.hamming" in new.data.metrics
    assert new.data.tags["host"] == owner_tags()["host"] and new.data.tags["pid"]
    assert_no_misleading_runs(all_runs)


# --------------------------------------------------------------------------- SQLite
def _chattr(flag: str, *paths: Path) -> bool:
    done = subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True, check=False)
    return done.returncode == 0


def test_an_immutable_sqlite_store(
    iris, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """Item 6: a read-only SQLite file. Tests run as root, which ignores file modes, so
    the file is made immutable with ``chattr +i`` (refused even to root)."""
    store = tmp_path / "store"
    store.mkdir()
    db = store / "mlflow.db"
    empty_store(tmp_path_factory, db)  # a valid empty store
    before = _sha(db)
    if not _chattr("+i", db):
        pytest.skip("chattr +i is not supported on this file system")
    try:
        line = _fails([f"tracking.uri=sqlite:///{db}"], iris, tmp_path)
    finally:
        _chattr("-i", db)
    assert f"tracking store {db} cannot be written" in line
    assert "readonly" in line and "writable" in line
    assert _sha(db) == before


def test_a_locked_sqlite_store(
    iris, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """Item 6: another process holds an EXCLUSIVE lock on the file (here a connection
    of the test in a ``BEGIN EXCLUSIVE`` transaction): one line after probe_timeout."""
    db = tmp_path / "mlflow.db"
    empty_store(tmp_path_factory, db)  # a valid empty store
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        line = _fails([f"tracking.uri=sqlite:///{db}", "tracking.probe_timeout=1"], iris, tmp_path)
    finally:
        holder.rollback()
        holder.close()
    assert f"tracking store {db} is locked by another process" in line
    assert "tracking.probe_timeout" in line
    assert runs(f"sqlite:///{db}") == []


def test_a_store_in_an_unwritable_place(tmp_path: Path) -> None:
    """A store whose directory cannot be created (under an immutable directory)."""
    parent = tmp_path / "frozen"
    parent.mkdir()
    if not _chattr("+i", parent):
        pytest.skip("chattr +i is not supported on this file system")
    try:
        with pytest.raises(TrackingError, match=r"frozen/sub.*use another tracking.uri"):
            make_tracker({"uri": f"sqlite:///{parent / 'sub' / 'mlflow.db'}"})
    finally:
        _chattr("-i", parent)


@pytest.mark.slow
def test_concurrent_runs_on_one_sqlite_store(iris, tmp_path: Path) -> None:
    """(Worked before) two processes on one fresh SQLite file: both FINISHED."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    procs = [
        spawn_train([f"tracking.uri={uri}", f"set={s}", *FAST, *data_overrides(iris)], tmp_path)
        for s in ("cube", "birkhoff")
    ]
    outs = [p.communicate(timeout=240) for p in procs]
    for p, (o, e) in zip(procs, outs, strict=True):
        assert p.returncode == 0, o + e
        assert "database is locked" not in o + e
    all_runs = runs(uri)
    assert sorted(r.data.tags["set"] for r in parents(all_runs)) == ["birkhoff", "cube"]
    assert all(r.info.status == "FINISHED" for r in all_runs)


# --------------------------------------------------------------------------- drivers
@pytest.mark.skipif(
    importlib.util.find_spec("psycopg") is not None
    or importlib.util.find_spec("psycopg2") is not None,
    reason="a PostgreSQL driver is installed: the driver-missing case cannot happen here",
)
def test_postgresql_without_its_driver(iris, tmp_path: Path) -> None:
    """Item 6: ``postgresql://`` without a driver was a ModuleNotFoundError traceback."""
    uri = "postgresql://user:secret@127.0.0.1:1/mlflow"
    line = _fails([f"tracking.uri={uri}"], iris, tmp_path)
    assert "needs the database driver" in line and "pip install" in line
    assert "psycopg2-binary" in line
    assert "secret" not in line  # the password is not printed


def test_a_driver_sqlalchemy_does_not_know(tmp_path: Path) -> None:
    """A driver name that does not exist: whatever is installed, one clear error."""
    uri = "postgresql+nonexistentdriver://127.0.0.1:1/mlflow"
    with pytest.raises(TrackingError, match=r"SQLAlchemy has no driver 'postgresql\+nonex"):
        make_tracker({"uri": uri})


# --------------------------------------------------------------------------- run lifecycle
@pytest.fixture
def tracker(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> MLflowTracker:
    """A tracker on an empty store of its own."""
    empty_store(tmp_path_factory, tmp_path / "mlflow.db")
    return MLflowTracker(TrackingSettings(uri=f"sqlite:///{tmp_path / 'mlflow.db'}"))


def test_an_interrupt_marks_the_run_and_its_children_killed(tracker: MLflowTracker) -> None:
    with pytest.raises(KeyboardInterrupt):
        with tracker.parent_run(task="label_ranking", name="interrupted") as run_id:
            tracker.child_run("lambda=1", {"lambda": 1.0}, {"val.hamming": 0.5})
            tracker.child_run("lambda=2", {"lambda": 2.0}, {"val.hamming": 0.4})
            raise KeyboardInterrupt
    all_runs = runs(tracker.uri)
    assert {r.info.run_id: r.info.status for r in parents(all_runs)} == {run_id: "KILLED"}
    assert [r.info.status for r in all_runs if r.info.run_id != run_id] == ["KILLED"] * 2


def test_an_error_marks_the_run_failed(tracker: MLflowTracker) -> None:
    with pytest.raises(ZeroDivisionError):
        with tracker.parent_run(task="label_ranking", name="failing"):
            1 / 0  # noqa: B018
    (run,) = runs(tracker.uri)
    assert run.info.status == "FAILED"


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_orphaned_runs_are_superseded_and_live_ones_kept(tracker: MLflowTracker) -> None:
    """A RUNNING run of a dead process of this host is marked KILLED with
    ``superseded_by``; a RUNNING run of a live process (or another host) is left alone."""
    client = tracker.client
    exp = tracker.experiment_id("label_ranking")
    host = owner_tags()["host"]
    tags = {
        "dead": {"host": host, "pid": str(_dead_pid())},
        "alive": {"host": host, "pid": str(os.getppid())},
        "elsewhere": {"host": "another-host", "pid": "1"},
    }
    ids = {k: client.create_run(exp, run_name="same", tags=t).info.run_id for k, t in tags.items()}
    child = client.create_run(exp, run_name="c", tags={"mlflow.parentRunId": ids["dead"]})
    # a dead process's run of another name (another composition): not this run's orphan
    ids["other name"] = client.create_run(exp, run_name="same 2", tags=tags["dead"]).info.run_id
    with tracker.parent_run(task="label_ranking", name="same") as new_id:
        pass
    status = {k: client.get_run(i).info.status for k, i in ids.items()}
    assert status == {
        "dead": "KILLED",
        "alive": "RUNNING",
        "elsewhere": "RUNNING",
        "other name": "RUNNING",
    }
    assert client.get_run(ids["dead"]).data.tags["superseded_by"] == new_id
    assert client.get_run(child.info.run_id).info.status == "KILLED"
    for key in ("alive", "elsewhere", "other name"):
        client.set_terminated(ids[key], "KILLED")


def test_a_store_error_mid_run_is_one_tracking_error(tmp_path: Path) -> None:
    """A server that stops answering during logging: a TrackingError naming the URI and
    the remedy, not MLflow's exception (an in-process server stopped between calls)."""
    import http.server

    class MLflowLike(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the probe: /version
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"3.0.0")

        def log_message(self, *args: object) -> None:
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), MLflowLike)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    uri = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        tracker = MLflowTracker(TrackingSettings(uri=uri, probe_timeout=2.0))
    finally:
        srv.shutdown()
        srv.server_close()
    tracker.run_id, tracker.exp_id = "r", "0"  # as inside a parent run
    with pytest.raises(TrackingError) as info:
        tracker.child_run("lambda=1", {"lambda": 1.0}, {"val.hamming": 0.5})
    text = str(info.value)
    assert text.startswith(f"tracking store {uri} failed while logging the child run")
    assert "stopped answering" in text and "\n" not in text


def test_a_tuned_run_is_scheduled_until_evaluated(tracker: MLflowTracker) -> None:
    """The DVC tune stage's parent runs are SCHEDULED, not FINISHED without test metrics
    (``dvc`` killed between tune and evaluate); evaluate resumes them to FINISHED."""
    with tracker.parent_run(task="label_ranking", name="t", done="SCHEDULED") as run_id:
        tracker.log_metrics({"val.hamming": 0.3})
    assert tracker.client.get_run(run_id).info.status == "SCHEDULED"
    with tracker.parent_run(task="label_ranking", name="t", run_id=run_id) as resumed:
        tracker.log_metrics({"test.hamming": 0.2})
    run = tracker.client.get_run(run_id)
    assert resumed == run_id and run.info.status == "FINISHED"
    assert_no_misleading_runs(runs(tracker.uri))


def test_a_model_logged_to_a_server_gets_the_runs_step_0_metrics(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A model logged to a tracking server (``MLflowTracker.log_model``: a store the client
    reaches over HTTP, with the same public calls as a database store) is linked to the
    run's params and to its metrics' step-0 values (a curve's later steps left out), READY,
    as ``Model.log`` links them."""
    import numpy as np
    from mlflow.tracking import MlflowClient
    from sklearn.linear_model import LinearRegression

    X = np.arange(10.0).reshape(5, 2)
    model = LinearRegression().fit(X, np.arange(5.0))
    empty_store(tmp_path_factory, tmp_path / "server.db")  # the server need not create the schema
    with running(mlflow_server(tmp_path, tmp_path / "server.db")) as srv:
        tracker = MLflowTracker(TrackingSettings(uri=srv.uri))
        with tracker.parent_run(task="t", name="r", params={"p": "1"}) as run_id:
            tracker.log_metrics({"a": 1.0})
            tracker.log_metrics({"curve": 4.0}, step=0)
            tracker.log_metrics({"curve": 3.0}, step=1)
            tracker.log_model(model, "m", X_example=X)
        client = MlflowClient(srv.uri)
        exp_id = client.get_run(run_id).info.experiment_id
        (logged,) = client.search_logged_models(experiment_ids=[exp_id])
    assert logged.name == "m" and logged.params == {"p": "1"}
    assert logged.status.name == "READY" or str(logged.status).endswith("READY")
    assert sorted((m.key, m.value, m.step) for m in logged.metrics) == [
        ("a", 1.0, 0),
        ("curve", 4.0, 0),
    ]
