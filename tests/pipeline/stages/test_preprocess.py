"""Preprocess stage: prepared files, statistics, re-runs, variants, the table."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from pipeline.data import prepare as preprocess
from pipeline.data.protocol import stacked
from pipeline.data.storage import load_scaler, load_split, load_stats
from pipeline.errors import MissingRawDataError

from ..conftest import cfg_for, make_settings


@pytest.fixture
def settings(raw_all, tmp_path: Path):
    """Raw files of the session, prepared files and reports in this test's tmp dir."""
    return raw_all.replace(
        prepared_dir=str(tmp_path / "prepared"), reports_dir=str(tmp_path / "reports")
    )


def _splits(directory: Path) -> dict[str, tuple]:
    return {s: load_split(directory / f"{s}.npz") for s in ("train", "val", "test")}


@pytest.mark.parametrize("name", ["iris", "ERA", "birds", "tmc2007_500"])
def test_prepared_files(settings, load, raw_cache, name: str) -> None:
    (directory,) = preprocess.run(cfg_for(settings, datasets=name, report=False), cache=raw_cache)
    assert directory == settings.prepared_dir / name
    raw = load(name)
    X, y = stacked(raw)
    out = _splits(directory)
    stats = load_stats(directory)
    scaler = load_scaler(directory / "scaler.npz")
    ids = {s: v[2] for s, v in out.items()}
    assert not set(ids["test"]) & (set(ids["train"]) | set(ids["val"]))
    for s, (Xs, ys, _) in out.items():
        assert stats["n_samples"][s] == len(ys) == Xs.shape[0]
        assert Xs.shape[1] == stats["n_features"] == X.shape[1]
        assert ys.dtype == np.int64
        np.testing.assert_array_equal(ys, y[ids[s]])
        # the stored rows are the raw rows standardized with the stored scaler
        Xr = X[ids[s]]
        if sp.issparse(Xs):  # not centered: X = Xs * scale
            assert not scaler["mean"].any()
            assert abs(sp.csr_matrix(Xs.multiply(scaler["scale"])) - Xr).max() < 1e-9
        else:
            np.testing.assert_allclose(Xs * scaler["scale"] + scaler["mean"], Xr, atol=1e-9)
    assert sp.issparse(out["train"][0]) == stats["sparse"] == sp.issparse(X)
    assert stats["scaler"]["fitted_on"] == "train+val"
    assert stats["scaler"]["n_samples_seen"] == len(ids["train"]) + len(ids["val"])
    assert stats["n_classes"] == raw.n_classes
    assert set(stats["raw_files"]) >= set(raw.meta["files"].values())
    if raw.task == "multilabel":
        Ytv = y[np.concatenate([ids["train"], ids["val"]])]
        sizes = Ytv.sum(axis=1)
        assert stats["knapsack"]["l"] == 0
        assert stats["knapsack"]["u"] == math.ceil(sizes.mean() + sizes.std())
        card = stats["labels"]["cardinality"]
        assert card["train"] == pytest.approx(y[ids["train"]].sum(axis=1).mean())


def test_sparse_file_format(settings, raw_cache) -> None:
    cfg = cfg_for(settings, datasets="tmc2007_500", report=False)
    (directory,) = preprocess.run(cfg, cache=raw_cache)
    with np.load(directory / "train.npz") as z:
        assert "X" not in z.files and "X_data" in z.files  # stored as CSR components
    assert json.loads((directory / "stats.json").read_text())["scaler"]["with_mean"] is False


def test_rerun_is_a_no_op_and_force_redoes(settings) -> None:
    cfg = cfg_for(settings, datasets=["iris", "glass"], report=False)
    dirs = preprocess.run(cfg)
    mtimes = {p: [f.stat().st_mtime_ns for f in sorted(p.iterdir())] for p in dirs}
    preprocess.run(cfg)
    assert {p: [f.stat().st_mtime_ns for f in sorted(p.iterdir())] for p in dirs} == mtimes
    cfg["data"]["force"] = True
    preprocess.run(cfg)
    assert {p: [f.stat().st_mtime_ns for f in sorted(p.iterdir())] for p in dirs} != mtimes
    assert not [f for p in dirs for f in p.iterdir() if f.name.endswith(".part")]


