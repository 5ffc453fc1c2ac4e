"""``pipeline.runs.store``: what the preload server does before it forks the stages."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ..conftest import ROOT

WARM = """
import sys, threading
before = {m for m in sys.modules if m.startswith("mlflow.store.tracking.sqlalchemy")}
from pipeline.runs.store import warm_up
warm_up()
after = {m for m in sys.modules if m.startswith("mlflow.store.tracking.sqlalchemy")}
print(len(before), len(after), threading.active_count())
"""


def test_warm_up_imports_the_database_store_in_one_thread_writing_nothing(tmp_path: Path) -> None:
    """After :func:`warm_up` MLflow's database store is imported (a stage forked then opens
    ``mlflow.db`` without importing it), the process still has one thread (the preload
    server forks only then), nothing is written to the working directory and MLflow's
    messages about creating tables are not shown."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["PYTHONPATH"] = str(ROOT / "src")
    done = subprocess.run(
        [sys.executable, "-c", WARM],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    before, after, threads = (int(v) for v in done.stdout.split())
    assert before == 0 and after > 0
    assert threads == 1
    assert list(tmp_path.iterdir()) == []
    assert "database tables" not in done.stderr, done.stderr
