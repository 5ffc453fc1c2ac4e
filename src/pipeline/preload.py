"""``python -m pipeline.preload COMMAND...``: run COMMAND (``dvc repro``) with every DVC
stage forked from one interpreter that has imported the pipeline's libraries once.

Each command of ``dvc.yaml`` (``python -m pipeline.stage tune <experiment>``, ...) is a new
process, and before doing anything it imports numpy, SciPy, scikit-learn (which imports
pandas), numba, MLflow (which imports SQLAlchemy and Alembic), skops and matplotlib:
measured 2.5-3 s per process on a quiet 2-core machine, 21 stage processes one after the
other in ``make repro``, while the second core waits. A fork of a process that has
imported them all starts in milliseconds (the pages are shared, copy on write).

This command starts a *preload server* (:mod:`pipeline.preload_server`, in its own
session): it listens on a Unix socket in a new private directory, imports the modules of
:data:`pipeline.preload_server.PRELOAD`, then serves one stage at a time. COMMAND runs with
``PIPELINE_PRELOAD=<socket>`` in its environment; a stage process started under it
(:func:`delegate`, called first by ``python -m pipeline.stage``) sends the server its
command line, working directory, environment and standard streams (``SCM_RIGHTS``), and
the server forks a child that runs the stage's ``main`` exactly as the stage process would
(the same code, streams, directory and environment; its exit handlers in the same order)
and reports its exit status, which the stage process exits with. The server is stopped by
PID when COMMAND ends, whatever its status, and its directory removed.

A stage runs in its own process as before, with a one-line notice on stderr, when the
server refuses it:

- the source files the server imported (``src/pipeline``, ``src/projloss``) changed since
  it started, or the stage process's Python (``sys.executable``, ``sys.path``) or its
  settings read at import time (variables ``NUMBA_*``, ``OPENBLAS_*``, ``OMP_*``,
  ``MKL_*``, ``NPY_*``, ``PYTHON*``, ``MLFLOW_*``, :data:`IMPORT_TIME_VARIABLES`) differ
  from the server's;
- the server has a thread besides its main one after its imports (a fork copies only the
  calling thread: a lock held by another would never be released in the child);

and when no server answers (it could not start, or died). A stage that needs none of the
server's libraries' weight (``fetch``, ``preprocess``: ``delegate(wait=False)``) also runs
in its own process while the server is still importing (no ``<socket>.ready`` file yet),
instead of waiting for it: on a fresh clone the imports take seconds. Plain ``dvc repro``
(no ``PIPELINE_PRELOAD``) is unchanged.

**Signals.** The server and its children are in their own session, so Ctrl-C in the
terminal reaches ``dvc`` and the stage process, not them: the stage process forwards
SIGINT, SIGTERM and SIGHUP to the child through the socket (the child then ends as a
stage process does: its MLflow runs marked KILLED, exit status 130 / 143), and when the
stage process dies (``dvc`` killed: it gets SIGTERM, :func:`pipeline.lifecycle.
die_with_parent`; or ``kill -9``: the socket closes) the server sends the child SIGTERM.
The children die with the server (``PR_SET_PDEATHSIG``), the server with this command.

Examples
--------
``make repro`` runs ``python -m pipeline.preload dvc repro``; by hand::

    python -m pipeline.preload dvc repro
    python -m pipeline.preload dvc repro evaluate@ml
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Any

#: the environment variable that names the server's socket
ENV = "PIPELINE_PRELOAD"
#: environment variables read when a module is imported (by the libraries the server
#: imports): a stage whose value differs from the server's runs in its own process
IMPORT_TIME_PREFIXES = ("NUMBA_", "OPENBLAS_", "OMP_", "MKL_", "NPY_", "PYTHON", "MLFLOW_")
IMPORT_TIME_VARIABLES = ("GLIBC_TUNABLES", "MPLBACKEND", "MPLCONFIGDIR", "JOBLIB_START_METHOD")
#: the entry point a stage runs in the server's child
TARGET = "pipeline.stage:main"
#: the longest socket path (bytes): Linux's limit is 108 with the final NUL
MAX_SOCKET_PATH = 100
#: seconds this command waits for the server's socket to appear
START_TIMEOUT = 30.0
#: seconds between SIGTERM and SIGKILL when the server is stopped
STOP_TIMEOUT = 10.0

#: the file ``<socket><READY>`` the server creates when its imports are done
READY = ".ready"
#: the length of a request (bytes), before it
_HEADER = struct.Struct("!I")
#: set in a child of the server (a stage that must not delegate again)
IN_CHILD = False


# --------------------------------------------------------------------------- the client
def delegate(
    argv: Sequence[str] | None = None, target: str = TARGET, *, wait: bool = True
) -> int | None:
    """Run this command (``sys.argv``, or ``argv``) in a child of the preload server named
    by ``$PIPELINE_PRELOAD``; return its exit status, or ``None`` to run it here (no
    server, the server refused, or -- ``wait=False`` -- it is still importing: a one-line
    notice on stderr says why)."""
    path = os.environ.get(ENV)
    if not path or IN_CHILD:
        return None
    if not wait and os.path.exists(path) and not os.path.exists(path + READY):
        _notice("the preload server is still importing")
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError as exc:
        conn.close()
        _notice(f"no preload server at {path} ({exc.strerror or exc})")
        return None
    # from now on a signal goes to the child (or ends a request whose child has not started)
    received: list[int] = []
    previous = _forward_signals(conn, received)
    request = {
        "target": target,
        "argv": [sys.argv[0], *(sys.argv[1:] if argv is None else argv)],
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "python": _python_identity(),
    }
    try:
        payload = json.dumps(request).encode()
        try:
            socket.send_fds(conn, [_HEADER.pack(len(payload)) + payload], [0, 1, 2])
            reader = conn.makefile("rb")
            first = _read_message(reader)
        except OSError as exc:
            first = {"local": f"the connection failed ({exc.strerror or exc})"}
        if first is None or "local" in first:
            reason = "it closed the connection" if first is None else first["local"]
            _notice(f"the preload server does not run this stage: {reason}")
            # this process runs the stage: its own handlers again, and a signal that came
            # meanwhile acts now
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            for signum in received:
                os.kill(os.getpid(), signum)
            return None
        return _wait_for_child(conn, reader, int(first["pid"]))
    finally:
        conn.close()


def _forward_signals(conn: socket.socket, received: list[int]) -> dict[int, Any]:
    """Send this process's SIGINT/SIGTERM/SIGHUP to the server (which sends it to the
    child, or ends a request whose child has not started), noting each in ``received``;
    the handlers they replace."""

    def forward(signum: int, _frame: Any) -> None:
        received.append(signum)
        with contextlib.suppress(OSError):
            conn.sendall(b"%d\n" % signum)

    signums = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    return {signum: signal.signal(signum, forward) for signum in signums}


def _wait_for_child(conn: socket.socket, reader: io.BufferedReader, pid: int) -> int:
    """The child's exit status (the connection's last message)."""
    from .lifecycle import die_with_parent

    die_with_parent()  # dvc killed: SIGTERM here, forwarded
    while True:
        try:
            message = _read_message(reader)
            break
        except InterruptedError:  # pragma: no cover -- PEP 475 retries reads
            continue
    if message is None:
        from .errors import report

        report(
            RuntimeError(
                f"the preload server ended while it ran this stage (pid {pid}); run it "
                f"again, or without the server: unset {ENV}"
            )
        )
        return 1
    return int(message["status"])


def _read_message(reader: io.BufferedReader) -> dict[str, Any] | None:
    line = reader.readline()
    return json.loads(line) if line else None


def _notice(text: str) -> None:
    print(f"note: {text}; running the stage in this process", file=sys.stderr, flush=True)


def _python_identity() -> dict[str, Any]:
    """What must be equal in the server and the stage process: the interpreter, its
    module search path and the settings the libraries read when they are imported."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k.startswith(IMPORT_TIME_PREFIXES) or k in IMPORT_TIME_VARIABLES
    }
    env.pop(ENV, None)
    return {
        "executable": os.path.realpath(sys.executable),
        "path": [os.path.realpath(p) if p else os.getcwd() for p in sys.path],
        "env": env,
    }


