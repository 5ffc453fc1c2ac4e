"""Hydra callbacks of ``python -m pipeline.train --multirun`` (``hydra.callbacks``).

:class:`SweepProgress` counts the jobs of a sweep and prints ``[job i/N] overrides`` as
each starts (the progress over datasets and compositions; each job then prints its own
bar over the lambda grid and a summary line); the launchers' own ``[HYDRA] #i : ...``
lines are silenced, so each job is announced once. Before the first job it also creates the
tracking store's schema once (several jobs of the joblib launcher would otherwise race
to create a fresh SQLite store). A failing job does not stop the sweep (see
:func:`pipeline._hydra.run_or_exit`): after the last job, the sweep ends with one line
``error: k of N jobs failed: job i (overrides): problem; ...`` and exit status 1.
"""

from __future__ import annotations

import logging
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger("pipeline.sweep")

#: the number of jobs, passed to the job processes of parallel launchers
JOBS_ENV = "PROJLOSS_SWEEP_JOBS"
#: the swept keys (comma-separated), which name a job in its error line
KEYS_ENV = "PROJLOSS_SWEEP_KEYS"
#: the local launchers' loggers, whose ``#i : overrides`` lines repeat our ``[job i/N]``
#: lines (remote launchers, submitit and Ray, keep theirs: their jobs print elsewhere)
LAUNCHER_LOGGERS = (
    "hydra._internal.core_plugins.basic_launcher",
    "hydra_plugins.hydra_joblib_launcher._core",
)


def _sweep_lengths(
    sweeper_params: Mapping[str, Any] | None, overrides: Sequence[str]
) -> dict[str, int | None] | None:
    """Each key of ``hydra.sweeper.params`` and the command-line overrides (the command
    line wins for a key given in both) -> its number of values (0: a sweep that cannot be
    counted, e.g. a glob), None for a key that is not swept; None when they do not parse."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    lengths: dict[str, int | None] = {}
    try:
        items = [f"{k}={v}" for k, v in (sweeper_params or {}).items()]
        for group in (items, list(overrides)):
            for o in parser.parse_overrides(group):
                lengths[o.get_key_element()] = _count(o) if o.is_sweep_override() else None
    except Exception:  # a sweep we cannot parse is still a valid sweep
        return None
    return lengths


def _count(override: Any) -> int:
    try:
        return len(list(override.sweep_string_iterator()))
    except Exception:
        return 0


def swept_keys(sweeper_params: Mapping[str, Any] | None, overrides: Sequence[str]) -> list[str]:
    """The keys that take several values in a sweep (``set=reals,cube`` -> ``set``)."""
    lengths = _sweep_lengths(sweeper_params, overrides)
    return [k for k, n in (lengths or {}).items() if n is not None]


def count_jobs(sweeper_params: Mapping[str, Any] | None, overrides: Sequence[str]) -> int | None:
    """The number of jobs of Hydra's basic sweeper: the product of the sweep lengths of
    ``hydra.sweeper.params`` and the command-line overrides; None when it cannot tell."""
    lengths = _sweep_lengths(sweeper_params, overrides)
    if lengths is None or 0 in lengths.values():
        return None
    return math.prod(1 if n is None else n for n in lengths.values())


def _sweeper_params(hydra_cfg: DictConfig) -> dict[str, Any]:
    """``hydra.sweeper.params``, resolved; a key the command line also sweeps or sets is
    dropped first (the command line wins anyway), so that the default dataset sweep (the
    ``registry_datasets`` resolver, which reads every dataset YAML) is not computed for
    ``--multirun dataset=iris``. A pipeline error met while resolving (a broken dataset
    YAML of the task) ends the sweep before its first job: its own one line ``error: ...``,
    exit status 1, not Hydra's callback warning (which the sweeper would follow with the
    same error wrapped as an interpolation error)."""
    from omegaconf import open_dict

    from ..errors import debug, pipeline_cause, report

    node = hydra_cfg.sweeper.get("params")
    if node is None:
        return {}
    given = {o.lstrip("+~").partition("=")[0] for o in hydra_cfg.overrides.task}
    with open_dict(node):
        for key in [k for k in node if k in given]:
            del node[key]
    try:
        return OmegaConf.to_container(node, resolve=True)  # type: ignore[return-value]
    except Exception as exc:
        cause = pipeline_cause(exc)
        if cause is None or debug():
            raise
        report(cause)
        sys.exit(1)


class SweepProgress(Callback):
    """``[job i/N]`` lines for a sweep, and the tracking store created before the jobs."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        hydra_cfg = config.hydra
        params = _sweeper_params(hydra_cfg)
        n = count_jobs(params, list(hydra_cfg.overrides.task))
        os.environ[JOBS_ENV] = "?" if n is None else str(n)
        os.environ[KEYS_ENV] = ",".join(swept_keys(params, list(hydra_cfg.overrides.task)))
        log.info("sweep: %s job(s) -> %s", os.environ[JOBS_ENV], hydra_cfg.sweep.dir)
        for name in LAUNCHER_LOGGERS:  # one announcement per job: ours, with the count
            logging.getLogger(name).setLevel(logging.WARNING)
        tracking = OmegaConf.to_container(config.get("tracking") or {}, resolve=True)
        if tracking.get("enabled", True):
            from ..lifecycle import command
            from .tracking import (
                TrackingSettings,
                check_driver,
                connection_uri,
                init_store,
                probe,
                resolve_uri,
            )

            with command("the sweep"):  # a bad store fails the sweep before its first job
                settings = TrackingSettings.from_config(tracking)
                uri = resolve_uri(settings.uri)
                probe(uri, settings.probe_timeout)
                check_driver(uri)
                os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
                init_store(connection_uri(uri), settings.probe_timeout)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from .._hydra import FAILED_DIR

        failed_dir = Path(str(config.hydra.sweep.dir)) / FAILED_DIR
        records = sorted(failed_dir.glob("*.txt"), key=lambda p: int(p.stem))
        if not records:
            return
        parts = []
        for path in records:
            overrides, _, message = path.read_text(encoding="utf-8").partition("\n")
            parts.append(f"job {int(path.stem) + 1} ({overrides}): {message.strip()}")
        total = os.environ.get(JOBS_ENV, "?")
        print(
            f"error: {len(records)} of {total} jobs failed: " + "; ".join(parts),
            file=sys.stderr,
            flush=True,
        )
        sys.exit(1)

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        if config.hydra.mode != RunMode.MULTIRUN:
            return
        job = config.hydra.job
        overrides = " ".join(config.hydra.overrides.task)
        log.info("[job %d/%s] %s", int(job.num) + 1, os.environ.get(JOBS_ENV, "?"), overrides)
