"""The work of the DVC stages as tasks for worker processes: the runs of an experiment,
and split sweeps (each composition on every orreview split, paper Table 4 over thirty
splits).

The tasks call the same cores as one run (:mod:`pipeline.runs`), with its typed config
(:class:`~pipeline.config.run.RunConfig`); a split sweep runs them once per split with
``data.ordinal_split`` set to the split (:meth:`~pipeline.config.run.RunConfig.for_split`).
The tasks are independent, so each stage runs them in worker processes (``n_jobs`` of
params.yaml; -1: every core; 1: in the stage's process): locally processes forked from the
stage's (:func:`pool`, no second round of imports), on a Ray cluster joblib tasks there
(:mod:`pipeline.runs.joblib_backend`); each process loads the prepared data it needs
once (:func:`load`). The DVC stages (:mod:`pipeline.runs.stages`, their tasks in
:mod:`pipeline.runs.sweeps`: a plain run is a sweep of one) do the tracking: a run's MLflow
logging is recorded in its task and replayed by the stage (:func:`tune_recorded_task`,
:func:`pipeline.runs.sweeps.evaluate_run`: one writer to the store); a split sweep is one MLflow
parent run per composition and dataset with the per-split values as metric steps, one
models file for all the splits of a run, one ``results.json`` per run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config.run import RunConfig
from ..data.settings import DataSettings

#: prepared data loaded by this process (a worker keeps them across its tasks)
_DATA: dict[tuple[str, DataSettings], Any] = {}


def load(run: RunConfig) -> Any:
    """The prepared data of a run (its dataset and data settings), loaded once per
    process."""
    from ..data.api import load_prepared

    key = (run.composition.dataset, run.data)
    if key not in _DATA:
        try:
            _DATA[key] = load_prepared(run.composition.dataset, run.data, prepare_missing=False)
        except FileNotFoundError as exc:
            from ..data.resplit import is_reseeded, load_resplit
            from ..errors import MissingRawDataError

            if is_reseeded(run.data):  # an experiment's own split seed: split in memory
                _DATA[key] = load_resplit(run.composition.dataset, run.data)
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

    return core.run(run, load(run), None)


def tune_recorded_task(run: RunConfig) -> tuple[dict[str, Any], list]:
    """Tune one run, recording what it logs (the stage replays it into the run's MLflow
    parent run, see :class:`pipeline.runs.tracking.RecordingTracker`)."""
    from . import tune as core
    from .tracking import RecordingTracker

    recorder = RecordingTracker()
    tuned = core.run(run, load(run), recorder)
    return tuned, recorder.calls


def fit_group_key(run: RunConfig) -> str:
    """What the fits of a run depend on, as a string: the run without how it decodes
    (the decoder, its parameters, the target loss and the estimator's kind, which follows
    the decoder). Runs with the same key fit the same
    models (Table 1's cube decoded three ways, the multilabel tables' unit cube decoded
    three ways): a task given them together fits once (:func:`pipeline.runs.sweeps.tune_units`,
    :func:`~pipeline.runs.sweeps.refit_runs`; the estimators' fit memo,
    :func:`projloss.estimators.memoized_fits`, decides by the content of the fits'
    inputs: a key that groups runs whose fits differ only costs the grouping).

    Examples
    --------
    >>> import dataclasses
    >>> from pipeline.config.composition import Composition
    >>> from pipeline.config.settings import TrackingSettings
    >>> from pipeline.data.settings import data_settings
    >>> cube = Composition("label_ranking", "iris", "cube", "euclidean", "cube", "linear",
    ...                    "projection", "hamming_ranking")
    >>> a = RunConfig(cube, None, ("hamming",), ("hamming",), True, False, data_settings(),
    ...               TrackingSettings())
    >>> b = dataclasses.replace(a, composition=dataclasses.replace(
    ...     cube, decoder="birkhoff", target_loss="hamming"))
    >>> c = dataclasses.replace(a, warm_start=False)
    >>> fit_group_key(a) == fit_group_key(b), fit_group_key(a) == fit_group_key(c)
    (True, False)
    """
    # the kind too: ridge + rounding (decoder=round) fits what set=reals fits
    comp = run.composition
    fits = dataclasses.replace(comp, decoder="", decoder_params={}, target_loss=None, kind="")
    return repr(dataclasses.replace(run, composition=fits))


def _decodes(override: str) -> bool:
    name = override.lstrip("+~").split("=", 1)[0]
    return name in ("decoder", "task.target_loss") or name.startswith("decoder.")


def fit_group_order(runs: Mapping[str, Sequence[str]]) -> tuple[list[str], dict[str, int]]:
    """The runs of an experiment (name -> its Hydra overrides) in groups that fit the same
    models as far as their overrides tell (the same overrides but the ``decoder`` and
    ``task.target_loss`` ones), each group where its first run was: ``(the run names
    group by group, run name -> its group)``. The tune stage composes them in this order
    and gives each group (on one dataset) to one task as soon as it is composed.

    Examples
    --------
    >>> order, group = fit_group_order({
    ...     "cube-cube": ["set=cube", "decoder=cube"],
    ...     "reals-birkhoff": ["set=reals", "decoder=birkhoff"],
    ...     "cube-birkhoff": ["set=cube", "decoder=birkhoff", "task.target_loss=hamming"],
    ... })
    >>> order
    ['cube-cube', 'cube-birkhoff', 'reals-birkhoff']
    >>> group
    {'cube-cube': 0, 'reals-birkhoff': 1, 'cube-birkhoff': 0}
    """
    keys: dict[tuple[str, ...], int] = {}
    group = {
        name: keys.setdefault(tuple(sorted(o for o in overrides if not _decodes(o))), len(keys))
        for name, overrides in runs.items()
    }
    return sorted(runs, key=group.__getitem__), group


def group_by_fit(runs: Mapping[str, RunConfig]) -> list[list[str]]:
    """The run ids of ``runs`` grouped by :func:`fit_group_key` (in order of first
    appearance)."""
    groups: dict[str, list[str]] = {}
    for rid, run in runs.items():
        groups.setdefault(fit_group_key(run), []).append(rid)
    return list(groups.values())


def refit_task(run: RunConfig, tuned: Mapping[str, Any], directory: Path) -> None:
    """Refit one split on train + validation and save the models to ``directory``."""
    from . import refit as core

    core.save(core.run(run, load(run), tuned), directory)


def evaluate_task(run: RunConfig, tuned: Mapping[str, Any], directory: Path) -> dict[str, Any]:
    """Score one split's saved models on its test split (no files, no tracking)."""
    from . import evaluate as core
    from . import refit as refit_core

    result = core.run(run, load(run), tuned, refit_core.load(directory), None)
    result.pop("seconds", None)
    return result


