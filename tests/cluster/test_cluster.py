"""Sweeps on a real Ray head and through submitit_local, every job logging to one MLflow
server on PostgreSQL (the README's "Scaling out" commands, with a tiny grid: iris, two
lambdas); faults: 8 jobs at once, a Ray worker killed mid-sweep, the server restarted
mid-sweep. All services run on 127.0.0.1 and are stopped by PID (see conftest.py)."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from pipeline.cluster import services

from .conftest import finish, start_sweep, sweep_runs, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]


def test_the_cluster_group_runs_on_one_worker(request: pytest.FixtureRequest) -> None:
    """Under ``make test`` (xdist, ``--dist loadgroup``) the group ``cluster`` is one
    worker's, so that the session's services (PostgreSQL, the tracking server, the Ray
    head) start once and the sweeps do not compete: xdist marks a grouped test's id with
    ``@<group>``. pytest 9.2 with xdist 3.8 ignored every group (pyproject.toml: pytest <
    9.2)."""
    addopts = " ".join(request.config.getini("addopts"))  # the project's: loadgroup
    argv = getattr(request.config, "workerinput", {}).get("mainargv", [])
    if (
        not os.environ.get("PYTEST_XDIST_WORKER")
        or "--dist loadgroup" not in addopts
        or any(a.startswith("--dist") for a in argv)
    ):
        pytest.skip("not run by xdist with the project's --dist loadgroup")
    assert request.node.nodeid.endswith("@cluster"), request.node.nodeid


#: the tiny grid of every sweep: label ranking on iris, two lambda values
TINY = ["task=label_ranking", "dataset=iris", "lambdas.num=2", "tracking.heatmap_samples=1"]
#: four jobs: two sets x two grid ends
FOUR = ["set=birkhoff,permutahedron", "lambdas.high=1e3,1e4"]


def sweep_args(url: str, sweep: Path, data: list[str], launcher: list[str]) -> list[str]:
    """The command line of the README (overrides after ``--multirun``)."""
    return [*TINY, "--multirun", *launcher, f"tracking.uri={url}", f"hydra.sweep.dir={sweep}",
            *data]  # fmt: skip


def check_complete(
    url: str, group: str, n_jobs: int, *, models: bool = True, figures: bool = True
) -> list[Any]:
    """Every job of the sweep has one FINISHED parent run with its metrics, children (one
    per lambda), model and figures; no run of the sweep is RUNNING. Returns the parents."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(url)
    parents, children = sweep_runs(url, group)
    finished = [p for p in parents if p.info.status == "FINISHED"]
    jobs = {(p.data.tags["set"], p.data.params["lambdas"]) for p in finished}  # grid low..high
    assert len(finished) == n_jobs == len(jobs), [(p.info.run_name, p.info.status) for p in parents]
    assert not [r for r in parents + children if r.info.status == "RUNNING"]
    for p in finished:
        assert {"test.hamming", "val.hamming", "total_seconds"} <= set(p.data.metrics)
        mine = [c for c in children if c.data.tags["mlflow.parentRunId"] == p.info.run_id]
        assert len(mine) == 2 and all(c.info.status == "FINISHED" for c in mine)
        if figures:
            figs = {a.path for a in client.list_artifacts(p.info.run_id, "figures")}
            assert "figures/validation_curve.png" in figs
        if models:
            logged = client.search_logged_models(
                [p.info.experiment_id], filter_string=f"source_run_id = '{p.info.run_id}'"
            )
            assert logged, f"no model logged by {p.info.run_name}"
    return parents


def test_submitit_local_sweep_on_the_tracking_server(tracking_server, iris_data, tmp_path):
    """The same 4 jobs through submitit_local (the code path of submitit_slurm)."""
    pytest.importorskip(
        "hydra_plugins.hydra_submitit_launcher", reason="hydra-submitit-launcher not installed"
    )
    sweep = tmp_path / "sweep"
    launcher = ["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5", *FOUR]
    proc = start_sweep(sweep_args(tracking_server.url, sweep, iris_data, launcher), tmp_path)
    code, out = finish(proc, timeout=240)
    assert code == 0, out[-3000:]
    check_complete(tracking_server.url, str(sweep), 4)
    assert list((sweep / ".submitit").iterdir())  # submitit's job folders


