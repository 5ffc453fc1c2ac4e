"""Evaluate stage: test scores, predictions, models and figures."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipeline.config.run import RunConfig
from pipeline.data.api import load_prepared
from pipeline.runs import evaluate, refit, tune

from ..conftest import RecordingTracker, run_config

PNG = b"\x89PNG\r\n\x1a\n"


def _pipeline(prepared, overrides: list[str], dataset: str):
    cfg = run_config(prepared, [*overrides, f"dataset={dataset}", "lambdas.num=3"])
    data = load_prepared(dataset, cfg)
    run = RunConfig.from_config(cfg)
    tuned = tune.run(run, data)
    return run, data, tuned, refit.run(run, data, tuned)


def test_label_ranking(prepared, tmp_path) -> None:
    cfg, data, tuned, refitted = _pipeline(prepared, ["task=label_ranking"], "iris")
    tracker = RecordingTracker(heatmap_samples=2)
    out = evaluate.run(cfg, data, tuned, refitted, tracker, out_dir=tmp_path)
    X, y = data.test
    pred = refitted.model_for("hamming").predict(X)
    P, T = np.eye(y.shape[1])[pred], np.eye(y.shape[1])[y]  # independent Hamming loss
    want = 100 * np.mean(P != T)
    assert out["test"]["hamming"]["hamming"] == pytest.approx(want)
    assert out["headline"] == {"hamming": pytest.approx(want)}
    assert tracker.metrics["test.hamming"] == pytest.approx(want)
    assert out["lambda"] == {"hamming": tuned["selected"]["hamming"]["lambda"]}
    with np.load(tmp_path / evaluate.PREDICTIONS) as npz:
        np.testing.assert_array_equal(npz["index"], data.index["test"])
        np.testing.assert_array_equal(npz["y_true"], y)
        np.testing.assert_array_equal(npz["y_pred.hamming"], pred)
    results = json.loads((tmp_path / evaluate.RESULTS).read_text())
    assert results["headline"]["hamming"] == pytest.approx(want)
    assert results["composition"]["set"] == "birkhoff"
    assert results["tune"]["metrics"] == tuned["metrics"]
    for name in ("validation_curve.png", "soft_permutations.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG)
        assert (tmp_path / name, "figures") in tracker.artifacts
    # the model: the fitted scaler and the estimator, named after the composition
    assert list(tracker.models) == ["iris-birkhoff-birkhoff-euclidean"]
    pipe = tracker.models["iris-birkhoff-birkhoff-euclidean"]
    assert pipe.named_steps["estimator"] is refitted.model_for("hamming")
    raw = pipe.named_steps["scaler"].inverse_transform(X)
    np.testing.assert_array_equal(pipe.predict(raw), pred)
    assert tracker.params == {"lambda.hamming": f"{tuned['selected']['hamming']['lambda']:.4g}"}


def test_multilabel_headline_uses_each_metric_lambda(prepared, tmp_path) -> None:
    cfg, data, tuned, _ = _pipeline(prepared, ["task=multilabel", "set=knapsack"], "emotions")
    for s in tuned["select_by"]:  # accuracy chooses one lambda, the F1 scores another
        i = 2 if s == "accuracy" else 0
        tuned["selected"][s] = {"index": i, "lambda": tuned["lambdas"][i], "value": 0.0}
    refitted = refit.run(cfg, data, tuned)
    tracker = RecordingTracker()
    out = evaluate.run(cfg, data, tuned, refitted, tracker, out_dir=tmp_path)
    X, Y = data.test
    for s in tuned["select_by"]:
        P = refitted.model_for(s).predict(X)
        assert out["test"][s]["accuracy"] == pytest.approx(100 * np.mean(P == Y))
    assert out["headline"]["accuracy"] == out["test"]["accuracy"]["accuracy"]
    assert out["headline"]["f1_micro"] == out["test"]["f1_micro"]["f1_micro"]
    assert out["test"]["accuracy"] != out["test"]["f1_micro"]
    assert tracker.metrics["test.f1_micro.by_accuracy"] == out["test"]["accuracy"]["f1_micro"]
    base = "emotions-knapsack-knapsack-euclidean"
    assert list(tracker.models) == [base, f"{base}-by_f1_micro"]
    assert tracker.models[base].named_steps["estimator"] is refitted.model_for("accuracy")
    assert (tmp_path / "validation_curve.png").is_file()
    assert not (tmp_path / "soft_permutations.png").exists()  # ranking tasks only


def test_no_tracking_no_files(prepared) -> None:
    """Without tracking nor an output directory, evaluate writes nothing."""
    cfg, data, tuned, refitted = _pipeline(prepared, ["task=ordinal", "model=median"], "ERA")
    out = evaluate.run(cfg, data, tuned, refitted)
    y = data.test[1]
    median = refitted.model_for("mae").median_
    assert out["headline"]["mae"] == pytest.approx(np.mean(np.abs(y - median)))
    assert out["lambda"] == {"mae": None}
