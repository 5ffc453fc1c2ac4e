"""Worker processes of the DVC stages (:mod:`pipeline.runs.parallel`): fitting in a worker and
replaying its recorded logging gives what fitting in the stage's process logs."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.config.run import RunConfig
from pipeline.data.api import load_prepared
from pipeline.runs import parallel as splits
from pipeline.runs import sweeps, tune
from pipeline.runs.tracking import RecordingTracker

from .conftest import RecordingTracker as FakeTracker
from .conftest import run_config

TIMES = {"fit_seconds", "seconds", "tune_seconds"}


def _untimed(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _untimed(v) for k, v in node.items() if k not in TIMES}
    return node


def test_tune_in_workers_logs_what_tune_in_process_logs(prepared) -> None:
    base = ["task=label_ranking", "dataset=iris", "lambdas.num=3", "progress=false"]
    cfgs = [
        run_config(prepared, [*base, "set=cube", "decoder=birkhoff"]),
        run_config(prepared, [*base, "set=birkhoff", "decoder=birkhoff"]),
        # a kernel model stopped by max_iter: its iterate depends on every rounding of the
        # kernel and of its preconditioner, whatever the BLAS threads of the process
    ]
    runs = [RunConfig.from_config(cfg) for cfg in cfgs]
    in_workers = splits.run_tasks(splits.tune_recorded_task, [(r,) for r in runs], n_jobs=2)
    assert len(in_workers) == 2
    for cfg, run, (tuned, calls) in zip(cfgs, runs, in_workers, strict=True):
        direct = FakeTracker()
        expected = tune.run(run, load_prepared("iris", cfg), direct)
        replayed = FakeTracker()
        RecordingTracker.replay(calls, replayed)
        assert _untimed(tuned) == _untimed(expected)
        assert [(n, p, _untimed(m)) for n, p, m in replayed.children] == [
            (n, p, _untimed(m)) for n, p, m in direct.children
        ]
        assert len(replayed.children) == 3
        assert _untimed(replayed.metrics) == _untimed(direct.metrics)
        assert "lambda.hamming" in replayed.metrics


def test_recording_tracker_keeps_the_order_and_steps() -> None:
    rec = RecordingTracker()
    rec.log_tuning({"lambdas": [1.0], "metrics": {"x": [0.5]}}, ties="largest")
    rec.log_metrics({"a": 1.0}, step=3)
    assert rec.calls == [
        ("log_tuning", ({"lambdas": [1.0], "metrics": {"x": [0.5]}},), {"ties": "largest"}),
        ("log_metrics", ({"a": 1.0},), {"step": 3}),
    ]
    assert not rec.enabled  # nothing reaches a store until replayed


def test_kernel_fits_in_workers_equal_fits_in_process(prepared) -> None:
    """A kernel model stopped by max_iter: its iterate depends on every rounding of the
    kernel and of its preconditioner (an ``eigh``). The fits run with one BLAS thread, so
    a worker process (where joblib limits the threads) and the stage's own process (all
    threads) give the same curve."""
    cfg = run_config(
        prepared,
        [
            "task=multilabel",
            "dataset=emotions",
            "set=unit_cube",
            "model=poly",
            "model.degree=3",
            "model.max_iter=40",
            "lambdas.num=3",
            "progress=false",
        ],
    )
    run = RunConfig.from_config(cfg)
    expected = tune.run(run, load_prepared("emotions", cfg), None)
    (tuned, _), (again, _) = splits.run_tasks(splits.tune_recorded_task, [(run,), (run,)], n_jobs=2)
    assert tuned["metrics"] == again["metrics"] == expected["metrics"]
    assert not all(tuned["converged"])  # the case that needs it


def test_evaluate_in_workers_writes_and_logs_what_evaluate_in_process_does(
    prepared, tmp_path
) -> None:
    """The evaluate stage's runs in worker processes: the same files in data/eval/ and,
    replayed, the same metrics, params, tags, artifacts, dataset input and models as
    evaluating in the stage's process."""
    import json

    import numpy as np

    from pipeline.runs import evaluate, refit
    from pipeline.runs.tracking import TrackingSettings

    base = ["task=label_ranking", "dataset=iris", "lambdas.num=2", "progress=false"]
    cfgs = [
        run_config(prepared, [*base, "set=cube", "decoder=birkhoff"]),
        run_config(prepared, [*base, "set=birkhoff", "decoder=birkhoff"]),
    ]
    settings = TrackingSettings(heatmap_samples=2)
    tasks, expected = [], []
    for n, cfg in enumerate(cfgs):
        run = RunConfig.from_config(cfg)
        data = load_prepared("iris", cfg)
        tuned = tune.run(run, data, None)
        models = tmp_path / f"models{n}"
        refit.save(refit.run(run, data, tuned), models)
        direct = FakeTracker(heatmap_samples=2)
        here = tmp_path / f"here{n}"
        record = {"run": f"r{n}"}
        want = evaluate.run(
            run, data, tuned, refit.load(models), direct, out_dir=here, record=record
        )
        expected.append((want, direct, here))
        tasks.append((run, tuned, models, tmp_path / f"worker{n}", record, settings))
    in_workers = [
        by_split[None] for by_split in splits.iter_tasks(sweeps.evaluate_run, tasks, n_jobs=2)
    ]
    for (result, calls), (want, direct, here), task in zip(
        in_workers, expected, tasks, strict=True
    ):
        there = task[3]
        assert _untimed(result) == _untimed(want)
        replayed = FakeTracker()
        RecordingTracker.replay(calls, replayed)
        assert replayed.metrics == direct.metrics and "test.hamming" in replayed.metrics
        assert replayed.params == direct.params and replayed.tags == direct.tags
        assert [(p.name, a) for p, a in replayed.artifacts] == [
            (p.name, a) for p, a in direct.artifacts
        ]
        assert all(p.parent == there and p.is_file() for p, _ in replayed.artifacts)
        assert ("soft_permutations.png", "figures") in [(p.name, a) for p, a in replayed.artifacts]
        # the dataset input crossed the process boundary (pickled as its constructor call)
        [(dataset, tags)] = replayed.inputs
        [(want_dataset, want_tags)] = direct.inputs
        assert dataset.to_dict() == want_dataset.to_dict() and tags == want_tags
        assert list(replayed.models) == list(direct.models) and len(direct.models) == 1
        X = load_prepared("iris", task[0].data).test[0]
        [name] = direct.models
        np.testing.assert_array_equal(
            replayed.models[name].predict(X), direct.models[name].predict(X)
        )
        with np.load(there / "predictions.npz") as a, np.load(here / "predictions.npz") as b:
            assert sorted(a.files) == sorted(b.files)
            for key in a.files:
                np.testing.assert_array_equal(a[key], b[key])
        results = [json.loads((d / "results.json").read_text()) for d in (there, here)]
        assert _untimed(results[0]) == _untimed(results[1])


