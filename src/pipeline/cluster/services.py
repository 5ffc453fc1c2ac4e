"""The services of a cluster run, on one machine: PostgreSQL, an MLflow server, a Ray head.

Each ``*_command`` function returns the command line docs/guide/scaling.md's "Scaling out" section
shows (render it with ``"$PORT"``-style strings to get the page's text); each context
manager runs it on 127.0.0.1 with free ports, waits until it answers and stops it **by
PID** on exit, even when the body raised (tests and benchmarks use them).

**Dying with the process that started them.** A teardown does not run when that process
is killed (``kill -9``, a CI timeout, Ctrl-C twice): every service is therefore a direct
child (no daemon: PostgreSQL runs as ``postgres``, not ``pg_ctl start``) that gets a signal
when its parent dies (Linux ``prctl(PR_SET_PDEATHSIG)``), and a *watcher* (:data:`WATCHER`,
a few lines of Python asleep in its own session, also bound to the parent) then stops the
service's whole process group (its stop signal, SIGKILL after a grace period: the workers
of ``mlflow server``'s uvicorn, which the ``mlflow`` command does not stop; PostgreSQL's
backends, each in a session of its own, end with their postmaster) and removes its
temporary directory. The signal comes when the *thread* that started the service ends:
start services from a thread that outlives them (the main thread).

Examples
--------
>>> " ".join(mlflow_server_command("$MLFLOW_PORT", "$DB_URI", "$ARTIFACTS"))
'mlflow server --host 127.0.0.1 --port $MLFLOW_PORT --backend-store-uri $DB_URI \
--artifacts-destination $ARTIFACTS --workers 2'
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pwd
import shlex
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
from typing import Any

#: the unprivileged user that runs PostgreSQL when we are root (it refuses root)
PG_USER = "pgtest"

PR_SET_PDEATHSIG = 1  # linux/prctl.h

#: The watcher of a service (``python -c WATCHER PGID PARENT SIGNAL GRACE [DIR]``): when its
#: parent dies (its parent-death signal, or the parent already gone) it sends SIGNAL to the
#: process group PGID, SIGKILL after GRACE seconds if some process of it still runs (zombies
#: do not: their new parent reaps them when it gets to it), and removes DIR. It exits when
#: the group is gone while the parent lives (checked every second: a PGID is not reused
#: while one of its processes, zombies included, exists).
WATCHER = """
import os, shutil, signal, sys, time
pgid, parent, stop = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
grace, remove = float(sys.argv[4]), sys.argv[5:]
def running():
    try:
        names = os.listdir("/proc")
    except OSError:
        names = []
    for name in names:
        try:
            with open("/proc/%s/stat" % name) as f:
                state, _, group = f.read().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue
        if int(group) == pgid and state != "Z":
            return True
    return False
def signal_group(signum):
    try:
        os.killpg(pgid, signum)
    except OSError:
        pass
def reap(*_):
    signal_group(stop)
    for signum in (signal.SIGKILL, None):
        deadline = time.monotonic() + grace
        while running() and time.monotonic() < deadline:
            time.sleep(0.05)
        if signum is not None and running():
            signal_group(signum)
    for path in remove:
        shutil.rmtree(path, ignore_errors=True)
    os._exit(0)
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, reap)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # blocked until now
while os.getppid() == parent:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        os._exit(0)
    except OSError:
        pass
    time.sleep(1.0)
reap()
"""


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
    """A service process started in its own session (process group = its PID), stopped by
    ``stop_signal``; ``watcher`` stops it when the process that started it dies."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    stop_signal: int = signal.SIGTERM
    watcher: subprocess.Popen[bytes] | None = None

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
        """``stop_signal`` (SIGTERM) to the PID, then SIGKILL to its process group (which we
        created) after ``timeout`` seconds or when children are left; then the watcher."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, self.stop_signal)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        if self.watcher is not None:
            with contextlib.suppress(ProcessLookupError):
                self.watcher.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.watcher.wait(5)


def _parent_death_signal(signum: int, watcher: bool = False) -> Callable[[], None] | None:
    """A ``preexec_fn`` that gives the child ``signum`` when this thread ends (the process
    killed included: ``prctl(PR_SET_PDEATHSIG)``, Linux); a service whose parent died
    already exits at once, the watcher (which checks its parent itself) gets ``signum``
    blocked until its handlers are in place. None where there is no ``prctl``. Popen runs
    it after the switch of user (which would clear it)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        if watcher:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signum})
        prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if not watcher and os.getppid() != parent:  # died before prctl took effect
            os._exit(1)

    return preexec


