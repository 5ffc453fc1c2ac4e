"""The Hydra entry points: composition, command line, no stray outputs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from pipeline.data import fetch
from pipeline.data import prepare as preprocess

from .conftest import ROOT
from .stages.test_fetch import offline


def _compose(name: str, overrides: list[str]) -> DictConfig:
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(name, overrides=overrides)


def test_compose_defaults() -> None:
    for name in ("fetch", "preprocess"):
        cfg = _compose(name, [])
        assert cfg.datasets == "mirrored"
        assert cfg.data.raw_dir == "data/raw" and cfg.data.seed == 0
        assert cfg.data.test_size == 0.2 and cfg.data.val_size == 0.25
        assert cfg.data.ordinal_split == 0 and cfg.data.drop_empty is False
    assert _compose("preprocess", []).report is True


def test_composed_config_runs_the_stages(tmp_path: Path, mirror: Path) -> None:
    overrides = [
        "datasets=[iris,toy]",
        f"data.mirror={mirror}",
        f"data.raw_dir={tmp_path / 'raw'}",
        f"data.prepared_dir={tmp_path / 'prepared'}",
        f"data.reports_dir={tmp_path / 'reports'}",
        "data.progress=false",
        "data.ordinal_split=[0,5]",
    ]
    reports = fetch.run(_compose("fetch", overrides), opener=offline)
    assert [r.dataset for r in reports] == ["iris", "toy"]
    dirs = preprocess.run(_compose("preprocess", [*overrides, "report=false"]))
    assert [p.name for p in dirs] == ["iris", "toy", "toy+split5"]
    assert not (tmp_path / "reports").exists()


def _cli(module: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HYDRA_FULL_ERROR": "0"}
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_command_line(tmp_path: Path, mirror: Path) -> None:
    """Both stages from a foreign working directory: outputs only where configured, no
    Hydra outputs/ directory, no .hydra/ dump, no log file; errors are one clear line."""
    work = tmp_path / "cwd"
    work.mkdir()
    before = sorted(p.name for p in ROOT.iterdir())
    common = [
        "datasets=glass",
        f"data.mirror={mirror}",
        f"data.raw_dir={tmp_path / 'raw'}",
        f"data.prepared_dir={tmp_path / 'prepared'}",
        f"data.reports_dir={tmp_path / 'reports'}",
        "data.progress=false",
    ]
    done = _cli("pipeline.fetch", common, work)
    assert done.returncode == 0, done.stderr
    assert "fetch glass" in done.stdout
    done = _cli("pipeline.preprocess", common, work)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "prepared" / "glass" / "stats.json").is_file()
    assert (tmp_path / "reports" / "dataset_stats.md").is_file()
    assert list(work.iterdir()) == []
    assert sorted(p.name for p in ROOT.iterdir()) == before
    bad = _cli("pipeline.fetch", ["datasets=no_such_data", f"data.raw_dir={tmp_path / 'r2'}"], work)
    assert bad.returncode == 1
    out = bad.stdout + bad.stderr
    assert "unknown dataset 'no_such_data'" in out and "Traceback" not in out
    assert not (tmp_path / "r2").exists()
