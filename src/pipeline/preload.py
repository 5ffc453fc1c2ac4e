"""``python -m pipeline.preload COMMAND...``: run COMMAND (``dvc repro``) with every DVC
stage forked from one interpreter that has imported the pipeline's libraries once.

Each command of ``dvc.yaml`` (``python -m pipeline.stage tune <experiment>``, ...) is a new
process, and before doing anything it imports numpy, SciPy, scikit-learn (which imports
pandas), numba, MLflow (which imports SQLAlchemy and Alembic), skops and matplotlib:
measured 2.5-3 s per process on a quiet 2-core machine, 21 stage processes one after the
other in ``make repro``, while the second core waits. A fork of a process that has
imported them all starts in milliseconds (the pages are shared, copy on write).

This command starts a *preload server* (``python -m pipeline.preload --serve SOCKET``, in
its own session): it listens on a Unix socket in a new private directory, imports the
modules of :data:`PRELOAD`, then serves one stage at a time. COMMAND runs with
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

and when no server answers (it could not start, or died). Plain ``dvc repro`` (no
``PIPELINE_PRELOAD``) is unchanged.

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
import atexit
import contextlib
import importlib
import io
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

#: the environment variable that names the server's socket
ENV = "PIPELINE_PRELOAD"
#: the modules the server imports (those missing are skipped): what the stages import
PRELOAD = (
    "numpy",
    "scipy.sparse",
    "scipy.optimize",
    "sklearn.base",
    "sklearn.utils.validation",
    "projloss",
    "projloss.estimators",
    "mlflow",
    "mlflow.sklearn",
    "mlflow.models",
    "mlflow.store.tracking.sqlalchemy_store",
    "skops.io",
    "matplotlib.figure",
    "matplotlib.backends.backend_agg",
    "threadpoolctl",
    "pipeline.config.run",
    "pipeline.config.experiments",
    "pipeline.data.api",
    "pipeline.runs.tune",
    "pipeline.runs.refit",
    "pipeline.runs.evaluate",
    "pipeline.runs.parallel",
    "pipeline.runs.tracking",
    "pipeline.runs.mlflow_view",
    "pipeline.runs.figures",
    "pipeline.report.build",
)
#: environment variables read when a module is imported (by the libraries above): a stage
#: whose value differs from the server's runs in its own process
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

_HEADER = struct.Struct("!I")
#: set in a child of the server (a stage that must not delegate again)
IN_CHILD = False


# --------------------------------------------------------------------------- the client
def delegate(argv: Sequence[str] | None = None, target: str = TARGET) -> int | None:
    """Run this command (``sys.argv``, or ``argv``) in a child of the preload server named
    by ``$PIPELINE_PRELOAD``; return its exit status, or ``None`` to run it here (no
    server, or the server refused: a one-line notice on stderr says why)."""
    path = os.environ.get(ENV)
    if not path or IN_CHILD:
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError as exc:
        conn.close()
        _notice(f"no preload server at {path} ({exc.strerror or exc})")
        return None
    _forward_signals(conn)  # from now on a signal goes to the child (or ends the request)
    request = {
        "target": target,
        "argv": [sys.argv[0], *(sys.argv[1:] if argv is None else argv)],
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "python": _python_identity(),
    }
    try:
        payload = json.dumps(request).encode()
        socket.send_fds(conn, [_HEADER.pack(len(payload)) + payload], [0, 1, 2])
        reader = conn.makefile("rb")
        first = _read_message(reader)
        if first is None or "local" in first:
            reason = "it closed the connection" if first is None else first["local"]
            _notice(f"the preload server does not run this stage: {reason}")
            return None
        return _wait_for_child(conn, reader, int(first["pid"]))
    finally:
        conn.close()


def _forward_signals(conn: socket.socket) -> None:
    """Send this process's SIGINT/SIGTERM/SIGHUP to the server (which sends it to the
    child, or ends a request whose child has not started)."""

    def forward(signum: int, _frame: Any) -> None:
        with contextlib.suppress(OSError):
            conn.sendall(b"%d\n" % signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)


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


# --------------------------------------------------------------------------- the server
def serve(path: str, modules: Sequence[str] = PRELOAD) -> None:
    """Listen on ``path``, import ``modules``, then run each request in a child, one at
    a time, until SIGTERM."""
    from .lifecycle import die_with_parent

    die_with_parent()  # stopped with the command that started it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)  # first: stage processes may connect while the imports run
    listener.listen(16)
    _preload(modules)
    identity = _python_identity()
    sources = _sources()
    threads = threading.active_count()
    while True:
        conn, _ = listener.accept()
        with conn:
            try:
                request, fds = _receive(conn)
            except (OSError, ValueError):
                continue
            try:
                refusal = _refusal(request, identity, sources, threads)
                if refusal:
                    conn.sendall(json.dumps({"local": refusal}).encode() + b"\n")
                    continue
                _run_child(listener, conn, request, fds)
            finally:
                for fd in fds:
                    os.close(fd)


def _preload(modules: Sequence[str]) -> None:
    # the stage's own exit handler first: the last to run in a child, after the handlers
    # the libraries register when imported, as in a stage process (pipeline.stage.main)
    from . import stage

    stage.register_exit_handler()
    stage.keep_freed_memory()  # inherited by the children (and their workers)
    for name in modules:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    if "projloss" in sys.modules:
        _load_kernels()


def _load_kernels() -> None:
    """Call every set's projections and MAP oracle once on a tiny input: numba loads their
    compiled kernels from its disk cache on a first call (half a second for the Birkhoff
    polytope's), once here instead of once per stage."""
    import numpy as np

    from projloss.sets import SETS

    theta = np.linspace(-1.0, 1.0, 2 * 3 * 3)
    for cls in SETS.values():
        with contextlib.suppress(Exception):  # a set that needs parameters: skipped
            convex = cls()
            x = theta.reshape(2, *convex.event_shape(3))
            for geometry in ("euclidean", "kl"):
                convex.project(x, geometry)
            convex.argmax(x)


def _sources() -> dict[str, tuple[int, int]]:
    """``(mtime_ns, size)`` of the files of this package's and the engine's modules."""
    roots = [Path(__file__).resolve().parent]
    engine = sys.modules.get("projloss")
    if engine is not None and getattr(engine, "__file__", None):
        roots.append(Path(engine.__file__).resolve().parent)
    out = {}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not file:
            continue
        resolved = Path(file).resolve()
        if any(root in resolved.parents for root in roots):
            with contextlib.suppress(OSError):
                st = resolved.stat()
                out[str(resolved)] = (st.st_mtime_ns, st.st_size)
    return out


def _refusal(
    request: Mapping[str, Any],
    identity: Mapping[str, Any],
    sources: Mapping[str, tuple[int, int]],
    threads: int,
) -> str | None:
    """Why this request must run in the stage's own process (``None``: it need not)."""
    theirs = request.get("python", {})
    if theirs.get("executable") != identity["executable"]:
        return f"another Python ({theirs.get('executable')})"
    if theirs.get("path") != identity["path"]:
        return "another module search path (sys.path)"
    if theirs.get("env") != identity["env"]:
        keys = sorted(
            k
            for k in set(theirs.get("env", {})) | set(identity["env"])
            if theirs.get("env", {}).get(k) != identity["env"].get(k)
        )
        return "other import-time settings: " + ", ".join(keys)
    if threads != 1:
        return f"the server has {threads} threads (a fork copies one)"
    for file, stamp in sources.items():
        try:
            st = os.stat(file)
        except OSError:
            return f"{file} was removed since the server started"
        if (st.st_mtime_ns, st.st_size) != stamp:
            return f"{file} changed since the server started"
    return None


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    # the header alone (the descriptors come with its first byte): the signals the stage
    # process forwards may follow the request on the same stream
    data, fds, _flags, _addr = socket.recv_fds(conn, _HEADER.size, 3)
    while 0 < len(data) < _HEADER.size:
        chunk = conn.recv(_HEADER.size - len(data))
        if not chunk:
            break
        data += chunk
    if len(fds) != 3 or len(data) < _HEADER.size:
        for fd in fds:
            os.close(fd)
        raise ValueError("a request needs a header and three file descriptors")
    (size,) = _HEADER.unpack(data)
    payload = bytearray()
    while len(payload) < size:
        chunk = conn.recv(size - len(payload))
        if not chunk:
            for fd in fds:
                os.close(fd)
            raise ValueError("the request was cut short")
        payload += chunk
    return json.loads(bytes(payload)), list(fds)


def _run_child(
    listener: socket.socket, conn: socket.socket, request: Mapping[str, Any], fds: list[int]
) -> None:
    """Fork the child that runs the request; relay signals; send its exit status."""
    sys.stdout.flush()
    sys.stderr.flush()
    # blocked until the child has its handlers: a signal forwarded at once is not lost
    signals = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    pid = os.fork()
    if pid == 0:  # the child: never returns
        listener.close()
        conn.close()
        os._exit(_child(request, fds, blocked))
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    pidfd = os.pidfd_open(pid)
    try:
        status = None
        while status is None:
            ready, _, _ = select.select([conn, pidfd], [], [])
            if pidfd in ready:
                _, raw = os.waitpid(pid, 0)
                status = os.waitstatus_to_exitcode(raw)
                break
            try:
                data = conn.recv(64)
            except OSError:
                data = b""
            signums = [int(s) for s in data.split()] if data else [signal.SIGTERM]
            for signum in signums:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signum)
            if not data:  # the stage process is gone: wait for the child's end
                _, raw = os.waitpid(pid, 0)
                return
    finally:
        os.close(pidfd)
    # a signal's death is 128 + signal number, as a shell reports it
    code = status if status >= 0 else 128 - status
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps({"status": code}).encode() + b"\n")


