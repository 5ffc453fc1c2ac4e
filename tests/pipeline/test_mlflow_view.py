"""What a researcher sees in ``mlflow ui``, asserted through the MLflow client: the runs
table (run name, params, metrics, dataset input, the structure tag), the run page (the
validation curve as a metric history, the description), the experiment's view tags, and
the logged model (a raw-feature pipeline, registered on request)."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np
import pytest

from pipeline import train
from pipeline.config.composition import Composition
from pipeline.config.run import RunConfig
from pipeline.config.settings import TrackingSettings
from pipeline.data import load_prepared
from pipeline.data.protocol import stacked
from pipeline.data.readers import load_raw
from pipeline.data.registry import get_spec
from pipeline.data.settings import data_settings
from pipeline.runs import mlflow_view as view
from pipeline.runs import structure_flags as flags

from .conftest import RecordingTracker, run_config


def _comp(**kw) -> Composition:
    base = dict(
        task="label_ranking",
        dataset="iris",
        set="birkhoff",
        geometry="euclidean",
        decoder="birkhoff",
        model="linear",
        kind="projection",
        target_loss="hamming",
    )
    return Composition(**{**base, **kw})


def test_run_names_lead_with_the_dataset_in_the_papers_notation() -> None:
    assert view.run_name(_comp()) == "iris · birkhoff/birkhoff · euclidean"
    cube = _comp(set="cube", decoder="cube")
    assert view.run_name(cube) == "iris · cube/cube · euclidean"  # the default target loss
    ranking = _comp(set="cube", decoder="cube", target_loss="hamming_ranking")
    assert view.run_name(ranking) == "iris · cube/cube · euclidean · hamming_ranking"
    perm = _comp(set="permutahedron", decoder="permutahedron", target_loss="spearman")
    assert view.run_name(perm) == "iris · permutahedron/permutahedron · euclidean"
    poly = _comp(geometry="kl", model="poly", model_params={"degree": 3})
    assert view.run_name(poly) == "iris · birkhoff/birkhoff · kl · poly3"
    rr = Composition("ordinal", "ERA", "reals", "euclidean", "round", "linear", "round")
    run = RunConfig(
        rr, None, ("mae",), ("mae",), True, False, data_settings(ordinal_split=7),
        TrackingSettings(), indexed_splits=True,
    )  # fmt: skip
    assert view.run_name(rr, run) == "ERA · ridge+round · split 7"
    sweep = dataclasses.replace(run, splits=tuple(range(30)))
    assert view.run_name(rr, sweep) == "ERA · ridge+round · splits 0-29"
    assert view.model_name(ranking) == "iris-cube-cube-euclidean-hamming_ranking"
    assert view.model_name(rr, run) == "ERA-ridge_round-split7"
    seeded = dataclasses.replace(run, data=data_settings(seed=3, drop_empty=True))
    assert view.run_name(rr, seeded) == "ERA · ridge+round · seed 3"  # drop_empty: multilabel


def test_structure_flags() -> None:
    k = 3
    perms = np.array([[0, 1, 2], [2, 0, 1], [1, 2, 0]])
    assert flags.structure_problem("label_ranking", np.eye(k, dtype=int)[perms], "cube") is None
    zeros = np.zeros((5, k, k), dtype=int)
    zeros[0] = np.eye(k, dtype=int)
    problem = flags.structure_problem("label_ranking", zeros, "cube")
    assert problem == "4 of 5 test predictions are all-zero matrices (no label ranked)"
    assert flags.structure_tag(problem) == "all-zero 4/5"
    assert (
        flags.structure_problem("label_ranking", np.array([[0, 0, 1], [0, 1, 2]]), "birkhoff")
        == "1 of 2 test predictions are not permutations"
    )
    same = flags.structure_problem("multilabel", np.ones((4, 6), dtype=int))
    assert same is not None and flags.structure_tag(same) == "constant 4/4"
    # the tag and the warning; the median baseline is constant by design: no warning
    tracker = RecordingTracker()
    ridge = Composition("ordinal", "ERA", "reals", "euclidean", "round", "linear", "round")
    assert flags.flag_structures(tracker, ridge, np.full(5, 3)) is not None
    assert tracker.tags["structure"] == "constant 5/5"
    median = Composition("ordinal", "ERA", "none", "none", "median", "median", "median")
    assert flags.flag_structures(tracker, median, np.full(5, 3)) is None
    assert tracker.tags["structure"] == "median baseline"


@pytest.fixture
def allow_model_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_ALLOW_PICKLE_DESERIALIZATION", "true")


@pytest.mark.slow
def test_what_the_runs_table_and_the_run_page_show(
    prepared, tmp_path, caplog, allow_model_loading, store_uri
) -> None:
    import mlflow.sklearn
    from mlflow.tracking import MlflowClient

    uri = store_uri
    common = [f"tracking.uri={uri}", "tracking.figures=false", "progress=false"]
    cfg = run_config(prepared, ["lambdas.num=3", "tracking.register=true", *common])
    out = train.run(cfg)
    # the cube decoded for the entrywise Hamming loss (the task's default) at a large
    # lambda: every test prediction is the all-zero matrix
    cube = run_config(
        prepared,
        ["set=cube", "decoder=cube", "lambdas.low=1e4", "lambdas.num=1", *common],
    )
    with caplog.at_level("WARNING"):
        flagged = train.run(cube)
    client = MlflowClient(uri)
    run = client.get_run(out["run_id"])

    # the runs table: name, params (the cell, at most 15), metrics
    assert run.info.run_name == "iris · birkhoff/birkhoff · euclidean"
    params = run.data.params
    lam = out["tune"]["selected"]["hamming"]["lambda"]
    assert params == {
        "task": "label_ranking",
        "dataset": "iris",
        "set": "birkhoff",
        "geometry": "euclidean",
        "decoder": "birkhoff",
        "model": "linear",
        "target_loss": "hamming",
        "lambdas": "0.0001..10000 x3",
        "seed": "0",
        "lambda.hamming": f"{lam:.4g}",
    }
    assert len(params) <= view.MAX_PARAMS
    metrics = run.data.metrics
    assert metrics["test.hamming"] == pytest.approx(out["headline"]["hamming"])
    assert {"val.hamming", "lambda.hamming", "tuning/val.hamming", "tuning/lambda"} <= set(
        metrics
    )  # the table shows a history's last value; the chart, the whole curve
    assert not any(k.startswith("curve.") for k in metrics)  # the grid once, not twice
    assert run.data.tags["structure"] == "ok"
    assert "test hamming" in run.data.tags["mlflow.note.content"]

    # the run page: the validation curve, one step per lambda of the grid (the tune's)
    history = client.get_metric_history(run.info.run_id, "tuning/val.hamming")
    assert [m.step for m in sorted(history, key=lambda m: m.step)] == [0, 1, 2]
    np.testing.assert_allclose(
        [m.value for m in sorted(history, key=lambda m: m.step)],
        out["tune"]["metrics"]["hamming"],
    )
    xs = client.get_metric_history(run.info.run_id, "tuning/lambda")
    np.testing.assert_allclose(sorted(m.value for m in xs), [1e-4, 1.0, 1e4])

    # the dataset input (the Dataset column): name, digest of the raw files, sizes
    (inp,) = run.inputs.dataset_inputs
    raw_file = prepared.raw_dir / "iris" / "iris.txt"
    sha = hashlib.sha256(raw_file.read_bytes()).hexdigest()
    sums = f"{sha}  iris.txt\n".encode()
    assert inp.dataset.name == "iris"
    assert inp.dataset.digest == hashlib.sha256(sums).hexdigest()[:16]
    assert inp.dataset.source_type == "http" and "iris.txt" in inp.dataset.source
    profile = json.loads(inp.dataset.profile)
    assert profile["n_samples"] == {"train": 90, "val": 30, "test": 30}
    assert profile["raw_files"] == {"iris.txt": sha}
    assert {t.key: t.value for t in inp.tags}["mlflow.data.context"] == "train/val/test 90/30/30"

    # the experiment opens on the model-training view with a saved view of the results
    exp = client.get_experiment(run.info.experiment_id)
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    assert exp.tags["mlflow.experiment.primaryMetric.name"] == "test.hamming"
    saved = json.loads(exp.tags["mlflow.sharedViewState.projloss"])
    state = json.loads(saved["state"])
    assert "metrics.`test.hamming`" in state["selectedColumns"]
    assert "attributes.`Dataset`" in state["selectedColumns"]

    # the model: a pipeline that predicts from raw rows, named after the composition
    (model,) = client.search_logged_models(
        experiment_ids=[run.info.experiment_id],
        filter_string=f"source_run_id = '{run.info.run_id}'",
    )
    assert model.name == "iris-birkhoff-birkhoff-euclidean"
    loaded = mlflow.sklearn.load_model(f"models:/{model.model_id}")
    spec = get_spec("iris", prepared.dataset_dirs)
    X_raw, _ = stacked(load_raw(spec, prepared.raw_dir))
    data_index = np.load(prepared.prepared_dir / "iris" / "test.npz")["index"]
    raw_rows = X_raw[data_index]
    estimator = out["refitted"].model_for("hamming")
    X_test = load_prepared("iris", cfg).test[0]
    np.testing.assert_array_equal(loaded.predict(raw_rows), estimator.predict(X_test))
    assert not np.array_equal(estimator.predict(raw_rows), estimator.predict(X_test))
    # registered (tracking.register=true) under the composition's name
    name = "label_ranking-iris-birkhoff-birkhoff-euclidean"
    versions = client.search_model_versions(f"name = '{name}'")
    assert [v.run_id for v in versions] == [run.info.run_id]

    # the degenerate run: flagged by a tag and a warning naming the paper's target loss
    bad = client.get_run(flagged["run_id"])
    assert bad.info.run_name == "iris · cube/cube · euclidean"
    assert bad.data.tags["structure"] == "all-zero 30/30, constant 30/30"
    assert "task.target_loss=hamming_ranking" in caplog.text
    assert "30 of 30 test predictions are all-zero" in caplog.text
    assert bad.data.params["target_loss"] == "hamming"
