"""The work of the DVC stages as tasks for worker processes: the runs of an experiment,
and split sweeps (each composition on every orreview split, paper Table 4 over thirty
splits).

The tasks call the same cores as one run (:mod:`pipeline.stages`); a split sweep runs them
once per split with ``data.ordinal_split`` set to the split (:func:`split_config`). The
tasks are independent, so each stage runs them as joblib tasks (``n_jobs`` of
params.yaml; -1: every core; 1: in the stage's process), each process loading the
prepared data it needs once (:func:`load`). The DVC stages (:mod:`pipeline.stage`) do the
tracking: a run's MLflow logging is recorded in its task and replayed by the stage
(:func:`tune_recorded_task`); a split sweep is one MLflow parent run per composition and
dataset with the per-split values as metric steps, one models directory per split, one
``results.json`` per run.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

#: prepared data loaded by this process (a worker keeps them across its tasks)
_DATA: dict[str, Any] = {}


def split_config(cfg: Mapping[str, Any], split: int) -> dict[str, Any]:
    """The config of one split of a split sweep (``data.ordinal_split = split``)."""
    out = copy.deepcopy(dict(cfg))
    out.pop("splits", None)
    out["data"] = {**out.get("data", {}), "ordinal_split": int(split)}
    return out


def load(cfg: Mapping[str, Any]) -> Any:
    """The prepared data of a run config, loaded once per process."""
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


def tune_task(cfg: Mapping[str, Any], comp: Any) -> dict[str, Any]:
    """Tune one split (no tracking: the stage logs the sweep)."""
    from . import tune as core

    return core.run(cfg, load(cfg), None, composition=comp)


def tune_recorded_task(cfg: Mapping[str, Any], comp: Any) -> tuple[dict[str, Any], list]:
    """Tune one run, recording what it logs (the stage replays it into the run's MLflow
    parent run, see :class:`pipeline.runs.tracking.RecordingTracker`)."""
    from . import tune as core
    from .tracking import RecordingTracker

    recorder = RecordingTracker()
    tuned = core.run(cfg, load(cfg), recorder, composition=comp)
    return tuned, recorder.calls


def refit_task(cfg: Mapping[str, Any], tuned: Mapping[str, Any], directory: Path) -> None:
    """Refit one split on train + validation and save the models to ``directory``."""
    from . import refit as core

    core.save(core.run(cfg, load(cfg), tuned), directory)


def evaluate_task(
    cfg: Mapping[str, Any], tuned: Mapping[str, Any], directory: Path, comp: Any
) -> dict[str, Any]:
    """Score one split's saved models on its test split (no files, no tracking)."""
    from . import evaluate as core
    from . import refit as refit_core

    result = core.run(cfg, load(cfg), tuned, refit_core.load(directory), None, composition=comp)
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
    runs: Mapping[str, Mapping[str, Any]],
    make_task: Callable[[str, Mapping[str, Any], int], tuple],
    fn: Callable[..., Any],
    n_jobs: int,
) -> dict[str, dict[str, Any]]:
    """``fn`` on every (run, split) of ``runs`` (configs with ``splits``): run id -> split
    (as a string, the JSON key) -> result. ``make_task(rid, cfg_s, split)`` builds the
    arguments of one task."""
    keys: list[tuple[str, int]] = []
    tasks: list[tuple] = []
    for rid, cfg in runs.items():
        for split in cfg["splits"]:
            keys.append((rid, split))
            tasks.append(make_task(rid, split_config(cfg, split), split))
    out: dict[str, dict[str, Any]] = {rid: {} for rid in runs}
    for (rid, split), result in zip(keys, run_tasks(fn, tasks, n_jobs), strict=True):
        out[rid][str(split)] = result
    return out
