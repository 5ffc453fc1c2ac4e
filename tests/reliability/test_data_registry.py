"""A user's own datasets and the registry (issue 11, items 14 and 16).

- The default ``--multirun`` sweep and the "valid datasets" errors are derived from the
  registry (the ``task:`` of each YAML), so a user's dataset is in them.
- A user's YAML in ``conf/dataset/`` never makes the project's tests fail, nor makes
  ``params.yaml`` stale: checked on a copy of the project root (``PROJLOSS_ROOT``) with
  a user YAML added, never by touching the repository's ``conf/``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pipeline.config.composition import CompositionError, validate
from pipeline.data import registry
from pipeline.errors import RegistryError
from pipeline.paths import project_root

from ._data_fixtures import write_dataset

ROOT = project_root()
PAPER = {
    "label_ranking": ["authorship", "glass", "iris", "vehicle", "vowel", "wine"],
    "multilabel": ["birds", "cal500", "emotions", "scene", "tmc2007_500", "yeast"],
}


def compose(overrides: list[str], root: Path = ROOT) -> object:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(root / "conf"), version_base="1.3"):
        return hydra_compose("config", overrides=overrides, return_hydra_config=True)


def paper_only(names: list[str]) -> list[str]:
    from pipeline.data.registry import list_specs

    specs = list_specs([ROOT / "conf" / "dataset"])
    return [n for n in names if n in specs and specs[n].mirrored]


def test_task_datasets_of_the_paper() -> None:
    dirs = [ROOT / "conf" / "dataset"]
    for task, names in PAPER.items():
        assert paper_only(registry.task_datasets(task, dirs)) == names
    ordinal = paper_only(registry.task_datasets("ordinal", dirs))
    assert len(ordinal) == 16 and ordinal == paper_only(registry.task_datasets("multiclass", dirs))
    assert "mediamill" not in registry.task_datasets("multilabel", dirs)  # upstream only
    assert registry.task_datasets("label_ranking", dirs, "sweep").startswith("authorship,glass,")
    with pytest.raises(RegistryError, match="unknown task 'ranking'; valid tasks: "):
        registry.task_datasets("ranking", dirs)


def test_user_dataset_is_in_the_default_sweep(tmp_path: Path) -> None:
    write_dataset(tmp_path, "mine", "label_ranking")
    dirs = f"data.dataset_dirs=[{tmp_path / 'registry'},{ROOT / 'conf' / 'dataset'}]"
    cfg = compose(["task=label_ranking", dirs])
    sweep = OmegaConf.to_container(cfg.hydra.sweeper.params, resolve=True)["dataset"]
    assert "mine" in sweep.split(",")
    assert paper_only(sweep.split(",")) == PAPER["label_ranking"]
    plain = compose(["task=multilabel"])  # no user directory: the paper's list only
    sweep = OmegaConf.to_container(plain.hydra.sweeper.params, resolve=True)["dataset"]
    assert paper_only(sweep.split(",")) == PAPER["multilabel"]


def test_valid_datasets_error_lists_the_user_dataset(tmp_path: Path) -> None:
    write_dataset(tmp_path, "mine", "libsvm")  # a multilabel dataset
    dirs = f"data.dataset_dirs=[{tmp_path / 'registry'},{ROOT / 'conf' / 'dataset'}]"
    cfg = OmegaConf.to_container(compose(["task=multilabel", "set=knapsack", dirs]))
    cfg.pop("hydra")
    cfg["dataset"] = OmegaConf.to_container(compose([])["dataset"])  # iris: label ranking
    with pytest.raises(CompositionError) as info:
        validate(cfg)
    message = str(info.value)
    assert "which the multilabel task cannot use" in message
    assert "valid datasets for multilabel are birds, cal500" in message and "mine" in message


@pytest.fixture(scope="module")
def user_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project root (conf, params.yaml, README) with a user's dataset YAML
    and its file added to conf/dataset, as the README's "Adding a dataset" says."""
    root = tmp_path_factory.mktemp("user_root")
    for name in ("pyproject.toml", "params.yaml", "README.md"):
        shutil.copy2(ROOT / name, root / name)
    shutil.copytree(ROOT / "conf", root / "conf")
    (root / "reports").mkdir()
    shutil.copy2(ROOT / "reports" / "dataset_stats.csv", root / "reports")
    write_dataset(root / "user", "myrank", "label_ranking", registry=root / "conf" / "dataset")
    write_dataset(root / "user", "mylabels", "libsvm", registry=root / "conf" / "dataset")
    return root


def test_user_yaml_keeps_params_yaml_current(
    user_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """params.yaml (DVC's params) does not depend on the user's datasets."""
    from pipeline.params import compose_params

    monkeypatch.setenv("PROJLOSS_ROOT", str(user_root))
    assert compose_params() == (ROOT / "params.yaml").read_text(encoding="utf-8")
    cfg = compose(["task=label_ranking"], root=user_root)
    sweep = OmegaConf.to_container(cfg.hydra.sweeper.params, resolve=True)["dataset"]
    assert "myrank" in sweep.split(",") and "mylabels" not in sweep.split(",")


def test_user_yaml_does_not_break_the_project_tests(user_root: Path) -> None:
    """The registry, config and params tests pass on a root with a user's datasets (they
    failed before: 6/28/30 datasets hard-coded, every YAML required in the MANIFEST)."""
    mirror = os.environ.get("PROJLOSS_MIRROR") or str(ROOT.parent / "shared" / "datasets")
    tests = ROOT / "tests" / "pipeline"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            str(tests / "test_registry.py"),
            str(tests / "test_params.py"),
            f"{tests / 'test_config.py'}::test_task_sweep_is_derived_from_the_registry",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PROJLOSS_ROOT": str(user_root), "PROJLOSS_MIRROR": mirror},
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert " passed" in out.stdout and "failed" not in out.stdout
