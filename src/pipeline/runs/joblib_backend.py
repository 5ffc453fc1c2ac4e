"""The DVC stages' joblib tasks on a Ray cluster (``dvc repro`` scales out).

The stages tune, refit and evaluate run their independent tasks (the runs of an
experiment, the splits of a split sweep) with joblib (:func:`pipeline.runs.parallel.run_tasks`).
When ``PROJLOSS_RAY_ADDRESS`` names a Ray cluster (``127.0.0.1:6379``, ``auto``), those
tasks go to it through Ray's joblib backend (``ray.util.joblib``), ``n_jobs=-1`` meaning
every CPU of the cluster; unset, joblib's local processes (the default). The results do
not depend on it: each task is the same function on the same inputs.

Examples
--------
>>> import os
>>> with backend():  # unset: local joblib, nothing changes
...     pass
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

log = logging.getLogger("pipeline.cluster")

#: the environment variable naming the Ray cluster of the stages' joblib tasks
ADDRESS_ENV = "PROJLOSS_RAY_ADDRESS"


def ray_address() -> str | None:
    """``$PROJLOSS_RAY_ADDRESS``, or None when unset or empty."""
    return os.environ.get(ADDRESS_ENV) or None


@contextlib.contextmanager
def backend() -> Iterator[str]:
    """Within the block, joblib's default backend is Ray's when an address is configured
    (connecting once per process); yields the backend's name (``ray`` or ``loky``)."""
    address = ray_address()
    if address is None:
        yield "loky"
        return
    import joblib
    import ray
    from ray.util.joblib import register_ray

    if not ray.is_initialized():
        # the stage's modules travel as code on this machine's file system (shared storage
        # on a cluster); workers log to their own files, not to the stage's output
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        log.info("joblib tasks on the Ray cluster at %s", address)
    register_ray()
    with joblib.parallel_config(backend="ray"):
        yield "ray"
