"""The services of a cluster run, on one machine: PostgreSQL, an MLflow server, a Ray head.

Each ``*_command`` function returns the command line the README's "Scaling out" section
shows (render it with ``"$PORT"``-style strings to get the README text); each context
manager runs it on 127.0.0.1 with free ports, waits until it answers and stops it **by
PID** on exit, even when the body raised (tests and benchmarks use them).

Examples
--------
>>> " ".join(mlflow_server_command("$MLFLOW_PORT", "$DB_URI", "$ARTIFACTS"))
'mlflow server --host 127.0.0.1 --port $MLFLOW_PORT --backend-store-uri $DB_URI \
--artifacts-destination $ARTIFACTS --workers 2'
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

#: the unprivileged user that runs PostgreSQL when we are root (it refuses root)
PG_USER = "pgtest"


class ServiceError(RuntimeError):
    """A service did not start (the message ends with the tail of its log)."""


def free_port() -> int:
    """A TCP port of 127.0.0.1 that is free now (bind to port 0 and read it back)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _exe(name: str) -> str:
    """``name`` beside this interpreter (the venv's ``ray``, ``mlflow``), else on PATH."""
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else (shutil.which(name) or name)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@dataclass
class Process:
    """A service process started in its own session (process group = its PID)."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_until(self, ready: Callable[[], bool], timeout: float) -> None:
        """Poll ``ready`` until true; :class:`ServiceError` if the process exits first or
        ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while not ready():
            if self.proc.poll() is not None:
                raise ServiceError(
                    f"{self.name} exited with {self.proc.returncode}:\n{_tail(self.log)}"
                )
            if time.monotonic() > deadline:
                raise ServiceError(
                    f"{self.name} not ready after {timeout:.0f} s:\n{_tail(self.log)}"
                )
            time.sleep(0.2)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM to the PID, then SIGKILL to its process group (which we created) after
        ``timeout`` seconds or when children are left."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)


def start(name: str, cmd: list[str], log: Path, env: dict[str, str] | None = None) -> Process:
    """Start ``cmd`` in a new session, stdout and stderr to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
    return Process(name, proc, log)


# -- PostgreSQL ---------------------------------------------------------------------------


def postgres_commands(data: str, port: str | int, sockets: str, log: str) -> list[list[str]]:
    """initdb, start (pg_ctl, 127.0.0.1 only) and ``create database mlflow``."""
    return [
        ["initdb", "-D", data, "-A", "trust", "-U", "postgres"],
        [
            "pg_ctl", "-D", data, "-l", log, "-w", "start",
            "-o", f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1",
        ],
        ["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
         "-c", "create database mlflow"],
    ]  # fmt: skip


def _as_pg_user(cmd: list[str]) -> list[str]:
    """``cmd`` as :data:`PG_USER` when we are root (created once when missing)."""
    if os.geteuid() != 0:
        return cmd
    if subprocess.run(["id", PG_USER], capture_output=True).returncode != 0:
        subprocess.run(
            ["useradd", "-M", "-s", "/usr/sbin/nologin", PG_USER], check=True, capture_output=True
        )
    return ["runuser", "-u", PG_USER, "--", *cmd]


def pg_bindir() -> Path | None:
    """The directory of ``initdb``/``pg_ctl`` (PATH, else ``pg_config --bindir``)."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True)
        path = Path(out.stdout.strip())
        if (path / "initdb").exists():
            return path
    return None


@contextlib.contextmanager
def postgres(timeout: float = 60.0) -> Iterator[str]:
    """A throwaway PostgreSQL cluster on a free port of 127.0.0.1 with a database
    ``mlflow``; yields its URI. Stopped (``pg_ctl stop``, then the postmaster's PID) and
    removed on exit."""
    bindir = pg_bindir()
    if bindir is None:
        raise ServiceError("PostgreSQL server binaries (initdb, pg_ctl) not found")
    root = Path(tempfile.mkdtemp(prefix="pg", dir="/tmp"))  # short: socket path limit
    if os.geteuid() == 0:
        _as_pg_user(["true"])  # creates the user
        shutil.chown(root, user=PG_USER)
    data, port = root / "data", free_port()
    initdb, pg_ctl, psql = postgres_commands(str(data), port, str(root), str(root / "log"))
    initdb[0], pg_ctl[0] = str(bindir / "initdb"), str(bindir / "pg_ctl")
    stop = [pg_ctl[0], "-D", str(data), "-m", "fast", "-w", "stop"]
    try:
        for cmd in (initdb, pg_ctl):
            done = subprocess.run(_as_pg_user(cmd), capture_output=True, text=True, timeout=timeout)
            if done.returncode != 0:
                raise ServiceError(f"{cmd[0]} failed:\n{done.stdout}{done.stderr}")
        subprocess.run(psql, capture_output=True, text=True, timeout=timeout, check=True)
        # the driver named: SQLAlchemy 2.1 defaults postgresql:// to psycopg 3
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/mlflow"
    finally:
        pid_file = data / "postmaster.pid"
        pid = int(pid_file.read_text().split()[0]) if pid_file.exists() else None
        with contextlib.suppress(Exception):
            subprocess.run(_as_pg_user(stop), capture_output=True, timeout=30)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # only if pg_ctl stop did not
        shutil.rmtree(root, ignore_errors=True)


