"""The command line as a user meets it: ``--help``, the console scripts and Hydra's tab
completion, a sweep's output (one announcement per job, the summary line with the MLflow
run id, the convergence warning with lambda and remedy), Hydra's own errors on one line.

Three subprocesses (the console script's help, bash completion, a 2-job sweep); the rest
in process.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from pipeline import fetch, preprocess, train
from pipeline.report import __main__ as report_main

from .conftest import ROOT, data_overrides

BIN = Path(sys.executable).parent
SCRIPTS = {
    "projloss-train": train.main,
    "projloss-fetch": fetch.main,
    "projloss-preprocess": preprocess.main,
    "projloss-report": report_main.main,
}
GROUPS = ("data", "dataset", "decoder", "experiments", "geometry", "model", "set", "task")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "HYDRA_"))}
    env.pop("PROJLOSS_DEBUG", None)
    env.update(
        PATH=str(BIN) + os.pathsep + env.get("PATH", ""),
        PYTHONPATH=str(ROOT / "src"),
        MLFLOW_DISABLE_TELEMETRY="true",
    )
    return env


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env={**_env(), **env}, capture_output=True, text=True, timeout=300
    )


def test_console_scripts_are_the_entry_points() -> None:
    """Each console script is installed in the environment's bin and calls the same main
    as ``python -m pipeline.<stage>``."""
    scripts = {ep.name: ep for ep in entry_points(group="console_scripts")}
    for name, main in SCRIPTS.items():
        assert shutil.which(name, path=str(BIN)), f"{name} not in {BIN}: pip install -e ."
        assert scripts[name].load() is main, name


def test_help_is_short_and_names_every_group(tmp_path: Path) -> None:
    done = _run([str(BIN / "projloss-train"), "--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) < 60, done.stdout
    for group in GROUPS:
        assert any(line.startswith(f"{group}: ") for line in lines), group
    assert "set: birkhoff, cube, knapsack" in done.stdout
    assert "--multirun" in done.stdout and "mlflow ui" in done.stdout
    assert 'eval "$(projloss-train -sc install=bash)"' in done.stdout
    assert "smoke-cube" not in done.stdout  # not the experiment list


@pytest.mark.parametrize("stage", ["fetch", "preprocess"])
def test_data_stages_have_their_own_help(stage: str, tmp_path: Path) -> None:
    """``projloss-fetch --help`` / ``projloss-preprocess --help``: the stage's settings and
    examples (conf/hydra/help/<stage>.yaml), not Hydra's generic page with every dataset
    and the resolved config."""
    done = _run([sys.executable, "-m", f"pipeline.{stage}", "--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"projloss-{stage}: ") and len(lines) < 40, done.stdout
    assert f"Usage: projloss-{stage} [datasets=...]" in done.stdout
    assert "datasets=mirrored" in done.stdout and "== Examples ==" in done.stdout
    assert f'eval "$(projloss-{stage} -sc install=bash)"' in done.stdout
    assert "powered by Hydra" not in done.stdout and "authorship" not in done.stdout


def test_train_config_is_the_run_config() -> None:
    """``projloss-train --cfg job`` shows one run's config: conf/config.yaml (params.yaml,
    DVC) without the experiment list, which a run never reads."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        run = OmegaConf.to_container(compose("train", overrides=["set=cube"]))
        full = OmegaConf.to_container(compose("config", overrides=["set=cube"]))
    assert "experiments" not in run and "experiments" in full
    full.pop("experiments")
    # the report directory follows the experiment list (conf/report_dir/): not a run's
    assert run.pop("report") == {"dir": "reports/other"}
    full.pop("report")
    assert run == full
    assert len(OmegaConf.to_yaml(run).splitlines()) < 100


