"""The preload server of :mod:`pipeline.preload` (``python -m pipeline.preload_server
SOCKET [--modules a,b]``, started and stopped by ``python -m pipeline.preload``).

It binds ``SOCKET`` first (stage processes may connect while it imports), starts a
*kernel compiler* (``python -m pipeline.preload_server --compile-kernels``: a process
that calls every set's compiled kernels once, so that numba compiles into its disk cache
those it has not cached yet -- seconds on a fresh clone -- on the other core while the
first stages run), imports the modules of :data:`PRELOAD`, says it is ready, then serves
one request at a time; when the compiler has ended it loads the kernels from the cache
(between requests, or while a child runs), so that the children forked after that find
them loaded. What only the stages after the first tune stage need (:data:`LATE`: skops
and MLflow's first model save, for refit and evaluate, 3 s, a third of the imports) comes
after it is ready, when no stage waits: in the gaps while DVC records a stage. It checks
that the stage process could run in a fork of this process (:func:`_refusal`: the same
Python, import-time settings and source files), forks a child that becomes the stage
process (its standard streams, directory, environment and command line) and runs its
entry point with the exit handlers in a stage process's order, relays the signals the
stage process forwards, and sends back the child's exit status.

Nothing here decides what a stage computes: the child runs the stage's own code.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import functools
import importlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import preload
from .preload import _HEADER, ENV, READY, _python_identity

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
    "mlflow.genai",  # what MLflow's database store imports (through the public client)
    "sqlalchemy.orm",
    "alembic.runtime.migration",
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
    "pipeline.runs.mlflow_tracker",
    "pipeline.runs.model_packaging",
    "pipeline.runs.mlflow_view",
    "pipeline.runs.figures",
    "pipeline.report.build",
)


#: the folder of :func:`_save_a_model` while it saves (removed on SIGTERM too)
_SCRATCH: str | None = None


def _save_a_model() -> None:
    """MLflow's first model save (:func:`pipeline.runs.model_packaging.warm_up`), into a
    temporary folder that the server removes even when SIGTERM stops it meanwhile."""
    global _SCRATCH
    import shutil
    import tempfile

    packaging = sys.modules.get("pipeline.runs.model_packaging")
    if packaging is None:
        return
    _SCRATCH = tempfile.mkdtemp(prefix="projloss-warm-up-")
    try:
        packaging.warm_up(_SCRATCH)
    finally:
        shutil.rmtree(_SCRATCH, ignore_errors=True)
        _SCRATCH = None


#: what the server does once it is ready, one item at a time while no stage waits
#: (:func:`serve`): imported only by the stages that log or load models (refit,
#: evaluate), never by the first tune stage, which would otherwise wait for them.
#: ``skops.io`` (MLflow's scikit-learn format) imports every scikit-learn module, and so
#: torch (2-4 s); the first model save scans the installed packages (0.7-2.5 s).
LATE: tuple[Callable[[], Any], ...] = (
    functools.partial(importlib.import_module, "skops.io"),
    _save_a_model,
)


def serve(path: str, modules: Sequence[str] = PRELOAD) -> None:
    """Listen on ``path``, import ``modules``, then run each request in a child, one at
    a time, until SIGTERM."""
    from .lifecycle import die_with_parent

    die_with_parent()  # stopped with the command that started it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _remove_socket_on_sigterm(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)  # first: stage processes may connect while the imports run
    listener.listen(16)
    # the kernels: compiled (if not cached) by another process on the other core while the
    # first stages (fetch, preprocess: they need none) run; loaded here when it has ended
    warm_up = KernelWarmUp.start() if "projloss" in modules else None
    _preload(modules)
    identity = _python_identity()
    sources = _sources()
    threads = threading.active_count()
    with contextlib.suppress(FileExistsError):
        open(path + READY, "x").close()  # the stages that would not wait for it: now do
    late = list(LATE if "pipeline.runs.model_packaging" in modules else ())
    while True:
        if warm_up is not None and not warm_up.pending:
            warm_up = None
        waited = [listener] if warm_up is None else [listener, warm_up]
        ready = select.select(waited, [], [], 0.0 if late else None)[0]
        if warm_up is not None and warm_up in ready:
            warm_up.finish()
            continue
        if not ready:  # no stage waits: the next late item (a stage may wait for it)
            with contextlib.suppress(Exception):
                late.pop(0)()
            continue
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
                _run_child(listener, conn, request, fds, warm_up)
                threads = threading.active_count()
            except OSError:  # the stage process went away: its child got SIGTERM
                continue
            finally:
                for fd in fds:
                    os.close(fd)


def _remove_socket_on_sigterm(path: str) -> None:
    """On SIGTERM (the command stops the server, or died: ``PR_SET_PDEATHSIG``) remove the
    socket, its ready file and their private directory (``pipeline-preload-*``, made by
    :func:`pipeline.preload.running_server`) and the folder of a model save under way
    (:func:`_save_a_model`), then die of the signal: a command killed with
    SIGKILL (``make repro`` killed) cannot remove them itself, and they would pile up in
    ``$TMPDIR``. The children reset SIGTERM before anything else (:func:`_child`)."""

    def remove(signum: int, _frame: Any) -> None:
        for name in (path + READY, path):
            with contextlib.suppress(OSError):
                os.unlink(name)
        if _SCRATCH is not None:  # stopped while it saved its first model
            import shutil

            shutil.rmtree(_SCRATCH, ignore_errors=True)
        directory = os.path.dirname(path)
        if os.path.basename(directory).startswith("pipeline-preload-"):
            with contextlib.suppress(OSError):
                os.rmdir(directory)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    signal.signal(signal.SIGTERM, remove)


def _preload(modules: Sequence[str]) -> None:
    # the stage's exit handler first: the last to run in a child, after the handlers the
    # libraries register when imported, as in a stage process (pipeline.stage.main)
    from .lifecycle import keep_freed_memory, register_exit_handler

    register_exit_handler()
    keep_freed_memory()  # inherited by the children (and their workers)
    for name in modules:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


class KernelWarmUp:
    """The kernel compiler process (:func:`compile_kernels`) and, when it has ended, the
    kernels loaded into this process (:func:`_load_kernels`): :meth:`finish`, when
    :meth:`fileno` (the compiler's pidfd, for ``select``) is ready."""

    def __init__(self, proc: subprocess.Popen[bytes] | None) -> None:
        self.proc = proc
        self.pidfd = os.pidfd_open(proc.pid) if proc is not None else os.eventfd(1)
        self.pending = True

    @classmethod
    def start(cls) -> KernelWarmUp:
        """Start the compiler (a warm-up without it, in this process, if it cannot)."""
        cmd = [sys.executable, "-m", "pipeline.preload_server", "--compile-kernels"]
        try:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, close_fds=True
            )
        except OSError:
            proc = None
        return cls(proc)

    def fileno(self) -> int:
        return self.pidfd

    def finish(self) -> None:
        """Reap the compiler, load the kernels here (from numba's cache, now filled), draw
        a first figure (:func:`pipeline.runs.figures.warm_up`: matplotlib's math-text
        parser, 0.3-0.6 s, inherited by the children and their workers) and open an
        in-memory MLflow store (:func:`pipeline.runs.store.warm_up`: what the database
        store imports, 0.4 s, inherited by the stage processes)."""
        if not self.pending:
            return
        self.pending = False
        if self.proc is not None:
            self.proc.wait()
        os.close(self.pidfd)
        with contextlib.suppress(Exception):
            _load_kernels()
        figures = sys.modules.get("pipeline.runs.figures")
        if figures is not None:
            with contextlib.suppress(Exception):
                figures.warm_up()
        store = sys.modules.get("pipeline.runs.store")
        if store is not None:  # MLflow's database store (:func:`pipeline.runs.store.warm_up`)
            with contextlib.suppress(Exception):
                store.warm_up()