# -- MLflow tracking server -------------------------------------------------------------


def mlflow_server_command(
    port: str | int, backend: str, artifacts: str, workers: int = 2
) -> list[str]:
    """``mlflow server`` on 127.0.0.1: runs in ``backend`` (PostgreSQL), artifacts served
    from ``artifacts`` (``--artifacts-destination``: clients upload through the server)."""
    return [
        "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
        "--backend-store-uri", backend, "--artifacts-destination", str(artifacts),
        "--workers", str(workers),
    ]  # fmt: skip


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


@dataclass
class MlflowServer:
    """A running ``mlflow server``; :meth:`restart` stops it and starts it again on the
    same port and store."""

    cmd: list[str]
    log: Path
    url: str
    process: Process | None = None
    timeout: float = 120.0

    def start(self) -> None:
        self.process = start("mlflow server", self.cmd, self.log)
        self.process.wait_until(lambda: _healthy(self.url), self.timeout)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def restart(self, down: float = 0.0) -> None:
        self.stop()
        time.sleep(down)
        self.start()


@contextlib.contextmanager
def mlflow_server(backend: str, workdir: Path, timeout: float = 120.0) -> Iterator[MlflowServer]:
    """An MLflow server on a free port of 127.0.0.1 over ``backend``, artifacts in
    ``workdir/artifacts``; yields it (``.url``), stopped by PID on exit."""
    port = free_port()
    cmd = mlflow_server_command(port, backend, str(workdir / "artifacts"))
    cmd[0] = _exe("mlflow")
    server = MlflowServer(cmd, workdir / "mlflow-server.log", f"http://127.0.0.1:{port}")
    server.timeout = timeout
    try:
        server.start()
        yield server
    finally:
        server.stop()


# -- Ray head node ----------------------------------------------------------------------


def ray_head_command(
    port: str | int,
    num_cpus: int = 2,
    object_store_memory: int = 100_000_000,
    extra: tuple[str, ...] = (),
) -> list[str]:
    """``ray start --head --block`` on 127.0.0.1 (``--block``: one PID to stop it by)."""
    return [
        "ray", "start", "--head", "--block", "--node-ip-address", "127.0.0.1",
        "--port", str(port), "--num-cpus", str(num_cpus),
        "--object-store-memory", str(object_store_memory), "--include-dashboard", "false",
        "--disable-usage-stats", *extra,
    ]  # fmt: skip


@dataclass
class RayHead:
    """A running Ray head node: ``address`` for ``RAY_ADDRESS``."""

    address: str
    process: Process
    temp_dir: Path

    def _processes(self) -> tuple[dict[int, int], dict[int, str]]:
        out = subprocess.run(["ps", "-eo", "pid=,ppid=,args="], capture_output=True, text=True)
        parent: dict[int, int] = {}
        title: dict[int, str] = {}
        for line in out.stdout.splitlines():
            fields = line.split(None, 2)
            if len(fields) == 3:
                parent[int(fields[0])], title[int(fields[0])] = int(fields[1]), fields[2]
        return parent, title

    def _under_head(self, pid: int, parent: dict[int, int]) -> bool:
        seen = 0
        while pid > 1 and seen < 64:
            if pid == self.process.pid:
                return True
            pid, seen = parent.get(pid, 0), seen + 1
        return False

    def is_worker(self, pid: int) -> bool:
        """Whether ``pid`` is a process of this head node (a Ray worker, its raylet)."""
        return self._under_head(pid, self._processes()[0])

    def worker_pids(self) -> list[int]:
        """PIDs of this head's Ray workers running a task (``ray::<task>`` descendants of
        the head process; idle workers and agents excluded)."""
        parent, title = self._processes()
        idle = ("ray::IDLE", "ray::Dash", "ray::Run")
        return [
            pid
            for pid, args in title.items()
            if args.startswith("ray::") and not args.startswith(idle)
            and self._under_head(pid, parent)
        ]  # fmt: skip


@contextlib.contextmanager
def ray_head(num_cpus: int = 2, timeout: float = 90.0) -> Iterator[RayHead]:
    """A Ray head node on free ports of 127.0.0.1 (``num_cpus`` CPUs, a 100 MB object
    store); stopped by PID on exit."""
    temp = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))  # short: socket path limit
    port = free_port()
    extra = (
        "--ray-client-server-port", str(free_port()),
        "--dashboard-agent-listen-port", str(free_port()),
        "--temp-dir", str(temp),
        # worker ports from the OS: two heads on one machine (parallel tests) never clash
        "--min-worker-port", "0", "--max-worker-port", "0",
    )  # fmt: skip
    cmd = ray_head_command(port, num_cpus, extra=extra)
    cmd[0] = _exe("ray")
    log = temp / "head.log"
    process = start("ray head", cmd, log, env={"RAY_USAGE_STATS_ENABLED": "0"})
    try:
        process.wait_until(lambda: "Ray runtime started" in _tail(log, 200), timeout)
        yield RayHead(f"127.0.0.1:{port}", process, temp)
    finally:
        process.stop(timeout=20)
        shutil.rmtree(temp, ignore_errors=True)