def test_recording_tracker_records_every_logging_method() -> None:
    """Whatever a core logs (artifacts, models, tags: the evaluate stage) is recorded,
    mappings copied at the call, and replayed in order; with the settings of a tracker the
    recorder is enabled as it is (so that the core logs what it would log to it)."""
    import numpy as np
    from sklearn.linear_model import LinearRegression

    from pipeline.runs.tracking import Tracker, TrackingSettings

    rec = RecordingTracker(TrackingSettings(figures=False))
    assert rec.enabled and not rec.settings.figures
    tags = {"a": "1"}
    rec.set_tags(tags)
    tags["a"] = "2"
    rec.log_artifact("x.png", "figures")
    X = np.arange(6.0).reshape(3, 2)
    rec.log_model(LinearRegression().fit(X, np.arange(3.0)), "model", X_example=X)
    rec.log_dict({"k": 1}, "config.yaml")
    assert [c[0] for c in rec.calls] == ["set_tags", "log_artifact", "log_model_files", "log_dict"]
    assert rec.calls[0][1] == ({"a": "1"},)
    # a model is saved by the recorder (the worker) and recorded as its files
    files, name = rec.calls[2][1]
    assert name == "model" and rec.calls[2][2] == {"registered_name": None}
    assert {"MLmodel", "model.skops", "input_example.json"} <= set(files)
    recorded = {
        name for name, fn in vars(Tracker).items() if callable(fn) and not name.startswith("_")
    } - {"parent_run", "run_link", "experiment_id"}
    assert recorded <= set(vars(RecordingTracker))  # a new logging method is recorded too
    assert RecordingTracker().enabled is False


