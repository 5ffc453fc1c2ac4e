"""Reliability of runs and commands (issue 11, items 4, 5, 8, 10 and the one error tree):
settings errors name the key, the value and what is valid; unknown keys are errors; one
error line and exit status per command; a sweep runs its valid jobs when one is invalid;
SIGTERM / SIGINT mark the MLflow runs KILLED; a stage dies with its parent (``dvc``)."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline import errors
from pipeline.config.settings import check_run_config
from pipeline.errors import CompositionError, ConfigError, DataError, PipelineError, TrackingError
from pipeline.lifecycle import Terminated, command

from ._run_fixtures import (
    FAST,
    ROOT,
    assert_no_misleading_runs,
    data_overrides,
    env,
    one_error_line,
    parents,
    prepare_iris,
    process_gone,
    runs,
    spawn_train,
    train,
    wait_for,
)


@pytest.fixture(scope="module")
def iris(tmp_path_factory: pytest.TempPathFactory):
    """iris prepared under a temporary directory (once for the module)."""
    return prepare_iris(tmp_path_factory.mktemp("iris"))


def compose(overrides: list[str], config: str = "config") -> dict:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = hydra_compose(config, overrides=overrides)
    return OmegaConf.to_container(cfg, resolve=True)


# --------------------------------------------------------------------------- the error tree
def test_one_error_tree_and_the_old_import_paths() -> None:
    from pipeline.config import composition
    from pipeline.runs import tracking

    for cls in (ConfigError, CompositionError, DataError, TrackingError):
        assert issubclass(cls, PipelineError)
    assert composition.CompositionError is CompositionError
    assert tracking.TrackingError is TrackingError
    assert errors.DatasetError is DataError
    for cls in (errors.UnknownDatasetError, errors.RegistryError, errors.ChecksumError):
        assert issubclass(cls, DataError)
    # the configuration errors stay ValueErrors (callers catching ValueError still work)
    assert issubclass(ConfigError, ValueError) and issubclass(CompositionError, ValueError)


@pytest.mark.parametrize(
    ("raised", "status", "message"),
    [
        (ConfigError("seed='x' is invalid"), 1, "error: seed='x' is invalid"),
        (TrackingError("store\nbroken"), 1, "error: store broken"),  # folded on one line
        (KeyboardInterrupt(), 130, "interrupted by SIGINT"),
        (Terminated(), 143, "interrupted by SIGTERM"),
    ],
)
def test_command_ends_with_one_line_and_a_status(
    raised: BaseException, status: int, message: str, capsys, monkeypatch
) -> None:
    for key in errors.DEBUG_ENV:
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(SystemExit) as exit_info, command():
        raise raised
    assert exit_info.value.code == status
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and message in err and err.endswith("\n")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("what", "remedy", "expected"),
    [
        ("python -m pipeline.train", None, "re-run python -m pipeline.train ..."),
        ("stage tune@smoke-cube", "dvc repro resumes the DVC pipeline", "dvc repro resumes"),
    ],
)
def test_the_interrupted_line_names_the_command_to_rerun(
    what: str, remedy: str | None, expected: str, capsys, monkeypatch
) -> None:
    """Issue 36, item 10d: the line said ``dvc repro`` after a ``python -m pipeline.train``."""
    for key in errors.DEBUG_ENV:
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(SystemExit), command(what, remedy):
        raise Terminated()
    err = capsys.readouterr().err
    assert err.startswith(f"error: {what} was interrupted by SIGTERM") and expected in err
    assert ("dvc repro" in err) == ("stage" in what)


@pytest.mark.parametrize("switch", errors.DEBUG_ENV)
def test_debug_switch_reraises(switch: str, monkeypatch) -> None:
    monkeypatch.setenv(switch, "1")
    with pytest.raises(ConfigError), command():
        raise ConfigError("shown with its traceback")


def test_unexpected_errors_are_not_hidden() -> None:
    """A bug is not an expected error: its traceback is not swallowed."""
    with pytest.raises(ZeroDivisionError), command():
        1 / 0  # noqa: B018


# --------------------------------------------------------------------------- settings (8, 10)
@pytest.mark.parametrize(
    ("override", "key", "valid"),
    [
        ("seed=abc", "seed='abc'", "integer >= 0"),
        ("seed=-1", "seed=-1", "integer >= 0"),
        ("seed=1.5", "seed=1.5", "integer >= 0"),
        ("lambdas.num=0", "lambdas.num=0", "integer >= 1"),
        ("lambdas.num=abc", "lambdas.num='abc'", "integer >= 1"),
        ("lambdas.num=2.5", "lambdas.num=2.5", "integer >= 1"),
        ("lambdas.low=-1", "lambdas.low=-1", "positive number"),
        ("lambdas.low=0", "lambdas.low=0", "positive number"),
        ("lambdas.high=abc", "lambdas.high='abc'", "positive number"),
        ("lambdas.low=100000", "lambdas.low=100000 > lambdas.high", "0 < low <= high"),
        ("lambdas.ties=middle", "lambdas.ties='middle'", "smallest or largest"),
        ("+lambdas.nmu=3", "lambdas.nmu", "high, low, num, ties"),
        ("+tracking.urii=x", "tracking.urii", "'uri'"),
        ("tracking.probe_timeout=0", "tracking.probe_timeout=0", "positive number of seconds"),
        ("tracking.probe_timeout=abc", "tracking.probe_timeout='abc'", "positive number"),
        ("tracking.enabled=maybe", "tracking.enabled='maybe'", "true or false"),
        ("tracking.heatmap_samples=-1", "tracking.heatmap_samples=-1", "integer >= 0"),
        ("data.seed=abc", "data.seed", "integer"),
        ("data.test_size=0", "data.test_size", "strictly between 0 and 1"),
        ("data.val_size=abc", "data.val_size", "strictly between 0 and 1"),
        ("data.timeout=-1", "data.timeout", "positive number of seconds"),
        ("data.ordinal_split=-2", "data.ordinal_split", ">= 0"),
        ("+data.colour=1", "data.colour", "valid:"),
        ("model.max_iter=0", "model.max_iter=0", "integer >= 1"),
        ("model.tol=-1", "model.tol=-1", "positive number"),
        ("+model.lr=0.1", "model.lr", "max_iter"),
        ("warm_start=abc", "warm_start='abc'", "true or false"),
        ("progress=3", "progress=3", "true or false"),
        ("n_jobs=0", "n_jobs=0", "non-zero integer"),
        ("+colour=red", "colour", "lambdas"),
        ("+task.metric=f1", "task.metric", "metrics"),
        ("+set.parms={}", "set.parms", "name, params"),
    ],
)
def test_settings_errors_name_the_key_the_value_and_what_is_valid(
    override: str, key: str, valid: str
) -> None:
    cfg = compose([override])
    with pytest.raises(ConfigError) as info:
        check_run_config(cfg)
    text = str(info.value)
    assert key in text and valid in text, text
    assert "\n" not in text


def test_every_config_of_the_project_is_valid() -> None:
    """The defaults, each model and every run of the DVC experiment lists pass (the check
    must not reject what the project itself runs)."""
    import yaml

    from pipeline.config.experiments import compose_runs
    from pipeline.params import compose_params

    for overrides in ([], ["model=poly"], ["model=median", "task=ordinal"], ["task=multilabel"]):
        check_run_config(compose(overrides))
        check_run_config(compose(overrides, "train"))  # pipeline.train's primary config
    params = yaml.safe_load(compose_params(["experiments=paper"]))
    for key in list(params["experiments"])[::4]:  # a sample: composing every run takes 30 s
        for cfg in compose_runs(params, key).values():
            check_run_config(cfg)


def _train_fails(args: list[str], cwd: Path) -> str:
    done = train(args, cwd)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    return one_error_line(out)


def test_seed_abc_is_one_line(tmp_path: Path) -> None:
    """Item 8: ``pipeline.train seed=abc`` was a ValueError traceback."""
    line = _train_fails(["seed=abc"], tmp_path)
    assert "seed='abc'" in line and "integer >= 0" in line
    assert list(tmp_path.iterdir()) == []  # nothing written, no run started


def test_unknown_lambda_key_is_rejected(tmp_path: Path) -> None:
    """Item 10: ``+lambdas.nmu=3`` ran the 10-lambda grid silently."""
    line = _train_fails(["+lambdas.nmu=3"], tmp_path)
    assert "lambdas.nmu" in line and "high, low, num, ties" in line


def test_debug_switch_shows_the_traceback(tmp_path: Path) -> None:
    done = train(["seed=abc"], tmp_path, PROJLOSS_DEBUG="1")
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "ConfigError" in done.stderr


def test_stage_errors_are_one_line(tmp_path: Path) -> None:
    """``python -m pipeline.stage`` ends through the same place: one line, exit 1."""
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.stage", "tune", "nope", "--params", "no.yaml"],
        cwd=tmp_path,
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "python -m pipeline.params" in one_error_line(done.stdout + done.stderr)


# --------------------------------------------------------------------------- sweeps (4)
@pytest.mark.slow
def test_sweep_skips_an_invalid_job_and_runs_the_valid_ones(
    iris, tmp_path: Path, store_uri: str
) -> None:
    uri = store_uri
    args = [
        "--multirun",
        "set=reals,cube",
        "geometry=euclidean,kl",
        "decoder=birkhoff",
        "dataset=iris",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
        f"tracking.uri={uri}",
        *FAST,
        *data_overrides(iris),
    ]
    done = train(args, tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "Traceback" not in out
    errors_ = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors_) == 2, out  # the job's line, the summary
    assert errors_[0].startswith("error: job 2 (set=reals geometry=kl")
    assert "valid geometries for it are ('euclidean',)" in errors_[0]
    assert errors_[1].startswith("error: 1 of 4 jobs failed: job 2 (set=reals geometry=kl")
    all_runs = runs(uri)
    done_jobs = sorted((r.data.tags["set"], r.data.tags["geometry"]) for r in parents(all_runs))
    assert done_jobs == [("cube", "euclidean"), ("cube", "kl"), ("reals", "euclidean")]
    assert all(r.info.status == "FINISHED" for r in all_runs)
    assert_no_misleading_runs(all_runs)


def test_sweep_with_an_unusable_store_fails_before_any_job(iris, tmp_path: Path) -> None:
    from ._run_fixtures import free_port

    uri = f"http://127.0.0.1:{free_port()}"
    args = ["--multirun", "dataset=iris,wine", f"tracking.uri={uri}", "tracking.probe_timeout=2"]
    line = _train_fails([*args, *data_overrides(iris)], tmp_path)
    assert f"{uri} is unreachable" in line


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["set=cube,nope"], ["Could not find 'set/nope'", "valid options of 'set'", "knapsack"]),
        (["hydra.launcher=foo"], ["hydra.launcher='foo' is not a launcher", "joblib, ray"]),
        (["hydra.launcher="], ["hydra.launcher='' is not a launcher", "submitit_local"]),
        (
            ["hydra/launcher=joblib", "hydra.launcher.n_jobs=0"],
            ["hydra.launcher.n_jobs=0 is invalid", "-1 (one per CPU)"],
        ),
    ],
)
def test_a_bad_sweep_is_refused_before_anything(args: list[str], expected, tmp_path: Path) -> None:
    """Issue 36, items 7 and 10e: ``hydra.launcher=foo`` named neither the key nor the
    launchers, ``n_jobs=0`` was joblib's traceback, ``set=cube,nope`` printed ``sweep: 2
    job(s)`` and created the sweep directory and the store before refusing."""
    sweep, db = tmp_path / "sweep", tmp_path / "mlflow.db"
    more = [f"hydra.sweep.dir={sweep}", f"tracking.uri=sqlite:///{db}"]
    done = train(["--multirun", *args, *more], tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    line = one_error_line(out)
    assert all(text in line for text in expected), line
    assert "sweep:" not in out and "Warning" not in out
    assert list(tmp_path.iterdir()) == []  # no sweep directory, no store


# --------------------------------------------------------------------------- signals (5)
def _runs_logged(db: Path) -> int:
    """Runs in a SQLite store (the parent run: the grid's child runs come when it is
    tuned), read with sqlite3 (an MLflow client would create the
    schema of a fresh store while the run creates it too: MLflow's own race)."""
    import sqlite3

    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute("select count(*) from runs").fetchone()[0]
    except sqlite3.OperationalError:  # no tables yet
        return 0


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_mid_tune_marks_the_runs_killed(
    iris, tmp_path: Path, sig, status, store_uri: str
) -> None:
    """Item 5: SIGTERM (``timeout``, a scheduler) left the run RUNNING."""
    uri = store_uri
    args = [f"tracking.uri={uri}", "progress=false", *FAST, "lambdas.num=400"]
    proc = spawn_train([*args, *data_overrides(iris)], tmp_path)
    try:
        wait_for(lambda: _runs_logged(tmp_path / "mlflow.db"), 120, "the parent run")
        os.kill(proc.pid, sig)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = stdout + stderr
    assert proc.returncode == status, out
    assert signal.Signals(sig).name in one_error_line(out)
    all_runs = runs(uri)
    (parent,) = parents(all_runs)
    assert parent.info.status == "KILLED", out
    # stopped mid-tune: the grid's child runs (logged once it is tuned) never started
    children = [r for r in all_runs if r.data.tags.get("mlflow.parentRunId")]
    assert children == [], out
    assert_no_misleading_runs(all_runs)


def _group_processes(pgid: int) -> list[str]:
    """The processes of the process group ``pgid`` still running (zombies aside)."""
    ps = subprocess.run(["ps", "-eo", "pgid=,stat=,args="], capture_output=True, text=True)
    rows = [line.split(None, 2) for line in ps.stdout.splitlines()]
    return [r[2] for r in rows if len(r) == 3 and r[0] == str(pgid) and not r[1].startswith("Z")]


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_a_joblib_sweep(iris, tmp_path: Path, sig, status, store_uri: str) -> None:
    """Issue 36, item 1: SIGTERM to a joblib sweep was a traceback and exit status 1, its
    workers killed (runs closed as "worker lost"); Ctrl-C (SIGINT to the process group) a
    ``KeyboardInterrupt`` traceback and a leaked semaphore. Now: one line, 143 / 130, the
    running jobs' runs KILLED with the signal's tag, the third job not started, no
    process left."""
    from pipeline.runs.run_lifecycle import CLOSED_TAG

    uri = store_uri
    args = [
        "--multirun", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
        "dataset=iris", "set=cube", "lambdas.high=1e3,1e4,1e5",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
        f"tracking.uri={uri}", "progress=false", *FAST, "lambdas.num=400",
    ]  # fmt: skip
    proc = spawn_train([*args, *data_overrides(iris)], tmp_path)
    try:
        wait_for(lambda: _runs_logged(tmp_path / "mlflow.db"), 180, "the parent run")
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)  # Ctrl-C: the terminal signals the whole group
        else:
            os.kill(proc.pid, sig)  # a scheduler, `timeout`, `kill`: the sweep's process
        stdout, stderr = proc.communicate(timeout=120)
        wait_for(lambda: not _group_processes(proc.pid), 30, "the sweep's workers to end")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    out = stdout + stderr
    assert proc.returncode == status, out
    line = one_error_line(out)
    assert line.startswith("error: python -m pipeline.train (a sweep) was interrupted by")
    assert signal.Signals(sig).name in line and "1 job(s) not started" in line, out
    assert "re-run python -m pipeline.train" in line and "dvc" not in line
    assert "leaked" not in out and "worker was lost" not in out
    all_runs = runs(uri)
    assert parents(all_runs) and {p.info.status for p in parents(all_runs)} == {"KILLED"}, out
    for p in parents(all_runs):
        assert p.data.tags[CLOSED_TAG].startswith(f"signal {signal.Signals(sig).name}"), out
    assert_no_misleading_runs(all_runs)
    assert not (tmp_path / "sweep" / ".stop").exists()


