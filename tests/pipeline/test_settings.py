"""Data settings and the project root: paths never depend on the working directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.data.settings import PROTOCOL_DEFAULTS, data_settings, load_default_data_config
from pipeline.paths import ROOT_ENV, project_root, resolve

from .conftest import ROOT


def test_defaults_match_the_protocol() -> None:
    s = data_settings()
    assert {k: getattr(s, k) for k in PROTOCOL_DEFAULTS} == PROTOCOL_DEFAULTS
    assert s.raw_dir == ROOT / "data" / "raw"
    assert s.prepared_dir == ROOT / "data" / "prepared"
    assert s.dataset_dirs == (ROOT / "conf" / "dataset",)


def test_paths_resolved_against_root_not_cwd(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert project_root() == ROOT
    s = data_settings({"raw_dir": "elsewhere/raw", "mirror": "../m"})
    assert s.raw_dir == ROOT / "elsewhere" / "raw"
    assert s.mirror == (ROOT.parent / "m")
    assert resolve("/abs/x") == Path("/abs/x")


def test_root_from_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    assert project_root() == tmp_path.resolve()
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "missing"))
    with pytest.raises(ValueError, match=ROOT_ENV):
        project_root()


@pytest.mark.parametrize(
    "command",
    ["pipeline.train", "pipeline.stage tune lr", "pipeline.report", "pipeline.params",
     "pipeline.report.repeated report"],
)  # fmt: skip
def test_bad_root_is_one_line(command: str, tmp_path: Path) -> None:
    """A ``PROJLOSS_ROOT`` that is not a directory: ``error: ...; <remedy>``, exit 1, no
    traceback (the entry points compute Hydra's config path when imported)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROJLOSS_", "HYDRA_"))}
    env.update(PYTHONPATH=str(ROOT / "src"), **{ROOT_ENV: str(tmp_path / "missing")})
    done = subprocess.run(
        [sys.executable, "-m", *command.split()], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    out = (done.stdout + done.stderr).strip()
    assert done.returncode == 1, out
    assert out.splitlines() == [
        f"error: {ROOT_ENV}='{tmp_path / 'missing'}' is not a directory (environment); set it "
        "to the project's checkout (the directory with pyproject.toml and conf/) or unset it"
    ], out


def test_mirror_from_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PROJLOSS_MIRROR", str(tmp_path))
    assert load_default_data_config()["mirror"] == str(tmp_path)
    assert data_settings().mirror == tmp_path
    assert data_settings({"mirror": None}).mirror is None


def test_stage_config_or_data_node() -> None:
    node = {"seed": 3}
    assert data_settings({"data": node, "datasets": "iris"}).seed == 3
    assert data_settings(node).seed == 3
    assert data_settings(node, seed=4).seed == 4


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"seed": 1.5}, "seed"),
        ({"seed": True}, "seed"),
        ({"test_size": 1.0}, "test_size"),
        ({"val_size": 0}, "val_size"),
        ({"ordinal_split": -1}, "ordinal_split"),
        ({"ordinal_split": "some"}, "ordinal_split"),
        ({"drop_empty": "yes"}, "drop_empty"),
        ({"timeout": 0}, "timeout"),
        ({"raw_dir": None}, "raw_dir"),
        ({"colour": 1}, "unknown data setting"),
    ],
)
def test_invalid_settings(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        data_settings(changes)


def test_ordinal_split_forms() -> None:
    assert data_settings({"ordinal_split": "all"}).ordinal_split == "all"
    assert data_settings({"ordinal_split": [0, 2]}).ordinal_split == (0, 2)
    assert data_settings().replace(seed=5).seed == 5
