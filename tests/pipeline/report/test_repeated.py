"""The repeated-split experiments and their report (reports/repeated/).

- the list ``paper-repeated``: seed s of each paper experiment is ``<key>-seed<s>`` with
  the paper experiment's runs and ``data: {seed: s}``; not in the default list;
- a new seed's split is made in memory, equal to the variant the preprocess stage would
  write, and nothing is written under data/prepared;
- a user's label-ranking dataset (conf/dataset-style registry written by the test) run
  on three seeds with real fits: the comparison, ranks and CD diagram include it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from pipeline.config.experiments import compose_runs
from pipeline.config.run import RunConfig
from pipeline.data import fetch
from pipeline.data import prepare as preprocess
from pipeline.data.api import load_prepared
from pipeline.data.settings import data_settings
from pipeline.errors import MissingRawDataError
from pipeline.fileio import sha256_file
from pipeline.params import compose_params
from pipeline.report import repeated, repeated_findings, repeated_report
from pipeline.runs import evaluate, refit, tune
from pipeline.runs import parallel as splits

from ..conftest import ROOT, cfg_for, make_settings, run_config


@pytest.fixture(scope="module")
def repeated_params() -> dict:
    return yaml.safe_load(compose_params(["experiments=paper-repeated"]))


def test_paper_repeated_list(repeated_params: dict) -> None:
    exps = repeated_params["experiments"]
    seeds = repeated.seed_keys(exps, repeated.REPEATS)
    assert seeds["lr"] == {0: "lr", **{s: f"lr-seed{s}" for s in range(1, 10)}}
    assert set(seeds) == {"lr", "ml", "ml-tmc2007_500"}
    for base, by_seed in seeds.items():
        for s, key in by_seed.items():
            item = exps[key]
            assert item["runs"] == exps[base]["runs"] and item["datasets"] == exps[base]["datasets"]
            assert item["overrides"] == exps[base]["overrides"]
            want = {**(exps[base].get("data") or {}), **({"seed": s} if s else {})}
            assert (item.get("data") or {}) == want
    assert repeated.targets(2, exps) == [
        "evaluate@lr", "evaluate@lr-seed1", "evaluate@ml", "evaluate@ml-seed1",
        "evaluate@ml-tmc2007_500", "evaluate@ml-tmc2007_500-seed1", "evaluate@ord-splits",
    ]  # fmt: skip
    # seed 0 and the sweeps are the paper's own experiments: run under the paper's list
    assert repeated.targets(2, exps, only="paper") == [
        "evaluate@lr", "evaluate@ml", "evaluate@ml-tmc2007_500", "evaluate@ord-splits",
    ]  # fmt: skip
    assert repeated.targets(2, exps, only="seeds") == [
        "evaluate@lr-seed1", "evaluate@ml-seed1", "evaluate@ml-tmc2007_500-seed1",
    ]  # fmt: skip
    assert repeated.targets(1, exps, only="seeds") == []
    # not part of the default `make repro` (params.yaml of conf/config.yaml)
    default = yaml.safe_load(compose_params([]))["experiments"]
    assert not [k for k in default if "-seed" in k]
    with pytest.raises(ValueError, match="data.seed"):
        repeated.seed_keys({"lr": {}, "lr-seed4": {"data": {"seed": 3}}}, 10)


def test_seed_experiment_composes_with_its_seed(repeated_params: dict) -> None:
    p = copy.deepcopy(repeated_params)
    item = p["experiments"]["ml-seed2"]
    item["datasets"] = ["emotions"]
    item["runs"] = {"knapsack-knapsack": item["runs"]["knapsack-knapsack"]}
    (cfg,) = compose_runs(p, "ml-seed2").values()
    assert cfg["data"]["seed"] == 2 and cfg["data"]["drop_empty"] is True
    assert cfg["dataset"]["name"] == "emotions" and cfg["set"]["name"] == "knapsack"


def _data_of(dataset: str, data: dict) -> SimpleNamespace:
    """What :func:`pipeline.runs.parallel.load` reads of a run: its dataset and typed data
    settings."""
    return SimpleNamespace(composition=SimpleNamespace(dataset=dataset), data=data_settings(data))


def test_a_new_seed_is_split_in_memory_like_the_preprocess_stage(
    tmp_path: Path, mirror: Path
) -> None:
    settings = make_settings(tmp_path, mirror)
    fetch.run(cfg_for(settings, datasets=["iris"]))
    preprocess.run(cfg_for(settings, datasets=["iris"], report=False))  # seed 0 only
    cfg = {"dataset": {"name": "iris"}, "data": {**settings.as_dict(), "seed": 3}}
    splits._DATA.clear()
    mem = splits.load(_data_of("iris", cfg["data"]))  # no prepared iris+seed3: in memory
    assert mem.stats["in_memory"] and mem.variant == "iris+seed3"
    assert sorted(p.name for p in settings.prepared_dir.iterdir()) == ["iris"]  # nothing written
    disk = load_prepared("iris", cfg, prepare_missing=True)  # the preprocess stage's variant
    assert disk.directory.name == "iris+seed3"
    for part in ("train", "val", "test"):
        np.testing.assert_array_equal(mem.index[part], disk.index[part])
        np.testing.assert_array_equal(getattr(mem, part)[1], getattr(disk, part)[1])
        np.testing.assert_allclose(getattr(mem, part)[0], getattr(disk, part)[0], rtol=1e-15)
    seed0 = load_prepared("iris", cfg["data"] | {"seed": 0}, prepare_missing=False)
    assert not np.array_equal(np.sort(seed0.index["test"]), np.sort(mem.index["test"]))
    # the seed of the protocol missing: still the clear error of a missing variant
    splits._DATA.clear()
    with pytest.raises(MissingRawDataError, match="preprocess stage"):
        splits.load(_data_of("iris", {**settings.as_dict(), "val_size": 0.3}))
    splits._DATA.clear()


def _write_user_dataset(directory: Path) -> Path:
    """A label-ranking dataset of 72 samples, 3 features, 4 labels ranked by a noisy
    linear score, and its registry entry (as a user writes conf/dataset/<name>.yaml)."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(72, 3))
    scores = X @ rng.normal(size=(3, 4)) + 0.5 * rng.normal(size=(72, 4))
    rows = ["A1,A2,A3,ranking"]
    for x, s in zip(X, scores, strict=True):
        order = ">".join("abcd"[j] for j in np.argsort(-s))
        rows.append(",".join(f"{v:.6f}" for v in x) + "," + order)
    (directory / "userlr.txt").write_text("\n".join(rows) + "\n")
    registry = directory / "conf_dataset"
    registry.mkdir()
    entry = {
        "name": "userlr",
        "task": "label_ranking",
        "format": "label_ranking",
        "parts": {"all": "userlr.txt"},
        "files": [
            {
                "name": "userlr.txt",
                "path": str(directory / "userlr.txt"),
                "sha256": sha256_file(directory / "userlr.txt"),
            }
        ],
    }
    (registry / "userlr.yaml").write_text(yaml.safe_dump(entry))
    return registry