def _user(name: str | None) -> dict[str, Any]:
    """Popen's arguments that run the child as ``name`` (when we are root)."""
    if name is None or os.geteuid() != 0:
        return {}
    entry = pwd.getpwnam(name)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def start(
    name: str,
    cmd: list[str],
    log: Path,
    env: dict[str, str] | None = None,
    *,
    stop_signal: int = signal.SIGTERM,
    user: str | None = None,
    cwd: Path | None = None,
    remove: Path | None = None,
    grace: float = 5.0,
) -> Process:
    """Start ``cmd`` in a new session (as ``user`` when we are root), stdout and stderr to
    ``log``, and its watcher: when this process dies, ``stop_signal`` goes to the service
    and to its process group, SIGKILL ``grace`` seconds later, and ``remove`` is removed."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            preexec_fn=_parent_death_signal(stop_signal),
            **_user(user),
        )
    args = [str(proc.pid), str(os.getpid()), str(int(stop_signal)), str(grace)]
    watcher = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", WATCHER, *args, *([str(remove)] if remove else [])],
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=_parent_death_signal(signal.SIGTERM, watcher=True),
    )
    return Process(name, proc, log, stop_signal, watcher)


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


def postgres_server_command(pg_ctl: list[str]) -> list[str]:
    """The server of the README's ``pg_ctl ... start`` as a foreground process (``postgres
    -D DATA`` and the options of ``-o``): the tests' child, stopped with the process that
    started it (``pg_ctl`` would daemonize it: it would outlive a killed test run).

    Examples
    --------
    >>> start = postgres_commands("$D/data", 5432, "$D", "$D/log")[1]
    >>> " ".join(postgres_server_command(start))
    'postgres -D $D/data -p 5432 -k $D -c listen_addresses=127.0.0.1'
    """
    data = pg_ctl[pg_ctl.index("-D") + 1]
    return ["postgres", "-D", data, *shlex.split(pg_ctl[pg_ctl.index("-o") + 1])]


def _pg_ready(port: int) -> bool:
    """Whether the server on ``port`` of 127.0.0.1 accepts connections (``pg_isready``, else
    ``psql -c 'select 1'``)."""
    where = ["-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
    probe = shutil.which("pg_isready")
    cmd = [probe, "-q", *where] if probe else ["psql", *where, "-c", "select 1"]
    return subprocess.run(cmd, capture_output=True, timeout=30).returncode == 0


@contextlib.contextmanager
def postgres(timeout: float = 60.0) -> Iterator[str]:
    """A throwaway PostgreSQL cluster on a free port of 127.0.0.1 with a database
    ``mlflow``; yields its URI. The server is a child of this process (fast shutdown,
    SIGINT, by PID on exit; it and its directory go with this process if it is killed:
    :func:`start`), removed on exit."""
    bindir = pg_bindir()
    if bindir is None:
        raise ServiceError("PostgreSQL server binaries (initdb, postgres) not found")
    root = Path(tempfile.mkdtemp(prefix="pg", dir="/tmp"))  # short: socket path limit
    user = None
    if os.geteuid() == 0:
        _as_pg_user(["true"])  # creates the user
        shutil.chown(root, user=PG_USER)
        user = PG_USER
    data, port = root / "data", free_port()
    initdb, pg_ctl, psql = postgres_commands(str(data), port, str(root), str(root / "log"))
    initdb[0] = str(bindir / "initdb")
    server = postgres_server_command(pg_ctl)
    server[0] = str(bindir / "postgres")
    process = None
    try:
        done = subprocess.run(_as_pg_user(initdb), capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise ServiceError(f"initdb failed:\n{done.stdout}{done.stderr}")
        process = start(
            "postgres", server, root / "log",
            stop_signal=signal.SIGINT, user=user, cwd=root, remove=root,
        )  # fmt: skip
        process.wait_until(lambda: _pg_ready(port), timeout)
        subprocess.run(psql, capture_output=True, text=True, timeout=timeout, check=True)
        # the driver named: SQLAlchemy 2.1 defaults postgresql:// to psycopg 3
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/mlflow"
    finally:
        if process is not None:
            process.stop(timeout=30)
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
        # without MLflow 3's job runner (GenAI jobs, six Python workers): nothing here
        # uses it (docs/guide/scaling.md); the user's own setting wins
        job_runner = "MLFLOW_SERVER_ENABLE_JOB_EXECUTION"
        env = {} if job_runner in os.environ else {job_runner: "false"}
        self.process = start("mlflow server", self.cmd, self.log, env)
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
    process = start("ray head", cmd, log, env={"RAY_USAGE_STATS_ENABLED": "0"}, remove=temp)
    try:
        process.wait_until(lambda: "Ray runtime started" in _tail(log, 200), timeout)
        yield RayHead(f"127.0.0.1:{port}", process, temp)
    finally:
        process.stop(timeout=20)
        shutil.rmtree(temp, ignore_errors=True)
