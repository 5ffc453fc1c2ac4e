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
from typing import Any

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

    registry.register_resolver()  # hydra.sweeper.params: ${registry_datasets:...}

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


# ----------------------------------------------- issue 36: names, broken YAML, sweeps
def _user_iris(tmp: Path, override: bool) -> tuple[Path, Path]:
    """A user's ``iris.yaml`` (not the project's) first in the registry directories;
    returns (registry dir, data file)."""
    data = write_dataset(tmp, "iris", "label_ranking")
    yaml_file = tmp / "registry" / "iris.yaml"
    if override:
        yaml_file.write_text(yaml_file.read_text() + "override: true\n")
    return tmp / "registry", data


def _settings(tmp: Path, *dirs: Path) -> Any:
    from ._data_fixtures import settings_for

    settings = settings_for(tmp)
    return settings.replace(dataset_dirs=[str(d) for d in dirs])


def test_user_dataset_named_like_a_project_one_is_refused(tmp_path: Path) -> None:
    """Item 3: mydir/iris.yaml first would overwrite data/raw/iris (documented as
    byte-identical to upstream): refused, one line naming both files and the remedy."""
    from pipeline.data import fetch

    from ._data_fixtures import cfg_for, refuse_network

    registry_dir, _ = _user_iris(tmp_path, override=False)
    settings = _settings(tmp_path, registry_dir, ROOT / "conf" / "dataset")
    with pytest.raises(RegistryError) as info:
        fetch.run(cfg_for(settings, datasets="iris"), opener=refuse_network)
    message = str(info.value)
    assert "\n" not in message
    assert str(registry_dir / "iris.yaml") in message
    assert str(ROOT / "conf" / "dataset" / "iris.yaml") in message
    assert "add `override: true`" in message and "'user-iris'" in message
    assert not settings.raw_dir.exists() or not any(settings.raw_dir.iterdir())


