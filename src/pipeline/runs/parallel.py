"""The work of the DVC stages as tasks for worker processes: the runs of an experiment,
and split sweeps (each composition on every orreview split, paper Table 4 over thirty
splits).

The tasks call the same cores as one run (:mod:`pipeline.runs`), with its typed config
(:class:`~pipeline.config.run.RunConfig`); a split sweep runs them once per split with
``data.ordinal_split`` set to the split (:meth:`~pipeline.config.run.RunConfig.for_split`).
The tasks are independent, so each stage runs them as joblib tasks (``n_jobs`` of
params.yaml; -1: every core; 1: in the stage's process), each process loading the
prepared data it needs once (:func:`load`). The DVC stages (:mod:`pipeline.stage`) do the
tracking: a run's MLflow logging is recorded in its task and replayed by the stage
(:func:`tune_recorded_task`); a split sweep is one MLflow parent run per composition and
dataset with the per-split values as metric steps, one models directory per split, one
``results.json`` per run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config.run import RunConfig

#: prepared data loaded by this process (a worker keeps them across its tasks)
_DATA: dict[str, Any] = {}


def load(cfg: Mapping[str, Any]) -> Any:
    """The prepared data of a run config (``dataset.name`` and ``data``), loaded once per
    process."""
    from ..data.api import load_prepared

    key = json.dumps([cfg["dataset"]["name"], cfg.get("data")], sort_keys=True, default=str)
    if key not in _DATA:
        try:
            _DATA[key] = load_prepared(cfg["dataset"]["name"], cfg, prepare_missing=False)
        except FileNotFoundError as exc:
            from ..data.resplit import is_reseeded, load_resplit
            from ..errors import MissingRawDataError

            if is_reseeded(cfg):  # an experiment's own split seed: split in memory
                _DATA[key] = load_resplit(cfg)
                return _DATA[key]

            raise MissingRawDataError(
                f"{exc}; in the DVC pipeline the preprocess stage prepares the datasets (and "
                "the splits of the ordinal ones) that params.yaml `datasets` selects: add it "
                "there (or run dvc repro)"
            ) from None
    return _DATA[key]


def tune_task(run: RunConfig) -> dict[str, Any]:
    """Tune one split (no tracking: the stage logs the sweep)."""
    from . import tune as core

    return core.run(run, load(run.config), None)


def tune_recorded_task(run: RunConfig) -> tuple[dict[str, Any], list]:
    """Tune one run, recording what it logs (the stage replays it into the run's MLflow
    parent run, see :class:`pipeline.runs.tracking.RecordingTracker`)."""
    from . import tune as core
    from .tracking import RecordingTracker

    recorder = RecordingTracker()
    tuned = core.run(run, load(run.config), recorder)
    return tuned, recorder.calls


def refit_task(run: RunConfig, tuned: Mapping[str, Any], directory: Path) -> None:
    """Refit one split on train + validation and save the models to ``directory``."""
    from . import refit as core

    core.save(core.run(run, load(run.config), tuned), directory)


def evaluate_task(run: RunConfig, tuned: Mapping[str, Any], directory: Path) -> dict[str, Any]:
    """Score one split's saved models on its test split (no files, no tracking)."""
    from . import evaluate as core
    from . import refit as refit_core

    result = core.run(run, load(run.config), tuned, refit_core.load(directory), None)
    result.pop("seconds", None)
    return result


def run_tasks(fn: Callable[..., Any], tasks: Sequence[tuple], n_jobs: int = 1) -> list[Any]:
    """``fn(*task)`` for every task, in order; with joblib processes when ``n_jobs != 1``
    (-1: every core; on a Ray cluster, see :mod:`pipeline.cluster.joblib_backend`). Each
    worker fits with one BLAS thread (the solver's own limit)."""
    if n_jobs == 1 or len(tasks) < 2:
        return [fn(*t) for t in tasks]
    from joblib import Parallel, delayed

    from ..cluster.joblib_backend import backend

    with backend():  # a Ray cluster when $PROJLOSS_RAY_ADDRESS is set, else local processes
        return list(Parallel(n_jobs=n_jobs)(delayed(fn)(*t) for t in tasks))


def sweep(
    runs: Mapping[str, RunConfig],
    make_task: Callable[[str, RunConfig, int], tuple],
    fn: Callable[..., Any],
    n_jobs: int,
) -> dict[str, dict[str, Any]]:
    """``fn`` on every (run, split) of ``runs`` (runs with ``splits``): run id -> split
    (as a string, the JSON key) -> result. ``make_task(rid, run_s, split)`` builds the
    arguments of one task from the run of that split (:meth:`RunConfig.for_split`)."""
    keys: list[tuple[str, int]] = []
    tasks: list[tuple] = []
    for rid, run in runs.items():
        for split in run.splits or ():
            keys.append((rid, split))
            tasks.append(make_task(rid, run.for_split(split), split))
    out: dict[str, dict[str, Any]] = {rid: {} for rid in runs}
    for (rid, split), result in zip(keys, run_tasks(fn, tasks, n_jobs), strict=True):
        out[rid][str(split)] = result
    return out
