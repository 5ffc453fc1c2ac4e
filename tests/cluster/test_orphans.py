"""A service started by :mod:`pipeline.cluster.services` dies with the process that started
it, even when that process is killed with SIGKILL (no teardown runs): no PostgreSQL, MLflow
server or Ray head left holding its port and memory after a killed test run, and no
temporary directory left behind.

Each test runs a real service through the helper in a child process, lists the service's
processes (the child's descendants and whoever listens on the service's port), kills the
child with SIGKILL and waits for every one of them to be gone (zombies count as gone)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pipeline.cluster import services
from pipeline.paths import project_root

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]

#: the child: starts one service through the helper (its temporary directories under
#: argv[2]), prints the service's port, then waits to be killed
CHILD = """
import sys, tempfile, time
from pathlib import Path
from pipeline.cluster import services
kind, short, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
mkdtemp = tempfile.mkdtemp
tempfile.mkdtemp = lambda prefix=None, dir=None: mkdtemp(prefix=prefix, dir=short)
if kind == "postgres":
    with services.postgres() as uri:
        print(uri.rsplit(":", 1)[1].split("/")[0], flush=True)
        time.sleep(600)
elif kind == "mlflow":
    with services.mlflow_server(f"sqlite:///{work}/mlflow.db", work) as server:
        print(server.url.rsplit(":", 1)[1], flush=True)
        time.sleep(600)
else:
    with services.ray_head(num_cpus=1) as head:
        print(head.address.rsplit(":", 1)[1], flush=True)
        time.sleep(600)
"""


def _descendants(pid: int) -> set[int]:
    ps = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for line in ps.split("\n"):
        if line.strip():
            p, pp = map(int, line.split())
            children.setdefault(pp, []).append(p)
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _listeners(port: int) -> set[int]:
    """PIDs of the processes holding a socket that listens on TCP ``port`` (any address)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[1].endswith(f":{port:04X}") and fields[3] == "0A":
                    inodes.add(f"socket:[{fields[9]}]")
    pids = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                    pids.add(int(proc.name))
    return pids


def _alive(pid: int) -> str | None:
    """The command line of ``pid`` while it runs (not a zombie), else None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return None
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
    except (OSError, IndexError):
        return None


@pytest.mark.parametrize("kind", ["postgres", "mlflow", "ray"])
def test_a_service_dies_with_the_killed_process_that_started_it(kind: str, tmp_path: Path) -> None:
    if kind == "postgres" and services.pg_bindir() is None:
        pytest.skip("PostgreSQL server binaries (initdb, postgres) are not installed")
    if kind == "ray":
        pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[cluster]')")
    short = Path(tempfile.mkdtemp(prefix="svc", dir="/tmp"))  # socket paths: short
    if os.geteuid() == 0:
        os.chmod(short, 0o755)  # PostgreSQL's user reaches its directory
    env = {**os.environ, "PYTHONPATH": str(project_root() / "src")}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, kind, str(short), str(tmp_path)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    pids: set[int] = set()
    try:
        line = child.stdout.readline() if child.stdout else ""
        assert line.strip().isdigit(), f"the {kind} service did not start: {line!r}"
        port = int(line)
        pids = _descendants(child.pid) | _listeners(port)
        assert _listeners(port), f"nothing listens on the {kind} port {port}"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        deadline = time.monotonic() + 20  # SIGKILL comes after 5 s; a loaded machine
        while time.monotonic() < deadline:
            left = {pid: cmd for pid in pids if (cmd := _alive(pid))}
            if not left and not any(short.iterdir()):
                break
            time.sleep(0.2)
        assert not left, f"{kind}: processes outlived the killed test process: {left}"
        assert not any(short.iterdir()), f"{kind}: left behind {list(short.iterdir())}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        for pid in pids:  # this test started them: none left when it fails
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        shutil.rmtree(short, ignore_errors=True)