RUNS = {
    "t1-row_simplex-row_simplex": ["set=row_simplex", "decoder=row_simplex"],
    "t1-row_simplex-birkhoff": ["set=row_simplex", "decoder=birkhoff"],
    "t1-birkhoff-birkhoff": ["set=birkhoff", "decoder=birkhoff"],
}


def test_user_dataset_in_the_repeated_report(tmp_path: Path, mirror: Path) -> None:
    registry = _write_user_dataset(tmp_path)
    settings = make_settings(
        tmp_path, mirror, dataset_dirs=[str(registry), str(ROOT / "conf/dataset")]
    )
    names = ["iris", "userlr"]
    fetch.run(cfg_for(settings, datasets=names))
    preprocess.run(cfg_for(settings, datasets=names, report=False))
    base = ["task=label_ranking", "task.target_loss=hamming_ranking", "dataset=iris"]
    base += ["lambdas.num=3", "progress=false", "tracking.enabled=false"]
    experiments = {"lr": {"dataset": ".", "datasets": names, "runs": RUNS}}
    for s in (1, 2):
        experiments[f"lr-seed{s}"] = {**experiments["lr"], "data": {"seed": s}}
    splits._DATA.clear()
    for run, overrides in RUNS.items():
        cfg = run_config(settings, [*base, *overrides])
        for name in names:
            for s in (0, 1, 2):
                key = "lr" if s == 0 else f"lr-seed{s}"
                c = copy.deepcopy(cfg)
                c["data"] = {**settings.as_dict(), "seed": s}
                if name == "userlr":  # the registry entry, as Hydra composes dataset=userlr
                    c["dataset"] = yaml.safe_load((registry / "userlr.yaml").read_text())
                typed = RunConfig.from_config(c)
                data = splits.load(typed)
                tuned = tune.run(typed, data, None)
                fitted = refit.run(typed, data, tuned)
                out = tmp_path / "data" / "eval" / key / name / run
                evaluate.run(typed, data, tuned, fitted, None, out_dir=out)
    splits._DATA.clear()

    report = repeated_report.build(tmp_path, tmp_path / "repeated", 3, experiments)
    a = report.analyses["table1"]
    assert [a.data.rows[r].label for r in a.rows] == ["Iris", "userlr"]
    assert a.names == ["rs/rs", "rs/B", "B/B"]
    assert set(a.not_run) == {"cube/cube", "R/B", "cube/B", "cube/cube entrywise"}
    assert a.n_splits == [3, 3] and a.friedman.n_blocks == 2 and a.friedman.k == 3
    assert "table2" not in report.analyses  # no KL run: not compared
    # the cells are the tracked test values, mean over the three seeds
    vals = [
        json.loads(
            (tmp_path / "data/eval" / k / "userlr/t1-birkhoff-birkhoff/results.json").read_text()
        )["headline"]["hamming"]
        for k in ("lr", "lr-seed1", "lr-seed2")
    ]
    np.testing.assert_allclose(a.means[1, 2], np.mean(vals), rtol=1e-12)
    np.testing.assert_allclose(a.stds[1, 2], np.std(vals, ddof=1), rtol=1e-12)
    assert sum(len(b) for b in a.blocks) == 6  # 2 datasets x 3 splits
    assert len(a.pairs) == 2  # B/B against rs/rs and rs/B
    for p in a.pairs:  # per dataset: a corrected t-test, Holm within the dataset
        assert {t.dataset for t in p.per_dataset} == {"Iris", "userlr"}
        assert all(t.test.df == 2 for t in p.per_dataset)
    np.testing.assert_allclose(a.friedman.ranks.sum(), 6.0)  # k (k + 1) / 2
    out = tmp_path / "repeated"
    md = (out / "table1.md").read_text()
    assert "| userlr |" in md and "Friedman test" in md and "table1_cd.png" in md
    png = (out / "table1_cd.png").read_bytes()
    assert png[:4] == b"\x89PNG"
    csv = (out / "table1.csv").read_text().splitlines()
    assert csv[0] == "dataset,composition,mean,std,n_splits,rank"
    assert sum(line.startswith("userlr,") for line in csv) == 3
    text = (out / "README.md").read_text()
    finding = next(f for f in report.findings if f.claim.endswith("Birkhoff best on average"))
    assert finding.verdict in repeated_findings.VERDICTS
    assert f"| {finding.claim} |" in text and "over the repeated splits" in text
    assert "(dataset, split) pairs" not in text  # no test treats the splits as independent
    assert report.summary["tables"]["table1"]["n_datasets"] == 2
    assert report.summary["repeats"] == 3
    # splits.csv: the per-split values in long form, and the whole report a function of it
    lines = (out / "splits.csv").read_text().splitlines()
    assert lines[0] == "table,dataset,composition,seed,metric,value,n_test,n_train,lambda"
    assert len([x for x in lines if x.startswith("table1,userlr,B/B,")]) == 3
    again = repeated_report.build_from_splits(out / "splits.csv", tmp_path / "again", 3)
    for f in report.files:
        if f.suffix in (".md", ".csv") and f.name != "splits.csv":
            assert (tmp_path / "again" / f.name).read_text() == f.read_text(), f.name
    assert [f.verdict for f in again.findings] == [f.verdict for f in report.findings]


def test_no_tracked_result_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="make repro-repeated"):
        repeated_report.build(tmp_path, tmp_path / "out", 3, {"lr": {"datasets": ["iris"]}})
    assert not (tmp_path / "out").exists()