def _stage_project(root: Path, iris) -> Path:
    """A project root for ``pipeline.stage`` (PROJLOSS_ROOT): conf/, params.yaml with
    the smoke experiments, iris prepared in data/."""
    import shutil

    import yaml

    from pipeline.params import compose_params

    (root / "conf").symlink_to(ROOT / "conf")
    shutil.copytree(iris.raw_dir, root / "data" / "raw")
    shutil.copytree(iris.prepared_dir, root / "data" / "prepared")
    params = yaml.safe_load(compose_params(["experiments=smoke"]))
    params["data"]["mirror"] = str(iris.mirror)
    params["lambdas"]["num"] = 2000  # a long tune: the parent dies during it
    params["n_jobs"] = 1
    params["progress"] = False
    params["tracking"]["uri"] = f"sqlite:///{root / 'mlflow.db'}"
    (root / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    return root


#: a stand-in for dvc: starts the stage, prints its PID, waits for it
FAKE_DVC = """
import subprocess, sys
proc = subprocess.Popen([sys.executable, "-m", "pipeline.stage", "tune", "smoke-cube"])
print(proc.pid, flush=True)
proc.wait()
"""


@pytest.mark.slow
def test_a_stage_dies_with_its_dvc_parent(iris, tmp_path: Path) -> None:
    """Item 5: ``kill -9`` of the dvc process left the stage running alone."""
    (tmp_path / "project").mkdir()
    root = _stage_project(tmp_path / "project", iris)
    parent = subprocess.Popen(
        [sys.executable, "-c", FAKE_DVC],
        cwd=root,
        env=env(PROJLOSS_ROOT=str(root)),
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    stage_pid = None
    try:
        stage_pid = int(parent.stdout.readline())
        # the stage's log (inherited stdout): wait until it is busy tuning
        for line in parent.stdout:
            if "runs, n_jobs=1" in line:
                break
        assert not process_gone(stage_pid), "the stage ended before its parent was killed"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=30)
        wait_for(lambda: process_gone(stage_pid), 60, "the orphaned stage to exit")
    finally:
        for pid in (parent.pid, stage_pid):
            if pid is not None and not process_gone(pid):
                os.kill(pid, signal.SIGKILL)
        parent.stdout.close()
    assert not (root / "data" / "tuning" / "smoke-cube.json").exists()  # nothing half-written


#: a stage's start, stopped between ``import pipeline`` and ``die_with_parent()``: it
#: prints its PID, waits for a line on stdin, then asks to die with its parent and sleeps
LATE_STAGE = (
    "import os, sys, time; import pipeline; print(os.getpid(), flush=True); "
    "sys.stdin.readline(); from pipeline.lifecycle import die_with_parent; "
    "die_with_parent(); time.sleep(60)"
)
#: its parent (the stand-in for dvc): starts it on the given pipes, prints nothing, waits
SPAWNER = (
    "import subprocess, sys, time; "
    "subprocess.Popen([sys.executable, '-c', sys.argv[1]], stdin=0, stdout=1); time.sleep(60)"
)


def test_a_stage_whose_parent_died_during_its_imports_dies_too(tmp_path: Path) -> None:
    """Item of issue 36 (found by tests/pipeline/test_dvc_crash.py): ``dvc`` killed while a
    stage process it has just started imports (0.7 s on a busy machine, before
    :func:`~pipeline.lifecycle.die_with_parent`): the stage, already adopted by init, asked
    for SIGTERM on the death of its new parent and ran alone to its end, beside the
    resumed pipeline's run of the same stage. The parent it started with is the one that
    counts."""
    read, write = os.pipe()
    spawner = subprocess.Popen(
        [sys.executable, "-c", SPAWNER, LATE_STAGE],
        stdin=read,
        stdout=subprocess.PIPE,
        env=env(),
        text=True,
        start_new_session=True,
    )
    os.close(read)
    stage_pid = None
    try:
        stage_pid = int(spawner.stdout.readline())  # the stage has imported pipeline
        os.kill(spawner.pid, signal.SIGKILL)
        spawner.wait(timeout=30)
        os.write(write, b"go\n")  # now it calls die_with_parent(), its parent long dead
        wait_for(lambda: process_gone(stage_pid), 30, "the orphaned stage to exit")
    finally:
        os.close(write)
        if stage_pid is not None and not process_gone(stage_pid):
            os.kill(stage_pid, signal.SIGKILL)
        spawner.stdout.close()


#: a stage started through a shell that stays (dash does not exec its one command): prints
#: its PID and its parent's, waits for a line, asks to die with dvc, says so and sleeps
SHELL_STAGE = (
    "import os, sys, time; import pipeline; print(os.getpid(), os.getppid(), flush=True); "
    "sys.stdin.readline(); from pipeline.lifecycle import die_with_parent; "
    "die_with_parent(); print('armed', flush=True); time.sleep(60)"
)
#: the stand-in for dvc, which runs a stage's command as ``$SHELL -c '<cmd>'``
SHELL_SPAWNER = (
    "import subprocess, sys, time; "
    "subprocess.Popen([sys.argv[1], '-c', sys.argv[2]], stdin=0, stdout=1); time.sleep(60)"
)


@pytest.mark.parametrize("killed", ["before die_with_parent", "after die_with_parent"])
def test_a_stage_started_through_a_shell_dies_with_dvc(tmp_path: Path, killed: str) -> None:
    """Found by CI (tests/pipeline/test_dvc_crash.py with ``$SHELL`` unset): DVC starts a
    stage as ``/bin/sh -c '<cmd>'``, and dash stays as the stage's parent; ``kill -9`` of
    dvc left the shell and its stage running to the end (``PR_SET_PDEATHSIG`` watches the
    parent, the shell, which lives on). The shell's parent is watched too."""
    dash = shutil.which("dash")
    if dash is None:
        pytest.skip("no dash here (Debian's /bin/sh)")
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(SHELL_STAGE)}"
    read, write = os.pipe()
    spawner = subprocess.Popen(
        [sys.executable, "-c", SHELL_SPAWNER, dash, command],
        stdin=read,
        stdout=subprocess.PIPE,
        env=env(),
        text=True,
        start_new_session=True,
    )
    os.close(read)
    stage_pid = shell_pid = None
    try:
        stage_pid, shell_pid = map(int, spawner.stdout.readline().split())
        assert shell_pid != spawner.pid  # the shell stayed between them: the case here
        if killed.startswith("after"):
            os.write(write, b"go\n")
            assert spawner.stdout.readline().strip() == "armed"
            time.sleep(0.5)
            assert not process_gone(stage_pid), "the stage died with its parent alive"
        os.kill(spawner.pid, signal.SIGKILL)
        spawner.wait(timeout=30)
        if killed.startswith("before"):
            os.write(write, b"go\n")
        wait_for(lambda: process_gone(stage_pid), 30, "the stage to exit after dvc's death")
        wait_for(lambda: process_gone(shell_pid), 30, "the shell to exit after its stage")
    finally:
        os.close(write)
        for pid in (stage_pid, shell_pid):
            if pid is not None and not process_gone(pid):
                os.kill(pid, signal.SIGKILL)
        spawner.stdout.close()


