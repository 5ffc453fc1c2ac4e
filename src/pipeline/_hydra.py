"""Shared plumbing of the thin Hydra entry points (``python -m pipeline.<stage>``).

Errors and signals end a command through :func:`pipeline.lifecycle.command` (one line
``error: ...``, exit status 1). In a ``--multirun`` sweep a failing job does not stop the
sweep: its error line names the job, the failure is recorded in the sweep directory
(``.failed/<job>.txt``) and :class:`pipeline.runs.callbacks.SweepProgress` ends the sweep with
``error: k of N jobs failed: ...`` and exit status 1 once every job has run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .errors import ENTRY_ENV, PipelineError, debug, one_line, pipeline_cause
from .lifecycle import (
    command,
    interrupted_line,
    interrupted_status,
    invoked_command,
    mark_worker,
    signal_name,
)
from .lifecycle import job as job_context
from .paths import conf_dir

log = logging.getLogger("pipeline")

#: the directory of a sweep's failure records (under ``hydra.sweep.dir``)
FAILED_DIR = ".failed"


def config_path() -> str:
    """Absolute path of the repository's ``conf/`` (Hydra's ``config_path``). Called when
    an entry point is imported: a project root that cannot be found (a bad
    ``PROJLOSS_ROOT``) is one line ``error: ...`` and exit status 1, not a traceback."""
    try:
        return str(conf_dir())
    except PipelineError as exc:
        if debug():
            raise
        print(f"error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None


def expected_errors() -> tuple[type[BaseException], ...]:
    """The errors a stage raises on purpose, each with a message that names the remedy:
    the one tree :class:`pipeline.errors.PipelineError` (configuration, composition,
    data, tracking)."""
    return (PipelineError,)


def _sweep_job() -> tuple[Path, int, str] | None:
    """(sweep dir, job number, overrides) of a ``--multirun`` job, else None."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode
    except ImportError:  # pragma: no cover
        return None
    if not HydraConfig.initialized():
        return None
    hc = HydraConfig.get()
    if hc.mode != RunMode.MULTIRUN:
        return None
    overrides = list(hc.overrides.task)
    keys = [k for k in os.environ.get("PROJLOSS_SWEEP_KEYS", "").split(",") if k]
    if keys:  # name the job by its swept keys (set=cube geometry=kl), not every override
        overrides = [o for o in overrides if o.lstrip("+~").partition("=")[0] in keys]
    return Path(hc.sweep.dir), int(hc.job.num), " ".join(overrides)


def record_failure(sweep_dir: Path, num: int, overrides: str, message: str) -> None:
    """Record a failed job of a sweep (read by the sweep's end callback)."""
    from .fileio import write_text

    write_text(sweep_dir / FAILED_DIR / f"{num}.txt", f"{overrides}\n{message}\n")


#: set by :func:`entry` while it asks Hydra to raise its errors (``HYDRA_FULL_ERROR``)
_OURS = ENTRY_ENV  # errors.debug() then ignores that HYDRA_FULL_ERROR (sweep callbacks)
_FULL = "HYDRA_FULL_ERROR"
#: marks an exception raised by a stage (its traceback is kept, see :func:`entry`)
_FROM_STAGE = "_projloss_from_stage"


def hydra_error_line(exc: BaseException) -> str:
    """Hydra's own error (an unknown option or key, a bad override: several lines with
    the config search path) as one line ``error: <problem> (command line); <remedy>``.

    Examples
    --------
    >>> from hydra.errors import MissingConfigException
    >>> line = hydra_error_line(MissingConfigException(
    ...     "In 'config': Could not find 'set/nope'\\n\\nAvailable options in 'set':\\n"
    ...     "\\tcube\\n\\treals\\nConfig search path:\\n\\tprovider=main"))
    >>> for part in line.split("; "): print(part)
    error: In 'config': Could not find 'set/nope' (command line)
    valid options of 'set': cube, reals
    """
    lines = str(exc).splitlines()
    if "Config search path:" in lines:
        lines = lines[: lines.index("Config search path:")]
    problem, rest = (lines[0].strip().rstrip(".") if lines else type(exc).__name__), lines[1:]
    cause = exc.__cause__
    if cause is not None and str(cause).strip():
        problem += ": " + str(cause).strip().splitlines()[0].strip().rstrip(".")
    parts: list[str] = []
    options: list[str] = []
    for line in rest:
        if line.startswith("\t") and parts and parts[-1].startswith("valid options"):
            options.append(line.strip())
        elif line.strip().startswith("Available options in"):
            group = line.strip().removeprefix("Available options in").strip(" :")
            parts.append(f"valid options of {group}: ")
        elif line.strip():
            parts.append(" ".join(line.split()))
    if options:
        idx = next(i for i, p in enumerate(parts) if p.startswith("valid options"))
        parts[idx] += ", ".join(options)
    remedy = "; ".join(parts) or "see --help"
    override = getattr(exc, "override", None)  # OverrideParseException: the bad override
    place = f"command line: {override}" if override else "command line"
    return f"error: {problem} ({place}); {remedy}"


#: Hydra's ValueError for two exclusive flags (``--multirun --cfg job``)
_EXCLUSIVE = "Only one of --run, --multirun, --cfg, --info and --shell_completion"


