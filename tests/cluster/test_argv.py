"""Hydra flags anywhere on the command line (the README's spelling: overrides after
``--multirun``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pipeline.argv import normalize_argv
from pipeline.paths import project_root


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["p"], ["p"]),
        ([], []),
        (["p", "a=1", "--multirun", "b=2,3"], ["p", "--multirun", "a=1", "b=2,3"]),
        (["p", "x=1", "-m", "hydra/launcher=ray"], ["p", "-m", "x=1", "hydra/launcher=ray"]),
        (["p", "x=1", "--cfg", "job", "y=2"], ["p", "--cfg", "job", "x=1", "y=2"]),
        (["p", "x=1", "-cn", "fetch", "+z=3", "~w"], ["p", "-cn", "fetch", "x=1", "+z=3", "~w"]),
        (
            ["p", "x=1", "--config-dir=/c", "n_jobs=-1"],
            ["p", "--config-dir=/c", "x=1", "n_jobs=-1"],
        ),
        (["p", "x=1", "--info", "plugins"], ["p", "--info", "plugins", "x=1"]),
        (["p", "--info", "x=1"], ["p", "--info", "x=1"]),
        (["p", "x=1", "--", "-m"], ["p", "x=1", "--", "-m"]),
        # Hydra's tab completion: -sc takes a value (install=bash, query=bash, ...)
        (["p", "x=1", "-sc", "install=bash"], ["p", "-sc", "install=bash", "x=1"]),
        (["p", "--shell-completion", "query=bash"], ["p", "--shell-completion", "query=bash"]),
    ],
)
def test_normalize_argv(argv: list[str], expected: list[str]) -> None:
    assert normalize_argv(argv) == expected


@pytest.mark.parametrize("module", ["pipeline.train", "pipeline.fetch", "pipeline.preprocess"])
def test_flags_after_overrides_on_the_command_line(module: str) -> None:
    """``python -m pipeline.<stage> key=value --cfg job`` prints the job config (before the
    fix: ``unrecognized arguments``, exit 2)."""
    env = {**os.environ, "PYTHONPATH": str(project_root() / "src")}
    proc = subprocess.run(
        [sys.executable, "-m", module, "data.seed=7", "--cfg", "job", "+extra_key=3"],
        cwd=project_root(),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "unrecognized arguments" not in proc.stderr
    assert "extra_key: 3" in proc.stdout and "seed: 7" in proc.stdout