def test_override_gives_the_user_dataset_its_own_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Item 3: with `override: true` it is selected as `iris` but its raw and prepared
    directories are user-iris (the project's iris untouched); one warning names both
    files."""
    import logging

    from pipeline.data import fetch
    from pipeline.data.api import load_prepared

    from ._data_fixtures import cfg_for, refuse_network

    registry_dir, _ = _user_iris(tmp_path, override=True)
    settings = _settings(tmp_path, registry_dir, ROOT / "conf" / "dataset")
    registry._WARNED.discard((registry_dir / "iris.yaml").resolve())
    with caplog.at_level(logging.WARNING, logger="pipeline"):
        (report,) = fetch.run(cfg_for(settings, datasets="iris"), opener=refuse_network)
        d = load_prepared("iris", settings.as_dict(), opener=refuse_network)
    assert report.dataset == "user-iris" and d.name == "user-iris"
    assert sorted(p.name for p in settings.raw_dir.iterdir()) == ["user-iris"]
    assert sorted(p.name for p in settings.prepared_dir.iterdir()) == ["user-iris"]
    warnings = [r.getMessage() for r in caplog.records if "override: true" in r.getMessage()]
    assert len(warnings) == 1
    assert str(registry_dir / "iris.yaml") in warnings[0]
    assert str(ROOT / "conf" / "dataset" / "iris.yaml") in warnings[0]
    assert load_prepared("user-iris", settings.as_dict(), prepare_missing=False).name == (
        "user-iris"
    )


def test_override_names_the_training_run(tmp_path: Path) -> None:
    """Item 3: `pipeline.train dataset=iris` composes the project's iris node but loads
    the user's: the composition (MLflow run name, tags, params) says user-iris."""
    from pipeline import train
    from pipeline.runs.mlflow_view import run_name

    registry_dir, _ = _user_iris(tmp_path, override=True)
    settings = _settings(tmp_path, registry_dir, ROOT / "conf" / "dataset")
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        composed = hydra_compose(
            "config", overrides=["lambdas.num=1", "tracking.enabled=false", "progress=false"]
        )
    cfg = OmegaConf.to_container(composed, resolve=True)
    cfg["data"] = {**cfg["data"], **settings.as_dict()}
    assert cfg["dataset"]["name"] == "iris"
    out = train.run(cfg)
    assert out["composition"].dataset == "user-iris"
    assert run_name(out["composition"]).startswith("user-iris")


def _broken_yaml(registry_dir: Path, name: str = "broken", task: str = "label_ranking") -> Path:
    """A user YAML with one key typo (`partz:`)."""
    registry_dir.mkdir(parents=True, exist_ok=True)
    path = registry_dir / f"{name}.yaml"
    path.write_text(
        f"name: {name}\ntask: {task}\nformat: {task}\npartz: {{all: x.txt}}\n"
        "files:\n  - {name: x.txt, path: /nonexistent/x.txt}\n"
    )
    return path


def test_broken_yaml_fails_only_the_selections_that_include_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Item 4: one key typo in one user YAML: the selections without it are fetched and
    prepared (one warning line), the ones with it fail for it alone, the others done."""
    import logging

    from pipeline.data import fetch
    from pipeline.data import prepare as preprocess

    from ._data_fixtures import cfg_for, refuse_network, settings_for

    write_dataset(tmp_path, "good", "label_ranking")
    write_dataset(tmp_path, "ord", "orreview")
    bad = _broken_yaml(tmp_path / "registry")
    settings = settings_for(tmp_path)
    with caplog.at_level(logging.WARNING, logger="pipeline"):
        fetch.run(cfg_for(settings, datasets="ord"), opener=refuse_network)
        preprocess.run(cfg_for(settings, datasets="ord"))
    skipped = [
        r.getMessage() for r in caplog.records if "(not selected: skipped)" in r.getMessage()
    ]
    assert len(skipped) == 2 and all(str(bad) in m and "'partz'" in m for m in skipped)
    for selector in ("broken", "label_ranking", "all", ["good", "broken"]):
        with pytest.raises(RegistryError, match=r"broken\.yaml: unknown key\(s\) \['partz'\]"):
            fetch.run(cfg_for(settings, datasets=selector), opener=refuse_network)
    assert (settings.raw_dir / "good" / "u.txt").is_file()
    with pytest.raises(RegistryError, match="partz"):
        preprocess.run(cfg_for(settings, datasets="label_ranking"))
    assert (settings.prepared_dir / "good" / "stats.json").is_file()


def test_broken_yaml_does_not_block_the_dvc_fetch_stage(tmp_path: Path) -> None:
    """Item 4: `dvc repro fetch` (`pipeline.stage fetch`: the fetch of datasets=mirrored)
    with a broken YAML that has no mirror copy: the mirrored datasets are fetched; a
    broken YAML whose files are all mirrored fails alone."""
    from pipeline.data import fetch

    from ._data_fixtures import settings_for

    mirror = tmp_path / "mirror"
    (mirror / "lr").mkdir(parents=True)
    data = write_dataset(tmp_path, "good", "label_ranking")
    (mirror / "lr" / "u.txt").write_bytes(data.read_bytes())
    good = tmp_path / "registry" / "good.yaml"
    good.write_text(good.read_text().replace(f"path: {data}", "mirror: lr/u.txt"))
    _broken_yaml(tmp_path / "registry")
    settings = settings_for(tmp_path, mirror=str(mirror))
    params = {"data": settings.as_dict(), "datasets": "mirrored"}
    fetch.run(params)
    assert (settings.raw_dir / "good" / "u.txt").is_file()
    (tmp_path / "registry" / "good.yaml").unlink()
    bad = _broken_yaml(tmp_path / "registry", "mbroken")
    bad.write_text(bad.read_text().replace("path: /nonexistent/x.txt", "mirror: lr/u.txt"))
    with pytest.raises(RegistryError, match="mbroken"):
        fetch.run(params)


def test_broken_yaml_at_the_command_line(tmp_path: Path) -> None:
    """Items 4 and 8: `pipeline.fetch datasets=<other>` succeeds; `pipeline.train
    --multirun` over the broken YAML's task is the registry's one line (no Hydra
    warning, no "interpolation", no "(command line)"), exit status 1."""
    from ._data_fixtures import run_module

    write_dataset(tmp_path, "good", "label_ranking")
    bad = _broken_yaml(tmp_path / "registry")
    data = [
        f"data.raw_dir={tmp_path / 'raw'}",
        f"data.prepared_dir={tmp_path / 'prepared'}",
        f"data.reports_dir={tmp_path / 'reports'}",
        f"data.dataset_dirs=[{tmp_path / 'registry'},{ROOT / 'conf' / 'dataset'}]",
        "data.progress=false",
    ]
    out = run_module("pipeline.fetch", "datasets=good", *data)
    assert out.returncode == 0, out.stderr
    sweep = run_module(
        "pipeline.train",
        "--multirun",
        "tracking.enabled=false",
        f"hydra.sweep.dir={tmp_path / 'multirun'}",
        *data,
    )
    assert sweep.returncode == 1
    lines = [ln for ln in sweep.stderr.splitlines() if ln.strip()]
    assert lines == [
        f"error: dataset 'broken' in {bad}: unknown key(s) ['partz']; valid: "
        f"{sorted(registry._TOP_KEYS)}"
    ], sweep.stderr


def test_multirun_over_other_datasets_ignores_a_broken_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 8: a sweep that names its datasets (or whose task the broken YAML is not
    of) does not read the default sweep's list: the broken YAML stops nothing."""
    from omegaconf import open_dict

    from pipeline.runs.callbacks import _sweeper_params

    for key in ("PROJLOSS_DEBUG", "HYDRA_FULL_ERROR"):
        monkeypatch.delenv(key, raising=False)
    _broken_yaml(tmp_path / "registry")
    dirs = f"data.dataset_dirs=[{tmp_path / 'registry'},{ROOT / 'conf' / 'dataset'}]"
    cfg = compose([dirs])
    with open_dict(cfg.hydra):
        cfg.hydra.overrides.task = ["dataset=iris,glass", dirs]
    assert "dataset" not in _sweeper_params(cfg.hydra)
    cfg = compose(["task=ordinal", "set=reals", dirs])
    assert "tae" in _sweeper_params(cfg.hydra)["dataset"].split(",")
    with pytest.raises(SystemExit) as info:  # the label-ranking sweep includes it
        _sweeper_params(compose([dirs]).hydra)
    assert info.value.code == 1
    assert capsys.readouterr().err.startswith("error: dataset 'broken' in ")
