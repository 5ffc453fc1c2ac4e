"""Shared plumbing of the thin Hydra entry points (``python -m pipeline.<stage>``).

Errors and signals end a command through :func:`pipeline.lifecycle.command` (one line
``error: ...``, exit status 1). In a ``--multirun`` sweep a failing job does not stop the
sweep: its error line names the job, the failure is recorded in the sweep directory
(``.failed/<job>.txt``) and :class:`pipeline.callbacks.SweepProgress` ends the sweep with
``error: k of N jobs failed: ...`` and exit status 1 once every job has run.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import PipelineError, debug, one_line
from .lifecycle import command
from .paths import conf_dir

log = logging.getLogger("pipeline")

#: the directory of a sweep's failure records (under ``hydra.sweep.dir``)
FAILED_DIR = ".failed"


def config_path() -> str:
    """Absolute path of the repository's ``conf/`` (Hydra's ``config_path``)."""
    return str(conf_dir())


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


def run_or_exit(stage: Callable[[Any], Any], cfg: Any) -> None:
    """Run a stage core; report an expected error as one clear line and exit 1 (in a
    sweep: report it, record it, and go on with the next job)."""
    job = _sweep_job()
    if job is None:
        with command():
            stage(cfg)
        return
    sweep_dir, num, overrides = job
    with command():
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