def _child(request: Mapping[str, Any], fds: list[int], mask: set[signal.Signals]) -> int:
    """Become the stage process of ``request`` and run its target; the exit status."""
    global IN_CHILD
    IN_CHILD = True
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        from .lifecycle import die_with_parent

        die_with_parent()  # SIGTERM when the server ends (stopped with the command)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        _reopen_standard_streams()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update({k: v for k, v in request["env"].items() if k != ENV})
        sys.argv = list(request["argv"])
        module, _, function = str(request["target"]).partition(":")
        entry = getattr(importlib.import_module(module), function)
        try:
            entry()
            code = 0
        except SystemExit as exc:
            code = _exit_status(exc.code)
        except KeyboardInterrupt:
            code = 128 + signal.SIGINT
        except BaseException:  # a bug: its traceback, as Python prints it
            import traceback

            traceback.print_exc()
            code = 1
        threading._shutdown()  # type: ignore[attr-defined]  # as the interpreter's exit
        atexit._run_exitfuncs()  # may end the process (pipeline.stage's handler)
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
    return code


def _exit_status(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _reopen_standard_streams() -> None:
    """``sys.stdin/stdout/stderr`` on the new descriptors 0-2, buffered as Python does
    for what they are (a terminal: line by line)."""
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    sys.stdin = open(0, encoding=sys.stdin.encoding, errors=sys.stdin.errors, closefd=False)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        stream = open(
            fd,
            "w",
            encoding=old.encoding,
            errors=old.errors,
            closefd=False,
            buffering=1 if (os.isatty(fd) or fd == 2) else -1,
        )
        if unbuffered:
            stream.reconfigure(write_through=True)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)
    sys.__stdin__ = sys.stdin


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
    cmd = [sys.executable, "-m", "pipeline.preload", "--serve", path]
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
            print("note: the preload server did not start; stages import on their own",
                  file=sys.stderr)
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
    parser.add_argument("--serve", metavar="SOCKET", help=argparse.SUPPRESS)
    parser.add_argument("--modules", help=argparse.SUPPRESS)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run")
    args = parser.parse_args(argv)
    modules = PRELOAD if args.modules is None else [m for m in args.modules.split(",") if m]
    if args.serve:
        serve(args.serve, modules)
        return
    if not args.command:
        parser.error("give the command to run, e.g. python -m pipeline.preload dvc repro")
    sys.exit(run(args.command, None if args.modules is None else modules))


if __name__ == "__main__":
    # the functions of the module ``pipeline.preload`` (not of ``__main__``, a copy): the
    # stage's code reads its IN_CHILD
    from pipeline.preload import main as _main

    _main()
