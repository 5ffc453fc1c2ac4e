"""``python -m pipeline.train``: end to end into a temporary MLflow store, the command
line (errors, outputs), and a ``--multirun`` sweep with the joblib launcher."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pipeline import train
from pipeline.data.api import load_prepared

from .conftest import ROOT, data_overrides, run_config
from .test_tracking import closed_port


@pytest.fixture
def allow_model_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    # MLflow refuses to deserialize models unless told the source is trusted.
    monkeypatch.setenv("MLFLOW_ALLOW_PICKLE_DESERIALIZATION", "true")


@pytest.mark.slow
def test_end_to_end_into_a_temporary_store(
    prepared, tmp_path, caplog, allow_model_loading, store_uri
):
    import mlflow
    from mlflow.tracking import MlflowClient

    uri = store_uri
    cfg = run_config(
        prepared, ["lambdas.num=3", f"tracking.uri={uri}", "tracking.heatmap_samples=2"]
    )
    with caplog.at_level("INFO", logger="pipeline.train"):
        out = train.run(cfg, group="sweep-1")
    client = MlflowClient(uri)
    run = client.get_run(out["run_id"])
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "iris · birkhoff/birkhoff · euclidean"
    exp = client.get_experiment(run.info.experiment_id)
    assert exp.name == "projloss/label_ranking"
    # tags: the composition and the sweep group
    tags = run.data.tags
    assert {k: tags[k] for k in ("task", "dataset", "set", "geometry", "decoder", "model")} == {
        "task": "label_ranking",
        "dataset": "iris",
        "set": "birkhoff",
        "geometry": "euclidean",
        "decoder": "birkhoff",
        "model": "linear",
    }
    assert tags["group"] == "sweep-1"
    # params: the choices that define the cell (the whole config is config.yaml)
    params = run.data.params
    assert params["set"] == "birkhoff" and params["lambdas"] == "0.0001..10000 x3"
    assert params["model"] == "linear" and params["seed"] == "0"
    # metrics: the choice of lambda, validation and test values
    m = run.data.metrics
    sel = out["tune"]["selected"]["hamming"]
    assert m["lambda.hamming"] == pytest.approx(sel["lambda"])
    assert m["val.hamming"] == pytest.approx(sel["value"])
    assert m["test.hamming"] == pytest.approx(out["headline"]["hamming"])
    assert {"refit_seconds", "tune_seconds", "total_seconds"} <= set(m)
    # every fit logs whether it converged (issue 14): the refit here, the grid's in the
    # child runs below, and the run's count and tag over all of them
    assert m["refit_converged"] == 1.0 and m["refit_n_iter"] >= 1
    assert m["non_converged_fits"] == 0.0 and run.data.tags["converged"] == "true"
    # one child run per lambda (tracking.child_runs: best-3, a grid of 3)
    children = client.search_runs(
        [run.info.experiment_id], f"tags.mlflow.parentRunId = '{run.info.run_id}'"
    )
    assert sorted(float(c.data.params["lambda"]) for c in children) == pytest.approx(
        out["tune"]["lambdas"]
    )
    assert all("val.hamming" in c.data.metrics and "n_iter" in c.data.metrics for c in children)
    assert all(c.data.metrics["converged"] == 1.0 for c in children)
    # artifacts: the config, the predictions, the figures
    arts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"config.yaml", "predictions.npz", "figures"} <= arts
    figs = {a.path for a in client.list_artifacts(run.info.run_id, "figures")}
    assert figs == {"figures/validation_curve.png", "figures/soft_permutations.png"}
    assert (tmp_path / "mlartifacts").is_dir()
    # the logged model predicts what the in-memory one does
    (logged,) = mlflow.search_logged_models(
        experiment_ids=[run.info.experiment_id],
        filter_string=f"source_run_id = '{run.info.run_id}'",
        output_format="list",
    )
    assert logged.name == "iris-birkhoff-birkhoff-euclidean"
    model = mlflow.sklearn.load_model(logged.model_uri)  # scaler + estimator: raw features
    X_test = load_prepared("iris", cfg).test[0]
    in_memory = out["refitted"].model_for("hamming")
    X_raw = model.named_steps["scaler"].inverse_transform(X_test)
    np.testing.assert_array_equal(model.predict(X_raw), in_memory.predict(X_test))
    # one summary line
    (line,) = [r.getMessage() for r in caplog.records if r.name == "pipeline.train"]
    assert line.startswith("iris | label_ranking birkhoff->birkhoff | lambda=")
    assert "test hamming=" in line and line.endswith(f" s | run {out['run_id']}")


def _cli(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "HYDRA_FULL_ERROR": "0",
        "MLFLOW_DISABLE_TELEMETRY": "true",
    }
    env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.run(
        [sys.executable, "-m", "pipeline.train", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_command_line_errors_are_one_line(tmp_path: Path) -> None:
    """A bad composition and an unreachable server fail before any work: exit 1, one
    line naming the problem and the choices, no traceback, nothing written."""
    before = sorted(p.name for p in ROOT.iterdir())
    done = _cli(["set=reals", "geometry=kl"], tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "valid geometries for it are ('euclidean',)" in out and "Traceback" not in out
    port = closed_port()
    start = time.perf_counter()
    done = _cli([f"tracking.uri=http://127.0.0.1:{port}", "tracking.probe_timeout=2"], tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert f"http://127.0.0.1:{port} is unreachable" in out and "Traceback" not in out
    assert time.perf_counter() - start < 60  # seconds of start-up, not minutes of retries
    assert list(tmp_path.iterdir()) == []
    assert sorted(p.name for p in ROOT.iterdir()) == before


@pytest.mark.slow
def test_multirun_with_the_joblib_launcher(prepared, tmp_path: Path) -> None:
    """Two jobs in parallel processes on one fresh SQLite store: two parent runs, grouped
    by the sweep directory; nothing written outside the configured places."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    sweep = tmp_path / "sweep"
    args = [
        "--multirun",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        f"hydra.sweep.dir={sweep}",
        "dataset=iris,wine",
        "lambdas.num=2",
        f"tracking.uri={uri}",
        "tracking.log_models=false",
        "tracking.figures=false",
        *data_overrides(prepared),
    ]
    done = _cli(args, tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "sweep: 2 job(s)" in out
    assert "database is locked" not in out
    client = MlflowClient(uri)
    (exp,) = [e for e in client.search_experiments() if e.name == "projloss/label_ranking"]
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert sorted(r.data.tags["dataset"] for r in parents) == ["iris", "wine"]
    assert {r.data.tags["group"] for r in parents} == {str(sweep)}
    assert all(r.info.status == "FINISHED" for r in runs)
    assert len(runs) == 2 + 2 * 2  # two parents, two lambdas each
    # mlflow.db and its lock, WAL and shared-memory files; artifacts; the sweep dir
    names = {p.name for p in tmp_path.iterdir()}
    assert {n for n in names if not n.startswith("mlflow.db")} <= {"mlartifacts", "sweep"}
