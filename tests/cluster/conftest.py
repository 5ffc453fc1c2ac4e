"""Fixtures of the cluster tests: real services on 127.0.0.1, stopped by PID.

- ``postgres_cluster``: a throwaway PostgreSQL cluster (:func:`fresh_database` adds an empty
  database to it).
- ``tracking_server``: an MLflow server on that cluster's database ``mlflow``, artifacts
  served from a temporary directory.
- ``ray_cluster``: a Ray head node with 2 CPUs and a 100 MB object store.
- ``iris_data``: iris fetched from the mirror and prepared in a temporary directory.

One of each per test session (per xdist worker: the cluster tests share one worker, their
``xdist_group``, with ``--dist loadgroup``). A missing binary (PostgreSQL's initdb/postgres,
a launcher plugin) skips with the reason.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mirror import require_mirror
from pipeline.cluster import services
from pipeline.paths import project_root

ROOT = project_root()


@pytest.fixture(scope="session")
def iris_data(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Data overrides of a prepared iris (fetched from the mirror)."""
    from pipeline.data import fetch
    from pipeline.data import prepare as preprocess

    root = tmp_path_factory.mktemp("data")
    data = {
        "mirror": str(require_mirror()),
        "raw_dir": str(root / "raw"),
        "prepared_dir": str(root / "prepared"),
        "reports_dir": str(root / "reports"),
        "progress": False,
    }
    fetch.run({"datasets": ["iris"], "data": data})
    preprocess.run({"datasets": ["iris"], "data": data, "report": False})
    return [f"data.{k}={v}" for k, v in data.items()]


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[str]:
    """The URI of the database ``mlflow`` of a throwaway PostgreSQL cluster: one per
    session (an initdb and a server start cost seconds); a test that needs an empty
    store asks :func:`fresh_database` for a database of its own in it."""
    if services.pg_bindir() is None:
        pytest.skip("PostgreSQL server binaries (initdb, postgres) are not installed")
    with services.postgres() as uri:
        yield uri


def fresh_database(uri: str, name: str) -> str:
    """A new, empty database ``name`` on the server of ``uri``; its URI."""
    import psycopg2
    from sqlalchemy.engine import make_url

    url = make_url(uri)
    conn = psycopg2.connect(host=url.host, port=url.port, user=url.username, dbname=url.database)
    try:
        conn.autocommit = True  # CREATE DATABASE refuses to run in a transaction
        with conn.cursor() as cur:
            cur.execute(f'create database "{name}"')
    finally:
        conn.close()
    return url.set(database=name).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def tracking_server(
    postgres_cluster: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[services.MlflowServer]:
    with services.mlflow_server(postgres_cluster, tmp_path_factory.mktemp("mlflow")) as server:
        yield server


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[services.RayHead]:
    pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[cluster]')")
    pytest.importorskip(
        "hydra_plugins.hydra_ray_launcher", reason="hydra-ray-launcher is not installed"
    )
    with services.ray_head(num_cpus=2) as head:
        yield head


def train_command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "pipeline.train", *args]


def start_sweep(
    args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """``python -m pipeline.train <args>`` in the background (its own session)."""
    return subprocess.Popen(
        train_command(args),
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        # SIGINT as in a terminal (a background shell's child inherits it ignored)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def finish(proc: subprocess.Popen[str], timeout: float) -> tuple[int, str]:
    """Wait for a sweep (its exit status and output); killed (its process group, which
    the test created) and failed when it takes longer than ``timeout`` seconds."""
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
        pytest.fail(f"the sweep hung (> {timeout:.0f} s):\n{out[-3000:]}")
    return proc.returncode, out


def sweep_runs(url: str, group: str) -> tuple[list[Any], list[Any]]:
    """(parent runs, child runs) of the sweep ``group`` on the server ``url``."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(url)
    exps = [e.experiment_id for e in client.search_experiments() if e.name.startswith("projloss/")]
    if not exps:
        return [], []
    quoted = group.replace("'", "\\'")
    parents = client.search_runs(exps, f"tags.group = '{quoted}'", max_results=1000)
    ids = {r.info.run_id for r in parents}
    children = [
        r
        for r in client.search_runs(exps, "", max_results=5000)
        if r.data.tags.get("mlflow.parentRunId") in ids
    ]
    return [r for r in parents if "mlflow.parentRunId" not in r.data.tags], children


def wait_for(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    pytest.fail(f"timed out waiting for {what}")
