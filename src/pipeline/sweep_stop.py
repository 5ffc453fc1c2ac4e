"""Stopping a ``--multirun`` sweep on SIGTERM / SIGINT, whatever its launcher.

Hydra's launchers that run the jobs in other processes (joblib's loky workers, submitit's
job processes, Ray's workers) wait for them in the sweep's process; a signal raised there
aborts the launcher: joblib kills its workers with SIGKILL (their MLflow runs stay RUNNING,
a traceback, exit status 1), submitit and Ray leave them running. Instead, while the
launcher waits, the sweep's process takes the signal (:func:`pipeline.lifecycle.defer_signals`)
and stops the sweep through its directory (``hydra.sweep.dir``, which every job of the
sweep knows):

1. it writes ``.stop`` (the signal's name): a job that has not started yet sees it and does
   not start (``.stopped/<job>.txt``: not started);
2. it sends SIGTERM to the running jobs of this machine (Ray's workers block SIGINT),
   which each registered its process in ``.running/<host>@<pid>`` before looking for
   ``.stop``: such a job raises the sweep's signal (named in ``.stop``),
   marks its MLflow runs KILLED (tag ``projloss.closed_by: signal ...``), records
   ``.stopped/<job>.txt`` and returns, its worker alive;
3. the launcher collects the jobs as usual; at the end of the sweep
   (:meth:`pipeline.runs.callbacks.SweepProgress.on_multirun_end`) the sweep prints one
   line ``error: python -m pipeline.train was interrupted by SIGTERM ...`` and exits 143
   (130 for SIGINT), like a single run.

A second SIGINT while the jobs are stopping is raised at once (the launcher aborts; the
runs of the jobs it kills are closed at exit by
:class:`pipeline.cluster.callbacks.CloseOrphanRuns`); a second SIGTERM is ignored, as in a
single run. Ctrl-C in a terminal reaches every process of the foreground group (the sweep,
joblib's workers; submitit's controllers are started in a session of their own, else
they would die of it): each job stops on its own signal and ignores the one the sweep
sends. A job on another machine (a Ray cluster's node) is not sent the signal:
it does not start when it has not yet, else it runs to its end.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

from . import lifecycle

log = logging.getLogger("pipeline.sweep")

#: the PID of the sweep's process (set by it for the jobs that run in its own process)
SWEEP_PID_ENV = "PROJLOSS_SWEEP_PID"
#: the sweep directory's records of a stop
STOP_FILE, RUNNING_DIR, STOPPED_DIR = ".stop", ".running", ".stopped"


def is_worker() -> bool:
    """Whether this process runs a sweep's job for another process (not the sweep's)."""
    return os.environ.get(SWEEP_PID_ENV) != str(os.getpid())


def stop_requested(sweep_dir: Path) -> bool:
    """Whether the sweep has been told to stop (its ``.stop`` file)."""
    return (sweep_dir / STOP_FILE).exists()


def stop_signal(sweep_dir: Path) -> int | None:
    """The signal that stopped the sweep (named in its ``.stop`` file), else None."""
    try:
        name = (sweep_dir / STOP_FILE).read_text(encoding="utf-8").strip()
        return int(signal.Signals[name])
    except (OSError, KeyError):
        return None


def record_stopped(sweep_dir: Path, num: int, overrides: str, what: str) -> None:
    """Record that job ``num`` was stopped (``what``: stopped by ..., not started)."""
    from .fileio import write_text

    with contextlib.suppress(OSError):  # a record is a courtesy: the runs are closed
        write_text(sweep_dir / STOPPED_DIR / f"{num}.txt", f"{overrides}\n{what}\n")


@contextlib.contextmanager
def registered(sweep_dir: Path) -> Iterator[None]:
    """This process runs a job of the sweep: the sweep's process may send it the signal
    that stops the sweep (call with the signal handlers installed)."""
    entry = sweep_dir / RUNNING_DIR / f"{socket.gethostname()}@{os.getpid()}"
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.touch()
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            entry.unlink()


class SweepStop:
    """The sweep's process's side (see the module docstring): :meth:`start` before the
    first job, :meth:`finish` after the last."""

    def __init__(self, sweep_dir: Path) -> None:
        self.sweep_dir = sweep_dir
        self.signum: int | None = None

    def start(self, launcher: str = "") -> None:
        """Clear the records of an earlier sweep in the same directory, name this process
        as the sweep's, and take the signals while the launcher waits (``launcher``: the
        ``_target_`` of ``hydra.launcher``)."""
        self._clear()
        os.environ[SWEEP_PID_ENV] = str(os.getpid())
        # Ray's driver (ray.init, in the launcher) would take SIGTERM over with its crash
        # handler (a stack dump and an abort, exit status 134)
        os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")
        if "submitit" in launcher:
            _controllers_in_their_own_session()
        if "ray" in launcher:
            _keep_the_sweeps_sigterm_handler()
        lifecycle.install_signal_handlers()
        lifecycle.defer_signals(self.on_signal)

    def _clear(self) -> None:
        with contextlib.suppress(OSError):
            (self.sweep_dir / STOP_FILE).unlink()
        for name in (RUNNING_DIR, STOPPED_DIR):
            shutil.rmtree(self.sweep_dir / name, ignore_errors=True)

    def on_signal(self, signum: int) -> bool:
        """The first signal: stop the sweep (True: not raised); a later one is raised."""
        if self.signum is not None:
            return False
        self.signum = signum
        name = signal.Signals(signum).name
        try:
            self.sweep_dir.mkdir(parents=True, exist_ok=True)
            (self.sweep_dir / STOP_FILE).write_text(name + "\n", encoding="utf-8")
        except OSError as exc:  # the jobs cannot be told: let the launcher abort
            log.warning("could not write %s: %s", self.sweep_dir / STOP_FILE, exc)
            return False
        sent = 0  # SIGTERM: the one signal every launcher's workers leave to the job
        host = socket.gethostname()
        with contextlib.suppress(OSError):
            for entry in (self.sweep_dir / RUNNING_DIR).iterdir():
                where, _, pid = entry.name.rpartition("@")
                if where != host or not pid.isdigit() or int(pid) == os.getpid():
                    continue
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(pid), signal.SIGTERM)
                    sent += 1
        log.warning(
            "%s: stopping the sweep (%d running job(s) told to stop; the others will not "
            "start)", name, sent,
        )  # fmt: skip
        return True

    def finish(self) -> int | None:
        """After the last job: stop taking the signals; when the sweep was stopped, print
        its one line and return the exit status (130 / 143), else None."""
        lifecycle.defer_signals(None)
        signum, self.signum = self.signum, None
        if signum is None:
            return None
        exc = lifecycle.Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        records = sorted((self.sweep_dir / STOPPED_DIR).glob("*.txt"))
        stopped = sum("not started" not in p.read_text(encoding="utf-8") for p in records)
        skipped = len(records) - stopped
        what = lifecycle.invoked_command()
        print(
            f"error: {what} (a sweep) was interrupted by {lifecycle.signal_name(exc)}; "
            f"{stopped} running job(s) stopped, their MLflow runs marked KILLED, {skipped} "
            f"job(s) not started ({self.sweep_dir}): {lifecycle.rerun_remedy(what)}",
            file=sys.stderr,
            flush=True,
        )
        self._clear()
        return lifecycle.interrupted_status(exc)


def _controllers_in_their_own_session() -> None:
    """Start submitit's local job controllers (``submitit_local``) in a session of their
    own: Ctrl-C in the terminal reaches the sweep's process, which stops the jobs, but not
    the controllers (each would die of it with a ``KeyboardInterrupt`` traceback and
    SIGKILL its job 1 s later, before it has closed its runs). A no-op without submitit;
    only submitit's ``local`` module is changed (its own ``subprocess`` name)."""
    import functools
    import subprocess
    import types

    try:
        from submitit.local import local
    except ImportError:
        return
    if getattr(local.subprocess, "_projloss_own_session", False):
        return
    proxy = types.ModuleType("subprocess")
    proxy.__dict__.update(vars(subprocess))
    proxy.Popen = functools.partial(subprocess.Popen, start_new_session=True)  # type: ignore[attr-defined]
    proxy._projloss_own_session = True  # type: ignore[attr-defined]
    local.subprocess = proxy  # type: ignore[attr-defined]


def _keep_the_sweeps_sigterm_handler() -> None:
    """``ray.init`` (called by the Ray launcher in the sweep's process) replaces the SIGTERM
    handler with one that exits at once (``sys.exit``: the jobs go on, their runs stay
    RUNNING): keep the sweep's (:func:`pipeline.lifecycle.install_signal_handlers`) when
    it is in place. Only Ray's function that sets it is changed."""
    try:
        from ray._private import utils
    except ImportError:
        return
    original = utils.set_sigterm_handler
    if getattr(original, "_projloss_keeps_ours", False):
        return

    def set_sigterm_handler(handler: object) -> None:
        if signal.getsignal(signal.SIGTERM) is lifecycle.signal_handler():
            return
        original(handler)

    set_sigterm_handler._projloss_keeps_ours = True  # type: ignore[attr-defined]
    utils.set_sigterm_handler = set_sigterm_handler
