"""The dataset registry: coverage of MANIFEST, validation, selectors, Hydra group.

A user's own YAML files in ``conf/dataset/`` must never make these tests fail: the tests
check the paper's datasets only (those the mirror's MANIFEST generates), and the selector
tests run on their own registry directory (the generated YAML files in a tmp dir).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hydra import compose, initialize_config_dir

from pipeline.data.registry import DatasetSpec, get_spec, list_specs, load_spec, select
from pipeline.errors import RegistryError, UnknownDatasetError
from pipeline.tools.gen_registry import build, dump

from .conftest import ROOT

DIRS = [ROOT / "conf" / "dataset"]


@pytest.fixture(scope="module")
def paper_dirs(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> list[Path]:
    """A registry directory holding exactly the paper's datasets (generated from MANIFEST)."""
    directory = tmp_path_factory.mktemp("paper_registry")
    for name, entry in build(mirror / "MANIFEST.tsv").items():
        (directory / f"{name}.yaml").write_text(dump(entry))
    return [directory]


def test_registry_contents(registry, paper_dirs: list[Path]) -> None:
    paper = {p.stem for p in paper_dirs[0].glob("*.yaml")}
    by_task: dict[str, list[str]] = {}
    for name, spec in registry.items():
        if name not in paper:
            continue  # a user's own dataset
        by_task.setdefault(spec.task, []).append(name)
    assert len(by_task["label_ranking"]) == 6
    assert len(by_task["ordinal"]) == 16
    assert sorted(by_task["multilabel"]) == sorted(
        ["birds", "cal500", "emotions", "mediamill", "scene", "tmc2007", "tmc2007_500", "yeast"]
    )
    for name in by_task["ordinal"]:
        spec = registry[name]
        assert spec.n_splits == 30 and len(spec.files) == 60
        assert spec.part_files(29) == {"train": f"train_{name}.29", "test": f"test_{name}.29"}
    assert not registry["mediamill"].mirrored and not registry["tmc2007"].mirrored
    assert registry["tmc2007"].options["n_features"] == 30438
    for name in ("mediamill", "tmc2007"):  # upstream only: sha256 unknown offline
        assert all(f.sha256 is None and f.urls for f in registry[name].files)
    for spec in registry.values():
        if spec.mirrored:
            assert all(f.sha256 and f.bytes for f in spec.files)


def test_registry_is_generated_from_manifest(mirror: Path) -> None:
    """The committed YAML files of the paper's datasets are exactly what the generator writes
    (other files are a user's own datasets)."""
    entries = build(mirror / "MANIFEST.tsv")
    assert set(entries) <= {p.stem for p in DIRS[0].glob("*.yaml")}
    for name, entry in entries.items():
        assert (DIRS[0] / f"{name}.yaml").read_text() == dump(entry), name


def test_select(paper_dirs: list[Path]) -> None:
    names = lambda sel: [s.name for s in select(sel, paper_dirs)]  # noqa: E731
    mirrored = names("mirrored")
    assert len(mirrored) == 28 and "mediamill" not in mirrored and "tmc2007" not in mirrored
    assert names(None) == mirrored
    assert len(names("all")) == 30
    assert len(names("multilabel")) == 8
    assert names(["iris", "birds", "iris"]) == ["iris", "birds"]
    assert names("birds, iris") == ["iris", "birds"]  # registry order
    assert names(["ordinal", "ERA"]) == names("ordinal")
    with pytest.raises(UnknownDatasetError, match="valid names: authorship"):
        names(["iris", "nope"])
    with pytest.raises(ValueError, match="empty"):
        names([])


def _base() -> dict[str, Any]:
    return {
        "name": "x",
        "task": "multilabel",
        "format": "libsvm",
        "parts": {"all": "x.svm"},
        "files": [{"name": "x.svm", "path": "x.svm"}],
    }


def _with(**changes: Any) -> dict[str, Any]:
    d = _base()
    for k, v in changes.items():
        if v is None:
            d.pop(k)
        else:
            d[k] = v
    return d


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (_with(task=None), "task must be one of"),
        (_with(task="ordinal"), "gives multilabel labels"),
        (_with(format="csv"), "format must be one of"),
        (_with(parts={"train": "x.svm"}), "'parts' must be"),
        (_with(parts={"all": "y.svm"}), "which 'files' does not list"),
        (_with(parts={"all": "x.{split}"}), "n_splits is not set"),
        (_with(n_splits=3), "no '{split}'"),
        (_with(files=[{"name": "x.svm"}]), "has no source"),
        (_with(files=[{"name": "x.svm", "path": "a", "sha256": "abc"}]), "64 hex"),
        (_with(files=[{"name": "../x.svm", "path": "a"}]), "plain file name"),
        (_with(files=[{"name": "x.svm", "path": "a", "size": 3}]), "unknown key"),
        (_with(colour="red"), "unknown key"),
        (_with(sparse="yes"), "'sparse'"),
        (_with(name="bad name!"), "invalid or missing dataset name"),
    ],
)
def test_invalid_entries(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(RegistryError, match=message):
        DatasetSpec.from_mapping(entry)


def test_name_must_match_file(tmp_path: Path) -> None:
    (tmp_path / "other.yaml").write_text(yaml.safe_dump(_base()))
    with pytest.raises(RegistryError, match="differs from its file name"):
        load_spec(tmp_path / "other.yaml")


def test_first_directory_wins(tmp_path: Path, paper_dirs: list[Path]) -> None:
    """Between two directories of the user's, the first one's file wins; a user's file
    named like a project dataset needs `override: true` and is then named user-<name>
    (issue 36, item 3: tests/reliability/test_data_registry.py)."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    (first / "mine.yaml").write_text(yaml.safe_dump(_with(name="mine")))
    (second / "mine.yaml").write_text(yaml.safe_dump(_with(name="mine", format="mulan_arff")))
    assert get_spec("mine", [first, second, *paper_dirs]).format == "libsvm"
    (first / "iris.yaml").write_text(yaml.safe_dump(_with(name="iris", override=True)))
    assert get_spec("iris", [first, *paper_dirs]).name == "user-iris"
    specs = list_specs([first, second, *paper_dirs])
    assert specs["user-iris"].format == "libsvm" and "iris" not in specs and len(specs) == 31


@pytest.mark.parametrize("name", ["birds", "ERA", "iris", "tmc2007"])
def test_hydra_dataset_group(name: str) -> None:
    """``dataset=<name>`` composes the same entry as the registry reads."""
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("preprocess", overrides=[f"+dataset={name}"])
    from_hydra = DatasetSpec.from_mapping(cfg.dataset)
    from_file = get_spec(name, DIRS)
    assert from_hydra == DatasetSpec(**{**from_file.__dict__, "source": None})
