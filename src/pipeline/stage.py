"""``python -m pipeline.stage <stage> [experiment]``: the commands of ``dvc.yaml``.

Every setting comes from ``params.yaml`` (DVC's params file: the composition of
``conf/config.yaml``, see :mod:`pipeline.params`), never from the command line, so that
what DVC tracks is what runs::

    python -m pipeline.stage fetch              # params: datasets -> data/raw/
    python -m pipeline.stage preprocess         # params: datasets, data.* -> data/prepared/
    python -m pipeline.stage tune t1-iris       # -> data/tuning/t1-iris.json
    python -m pipeline.stage refit t1-iris      # -> models/t1-iris/<run>/
    python -m pipeline.stage evaluate t1-iris   # -> metrics/t1-iris.json, data/eval/t1-iris/

Each stage calls the same cores as ``python -m pipeline.train``
(:mod:`pipeline.data`, :mod:`pipeline.runs`). One process per stage and experiment runs all
the experiment's compositions (a process costs seconds of imports). The MLflow parent run of
a composition is created by ``tune`` (and left SCHEDULED) and resumed by ``evaluate`` (its
id is in the tuning JSON; FINISHED with the test metrics); ``refit`` only fits and saves.

The compositions of an experiment run in worker processes forked from the stage's
(``n_jobs``; :func:`pipeline.runs.parallel.iter_tasks`), which record what they log; the
stage's process opens the tracking store while they start and logs each composition as
its result comes, in order, while they go on with the next ones (one writer to the store):
tune's child runs and metrics, evaluate's metrics, files, figures and models.
Errors are one clear line and exit status 1; a stage gets SIGTERM when its parent (``dvc``)
dies and marks its MLflow runs KILLED
(:mod:`pipeline.lifecycle`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .paths import (
    EVAL_DIR,
    METRICS_DIR,
    MODELS_DIR,
    PREPARED_DIR,
    RAW_DIR,
    TUNING_DIR,
    project_root,
)

log = logging.getLogger("pipeline.stage")

STAGES = ("fetch", "preprocess", "tune", "refit", "evaluate")
#: the stages that run in their own process while the preload server is still importing
#: (they need little of what it imports; the others wait for it)
LIGHT_STAGES = ("fetch", "preprocess")


def _out(path: Path) -> Path:
    return project_root() / path


def stage_data(params: Mapping[str, Any]) -> dict[str, Any]:
    """The ``data`` settings of params.yaml for a DVC stage: the data directories must be
    the ones ``dvc.yaml`` declares as outputs; download bars only on a terminal."""
    from .config.experiments import data_node
    from .data.settings import data_settings
    from .paths import resolve

    data = data_node(params)
    settings = data_settings(data)
    for key, want in (("raw_dir", RAW_DIR), ("prepared_dir", PREPARED_DIR)):
        if getattr(settings, key) != resolve(want):
            from .errors import CompositionError

            raise CompositionError(
                f"data.{key}={data.get(key)!r}: in the DVC pipeline it must be {want} (the "
                "output dvc.yaml declares); change it for pipeline.train runs only"
            )
    if not sys.stderr.isatty():
        data["progress"] = False
    return data


def fetch(params: Mapping[str, Any]) -> None:
    """Fetch the ``datasets`` selection (into ``data/raw``)."""
    from .data import fetch as core

    core.run({"data": stage_data(params), "datasets": params.get("datasets", "mirrored")})


def preprocess(params: Mapping[str, Any]) -> None:
    """Prepare the ``datasets`` selection with the ``data`` settings, each dataset's
    default variant (the paper's protocol) too -- ``data/prepared/<dataset>/`` is the DVC
    dependency of the experiments on that dataset, whatever the settings -- and every
    variant an experiment may choose with its own ``data`` / ``splits`` keys: each
    orreview split of the ordinal datasets and ``drop_empty`` of the multilabel ones (so
    that editing an experiment never re-runs this stage)."""
    from .data import prepare as core
    from .data.protocol import Variant
    from .data.registry import select
    from .data.settings import PROTOCOL_DEFAULTS, data_settings

    data = stage_data(params)
    selection = params.get("datasets", "mirrored")
    cache = core.RawCache()
    core.run({"data": data, "datasets": selection, "report": True}, cache=cache)
    settings = data_settings(data)
    defaults = settings.replace(**PROTOCOL_DEFAULTS)
    start, count = time.perf_counter(), 0
    for spec in select(selection, defaults.dataset_dirs):
        wanted = [(defaults, None)]
        if spec.n_splits is not None:
            wanted += [(settings, split) for split in range(spec.n_splits)]
        if spec.task == "multilabel":
            wanted += [(settings.replace(drop_empty=not settings.drop_empty), None)]
        splits = 0  # the orreview splits: one line per dataset, not one per split
        for chosen, split in wanted:
            variant = Variant.of(spec, chosen, split)
            sums = core.raw_checksums(spec, chosen, variant.split)  # stale raw: rebuilt
            if not core.is_current(chosen.prepared_dir / variant.dirname, variant, sums, spec):
                core.prepare(spec, chosen, variant.split, cache, quiet=split is not None)
                count += 1
                splits += split is not None
        if splits:
            log.info("preprocess %-24s %d of %d splits", spec.name, splits, spec.n_splits)
    log.info("prepared %d other variant(s) in %.1f s", count, time.perf_counter() - start)


def _tracking_settings(params: Mapping[str, Any], key: str) -> Any:
    from .runs.tracking import TrackingSettings

    settings = TrackingSettings.from_config(params.get("tracking"))
    if not settings.group:
        import dataclasses

        settings = dataclasses.replace(settings, group=key)
    return settings


def _tracker(params: Mapping[str, Any], key: str) -> Any:
    from .runs.tracking import make_tracker

    return make_tracker(_tracking_settings(params, key))


def _tracker_or_stop(params: Mapping[str, Any], key: str) -> Any:
    """:func:`_tracker`, opened while the workers run the stage's first tasks: when the
    store is unusable, the workers stop with the error (no waiting for their tasks)."""
    try:
        return _tracker(params, key)
    except BaseException:
        from .runs.parallel import stop_workers

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


def tune(params: Mapping[str, Any], key: str) -> Path:
    """Tune every run of experiment ``key``; write ``data/tuning/<key>.json``."""
    from .config.experiments import get_experiment, iter_compose_runs, run_ids
    from .config.run import RunConfig
    from .fileio import write_json
    from .runs import parallel
    from .runs.mlflow_view import cell_params, run_name
    from .runs.tracking import RecordingTracker

    stage_data(params)  # the data directories dvc.yaml declares
    item = get_experiment(params, key)
    _tracking_settings(params, key)  # the settings too, before any work
    out: dict[str, Any] = {"experiment": key, "dataset": item["dataset"], "runs": {}}
    n_jobs = _n_jobs(params)
    # The workers start on the first runs while the next ones are composed (and each run
    # config is checked before its task starts), before the tracking store is opened
    # (MLflow's import and schema check overlap their fits), and each run is logged as
    # its result comes, in order, while they go on with the next runs: what a run logs is
    # recorded where it runs and replayed here, into its parent run (one writer to the
    # store).
    # Runs that fit the same models (they differ in how they decode) are composed one
    # after the other and given to one task per dataset (parallel.fit_group_order,
    # tune_recorded_group_task: each fit solved once); split sweeps keep their order.
    run_order, group_of = None, {}
    if item["splits"] is None:
        run_order, group_of = parallel.fit_group_order(item["runs"])
    group_size = Counter(group_of.values())
    forming: dict[tuple[str | None, int], list[tuple[str, Any]]] = {}
    group_ids: list[list[str]] = []
    runs: dict[str, dict[str, Any]] = {}
    typed: dict[str, Any] = {}
    keys: list[tuple[str, int]] = []
    plain_tasks = parallel.TaskStream(parallel.tune_recorded_group_task, n_jobs)
    split_tasks = parallel.TaskStream(parallel.tune_task, n_jobs)

    try:
        for rid, cfg in iter_compose_runs(params, key, run_order=run_order):
            runs[rid] = cfg
            run = typed[rid] = RunConfig.from_config(cfg)
            if run.splits is None:
                dataset, name = rid.split("/", 1) if item["datasets"] is not None else (None, rid)
                group = group_of.get(name, -1)
                members = forming.setdefault((dataset, group), [])
                members.append((rid, run))
                if len(members) == group_size.get(group, 1):  # the group is composed
                    del forming[(dataset, group)]
                    plain_tasks.add(tuple(run for _, run in members))
                    group_ids.append([member for member, _ in members])
                continue
            run_keys, tasks = parallel.sweep_tasks({rid: run}, lambda r, run_s, split: (run_s,))
            keys.extend(run_keys)
            for task in tasks:
                split_tasks.add(*task)
    except BaseException:  # a run that does not compose: the started fits are not needed
        parallel.stop_workers()
        raise
    if run_order is not None:  # logged in the list's order
        runs = {rid: runs[rid] for rid in run_ids(item)}
    plain = {rid: run for rid, run in typed.items() if run.splits is None}
    swept_runs = {rid: run for rid, run in typed.items() if run.splits is not None}
    if swept_runs:
        log.info("tune %s: %d runs x their splits, n_jobs=%s", key, len(swept_runs), n_jobs)
        pending_splits = split_tasks.results()
    log.info("tune %s: %d runs, n_jobs=%s", key, len(plain), n_jobs)
    pending = _by_run(group_ids, plain_tasks.results())
    tracker = _tracker_or_stop(params, key)
    # a swept run's splits by run: each logged when its last split is fitted
    swept = parallel.by_run(keys, pending_splits) if swept_runs else iter(())
    logged: list[str] = []
    with _end_scheduled_on_error(tracker, logged):
        for n, (rid, cfg) in enumerate(runs.items(), 1):
            comp = typed[rid].composition
            if rid in plain:
                tuned, calls = pending(rid)  # fitted before its run is created, as ever
            else:
                _, splits = next(swept)  # the swept runs in the same order
            log.info(
                "[%d/%d] tuned %s/%s: %s on %s", n, len(runs), key, rid, comp.label, comp.dataset
            )
            with tracker.parent_run(
                task=comp.task,
                name=run_name(comp, cfg),
                tags=_run_tags(comp, key, rid),
                params=cell_params(cfg, comp),
                done="SCHEDULED",  # evaluate resumes it: FINISHED only with its test metrics
            ) as run_id:
                tracker.log_dict(cfg, "config.yaml")
                if rid in plain:
                    RecordingTracker.replay(calls, tracker)
                else:
                    tuned = _log_tuned_splits(splits, tracker)
            if run_id is not None:
                logged.append(run_id)
            out["runs"][rid] = {"config": cfg, "run_id": run_id, "tune": tuned}
    path = _out(TUNING_DIR / f"{key}.json")
    write_json(path, out)
    return path


def _by_run(
    group_ids: Sequence[Sequence[str]], results: Iterator[Sequence[Any]]
) -> Callable[[str], Any]:
    """``result_of(run id)`` for the results of group tasks (``results``, in the order of
    ``group_ids``): the next group's results are waited for until the run's are in."""
    got: dict[str, Any] = {}
    groups = iter(group_ids)

    def result_of(rid: str) -> Any:
        while rid not in got:
            got.update(zip(next(groups), next(results), strict=True))
        return got.pop(rid)

    return result_of


def _typed(configs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Run id -> its typed run config (:class:`pipeline.config.run.RunConfig`): every run
    config checked once, before any work."""
    from .config.run import RunConfig

    return {rid: RunConfig.from_config(cfg) for rid, cfg in configs.items()}


def _n_jobs(params: Mapping[str, Any]) -> int:
    """``n_jobs`` of params.yaml: the parallel worker processes of the tune and refit
    stages (the runs of an experiment) and of split sweeps (-1: every core; 1: none)."""
    value = params.get("n_jobs", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value == 0:
        from .errors import CompositionError

        raise CompositionError(f"n_jobs must be a non-zero integer (-1: every core), got {value!r}")
    return value


def _log_tuned_splits(tuned: Mapping[str, Any], tracker: Any) -> dict[str, Any]:
    """Log a split sweep's tuning to its parent run: the chosen lambda and validation
    value of each split as metric steps (no child run per lambda: thirty splits would
    make thousands); the JSON keeps every validation curve."""
    steps = []
    for split, t in tuned.items():
        step = {f"val.{m}": sel["value"] for m, sel in t["selected"].items()}
        step.update({f"lambda.{m}": sel["lambda"] for m, sel in t["selected"].items()})
        steps.append(({k: v for k, v in step.items() if v is not None}, int(split)))
    tracker.log_batch(steps)  # one write, not one per split
    return {"splits": dict(tuned), "seconds": sum(t["seconds"] for t in tuned.values())}


def _tuning(key: str) -> dict[str, Any]:
    from .errors import DatasetError

    path = _out(TUNING_DIR / f"{key}.json")
    if not path.is_file():
        raise DatasetError(f"no {path}: run the tune stage first (dvc repro tune@{key})")
    return json.loads(path.read_text(encoding="utf-8"))


def refit(params: Mapping[str, Any], key: str) -> Path:
    """Refit every run of ``key`` on train + validation; write ``models/<key>/<run>/``
    (worker processes when ``n_jobs != 1``)."""
    from .runs import parallel

    tuning = _tuning(key)
    typed = _typed({rid: e["config"] for rid, e in tuning["runs"].items()})
    root = _out(MODELS_DIR / key)
    n_jobs = _n_jobs(params)
    swept = {rid: run for rid, run in typed.items() if run.splits is not None}
    if swept:  # a task per run: its splits' models in one file (refit.save_splits)
        log.info("refit %s: %d split sweeps, n_jobs=%s", key, len(swept), n_jobs)
        split_tasks = [
            (run, tuning["runs"][rid]["tune"]["splits"], root / rid) for rid, run in swept.items()
        ]
        parallel.run_tasks(parallel.refit_splits_task, split_tasks, n_jobs)
    plain = {rid: e for rid, e in tuning["runs"].items() if rid not in swept}
    log.info("refit %s: %d runs, n_jobs=%s", key, len(plain), n_jobs)
    # runs that fit the same models (decoded otherwise) in one task: a refit at the same
    # lambda solved once (parallel.refit_group_task)
    groups = parallel.group_by_fit({rid: typed[rid] for rid in plain})
    tasks = [
        (tuple((typed[rid], plain[rid]["tune"], root / rid) for rid in group),) for group in groups
    ]
    parallel.run_tasks(parallel.refit_group_task, tasks, n_jobs)
    return root


def evaluate(params: Mapping[str, Any], key: str) -> Path:
    """Evaluate every run of ``key`` on test, log to its MLflow run; write
    ``metrics/<key>.json`` (DVC metrics) and ``data/eval/<key>/<run>/``."""
    from .fileio import write_json
    from .runs import evaluate as core
    from .runs import parallel
    from .runs.mlflow_view import run_name
    from .runs.tracking import RecordingTracker

    tuning = _tuning(key)
    typed = _typed({rid: e["config"] for rid, e in tuning["runs"].items()})
    settings = _tracking_settings(params, key)
    n_jobs = _n_jobs(params)
    metrics: dict[str, Any] = {}
    swept_runs = {rid: run for rid, run in typed.items() if run.splits is not None}
    # The runs are evaluated in worker processes (predictions, scores, the files of
    # data/eval/, figures) that record what they log; this process replays it into each
    # run's MLflow parent run (metrics, the files, the models: one writer to the store) as
    # the results come, in order, while the workers go on with the next runs.
    tasks = [
        (
            typed[rid],
            e["tune"],
            _out(MODELS_DIR / key / rid),
            _out(EVAL_DIR / key / rid),
            {"experiment": key, "run": rid, "run_id": e.get("run_id")},
            settings,
        )
        for rid, e in tuning["runs"].items()
        if rid not in swept_runs
    ]
    # imported once, before the workers fork: matplotlib for the figures, MLflow (needed
    # here anyway) for what the core builds with it (the dataset input)
    if tasks and settings.enabled and settings.figures:
        from .runs import figures

        if n_jobs != 1 and len(tasks) > 1:  # worker processes: what their first figure sets up
            figures.warm_up()
    if tasks and settings.enabled:
        os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
        import mlflow  # noqa: F401
    pending = parallel.iter_tasks(parallel.evaluate_recorded_task, tasks, n_jobs)
    # a swept run's splits in one task (its models in one file): each run logged when
    # its task is done, while the workers go on with the next runs
    swept = parallel.iter_tasks(
        parallel.evaluate_splits_task,
        [
            (run, tuning["runs"][rid]["tune"]["splits"], _out(MODELS_DIR / key / rid))
            for rid, run in swept_runs.items()
        ],
        n_jobs,
    )
    tracker = _tracker_or_stop(params, key)
    for rid, entry in tuning["runs"].items():
        run = typed[rid]
        if run.splits is not None:  # evaluated before its run is resumed
            splits = next(swept)  # the swept runs in the same order
        start = time.perf_counter()
        comp = run.composition
        record = {"experiment": key, "run": rid, "run_id": entry.get("run_id")}
        with tracker.parent_run(
            task=comp.task,
            name=run_name(comp, run.config),
            tags=_run_tags(comp, key, rid),
            run_id=entry.get("run_id"),
        ):
            if run.splits is None:
                result, calls = next(pending)
                start -= result["seconds"]  # the worker's part
                RecordingTracker.replay(calls, tracker)
            else:
                result = _log_evaluated_splits(splits, comp, entry, key, rid, tracker, record)
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
    return path


def _log_evaluated_splits(
    per_split: Mapping[str, Any],
    comp: Any,
    entry: Mapping[str, Any],
    key: str,
    rid: str,
    tracker: Any,
    record: Mapping[str, Any],
) -> dict[str, Any]:
    """Log a split sweep's test values as metric steps and their mean and std (ddof 0)
    to the parent run; write one ``results.json`` with every split (no models,
    predictions or figures per split: thirty of each)."""
    import numpy as np

    from .fileio import write_json
    from .runs.mlflow_view import lambda_params

    steps = []
    for split, res in per_split.items():
        step = {f"test.{m}.split": v for m, v in res["headline"].items()}
        step.update({f"lambda.{m}.split": v for m, v in res["lambda"].items() if v is not None})
        steps.append((step, int(split)))
    first = next(iter(per_split.values()))
    values = {
        m: np.array([r["headline"][m] for r in per_split.values()]) for m in first["headline"]
    }
    mean = {m: float(v.mean()) for m, v in values.items()}
    std = {m: float(v.std()) for m, v in values.items()}
    summary = {f"test.{m}": v for m, v in mean.items()}
    summary.update({f"test.{m}.std": v for m, v in std.items()})
    summary["n_splits"] = float(len(per_split))
    # one write, not one per split
    tracker.log_batch([*steps, (summary, None)], params=lambda_params(entry["tune"]))
    result = {
        "headline": mean,
        "std": std,
        "lambda": {m: None for m in first["lambda"]},
        "n_splits": len(per_split),
        "composition": comp.tags(),
    }
    write_json(
        _out(EVAL_DIR / key / rid / "results.json"),
        {**record, **result, "splits": dict(per_split), "tune": dict(entry["tune"])},
    )
    return result


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.stage", description="Run one DVC stage from params.yaml."
    )
    parser.add_argument("stage", choices=STAGES)
    parser.add_argument("experiment", nargs="?", help="experiment key (tune/refit/evaluate)")
    parser.add_argument("--params", type=Path, default=None, help="default: <root>/params.yaml")
    if argv is None:  # the command line: in a child of the preload server if there is one
        from .preload import delegate

        status = delegate(wait=not set(sys.argv[1:2]) & set(LIGHT_STAGES))
        if status is not None:
            sys.exit(status)
    args = parser.parse_args(argv)
    if args.stage in ("tune", "refit", "evaluate") and not args.experiment:
        parser.error(f"the {args.stage} stage needs an experiment key")
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    start = time.perf_counter()
    # One BLAS thread for the whole stage: the fits are small, and on a busy machine a
    # multi-threaded OpenBLAS spin-waits (measured: polynomial-kernel fits 10x slower on
    # a 2-core machine with one core taken). The solver limits its own loop already.
    from threadpoolctl import threadpool_limits

    from .lifecycle import (
        command,
        die_with_parent,
        keep_freed_memory,
        mark_done,
        register_exit_handler,
    )

    if argv is None:  # the command line (not an in-process call)
        die_with_parent()  # a stage never outlives its dvc process
        keep_freed_memory()  # this process and its forked workers
        register_exit_handler()  # before the stage's imports: the last exit handler to run
    name = f"stage {args.stage}" + (f"@{args.experiment}" if args.experiment else "")
    resume = "dvc repro resumes the DVC pipeline"
    with command(name, resume), threadpool_limits(limits=1, user_api="blas"):
        _run_stage(args)
    from . import preload

    how = "in the preload server's fork" if preload.IN_CHILD else "imports included"
    log.info("%s done in %.1f s (%s)", name, time.perf_counter() - start, how)
    mark_done()


def _run_stage(args: argparse.Namespace) -> None:
    from .config.experiments import load_params

    params = load_params(args.params)
    if args.stage == "fetch":
        fetch(params)
    elif args.stage == "preprocess":
        preprocess(params)
    else:
        stage = {"tune": tune, "refit": refit, "evaluate": evaluate}[args.stage]
        stage(params, args.experiment)


if __name__ == "__main__":
    main()