def compile_kernels() -> None:
    """The kernel compiler's work (``--compile-kernels``): every set's kernels called once
    (numba compiles those its disk cache lacks and writes them there)."""
    from .lifecycle import die_with_parent

    die_with_parent()  # stopped with the server
    signal.signal(signal.SIGINT, signal.SIG_IGN)
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
    listener: socket.socket,
    conn: socket.socket,
    request: Mapping[str, Any],
    fds: list[int],
    warm_up: KernelWarmUp | None = None,
) -> None:
    """Fork the child that runs the request; relay signals; send the child's exit status;
    finish ``warm_up`` if its compiler ends meanwhile (the signals the stage process
    forwards wait for that)."""
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
    try:
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    except OSError:  # the stage process is gone already
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
        return
    pidfd = os.pidfd_open(pid)
    try:
        status = None
        while status is None:
            waited: list[Any] = [conn, pidfd]
            if warm_up is not None and warm_up.pending:
                waited.append(warm_up)
            ready, _, _ = select.select(waited, [], [])
            if warm_up is not None and warm_up in ready:
                warm_up.finish()
                continue
            if pidfd in ready:
                _, raw = os.waitpid(pid, 0)
                status = os.waitstatus_to_exitcode(raw)
                break
            try:
                data = conn.recv(64)
            except OSError:
                data = b""
            signums = [int(s) for s in data.split() if s.isdigit()] if data else [signal.SIGTERM]
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
    preload.IN_CHILD = True  # the stage's command reads it (no delegating again)
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


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.preload_server",
        description="The preload server of `python -m pipeline.preload` (started by it).",
    )
    parser.add_argument("socket", nargs="?", help="the Unix socket to listen on")
    parser.add_argument("--modules", help="comma-separated modules (default: PRELOAD)")
    parser.add_argument(
        "--compile-kernels", action="store_true", help="be the server's kernel compiler"
    )
    args = parser.parse_args(argv)
    if args.compile_kernels:
        compile_kernels()
        return
    if args.socket is None:
        parser.error("give the socket to listen on")
    modules = PRELOAD if args.modules is None else [m for m in args.modules.split(",") if m]
    serve(args.socket, modules)


if __name__ == "__main__":
    # the functions of the module ``pipeline.preload_server``, not of ``__main__`` (a copy)
    from pipeline.preload_server import main as _main

    _main()
