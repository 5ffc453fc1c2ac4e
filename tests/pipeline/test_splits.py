"""Worker processes of the DVC stages (:mod:`pipeline.runs.parallel`): fitting in a worker and
replaying its recorded logging gives what fitting in the stage's process logs."""

from __future__ import annotations

from typing import Any

from pipeline.config.run import RunConfig
from pipeline.data.api import load_prepared
from pipeline.runs import parallel as splits
from pipeline.runs import tune
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
    rec.child_run("lambda=1", {"lambda": 1.0}, {"val.x": 0.5})
    rec.log_metrics({"a": 1.0}, step=3)
    assert rec.calls == [
        ("child_run", ("lambda=1", {"lambda": 1.0}, {"val.x": 0.5}), {}),
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