def entry(hydra_main: Callable[[], Any]) -> None:
    """Run a ``@hydra.main`` function as a command: Hydra's own errors (an unknown option
    such as ``set=nope``, an unknown key, a bad override) become one line ``error: ...``
    with the valid options, exit status 1 (Hydra prints several lines, and catches them
    itself unless ``HYDRA_FULL_ERROR`` is set: it is set while Hydra composes and lifted
    while a stage runs, see :func:`_stage_env`). ``PROJLOSS_DEBUG=1`` keeps Hydra's text.
    """
    from .argv import normalize_sys_argv

    normalize_sys_argv()  # Hydra flags may follow the overrides (console scripts too)
    if debug():
        hydra_main()
        return
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    os.environ[_FULL] = os.environ[_OURS] = "1"
    try:
        hydra_main()
    except (HydraException, OmegaConfBaseException) as exc:
        if getattr(exc, _FROM_STAGE, False):  # a stage's bug, not the command line
            raise
        cause = pipeline_cause(exc)  # e.g. a broken dataset YAML met by a resolver
        print(one_line(cause) if cause else hydra_error_line(exc), file=sys.stderr, flush=True)
        sys.exit(1)
    except KeyboardInterrupt as exc:  # a signal outside a job (a second Ctrl-C in a sweep)
        if getattr(exc, _FROM_STAGE, False):
            raise
        print(interrupted_line(invoked_command(), exc), file=sys.stderr, flush=True)
        sys.exit(interrupted_status(exc))
    except ValueError as exc:  # Hydra's check of its own flags (a usage error, exit 2)
        if getattr(exc, _FROM_STAGE, False) or not str(exc).startswith(_EXCLUSIVE):
            raise
        print(
            f"error: {exc} (command line); run a --cfg/--info/-sc on its own, without "
            "--multirun (a sweep's first job: its overrides without the commas)",
            file=sys.stderr,
            flush=True,
        )
        sys.exit(2)
    finally:
        if os.environ.pop(_OURS, None):
            os.environ.pop(_FULL, None)


@contextlib.contextmanager
def _stage_env() -> Iterator[None]:
    """While a stage runs: without the ``HYDRA_FULL_ERROR`` that :func:`entry` set (the
    stage's own errors and its debug switch are :func:`pipeline.lifecycle.command`'s)."""
    ours = os.environ.pop(_OURS, None)
    if ours:
        os.environ.pop(_FULL, None)
    try:
        yield
    except BaseException as exc:
        with contextlib.suppress(Exception):
            setattr(exc, _FROM_STAGE, True)
        raise
    finally:
        if ours:
            os.environ[_FULL] = os.environ[_OURS] = ours


def run_or_exit(stage: Callable[[Any], Any], cfg: Any) -> None:
    """Run a stage core; report an expected error as one clear line and exit 1 (in a
    sweep: report it, record it, and go on with the next job)."""
    with _stage_env():
        _run_or_exit(stage, cfg)


def _run_or_exit(stage: Callable[[Any], Any], cfg: Any) -> None:
    job = _sweep_job()
    if job is None:
        with command():
            stage(cfg)
        return
    from . import sweep_stop

    sweep_dir, num, overrides = job
    if not sweep_stop.is_worker():  # the basic launcher: the job runs in the sweep's process
        if sweep_stop.stop_requested(sweep_dir):
            sweep_stop.record_stopped(sweep_dir, num, overrides, "not started")
            return
        with command():
            _sweep_job_body(stage, cfg, sweep_dir, num, overrides)
        return
    # A worker of joblib, submitit or Ray: a signal stops this job, which returns (its
    # runs KILLED); the sweep's process ends the sweep (pipeline.sweep_stop).
    mark_worker(lambda: sweep_stop.stop_signal(sweep_dir))
    with job_context():
        try:
            with sweep_stop.registered(sweep_dir):
                if sweep_stop.stop_requested(sweep_dir):
                    sweep_stop.record_stopped(sweep_dir, num, overrides, "not started")
                    return
                _sweep_job_body(stage, cfg, sweep_dir, num, overrides)
        except KeyboardInterrupt as exc:
            if debug():
                raise
            what = f"stopped by {signal_name(exc)}"
            sweep_stop.record_stopped(sweep_dir, num, overrides, what)
            log.warning("job %d (%s) %s: its MLflow runs are marked KILLED", num + 1,
                        overrides, what)  # fmt: skip


def _sweep_job_body(
    stage: Callable[[Any], Any], cfg: Any, sweep_dir: Path, num: int, overrides: str
) -> None:
    """Run one job of a sweep: an error is reported and recorded, the sweep goes on."""
    try:
        stage(cfg)
    except Exception as exc:
        if debug():
            raise
        if isinstance(exc, PipelineError):
            message = one_line(exc).removeprefix("error: ")
        else:  # a bug: its traceback, then the sweep goes on
            log.exception("job %d (%s) failed", num + 1, overrides)
            message = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
        print(f"error: job {num + 1} ({overrides}): {message}", file=sys.stderr, flush=True)
        record_failure(sweep_dir, num, overrides, message)