# --------------------------------------------------------------------------- the command
@contextlib.contextmanager
def running_server(modules: Sequence[str] | None = None) -> Iterator[str | None]:
    """Start a preload server (its socket path), stop it by PID when the block ends;
    ``None`` if it did not start (the block then runs without it)."""
    directory = tempfile.mkdtemp(prefix="pipeline-preload-")  # mode 0700: this user only
    path = os.path.join(directory, "socket")
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:  # a long $TMPDIR
        shutil.rmtree(directory, ignore_errors=True)
        directory = tempfile.mkdtemp(prefix="pipeline-preload-", dir="/tmp")
        path = os.path.join(directory, "socket")
    cmd = [sys.executable, "-m", "pipeline.preload_server", path]
    if modules is not None:
        cmd += ["--modules", ",".join(modules)]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not os.path.exists(path) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        yield path if os.path.exists(path) and proc.poll() is None else None
    finally:
        _stop(proc)
        shutil.rmtree(directory, ignore_errors=True)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run(command: Sequence[str], modules: Sequence[str] | None = None) -> int:
    """Run ``command`` with a preload server; its exit status."""
    with running_server(modules) as path:
        env = dict(os.environ)
        if path is None:
            print(
                "note: the preload server did not start; stages import on their own",
                file=sys.stderr,
            )
        else:
            env[ENV] = path
        try:
            proc = subprocess.Popen(list(command), env=env)
        except OSError as exc:
            print(f"error: cannot run {command[0]!r}: {exc.strerror}", file=sys.stderr)
            return 127
        # Ctrl-C reaches the command (the terminal's process group); this process waits
        # for it to end, then stops the server
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            status = proc.wait()
        finally:
            signal.signal(signal.SIGINT, previous)
        return 128 - status if status < 0 else status  # killed by a signal: as a shell says


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.preload",
        description="Run COMMAND (e.g. dvc repro) with the DVC stages forked from one "
        "interpreter that has imported the pipeline's libraries once.",
    )
    parser.add_argument("--modules", help=argparse.SUPPRESS)  # the server's (tests)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run")
    args = parser.parse_args(argv)
    modules = None if args.modules is None else [m for m in args.modules.split(",") if m]
    if not args.command:
        parser.error("give the command to run, e.g. python -m pipeline.preload dvc repro")
    sys.exit(run(args.command, modules))


if __name__ == "__main__":
    main()