def test_eight_jobs_at_once_on_the_server(ray_cluster, tracking_server, iris_data, tmp_path):
    """8 Ray tasks at once (a quarter CPU each) on one server: 8 parents, none lost or
    duplicated, 16 children."""
    sweep = tmp_path / "sweep"
    launcher = [
        "hydra/launcher=ray_cluster",
        "hydra.launcher.ray.remote.num_cpus=0.25",
        "set=birkhoff,permutahedron",
        "lambdas.high=1e2,1e3,1e4,1e5",
        "tracking.log_models=false",
        "tracking.figures=false",
    ]
    proc = start_sweep(
        sweep_args(tracking_server.url, sweep, iris_data, launcher),
        tmp_path,
        {"RAY_ADDRESS": ray_cluster.address},
    )
    code, out = finish(proc, timeout=240)
    assert code == 0, out[-3000:]
    parents = check_complete(tracking_server.url, str(sweep), 8, models=False, figures=False)
    assert len(parents) == 8
    assert len(sweep_runs(tracking_server.url, str(sweep))[1]) == 16


def test_ray_sweep_with_a_worker_killed(ray_cluster, tracking_server, iris_data, tmp_path):
    """4 jobs as Ray tasks on the head node, each logging to the PostgreSQL-backed server
    with served artifacts (models, figures); SIGKILL of the Ray workers running jobs: Ray
    runs those jobs again (max_retries), every job completes, and the runs the dead
    workers left RUNNING are closed: KILLED with tag superseded_by by the retried job's
    run (same name, the dead process's host and pid), or KILLED with the closing tag at
    the end of the sweep -- none stays RUNNING."""
    from pipeline.cluster.callbacks import CLOSED_TAG

    sweep = tmp_path / "sweep"
    args = sweep_args(tracking_server.url, sweep, iris_data, ["hydra/launcher=ray_cluster", *FOUR])
    proc = start_sweep(args, tmp_path, {"RAY_ADDRESS": ray_cluster.address})
    try:
        # a job has started its parent run: kill the worker(s) running jobs now
        wait_for(
            lambda: [
                p for p in sweep_runs(tracking_server.url, str(sweep))[0]
                if p.info.status == "RUNNING"
            ],
            120,
            "a RUNNING parent run",
        )  # fmt: skip
        # every busy worker (the RUNNING run's among them): at least one orphan run
        for victim in wait_for(ray_cluster.worker_pids, 30, "a busy Ray worker"):
            os.kill(victim, signal.SIGKILL)
    finally:
        code, out = finish(proc, timeout=240)
    assert code == 0, out[-3000:]
    assert "sweep: 4 job(s)" in out and "Ray Launcher is launching 4 jobs" in out
    parents = check_complete(tracking_server.url, str(sweep), 4)
    orphans = [p for p in parents if p.info.status != "FINISHED"]
    assert orphans, "no run was interrupted by the kill"
    assert all(p.info.status == "KILLED" for p in orphans), [p.info.status for p in orphans]
    closed = [p for p in orphans if "superseded_by" not in p.data.tags]  # not by a retry
    assert all(CLOSED_TAG in p.data.tags for p in closed)
    if closed:
        assert f"closed {len(closed)} run(s) left RUNNING" in out


def test_the_server_restarted_mid_sweep(ray_cluster, tracking_server, iris_data, tmp_path):
    """The tracking server stops and comes back while jobs log to it: the sweep ends (no
    hang); each job either completes or fails with an error line; no run stays RUNNING."""
    sweep = tmp_path / "sweep"
    light = ["tracking.log_models=false", "tracking.figures=false"]
    launcher = ["hydra/launcher=ray_cluster", *FOUR, *light]
    proc = start_sweep(
        sweep_args(tracking_server.url, sweep, iris_data, launcher),
        tmp_path,
        {"RAY_ADDRESS": ray_cluster.address},
    )
    try:
        wait_for(lambda: sweep_runs(tracking_server.url, str(sweep))[0], 120, "a parent run")
        tracking_server.restart(down=2.0)
    finally:
        code, out = finish(proc, timeout=300)
    parents, children = sweep_runs(tracking_server.url, str(sweep))
    finished = [p for p in parents if p.info.status == "FINISHED"]
    if code == 0:
        assert len(finished) >= 4
    else:  # a job that could not reach the server said so in one line
        lost = r"MLflow tracking server \S+ is unreachable|tracking store \S+ failed while"
        assert re.search(rf"error: .*({lost})", out), out[-3000:]
    assert not [r for r in parents + children if r.info.status == "RUNNING"], out[-3000:]


