"""An empty MLflow SQLite store for the tests, created once per test session.

MLflow creates a new SQLite store by running its whole schema history (about sixty
migrations): 1.5-2 s of CPU each time, and the suite's commands and trackers create
dozens. :func:`empty_store` copies one store that the pipeline itself created
(:func:`pipeline.runs.store.init_store`, MLflow's public client; in a separate process,
so that its write-ahead log is in the file when it is copied), made once per test session
and shared by the xdist workers (a file lock). Tests whose point is a store's creation
(its file, its directory, its locks, a full disk) create their own.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_CREATE = (
    "import sys; from pipeline.runs.store import close_sqlite_connections, init_store; "
    "init_store(sys.argv[1]); close_sqlite_connections()"
)


def template(factory: pytest.TempPathFactory) -> Path:
    """The session's empty store (made on first use, under a lock the workers share)."""
    shared = factory.getbasetemp().parent  # the session's directory, above the workers'
    path = shared / "empty-mlflow-store" / "mlflow.db"
    with open(shared / "empty-mlflow-store.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            part = path.with_name("part.db")
            env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
            env["MLFLOW_DISABLE_TELEMETRY"] = "true"
            subprocess.run(
                [sys.executable, "-c", _CREATE, f"sqlite:///{part}"],
                env=env,
                check=True,
                capture_output=True,
                timeout=300,
            )
            assert not part.with_name("part.db-wal").exists()  # all in the file
            part.rename(path)
    return path


def empty_store(factory: pytest.TempPathFactory, db: Path) -> str:
    """A copy of the session's empty store at ``db``; its ``sqlite:///`` URI."""
    db.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template(factory), db)
    return f"sqlite:///{db}"
