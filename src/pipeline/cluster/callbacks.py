"""Hydra callback: close the MLflow runs that lost workers left RUNNING.

A job whose process is killed (SIGKILL, a lost node, the OOM killer) cannot end its MLflow
run; the launcher reports the job failed or runs it again (Ray's ``max_retries``), and
the dead attempt's parent run would stay RUNNING forever. When the sweep ends, every job
has returned, so a run of this sweep's ``group`` still RUNNING has no process left:
:class:`CloseOrphanRuns` marks it KILLED with the tag ``projloss.closed_by`` (KILLED as a
run superseded by its retry, :func:`pipeline.runs.run_lifecycle.orphans`: a process
that died; FAILED is kept for a job that raised). A tracking server that does not answer
(restarting) is asked again every second for up to two minutes
(:func:`close_with_retries`).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import time
from collections.abc import Iterator
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from ..runs.run_lifecycle import CLOSED_TAG

log = logging.getLogger("pipeline.sweep")

#: the tag a closed orphan run gets (why it was closed): ``runs.run_lifecycle.CLOSED_TAG``
__all__ = ["CLOSED_TAG", "CloseOrphanRuns", "close_orphan_runs", "close_with_retries"]


def close_orphan_runs(uri: str, group: str, prefix: str = "projloss") -> list[str]:
    """Mark KILLED every RUNNING run tagged ``group=<group>`` in the ``<prefix>/*``
    experiments of the store ``uri``; return their ids."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp_ids = [
        e.experiment_id for e in client.search_experiments() if e.name.startswith(f"{prefix}/")
    ]
    if not exp_ids:
        return []
    quoted = group.replace("\\", "\\\\").replace("'", "\\'")
    runs = client.search_runs(
        exp_ids, f"tags.group = '{quoted}' and attributes.status = 'RUNNING'", max_results=5000
    )
    for run in runs:
        client.set_tag(run.info.run_id, CLOSED_TAG, "end of sweep: its worker was lost")
        client.set_terminated(run.info.run_id, status="KILLED")
    return [r.info.run_id for r in runs]


#: how long :func:`close_with_retries` asks a server that does not answer, and how often
RETRY_FOR, RETRY_EVERY = 120.0, 1.0


@contextlib.contextmanager
def _one_try_per_request() -> Iterator[None]:
    """MLflow's HTTP client without its own retries (for this process, meanwhile)."""
    name = "MLFLOW_HTTP_REQUEST_MAX_RETRIES"
    before = os.environ.get(name)
    os.environ[name] = "0"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def close_with_retries(
    uri: str,
    group: str,
    prefix: str = "projloss",
    retry_for: float = RETRY_FOR,
    every: float = RETRY_EVERY,
) -> list[str]:
    """:func:`close_orphan_runs`, asked again every ``every`` seconds while the server does
    not answer (:func:`pipeline.runs.store.connection_lost`), for up to ``retry_for``
    seconds; another error, or the last one, is raised.

    MLflow's own retries (7, the waits doubling from 2 s to 64 s) would also wait about two
    minutes, but find a server that is back after a restart up to a minute late, and the
    sweep's command waits that long. Here it is found within ``every`` seconds.

    Examples
    --------
    >>> close_with_retries("sqlite:///:memory:", "no-such-sweep")
    []
    """
    from ..runs.store import connection_lost

    deadline = time.monotonic() + retry_for
    with _one_try_per_request():
        while True:
            try:
                return close_orphan_runs(uri, group, prefix)
            except Exception as exc:
                if not connection_lost(exc) or time.monotonic() + every > deadline:
                    raise
                log.debug("the tracking server did not answer (%s): asking again", exc)
                time.sleep(every)


class CloseOrphanRuns(Callback):
    """At the end of a ``--multirun`` sweep, close the runs its lost workers left RUNNING
    (never fails the sweep: a store it cannot reach is a warning). A launcher that raises
    (a job failed for good) skips ``on_multirun_end``: the same check then runs when the
    sweep's process exits (:mod:`atexit`)."""

    def __init__(self) -> None:
        self._config: DictConfig | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._config = config
        atexit.register(self.close)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._config = config
        self.close()

    def close(self) -> None:
        """Close this sweep's orphan runs (once)."""
        config, self._config = self._config, None
        if config is None:
            return
        tracking = OmegaConf.to_container(config.get("tracking") or {}, resolve=True)
        if not tracking.get("enabled", True):
            return
        from ..runs.store import connection_uri, resolve_uri

        group = tracking.get("group") or str(config.hydra.sweep.dir)
        uri = connection_uri(resolve_uri(tracking.get("uri")))
        try:
            closed = close_with_retries(uri, group, tracking.get("experiment_prefix", "projloss"))
        except Exception as exc:  # the sweep's results stand; say why nothing was closed
            log.warning("could not look for runs left RUNNING in %s: %s", uri, exc)
            return
        if closed:
            log.warning(
                "closed %d run(s) left RUNNING by lost workers (KILLED, tag %s): %s",
                len(closed), CLOSED_TAG, ", ".join(closed),
            )  # fmt: skip
