"""The experiment stages of ``dvc.yaml``: tune, refit and evaluate every run of one
experiment (``python -m pipeline.stage tune|refit|evaluate <key>``, :mod:`pipeline.stage`).

Every setting comes from ``params.yaml``. One process per stage and experiment runs all
the experiment's compositions (a process costs seconds of imports). The MLflow parent run
of a composition is created by :func:`tune` (and left SCHEDULED) and resumed by
:func:`evaluate` (its id is in the tuning JSON; FINISHED with the test metrics);
:func:`refit` only fits and saves.

A run is a sweep over its units (:mod:`pipeline.runs.sweeps`): a plain run is a sweep of
one, a split sweep one unit per split. The stages handle units only, on one path; what is
logged and written for a run is its shape's (:func:`pipeline.runs.sweeps.shape_of`).

The units run in worker processes forked from the stage's (``n_jobs``;
:class:`pipeline.runs.parallel.TaskStream`), which record what they log; the stage's
process opens the tracking store while they start and logs each run as its units' results
come, in order, while they go on with the next ones (one writer to the store): tune's grid
(its best lambdas as child runs) and metrics, evaluate's metrics, files, figures and models.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..paths import EVAL_DIR, METRICS_DIR, MODELS_DIR, TUNING_DIR, project_root
from .sweeps import Split, shape_of

log = logging.getLogger("pipeline.stage")


def _out(path: Path) -> Path:
    return project_root() / path


def n_jobs(params: Mapping[str, Any]) -> int:
    """``n_jobs`` of params.yaml: the parallel worker processes of the experiment stages
    (-1: every core; 1: none)."""
    value = params.get("n_jobs", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value == 0:
        from ..errors import CompositionError

        raise CompositionError(f"n_jobs must be a non-zero integer (-1: every core), got {value!r}")
    return value


def tracking_settings(params: Mapping[str, Any], key: str) -> Any:
    """The tracking settings of params.yaml; the runs' group is the experiment key unless
    set."""
    from .tracking import TrackingSettings

    settings = TrackingSettings.from_config(params.get("tracking"))
    if not settings.group:
        settings = dataclasses.replace(settings, group=key)
    return settings


def _tracker_or_stop(params: Mapping[str, Any], key: str) -> Any:
    """The tracker, opened while the workers run the stage's first tasks: when the store
    is unusable, the workers stop with the error (no waiting for their tasks)."""
    from .mlflow_tracker import make_tracker

    try:
        return make_tracker(tracking_settings(params, key))
    except BaseException:
        from .parallel import stop_workers

        stop_workers()
        raise


@contextlib.contextmanager
def _end_scheduled_on_error(tracker: Any, run_ids: list[str]) -> Iterator[None]:
    """The tune stage logs each run as its result comes while the workers fit the next
    ones: when a later run fails (or the stage is interrupted), the runs it already left
    SCHEDULED (for an evaluate that will not come: the tuning JSON is not written) end
    FAILED (KILLED on SIGINT / SIGTERM), as a run that failed with its stage."""
    try:
        yield
    except BaseException as exc:
        client = getattr(tracker, "client", None)
        status = "KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED"
        for run_id in run_ids if client is not None else []:
            try:
                client.set_terminated(run_id, status)
            except Exception as end_exc:  # the store may be what failed
                log.debug("could not end run %s as %s: %s", run_id, status, end_exc)
        raise


def _run_tags(comp: Any, key: str, rid: str) -> dict[str, str]:
    tags = {**comp.tags(), "experiment": key, "run": rid, "entry_point": "dvc"}
    if os.environ.get("DVC_EXP_NAME"):
        tags["dvc_experiment"] = os.environ["DVC_EXP_NAME"]
    return tags


class _UnitResults:
    """The results of tasks of units (``tasks``: each task's ``(run id, split)`` keys, in
    the order of ``results``) by run: :meth:`take` waits for the next tasks until every
    unit of the run is in, while the workers go on with the next ones."""

    def __init__(self, tasks: Sequence[Sequence[tuple[str, Split]]], results: Iterator) -> None:
        self._tasks = iter(tasks)
        self._results = results
        self._got: dict[tuple[str, Split], Any] = {}

    def take(self, rid: str, splits: Sequence[Split]) -> dict[Split, Any]:
        while any((rid, s) not in self._got for s in splits):
            self._got.update(zip(next(self._tasks), next(self._results), strict=True))
        return {s: self._got.pop((rid, s)) for s in splits}


def tune(params: Mapping[str, Any], key: str) -> Path:
    """Tune every run of experiment ``key``; write ``data/tuning/<key>.json``."""
    from ..config.experiments import get_experiment, iter_compose_runs, run_ids
    from ..config.run import RunConfig
    from . import parallel, sweeps
    from .data_stages import stage_data
    from .index import write_json  # the run ids and times: in the index, not the output
    from .mlflow_view import cell_params, run_name

    stage_data(params)  # the data directories dvc.yaml declares
    item = get_experiment(params, key)
    tracking_settings(params, key)  # the settings too, before any work
    jobs = n_jobs(params)
    # The workers start on the first units while the next runs are composed (each run
    # config checked before its tasks start), before the tracking store is opened
    # (MLflow's import and schema check overlap their fits); each run is logged as its
    # units' results come, in the list's order, while they go on with the next ones: what
    # a unit logs is recorded where it runs and replayed here, into its parent run.
    # The units of runs that fit the same models (they differ in how they decode) on one
    # dataset and split are one task (parallel.fit_group_order: each fit solved once),
    # given as soon as its runs are composed.
    order, group_of = parallel.fit_group_order(item["runs"])
    group_size = Counter(group_of.values())
    forming: dict[tuple[str | None, int, Split], list[tuple[str, Split, Any, bool]]] = {}
    task_keys: list[list[tuple[str, Split]]] = []
    configs: dict[str, dict[str, Any]] = {}
    typed: dict[str, RunConfig] = {}
    stream = parallel.TaskStream(sweeps.tune_units, jobs)

    def give(members: list[tuple[str, Split, Any, bool]]) -> None:
        stream.add(tuple((unit, record) for _, _, unit, record in members))
        task_keys.append([(rid, split) for rid, split, _, _ in members])

    try:
        for rid, cfg in iter_compose_runs(params, key, run_order=order):
            configs[rid] = cfg
            run = typed[rid] = RunConfig.from_config(cfg)
            shape = shape_of(run)
            dataset, name = rid.split("/", 1) if item["datasets"] is not None else (None, rid)
            for split in shape.splits(run):
                members = forming.setdefault((dataset, group_of[name], split), [])
                members.append((rid, split, shape.unit(run, split), shape.record))
                if len(members) == group_size[group_of[name]]:  # the group is composed
                    give(forming.pop((dataset, group_of[name], split)))
        for members in forming.values():  # runs of a group on other splits
            give(members)
    except BaseException:  # a run that does not compose: the started fits are not needed
        parallel.stop_workers()
        raise
    ids = run_ids(item)
    log.info("tune %s: %d runs, n_jobs=%s", key, len(ids), jobs)
    pending = _UnitResults(task_keys, stream.results())
    tracker = _tracker_or_stop(params, key)
    out: dict[str, Any] = {"experiment": key, "dataset": item["dataset"], "runs": {}}
    logged: list[str] = []
    with _end_scheduled_on_error(tracker, logged):
        for n, rid in enumerate(ids, 1):  # logged in the list's order
            cfg, run = configs[rid], typed[rid]
            comp, shape = run.composition, shape_of(run)
            per_split = pending.take(rid, shape.splits(run))  # fitted before its run is created
            log.info(
                "[%d/%d] tuned %s/%s: %s on %s", n, len(ids), key, rid, comp.label, comp.dataset
            )
            with tracker.parent_run(
                task=comp.task,
                name=run_name(comp, run),
                tags=_run_tags(comp, key, rid),
                params=cell_params(run),
                done="SCHEDULED",  # evaluate resumes it: FINISHED only with its test metrics
                metrics=run.metrics,
            ) as run_id:
                tracker.log_dict(cfg, "config.yaml")
                shape.log_tuned(per_split, tracker)
            if run_id is not None:
                logged.append(run_id)
            tuned = shape.tuning({s: t for s, (t, _) in per_split.items()})
            out["runs"][rid] = {"config": cfg, "run_id": run_id, "tune": tuned}
    path = _out(TUNING_DIR / f"{key}.json")
    write_json(path, out)
    return path


def _tuning(key: str) -> dict[str, Any]:
    """The tuning JSON of ``key`` with its run ids and times (:mod:`pipeline.runs.index`)."""
    from ..errors import DatasetError
    from .index import read_json

    path = _out(TUNING_DIR / f"{key}.json")
    if not path.is_file():
        raise DatasetError(f"no {path}: run the tune stage first (dvc repro tune@{key})")
    return read_json(path)


def _typed(tuning: Mapping[str, Any]) -> dict[str, Any]:
    """Run id -> its typed run config (:class:`pipeline.config.run.RunConfig`) of the
    tuning JSON: every run config checked once, before any work."""
    from ..config.run import RunConfig

    return {rid: RunConfig.from_config(e["config"]) for rid, e in tuning["runs"].items()}


def refit(params: Mapping[str, Any], key: str) -> Path:
    """Refit every run of ``key`` on train + validation (each unit with the lambda its
    tuning chose); write ``models/<key>/<run>/`` (worker processes when ``n_jobs != 1``)."""
    from . import parallel, sweeps

    tuning = _tuning(key)
    typed = _typed(tuning)
    root = _out(MODELS_DIR / key)
    jobs = n_jobs(params)
    # runs that fit the same models (decoded otherwise) in one task: a refit at the same
    # lambda solved once
    groups = parallel.group_by_fit(typed)
    log.info("refit %s: %d runs, n_jobs=%s", key, len(typed), jobs)
    tasks = [
        (tuple((typed[rid], tuning["runs"][rid]["tune"], root / rid) for rid in group),)
        for group in groups
    ]
    parallel.run_tasks(sweeps.refit_runs, tasks, jobs)
    return root


def evaluate(params: Mapping[str, Any], key: str) -> Path:
    """Evaluate every run of ``key`` on test, log to its MLflow run; write
    ``metrics/<key>.json`` (DVC metrics) and ``data/eval/<key>/<run>/``, then the manifest
    of the experiment's results that the report stage depends on
    (``<report.dir>/inputs/<key>.json``, :mod:`pipeline.runs.manifest`)."""
    from ..fileio import write_json
    from . import evaluate as core
    from . import manifest, parallel, sweeps
    from .mlflow_view import run_name

    tuning = _tuning(key)
    typed = _typed(tuning)
    settings = tracking_settings(params, key)
    jobs = n_jobs(params)
    metrics: dict[str, Any] = {}
    # The runs are evaluated in worker processes (predictions, scores, the files of
    # data/eval/, figures) that record what they log; this process logs each run into
    # its MLflow parent run (metrics, the files, the models: one writer to the store) as
    # the results come, in order, while the workers go on with the next runs.
    tasks = []
    for rid, entry in tuning["runs"].items():
        record = {"experiment": key, "run": rid, "run_id": entry.get("run_id")}
        models, files = _out(MODELS_DIR / key / rid), _out(EVAL_DIR / key / rid)
        tasks.append((typed[rid], entry["tune"], models, files, record, settings))
    # imported once, before the workers fork: matplotlib for the figures, MLflow (needed
    # here anyway) for what the core builds with it (the dataset input)
    recording = sum(shape_of(run).record for run in typed.values())
    if recording and settings.enabled and settings.figures:
        from . import figures

        if jobs != 1 and recording > 1:  # worker processes: what their first figure sets up
            figures.warm_up()
    if recording and settings.enabled:
        os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
        import mlflow  # noqa: F401
    pending = parallel.iter_tasks(sweeps.evaluate_run, tasks, jobs)
    tracker = _tracker_or_stop(params, key)
    for rid, entry in tuning["runs"].items():
        run = typed[rid]
        comp, shape = run.composition, shape_of(run)
        start = time.perf_counter()
        with tracker.parent_run(
            task=comp.task,
            name=run_name(comp, run),
            tags=_run_tags(comp, key, rid),
            run_id=entry.get("run_id"),
            metrics=run.metrics,
        ):
            per_split = next(pending)
            if shape.record:  # the grid, when the tune stage's run is gone from the store
                tracker.ensure_grid(entry["tune"])
            start -= sum(r.get("seconds", 0.0) for r, _ in per_split.values())  # the workers'
            record = {"experiment": key, "run": rid, "run_id": entry.get("run_id")}
            out_dir = _out(EVAL_DIR / key / rid)
            result = shape.log_evaluated(run, per_split, entry["tune"], record, out_dir, tracker)
        seconds = time.perf_counter() - start + float(entry["tune"].get("seconds", 0.0))
        log.info("%s/%s: %s", key, rid, core.summary_line(comp, result, seconds))
        metrics[rid] = {
            "test": result["headline"],
            "lambda": {k: v for k, v in result["lambda"].items() if v is not None},
        }
        if "std" in result:
            metrics[rid]["test_std"] = result["std"]
    path = _out(METRICS_DIR / f"{key}.json")
    write_json(path, metrics)
    manifest.write(params, key)
    return path