#: the stand-in for dvc, which says the PID of the shell it started
SHELL_SPAWNER_PID = (
    "import subprocess, sys, time; "
    "p = subprocess.Popen([sys.argv[1], '-c', sys.argv[2]], stdin=0, stdout=1); "
    "print(p.pid, flush=True); time.sleep(60)"
)
#: a stage that asks to die with dvc as soon as it has imported pipeline
EARLY_STAGE = (
    "import os, time; import pipeline; print(os.getpid(), flush=True); "
    "from pipeline.lifecycle import die_with_parent; die_with_parent(); time.sleep(60)"
)


def test_a_stage_whose_dvc_died_before_it_started_exits(tmp_path: Path) -> None:
    """Found by the crash test under load: ``dvc`` SIGKILLed 0.04 s into a stage, before
    the stage's interpreter had imported :mod:`pipeline`; the parents it noted then were
    already the adopters (init), so it watched them and ran to its end. A stage DVC
    started (``DVC_STAGE``) whose launcher is outside its process group exits at once."""
    dash = shutil.which("dash")
    if dash is None:
        pytest.skip("no dash here (Debian's /bin/sh)")
    stage = f"{shlex.quote(sys.executable)} -c {shlex.quote(EARLY_STAGE)}"
    read, write = os.pipe()
    spawner = subprocess.Popen(  # dvc, in its own process group as under a shell's job
        [sys.executable, "-c", SHELL_SPAWNER_PID, dash, f"read go; {stage}"],
        stdin=read,
        stdout=subprocess.PIPE,
        env={**env(), "DVC_STAGE": "tune@test"},
        text=True,
        start_new_session=True,
    )
    os.close(read)
    stage_pid = shell_pid = None
    try:
        shell_pid = int(spawner.stdout.readline())
        os.kill(spawner.pid, signal.SIGKILL)  # dvc dies: the shell is adopted
        spawner.wait(timeout=30)
        os.write(write, b"go\n")  # only now does the stage's interpreter start
        stage_pid = int(spawner.stdout.readline())
        wait_for(lambda: process_gone(stage_pid), 30, "the stage to exit, its dvc long dead")
        wait_for(lambda: process_gone(shell_pid), 30, "the shell to exit after its stage")
    finally:
        os.close(write)
        for pid in (stage_pid, shell_pid):
            if pid is not None and not process_gone(pid):
                os.kill(pid, signal.SIGKILL)
        spawner.stdout.close()