def test_changed_parameters_are_redone(settings) -> None:
    cfg = cfg_for(settings, datasets="iris", report=False)
    (d,) = preprocess.run(cfg)
    stats = json.loads((d / "stats.json").read_text())
    stats["params"]["seed"] = 99  # as if written by another run
    (d / "stats.json").write_text(json.dumps(stats))
    preprocess.run(cfg)
    assert load_stats(d)["params"]["seed"] == 0


def test_variants_do_not_overwrite(settings) -> None:
    cfg = cfg_for(settings, datasets=["ERA", "birds"], report=False)
    cfg["data"]["ordinal_split"] = [0, 3]
    dirs = preprocess.run(cfg)
    cfg["data"]["drop_empty"] = True
    cfg["datasets"] = "birds"
    dirs += preprocess.run(cfg)
    names = sorted(p.name for p in dirs)
    assert names == ["ERA", "ERA+split3", "birds", "birds+drop_empty"]
    era0, era3 = _splits(dirs[0]), _splits(dirs[1])
    assert not np.array_equal(era0["test"][0], era3["test"][0])
    assert load_stats(dirs[1])["params"]["split"] == 3
    b, bd = load_stats(settings.prepared_dir / "birds"), load_stats(dirs[-1])
    assert bd["n_samples"] == {"train": 134, "val": 45, "test": 172}  # the paper's Table 5
    assert sum(b["n_samples"].values()) == 645
    assert bd["n_dropped_empty"] == 645 - 351


def test_all_splits(settings) -> None:
    cfg = cfg_for(settings, datasets="pasture", report=False)
    cfg["data"]["ordinal_split"] = "all"
    dirs = preprocess.run(cfg)
    assert len(dirs) == 30 and dirs[0].name == "pasture" and dirs[29].name == "pasture+split29"


def test_missing_raw_files(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, None)
    with pytest.raises(MissingRawDataError, match=r"pipeline\.fetch datasets=iris"):
        preprocess.run(cfg_for(settings, datasets="iris"))
    assert not (settings.prepared_dir / "iris").exists()


def test_every_mirrored_dataset_and_the_table(settings, registry, raw_cache) -> None:
    """The default run prepares every mirrored dataset; the table matches stats.json."""
    dirs = preprocess.run(cfg_for(settings), cache=raw_cache)  # mirrored, report: true
    mirrored = [n for n, s in registry.items() if s.mirrored]
    assert sorted(p.name for p in dirs) == sorted(mirrored)
    with open(settings.reports_dir / "dataset_stats.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["dataset"] for r in rows} == set(registry)  # every dataset has a row
    n_multilabel = sum(s.task == "multilabel" and s.mirrored for s in registry.values())
    assert sum(r["drop_empty"] == "True" for r in rows) == n_multilabel
    for r in rows:
        spec = registry[r["dataset"]]
        if not spec.mirrored:
            assert r["status"].startswith("not fetched") and r["train"] == ""
            continue
        assert r["status"] == "ok"
        d = settings.prepared_dir / spec.name
        stats = load_stats(d)
        if r["drop_empty"] == "True":
            if stats["labels"]["empty"] != {"train": 0, "val": 0, "test": 0}:
                cfg = cfg_for(settings.replace(drop_empty=True), datasets=spec.name)
                (d,) = preprocess.run({**cfg, "report": False}, cache=raw_cache)
                stats = load_stats(d)
            # else: nothing to drop, the default variant is the same data
        counts = {s: len(load_split(d / f"{s}.npz")[1]) for s in ("train", "val", "test")}
        assert (int(r["train"]), int(r["dev"]), int(r["test"])) == (
            counts["train"],
            counts["val"],
            counts["test"],
        )
        assert int(r["features"]) == stats["n_features"]
        assert int(r["classes"]) == stats["n_classes"]
        if spec.task == "multilabel":
            Y = load_split(d / "train.npz")[1]
            assert float(r["avg_labels"]) == pytest.approx(Y.sum(axis=1).mean(), abs=5e-4)
    md = (settings.reports_dir / "dataset_stats.md").read_text()
    assert "Comparison with the paper's Table 5" in md
    assert "| birds | ours, drop_empty | 134 = | 45 = | 172 = |" in md