def test_iter_tasks_starts_the_workers_before_the_first_result_is_asked(tmp_path) -> None:
    """The stages open the tracking store while the workers run: the tasks must start
    when iter_tasks is called, not at the first ``next``; results come in order."""
    import shutil
    import time

    src = tmp_path / "src"
    src.write_text("x")
    tasks = [(src, tmp_path / f"started{i}") for i in range(4)]
    pending = splits.iter_tasks(shutil.copyfile, tasks, n_jobs=2)
    deadline = time.monotonic() + 120
    while not (tmp_path / "started0").exists():
        assert time.monotonic() < deadline, "no task started before the first next()"
        time.sleep(0.1)
    assert list(pending) == [dst for _, dst in tasks]
    lazy = splits.iter_tasks(shutil.copyfile, [(src, tmp_path / "lazy")], n_jobs=2)  # here
    assert not (tmp_path / "lazy").exists() and list(lazy) == [tmp_path / "lazy"]


def test_task_stream_starts_each_task_when_it_is_given(tmp_path) -> None:
    """The tune stage gives its runs to the workers as it composes them: a task starts
    before the next one is given and before any result is asked; a single task runs in
    this process, when its result is asked (as iter_tasks); results come in order."""
    import shutil
    import time

    src = tmp_path / "src"
    src.write_text("x")
    stream = splits.TaskStream(shutil.copyfile, n_jobs=2)
    stream.add(src, tmp_path / "t0")
    assert not (tmp_path / "t0").exists()  # held: maybe the only one
    stream.add(src, tmp_path / "t1")
    deadline = time.monotonic() + 120
    while not (tmp_path / "t0").exists() or not (tmp_path / "t1").exists():
        assert time.monotonic() < deadline, "the given tasks did not start"
        time.sleep(0.05)
    stream.add(src, tmp_path / "t2")
    assert list(stream.results()) == [tmp_path / f"t{i}" for i in range(3)]
    single = splits.TaskStream(shutil.copyfile, n_jobs=2)
    single.add(src, tmp_path / "alone")
    results = single.results()
    assert not (tmp_path / "alone").exists() and list(results) == [tmp_path / "alone"]
    serial = splits.TaskStream(shutil.copyfile, n_jobs=1)
    serial.add(src, tmp_path / "s0")
    serial.add(src, tmp_path / "s1")
    assert not (tmp_path / "s0").exists()  # n_jobs=1: each when its result is asked
    assert list(serial.results()) == [tmp_path / "s0", tmp_path / "s1"]


def test_workers_are_forked_and_stopped_on_an_error() -> None:
    """Local workers are forked from the stage's process (what it imported is there, no
    imports to pay again); a failing task's error reaches the caller, and the other tasks
    are cancelled with the workers (the stage does not wait for work nobody will use)."""
    import sys
    import types

    splits._discard_pool()  # a pool forked from here, now
    sys.modules["_projloss_fork_probe"] = types.ModuleType("_projloss_fork_probe")
    try:
        probe = "'_projloss_fork_probe' in __import__('sys').modules"
        assert list(splits.iter_tasks(eval, [(probe,), (probe,)], n_jobs=2)) == [True, True]
        executor = splits._POOL
        assert executor is not None
        again = list(splits.iter_tasks(eval, [("1 + 1",), ("2 + 2",)], n_jobs=2))
        assert again == [2, 4] and splits._POOL is executor  # reused: no new fork
        failing = [("1",), ("1 / 0",), ("__import__('time').sleep(60)",)]
        with pytest.raises(ZeroDivisionError):
            list(splits.iter_tasks(eval, failing, n_jobs=2))
        assert splits._POOL is None  # stopped (the 60 s task was killed, not awaited)
    finally:
        del sys.modules["_projloss_fork_probe"]