def test_a_signal_inside_a_critical_section_waits_for_its_end(monkeypatch) -> None:
    """A signal during a write to the store is raised when the write is done (an
    exception inside a database transaction would leave the store unusable)."""
    from pipeline import lifecycle

    monkeypatch.setattr(lifecycle, "_OWNER", None)
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    steps = []
    try:
        # as in an interactive shell: SIGINT not inherited ignored (see _default_sigint)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        lifecycle.install_signal_handlers()
        with pytest.raises(Terminated):
            with lifecycle.critical():
                os.kill(os.getpid(), signal.SIGTERM)
                steps.append("write done")  # not interrupted
        assert steps == ["write done"]
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)  # outside: raised at once
            steps.append("never")
        assert steps == ["write done"]
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_forked_child_dies_of_a_signal_its_parent_would_clean_up_after(
    monkeypatch, signum: int
) -> None:
    """A forked child that still has the stage's handlers (a pool worker in
    multiprocessing's bootstrap, before its initializer resets them) dies of SIGTERM or
    SIGINT as if it had never inherited them: no :class:`Terminated` raised in it, no
    traceback, the stage's cleanup left to the stage."""
    from pipeline import lifecycle

    monkeypatch.setattr(lifecycle, "_OWNER", None)
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        lifecycle.install_signal_handlers()
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: the inherited handlers, nothing reset
            code = 0
            try:
                os.write(ready_w, b"1")
                import time

                time.sleep(60)
            except BaseException:  # what the inherited handler raised: the failure
                code = 3
            os._exit(code)
        os.close(ready_w)
        assert os.read(ready_r, 1) == b"1"
        os.close(ready_r)
        os.kill(pid, signum)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status), f"the child exited with {os.waitstatus_to_exitcode(status)}"
        assert os.WTERMSIG(status) == signum
        with pytest.raises(Terminated):  # the process that installed them still raises
            os.kill(os.getpid(), signal.SIGTERM)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def _tune_long_grids(
    iris, tmp_path: Path, change: Callable[[dict], None]
) -> tuple[subprocess.CompletedProcess[str], float, Path]:
    """``pipeline.stage tune smoke-birkhoff`` in a stage project whose experiment has two
    runs of 20,000 lambdas on two workers (minutes of fits) and the params ``change`` makes:
    the stage's result, its seconds and the project root."""
    import time

    import yaml

    (tmp_path / "project").mkdir()
    root = _stage_project(tmp_path / "project", iris)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["experiments"]["smoke-birkhoff"]["runs"]["reals-birkhoff"] = [
        "set=reals",
        "decoder=birkhoff",
    ]
    params["n_jobs"] = 2
    params["lambdas"]["num"] = 20000
    change(params)
    (root / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.stage", "tune", "smoke-birkhoff"],
        cwd=root,
        env=env(PROJLOSS_ROOT=str(root)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done, time.monotonic() - start, root


@pytest.mark.slow
def test_a_stage_with_an_unusable_store_stops_its_workers(iris, tmp_path: Path) -> None:
    """The tune stage starts its workers before it opens the tracking store: an unusable
    store is one error line at once, the workers stopped with their tasks (a long grid:
    minutes of fits nobody would use), nothing written."""
    from ._run_fixtures import free_port

    uri = f"http://127.0.0.1:{free_port()}"
    done, seconds, root = _tune_long_grids(
        iris, tmp_path, lambda p: p["tracking"].update(uri=uri, probe_timeout=1)
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{uri} is unreachable" in one_error_line(done.stdout + done.stderr)
    assert seconds < 90, f"the stage waited for its workers ({seconds:.0f} s)"
    assert not (root / "data" / "tuning" / "smoke-birkhoff.json").exists()


@pytest.mark.slow
def test_a_run_that_does_not_compose_stops_the_fits_already_started(iris, tmp_path: Path) -> None:
    """The tune stage gives each run to its workers as soon as it is composed: a later run
    that does not compose is one error line at once, naming the experiment and the run,
    the workers stopped with the fits of the runs before it (long grids), nothing
    written."""
    done, seconds, root = _tune_long_grids(
        iris,
        tmp_path,
        lambda p: p["experiments"]["smoke-birkhoff"]["runs"].update(typo=["set=no_such_set"]),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    line = one_error_line(done.stdout + done.stderr)
    assert "'smoke-birkhoff'" in line and "'typo'" in line and "cannot compose" in line
    assert seconds < 90, f"the stage waited for its workers ({seconds:.0f} s)"
    assert not (root / "data" / "tuning" / "smoke-birkhoff.json").exists()