def test_services_are_stopped_by_pid(tmp_path):
    """A started service's whole process group is gone after stop() (zombies aside)."""
    import subprocess

    proc = services.start("sleeper", ["sh", "-c", "sleep 60 & sleep 60"], tmp_path / "log")
    proc.stop(timeout=5)
    assert proc.proc.poll() is not None

    def alive() -> list[str]:  # SIGKILL is asynchronous: a dying process may still run
        ps = subprocess.run(["ps", "-eo", "pgid=,stat="], capture_output=True, text=True).stdout
        group = [line.split() for line in ps.splitlines() if line.split()[0] == str(proc.pid)]
        return [stat for _, stat in group if not stat.startswith("Z")]

    wait_for(lambda: not alive(), 10, "every process of the group to die")


def _stop_mid_sweep(
    url: str, sweep: Path, proc: Any, sig: int, group: bool, n_jobs: int
) -> tuple[int, str]:
    """Send ``sig`` to the sweep (its process group: Ctrl-C in a terminal) once each of its
    ``n_jobs`` jobs has started its parent run, or once a job has logged a child run
    (whichever comes first); its exit status and output.

    Jobs that start together are then all early in their long grid (``lambdas.num=400``),
    the signal sooner and surer to find them running than after a whole grid (a child run:
    the job is then near its end). The child run stays as the latest moment: a job that
    starts late does not delay the signal past it."""

    def started() -> bool:
        parents, children = sweep_runs(url, str(sweep))
        return bool(children) or sum(p.info.status == "RUNNING" for p in parents) >= n_jobs

    try:
        wait_for(started, 180, f"{n_jobs} RUNNING parent runs or a child run")
        (os.killpg if group else os.kill)(proc.pid, sig)
    finally:
        code, out = finish(proc, timeout=180)
    return code, out


def _assert_stopped(url: str, sweep: Path, code: int, out: str, sig: int) -> None:
    """One line, 128 + the signal, every run of the sweep KILLED with the signal's tag."""
    from pipeline.runs.run_lifecycle import CLOSED_TAG

    name = signal.Signals(sig).name
    assert code == 128 + sig, out[-3000:]
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert "Traceback" not in out and len(errors) == 1, out[-3000:]
    assert f"(a sweep) was interrupted by {name}" in errors[0], errors
    parents, children = sweep_runs(url, str(sweep))
    assert parents and {p.info.status for p in parents} == {"KILLED"}, out[-3000:]
    assert all(
        p.data.tags[CLOSED_TAG] == f"signal {name}"
        or p.data.tags[CLOSED_TAG].startswith(f"signal {name} ")
        for p in parents
    )
    assert not [r for r in children if r.info.status == "RUNNING"]


def test_sigterm_stops_a_ray_sweep(ray_cluster, tracking_server, iris_data, tmp_path):
    """Issue 36, item 1: SIGTERM to a Ray sweep ended it at once (Ray's handler: exit
    status 1, or its crash handler: 134) and left its tasks running. Now the tasks stop,
    their runs KILLED, and the sweep exits 143 with one line; no busy worker is left."""
    sweep = tmp_path / "sweep"
    light = ["tracking.log_models=false", "tracking.figures=false", "lambdas.num=400"]
    launcher = ["hydra/launcher=ray_cluster", "set=birkhoff,permutahedron", *light]
    proc = start_sweep(
        sweep_args(tracking_server.url, sweep, iris_data, launcher),
        tmp_path,
        {"RAY_ADDRESS": ray_cluster.address},
    )
    code, out = _stop_mid_sweep(
        tracking_server.url, sweep, proc, signal.SIGTERM, group=False, n_jobs=2
    )
    _assert_stopped(tracking_server.url, sweep, code, out, signal.SIGTERM)
    wait_for(lambda: not ray_cluster.worker_pids(), 30, "the Ray workers to be idle")


def test_ctrl_c_stops_a_submitit_local_sweep(tracking_server, iris_data, tmp_path):
    """Issue 36, item 1: Ctrl-C to a submitit_local sweep killed submitit's controllers
    (tracebacks) and the jobs 1 s later. Now one line, exit status 130, runs KILLED."""
    pytest.importorskip(
        "hydra_plugins.hydra_submitit_launcher", reason="hydra-submitit-launcher not installed"
    )
    sweep = tmp_path / "sweep"
    light = ["tracking.log_models=false", "tracking.figures=false", "lambdas.num=400"]
    launcher = ["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5",
                "set=birkhoff,permutahedron", *light]  # fmt: skip
    proc = start_sweep(sweep_args(tracking_server.url, sweep, iris_data, launcher), tmp_path)
    code, out = _stop_mid_sweep(
        tracking_server.url, sweep, proc, signal.SIGINT, group=True, n_jobs=2
    )
    _assert_stopped(tracking_server.url, sweep, code, out, signal.SIGINT)
