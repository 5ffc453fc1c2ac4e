"""The stages of a split sweep (an experiment with ``splits``, as ``ord-splits``): tune,
refit and evaluate on two workers, each run logged when its splits are done, its splits'
models in one file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.runs.index import read_json as index_json

from ..conftest import ROOT, cfg_for, make_settings

DATASETS = ["ERA", "toy"]
SPLITS = [0, 2]


def _stage(root: Path, *args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PROJLOSS_ROOT": str(root)}
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    for key in ("MLFLOW_TRACKING_URI", "PIPELINE_PRELOAD"):
        env.pop(key, None)
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.stage", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_a_split_sweep_is_tuned_refitted_and_evaluated(tmp_path: Path, mirror: Path) -> None:
    """Two ordinal datasets on two orreview splits, two runs each, on two workers
    (:class:`pipeline.runs.parallel.TaskStream`: a run is logged when its last split is done,
    while the workers go on): every run has a validation curve per split in the tuning
    JSON, the models of each split, the mean and std of its test values in
    ``metrics/<key>.json``, equal to its splits' values in ``results.json``, and one
    FINISHED MLflow run with a test value per split as metric steps."""
    import numpy as np
    import yaml
    from mlflow.tracking import MlflowClient

    from pipeline.data import fetch
    from pipeline.data import prepare as preprocess
    from pipeline.params import compose_params

    root = tmp_path / "project"
    root.mkdir()
    (root / "conf").symlink_to(ROOT / "conf")
    settings = make_settings(root / "data", mirror, ordinal_split=tuple(SPLITS))
    fetch.run(cfg_for(settings, datasets=DATASETS))
    preprocess.run(cfg_for(settings, datasets=DATASETS, report=False))
    params = yaml.safe_load(compose_params(["experiments=smoke"]))
    params["experiments"] = {
        "sweep": {
            "dataset": ".",
            "datasets": DATASETS,
            "splits": SPLITS,
            "overrides": ["task=ordinal"],
            "runs": {
                "median": ["model=median"],
                "reals-order_simplex": ["set=reals", "decoder=order_simplex"],
            },
        }
    }
    params["data"]["mirror"] = str(mirror)
    params["lambdas"]["num"] = 3
    params["n_jobs"] = 2
    params["progress"] = False
    params["tracking"]["uri"] = f"sqlite:///{root / 'mlflow.db'}"
    (root / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    for stage in ("tune", "refit", "evaluate"):
        _stage(root, stage, "sweep")

    from pipeline.runs.refit import load_splits

    runs = [f"{ds}/{run}" for run in ("median", "reals-order_simplex") for ds in DATASETS]
    tuning = index_json((root / "data/tuning/sweep.json"), root)  # run ids: in the index
    assert sorted(tuning["runs"]) == sorted(runs)
    metrics = json.loads((root / "metrics/sweep.json").read_text())
    client = MlflowClient(params["tracking"]["uri"])
    for rid in runs:
        splits = tuning["runs"][rid]["tune"]["splits"]
        assert sorted(splits) == [str(s) for s in SPLITS]
        # the run's splits in one file (DVC hashes every file of models/), their index
        models_dir = root / "models/sweep" / rid
        assert sorted(p.name for p in models_dir.iterdir()) == ["refit.json", "splits.joblib"]
        index = json.loads((models_dir / "refit.json").read_text())
        refitted = load_splits(models_dir)
        assert sorted(refitted) == SPLITS and sorted(index["splits"]) == [str(s) for s in SPLITS]
        for s in SPLITS:  # each split's model refitted with the lambda its tuning chose
            chosen = splits[str(s)]["selected"]["mae"]
            assert refitted[s].selection["mae"] == chosen["index"]
            assert refitted[s].lambdas[chosen["index"]] == chosen["lambda"]
            assert index["splits"][str(s)]["selection"] == refitted[s].selection
        results = json.loads((root / "data/eval/sweep" / rid / "results.json").read_text())
        dataset, name = rid.split("/")
        for s in SPLITS:  # the splits of this run, each with the lambda its tuning chose
            split = results["splits"][str(s)]
            assert split["composition"]["dataset"] == dataset
            assert split["composition"]["set"] == ("none" if name == "median" else "reals")
            chosen = splits[str(s)]["selected"]["mae"]["lambda"]
            assert split["lambda"]["mae"] == chosen
        values = [results["splits"][str(s)]["headline"]["mae"] for s in SPLITS]
        assert metrics[rid]["test"]["mae"] == pytest.approx(np.mean(values), abs=1e-12)
        assert metrics[rid]["test_std"]["mae"] == pytest.approx(np.std(values), abs=1e-12)
        run = client.get_run(tuning["runs"][rid]["run_id"])
        assert run.info.status == "FINISHED"
        steps = client.get_metric_history(run.info.run_id, "test.mae.split")
        assert sorted((m.step, m.value) for m in steps) == list(zip(SPLITS, values, strict=True))
        assert run.data.metrics["test.mae"] == pytest.approx(np.mean(values), abs=1e-12)