def test_bash_completion_of_the_console_script(tmp_path: Path) -> None:
    """What bash does on <TAB> after ``projloss-train set=``: the install line Hydra prints
    is evaluated (no ImportError), then its completion function asks the script."""
    if shutil.which("bash") is None:  # pragma: no cover
        pytest.fail("bash is needed by this test")
    script = (
        'eval "$(projloss-train -sc install=bash)"\n'
        'COMP_LINE="projloss-train set="; COMP_POINT=${#COMP_LINE}; COMP_CWORD=1\n'
        "hydra_bash_completion\n"
        'echo "${COMPREPLY[*]}"\n'
    )
    done = _run(["bash", "-c", script], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Error" not in done.stderr, done.stderr
    options = set(done.stdout.split())
    expected = {f"set={p.stem}" for p in (ROOT / "conf/set").glob("*.yaml")}
    assert options == expected, done.stdout


@pytest.mark.slow
def test_sweep_output(prepared, tmp_path: Path, store_uri: str) -> None:
    """A 2-job sweep on iris: each job announced once ([job i/2], not Hydra's own
    ``#i : ...`` too), each summary line ends with its MLflow run id, and the
    convergence warning (model.max_iter=1) names the lambda and the remedy."""
    from mlflow.tracking import MlflowClient

    uri = store_uri
    args = [
        str(BIN / "projloss-train"),
        "dataset=iris",
        "lambdas.num=1,2",
        "model.max_iter=1",
        "progress=false",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
        f"tracking.uri={uri}",
        "tracking.log_models=false",
        "tracking.figures=false",
        *data_overrides(prepared),
        "--multirun",
    ]
    done = _run(args, tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    for i in (1, 2):
        assert len(re.findall(rf"\[job {i}/2\]", out)) == 1, out
    assert not re.search(r"#\d+ : ", out), out  # Hydra's launcher line
    summaries = [line for line in out.splitlines() if line.startswith("iris | label_ranking")]
    assert len(summaries) == 2, out
    client = MlflowClient(uri)
    for line in summaries:
        match = re.search(r" \| run ([0-9a-f]{32})$", line)
        assert match, line
        assert client.get_run(match.group(1)).data.tags["dataset"] == "iris"
    warning = (
        "warning: iris birkhoff->birkhoff: tune: 1 of 1 fits stopped before convergence "
        "(lambda=0.0001; model.max_iter=1); raise it, e.g. model.max_iter=2, or start the "
        "grid higher (lambdas.low)"
    )
    assert warning in out, out
    assert re.search(r"tune: \d of 2 fits stopped before convergence \(lambda=0\.0001", out)
    assert "refit: 1 of 1 fits stopped before convergence (lambda=0.0001;" in out, out
    assert "Traceback" not in out


def test_run_link() -> None:
    """The summary line's tail: the run id, and the run's page on a tracking server."""
    from pipeline.runs.store import run_url
    from pipeline.runs.tracking import Tracker

    assert Tracker().run_link("label_ranking", None) == ""

    class Served(Tracker):
        enabled, uri = True, "http://127.0.0.1:5000"

        def experiment_id(self, task: str) -> str:
            return "7"

    link = Served().run_link("label_ranking", "ab12")
    assert link == "run ab12 http://127.0.0.1:5000/#/experiments/7/runs/ab12"
    assert run_url("file:///tmp/mlruns", "7", "ab12") is None


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (
            "set=nope",
            "error: In 'config': Could not find 'set/nope' (command line); valid options of "
            "'set': birkhoff, cube, knapsack, nonneg, order_simplex, permutahedron, reals, "
            "row_simplex, simplex, unit_cube",
        ),
        (
            "nosuchkey=1",
            "error: Could not override 'nosuchkey': Key 'nosuchkey' is not in struct "
            "(command line); To append to your config use +nosuchkey=1",
        ),
        ("set=[", "error: no viable alternative at input '[' (command line: set=[); See "),
    ],
)
def test_hydra_errors_are_one_line(
    override: str, expected: str, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Hydra's own errors (raised before any stage runs) become one ``error:`` line."""
    from hydra.core.global_hydra import GlobalHydra

    for key in ("HYDRA_FULL_ERROR", "PROJLOSS_DEBUG"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(sys, "argv", ["projloss-train", override])
    try:
        with pytest.raises(SystemExit) as exc:
            train.main()
    finally:
        GlobalHydra.instance().clear()
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(expected), err
    assert "HYDRA_FULL_ERROR" not in os.environ


def test_exclusive_hydra_flags_are_one_line(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """``--multirun --cfg job`` (Hydra refuses the pair with a ValueError): one line,
    exit 2 (a usage error), not a traceback."""
    from hydra.core.global_hydra import GlobalHydra

    for key in ("HYDRA_FULL_ERROR", "PROJLOSS_DEBUG"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(sys, "argv", ["projloss-train", "set=cube,birkhoff", "-m", "--cfg", "job"])
    try:
        with pytest.raises(SystemExit) as exc:
            train.main()
    finally:
        GlobalHydra.instance().clear()
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: Only one of --run, --multirun"), err
    assert "without --multirun" in err


def test_a_stage_bug_keeps_its_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """An OmegaConf error raised inside a stage is a bug, not a command-line error: it
    propagates (with its traceback) instead of becoming the one error line."""
    from omegaconf import OmegaConf
    from omegaconf.errors import ConfigAttributeError

    from pipeline._hydra import _stage_env, entry

    for key in ("HYDRA_FULL_ERROR", "PROJLOSS_DEBUG"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(sys, "argv", ["projloss-train"])

    def buggy_stage() -> None:
        with _stage_env():
            assert "HYDRA_FULL_ERROR" not in os.environ  # the stage's debug switch is off
            _ = OmegaConf.create({"a": 1}, flags={"struct": True}).b

    with pytest.raises(ConfigAttributeError):
        entry(buggy_stage)
    assert "HYDRA_FULL_ERROR" not in os.environ


def test_preprocess_logs_one_line_per_dataset(tmp_path: Path, mirror: Path, caplog) -> None:
    """Every orreview split of an ordinal dataset is prepared with one line for the
    dataset, not one per split (the DVC preprocess stage prepares all 30)."""
    import logging

    from pipeline.data import fetch as fetch_stage
    from pipeline.data import prepare as preprocess_stage

    from .conftest import cfg_for, make_settings

    settings = make_settings(tmp_path, mirror, ordinal_split="all")
    fetch_stage.run(cfg_for(settings, datasets=["contact-lenses"]))
    with caplog.at_level(logging.INFO, logger="pipeline"):
        dirs = preprocess_stage.run(cfg_for(settings, datasets=["contact-lenses"], report=False))
    assert len(dirs) == 30
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    mentions = [line for line in lines if "contact-lenses" in line]
    assert len(mentions) == 1 and "30 splits ready" in mentions[0], lines


def test_the_entry_points_full_error_is_not_a_debug_switch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The HYDRA_FULL_ERROR that the entry point sets to catch Hydra's errors does not
    turn the one error line of the sweep callbacks into a traceback; the user's does."""
    from pipeline.errors import ENTRY_ENV, debug

    monkeypatch.delenv("PROJLOSS_DEBUG", raising=False)
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    assert debug()
    monkeypatch.setenv(ENTRY_ENV, "1")
    assert not debug()
