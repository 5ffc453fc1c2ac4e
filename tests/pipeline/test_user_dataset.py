"""Adding a dataset with a YAML file only (``docs/guide/datasets.md``, "Adding a dataset")."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import yaml

from docs_pages import page, section
from pipeline.data import fetch
from pipeline.data import prepare as preprocess
from pipeline.data.api import load_prepared
from pipeline.fileio import sha256_file

from .conftest import ROOT, cfg_for, make_settings
from .stages.test_fetch import offline


def readme_example() -> str:
    """The YAML example of the guide's "Adding a dataset" section."""
    text = section(page("datasets.md"), "## Adding a dataset")
    return re.search(r"```yaml\n(.*?)```", text, re.S).group(1)


def write_multilabel(path: Path, n: int, n_labels: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 4)), 6)
    Y = rng.random((n, n_labels)) < 0.4
    with open(path, "w") as f:
        for x, y in zip(X, Y, strict=True):
            labels = ",".join(str(j) for j in np.flatnonzero(y))
            feats = " ".join(f"{j + 1}:{v}" for j, v in enumerate(x) if v != 0)
            f.write(f"{labels} {feats}\n")
    return Y.astype(int)


def test_readme_example(tmp_path: Path) -> None:
    data = tmp_path / "home" / "mydata.svm"
    data.parent.mkdir()
    Y = write_multilabel(data, 40, 5, seed=0)
    registry = tmp_path / "conf_dataset"
    registry.mkdir()
    text = readme_example().replace("/home/me/data/mydata.svm", str(data))
    (registry / "mydata.yaml").write_text(text)
    settings = make_settings(
        tmp_path, None, dataset_dirs=[str(registry), str(ROOT / "conf/dataset")]
    )
    cfg = cfg_for(settings, datasets="mydata")
    (report,) = fetch.run(cfg, opener=offline)
    assert report.actions == {"mydata.svm": "path"}
    assert report.trusted == {"mydata.svm": sha256_file(data)}  # no sha256 given: recorded
    preprocess.run(cfg)
    d = load_prepared("mydata", settings.as_dict(), prepare_missing=False)
    assert d.task == "multilabel" and d.stats["n_classes"] == 5
    assert [len(p[1]) for p in (d.train, d.val, d.test)] == [24, 8, 8]  # 80/20 then 25%
    idx = np.concatenate([d.index["train"], d.index["val"], d.index["test"]])
    np.testing.assert_array_equal(np.concatenate([d.train[1], d.val[1], d.test[1]]), Y[idx])
    table = (settings.reports_dir / "dataset_stats.csv").read_text()
    assert "mydata,multilabel" in table


def test_label_ranking_by_url_with_own_split(tmp_path: Path) -> None:
    """A user's label-ranking data with its own split, fetched from a file:// URL."""
    src = tmp_path / "upstream"
    src.mkdir()
    rng = np.random.default_rng(1)
    for part, n in (("train", 20), ("test", 8)):
        rows = ["A1,A2,ranking"]
        for _ in range(n):
            x = rng.normal(size=2)
            rows.append(f"{x[0]:.5f},{x[1]:.5f}," + ">".join(rng.permutation(list("abcd"))))
        (src / f"{part}.txt").write_text("\n".join(rows) + "\n")
    entry = {
        "name": "prefs",
        "task": "label_ranking",
        "format": "label_ranking",
        "parts": {"train": "train.txt", "test": "test.txt"},
        "files": [
            {
                "name": f"{p}.txt",
                "url": (src / f"{p}.txt").as_uri(),
                "sha256": sha256_file(src / f"{p}.txt"),
            }
            for p in ("train", "test")
        ],
    }
    registry = tmp_path / "reg"
    registry.mkdir()
    (registry / "prefs.yaml").write_text(yaml.safe_dump(entry))
    settings = make_settings(tmp_path, None, dataset_dirs=[str(registry)])
    d = load_prepared("prefs", settings.as_dict())  # fetch + preprocess on demand
    assert [len(p[1]) for p in (d.train, d.val, d.test)] == [15, 5, 8]
    assert d.test[1].shape == (8, 4)
    np.testing.assert_array_equal(np.sort(d.test[1], axis=1), np.tile(np.arange(4), (8, 1)))


def test_ordinal_with_indexed_splits(tmp_path: Path) -> None:
    src = tmp_path / "files"
    src.mkdir()
    rng = np.random.default_rng(2)
    X = rng.normal(size=(24, 3))
    y = np.arange(24) % 4 + 1
    files = []
    for i in range(2):
        perm = rng.permutation(24)
        for part, rows in (("train", perm[:18]), ("test", perm[18:])):
            name = f"{part}_ord.{i}"
            np.savetxt(src / name, np.column_stack([X[rows], y[rows]]), fmt="%.8g")
            files.append({"name": name, "path": str(src / name)})
    entry = {
        "name": "ord",
        "task": "ordinal",
        "format": "orreview",
        "parts": {"train": "train_ord.{split}", "test": "test_ord.{split}"},
        "n_splits": 2,
        "files": files,
    }
    registry = tmp_path / "reg"
    registry.mkdir()
    (registry / "ord.yaml").write_text(yaml.safe_dump(entry))
    settings = make_settings(tmp_path, None, dataset_dirs=[str(registry)])
    d0 = load_prepared("ord", settings.as_dict())
    d1 = load_prepared("ord", settings.as_dict(), split=1)
    assert d1.variant == "ord+split1" and d0.stats["n_classes"] == 4
    assert [len(p[1]) for p in (d0.train, d0.val, d0.test)] == [13, 5, 6]
    assert not np.array_equal(d0.test[0], d1.test[0])