def iter_tasks(fn: Callable[..., Any], tasks: Sequence[tuple], n_jobs: int = 1) -> Iterator[Any]:
    """``fn(*task)`` for every task, yielded in order.

    With ``n_jobs != 1`` worker processes (-1: every core) start on the tasks at once,
    before the first result is asked for, and go on with the next tasks while the caller
    handles a result: the stages open the tracking store and log each run from their own
    process while the workers compute. Locally they are forked from this process
    (:func:`pool`: no imports to pay again); on a Ray cluster (``$PROJLOSS_RAY_ADDRESS``,
    :mod:`pipeline.runs.joblib_backend`) they are joblib's tasks there, all results at
    once. With ``n_jobs == 1`` each task runs when its result is asked for. Each worker
    fits with one BLAS thread (the solver's own limit, and the stage's)."""
    stream = TaskStream(fn, n_jobs)
    for task in tasks:
        stream.add(*task)
    return stream.results()


class TaskStream:
    """The tasks ``fn(*task)`` given one at a time (:meth:`add`) while the caller
    prepares the next ones, and their results in order (:meth:`results`).

    :func:`iter_tasks` is this stream given the whole list; given task by task, local
    workers (:func:`pool`) start on the first tasks at once: the tune stage composes an
    experiment's runs (Hydra: 0.05-0.15 s each, 7 s in ``make repro``) while the workers
    fit the first ones. With one task in all or ``n_jobs == 1`` the tasks run in this
    process, on a Ray cluster all at once, from :meth:`results`. A caller that fails
    before asking for the results stops the workers (:func:`stop_workers`).

    Examples
    --------
    >>> stream = TaskStream(pow, n_jobs=1)
    >>> stream.add(2, 3)
    >>> stream.add(3, 2)
    >>> list(stream.results())
    [8, 9]
    """

    def __init__(self, fn: Callable[..., Any], n_jobs: int = 1) -> None:
        self.fn = fn
        self.n_jobs = n_jobs
        self._tasks: list[tuple] = []
        self._futures: list[Any] = []
        self._local_pool = False
        if n_jobs != 1:
            from .joblib_backend import ray_address

            self._local_pool = ray_address() is None

    def add(self, *task: Any) -> None:
        """Give the next task; submitted to the workers from the second task on (a
        single task runs in this process)."""
        self._tasks.append(task)
        if not self._local_pool or len(self._tasks) < 2:
            return
        executor = pool(self.n_jobs)
        for queued in self._tasks[len(self._futures) :]:
            self._futures.append(executor.submit(self.fn, *queued))

    def results(self) -> Iterator[Any]:
        """The tasks' results, in order (the other tasks cancelled and the workers
        stopped on an error): from the local workers; from Ray's, all at once; else
        each task run here when its result is asked for."""
        if self._futures:
            return _in_order(pool(self.n_jobs), self._futures)
        if self.n_jobs == 1 or len(self._tasks) < 2:
            return (self.fn(*t) for t in self._tasks)
        from joblib import Parallel, delayed

        from .joblib_backend import backend

        with backend():
            return iter(Parallel(n_jobs=self.n_jobs)(delayed(self.fn)(*t) for t in self._tasks))


