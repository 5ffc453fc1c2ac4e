"""Helpers of the reliability tests of runs and tracking (issue 11): real processes, real
stores, each stopped by its PID.

- :func:`prepare_iris`: iris fetched from the mirror and prepared under a temporary
  directory (the tiniest real dataset; a run of 2 lambdas takes seconds);
- :func:`train` / :func:`spawn_train`: ``python -m pipeline.train`` in a subprocess, on
  that data, with a given tracking URI (``MLFLOW_TRACKING_URI`` and the debug switches
  removed from the environment);
- :class:`Server`: a process listening on a free loopback port (``mlflow server``, a
  plain ``python -m http.server``), stopped by PID (its process group) even when the
  test fails;
- :func:`one_error_line`: exactly one ``error:`` line, no traceback;
- :func:`runs` / :func:`assert_no_misleading_runs`: the MLflow run states through
  ``MlflowClient``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from mirror import require_mirror
from pipeline.data.settings import DataSettings, data_settings
from pipeline.paths import project_root

ROOT = project_root()
#: a fast run: two lambdas, no models or figures logged
FAST = ["lambdas.num=2", "tracking.log_models=false", "tracking.figures=false"]


def free_port() -> int:
    """A free loopback TCP port (bound to port 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare_iris(base: Path) -> DataSettings:
    """iris fetched from the mirror and prepared under ``base`` (``raw``, ``prepared``)."""
    from pipeline.data import fetch
    from pipeline.data import prepare as preprocess

    settings = data_settings(
        {
            "mirror": str(require_mirror()),
            "raw_dir": str(base / "raw"),
            "prepared_dir": str(base / "prepared"),
            "reports_dir": str(base / "reports"),
            "progress": False,
        }
    )
    cfg = {"data": settings.as_dict(), "datasets": ["iris"]}
    fetch.run(cfg)
    preprocess.run({**cfg, "report": False})
    return settings


def data_overrides(settings: DataSettings) -> list[str]:
    """Hydra overrides pointing the ``data`` group at ``settings``' directories."""
    return [
        f"data.mirror={settings.mirror}",
        f"data.raw_dir={settings.raw_dir}",
        f"data.prepared_dir={settings.prepared_dir}",
        f"data.reports_dir={settings.reports_dir}",
        "data.progress=false",
    ]


def env(**extra: str) -> dict[str, str]:
    """The environment of a command under test: the source tree, no debug switch, no
    tracking URI from the caller, no telemetry."""
    out = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MLFLOW_DISABLE_TELEMETRY": "true"}
    for key in ("MLFLOW_TRACKING_URI", "PROJLOSS_DEBUG", "HYDRA_FULL_ERROR"):
        out.pop(key, None)
    out.update(extra)
    return out


def train(
    args: Sequence[str], cwd: Path, timeout: float = 240, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    """``python -m pipeline.train *args`` to completion."""
    return subprocess.run(
        [sys.executable, "-m", "pipeline.train", *args],
        cwd=cwd,
        env=env(**extra_env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _default_sigint() -> None:
    """In the child before exec: SIGINT to its default. A process started in the
    background by a non-interactive shell (``cmd &``, some CI runners, xdist workers)
    inherits SIGINT ignored, and Python then keeps it ignored (nohup semantics, which
    the pipeline respects): the tests of Ctrl-C need a process that can receive it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def spawn_train(args: Sequence[str], cwd: Path, **extra_env: str) -> subprocess.Popen[str]:
    """``python -m pipeline.train *args`` started in the background (own session, SIGINT
    not ignored)."""
    return subprocess.Popen(
        [sys.executable, "-m", "pipeline.train", *args],
        cwd=cwd,
        env=env(**extra_env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_default_sigint,
    )


def one_error_line(out: str) -> str:
    """The one ``error:`` line of a command's output (asserting there is exactly one and
    no traceback)."""
    assert "Traceback" not in out, out
    lines = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, out
    return lines[0]


class Server:
    """A server process on a free loopback port; :meth:`stop` kills its process group."""

    def __init__(
        self, argv: Sequence[str], port: int, cwd: Path, ready_path: str, **extra_env: str
    ) -> None:
        self.port = port
        self.uri = f"http://127.0.0.1:{port}"
        self.log = open(cwd / f"server-{port}.log", "w")
        self.proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=env(**extra_env),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._wait(ready_path)

    def _wait(self, path: str, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                raise RuntimeError(f"server exited ({self.proc.returncode}); see {self.log.name}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(self.uri + path, timeout=2):
                    return
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"server not ready after {timeout} s; see {self.log.name}")

    def kill(self) -> None:
        """SIGKILL the server's process group (a server dying, not a clean stop)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()
        with contextlib.suppress(ProcessLookupError):  # workers left in the group
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.log.close()


def mlflow_server(cwd: Path, db: Path, port: int | None = None) -> Server:
    """A real ``mlflow server`` on a SQLite file (artifacts served under ``cwd``)."""
    port = port or free_port()
    argv = [
        sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
        "--backend-store-uri", f"sqlite:///{db}", "--workers", "1",
        "--artifacts-destination", (cwd / "served-artifacts").as_uri(),
    ]  # fmt: skip
    # Without MLflow's job runner (on by default in MLflow 3): a runner and about six huey
    # consumers, each a Python importing mlflow, that no test uses; on CI's two cores they
    # slowed the server's start and the run under test (measured: the two server tests of
    # test_tracking.py took 186 s with them, 99 s without).
    return Server(argv, port, cwd, "/health", MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false")


def http_server(cwd: Path) -> Server:
    """A plain ``python -m http.server`` (a web service that is not MLflow)."""
    port = free_port()
    argv = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    return Server(argv, port, cwd, "/")


@contextlib.contextmanager
def running(server: Server) -> Iterator[Server]:
    try:
        yield server
    finally:
        server.stop()


def runs(uri: str) -> list[Any]:
    """Every run of every experiment of the store at ``uri``."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    ids = [e.experiment_id for e in client.search_experiments()]
    return client.search_runs(ids) if ids else []


def parents(all_runs: list[Any]) -> list[Any]:
    return [r for r in all_runs if "mlflow.parentRunId" not in r.data.tags]


def assert_no_misleading_runs(all_runs: list[Any]) -> None:
    """No run left RUNNING; no parent run FINISHED without test metrics."""
    for r in all_runs:
        assert r.info.status != "RUNNING", (r.info.run_id, r.data.tags.get("mlflow.runName"))
    for r in parents(all_runs):
        if r.info.status == "FINISHED":
            assert any(k.startswith("test.") for k in r.data.metrics), r.info.run_id


def wait_for(predicate: Any, timeout: float, what: str, interval: float = 0.2) -> Any:
    """Poll ``predicate()`` until it returns a true value (returned) or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def process_gone(pid: int) -> bool:
    """Whether ``pid`` has exited (gone, or a zombie nobody reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            state = f.read().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")