#: the worker processes of this process (:func:`pool`), and how many
_POOL: Any = None
_POOL_SIZE = 0


def pool(n_jobs: int) -> Any:
    """This process's worker processes (``n_jobs``: -1 every core, -2 all but one, ...),
    created at the first call and reused by the next ones (a stage runs its tasks in a
    few batches).

    The workers are **forked** from this process when the pool is created: they start in
    milliseconds with everything it imported (numpy, scikit-learn, projloss, the
    pipeline: seconds of imports per process otherwise, paid by every stage, twice on
    two cores). The stages create it before they open the tracking store, so no worker
    holds a database connection. A worker dies with this process (SIGTERM when it is
    gone) and takes the default signal handlers (the stage's own ones end its MLflow
    runs)."""
    global _POOL, _POOL_SIZE
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from joblib import effective_n_jobs

    size = max(1, int(effective_n_jobs(n_jobs)))
    if _POOL is not None and _POOL_SIZE != size:
        _discard_pool()
    if _POOL is None:
        from . import evaluate, refit, tune  # noqa: F401 -- the tasks' modules, imported once

        _POOL = ProcessPoolExecutor(
            max_workers=size,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_worker_init,
        )
        _POOL_SIZE = size
    return _POOL


def _worker_init() -> None:
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the stage stops its workers
    from ..lifecycle import die_with_parent

    die_with_parent()


def stop_workers() -> None:
    """Stop this process's workers now, their pending tasks cancelled (a stage whose
    tracking store fails after it started its tasks: nobody will use their results)."""
    _discard_pool()


def _discard_pool() -> None:
    """Stop the workers now (pending tasks cancelled, running ones killed)."""
    global _POOL, _POOL_SIZE
    executor, _POOL, _POOL_SIZE = _POOL, None, 0
    if executor is None:
        return
    processes = list((getattr(executor, "_processes", None) or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        if proc.is_alive():
            proc.terminate()
    for proc in processes:
        proc.join(timeout=10)


def _in_order(executor: Any, futures: list[Any]) -> Iterator[Any]:
    """The futures' results in order; on an error, an interrupt or when the caller stops
    early, the other tasks are cancelled and the workers stopped (a stage never waits for
    work nobody will use)."""
    try:
        for future in futures:
            yield future.result()
    except BaseException:
        for future in futures:
            future.cancel()
        _discard_pool()
        raise


def run_tasks(fn: Callable[..., Any], tasks: Sequence[tuple], n_jobs: int = 1) -> list[Any]:
    """``fn(*task)`` for every task, in order (:func:`iter_tasks`, all at once)."""
    return list(iter_tasks(fn, tasks, n_jobs))
