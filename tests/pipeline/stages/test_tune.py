"""Tune stage: the lambda grid on train, validation scores, the choice per metric."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from pipeline.config.composition import make_estimator, validate
from pipeline.config.run import RunConfig
from pipeline.config.scoring import task_metrics
from pipeline.data.api import load_prepared
from pipeline.runs import tune

from ..conftest import RecordingTracker, run_config


def test_curves_and_selection(prepared) -> None:
    """Every validation value equals an independent cold fit at that lambda; lambda is
    the best one (ties: the smallest); the grid logged once (``log_tuning``), each lambda
    a would-be child run."""
    cfg = run_config(
        prepared, ["task=label_ranking", "set=cube", "decoder=birkhoff", "lambdas.num=4"]
    )
    data = load_prepared("iris", cfg)
    tracker = RecordingTracker()
    out = tune.run(RunConfig.from_config(cfg), data, tracker)
    np.testing.assert_allclose(out["lambdas"], np.logspace(-4, 4, 4))
    comp = validate(cfg)
    (metric,), _ = task_metrics(cfg["task"])
    (X, y), (Xv, yv) = data.train, data.val
    expected = []
    for lam in out["lambdas"]:
        est = make_estimator(comp, alpha=lam).fit(X, y)
        expected.append(metric(yv, est.predict(Xv)))
    np.testing.assert_allclose(out["metrics"]["hamming"], expected, atol=1e-12)
    best = min(expected)
    want = min(i for i, v in enumerate(expected) if v == best)
    assert out["selected"]["hamming"] == {
        "index": want,
        "lambda": out["lambdas"][want],
        "value": expected[want],
    }
    assert out["warm_start"] is True
    assert [c[0] for c in tracker.children] == [f"lambda={v:.3g}" for v in out["lambdas"]]
    for _, params, metrics in tracker.children:
        assert set(metrics) == {"val.hamming", "fit_seconds", "converged", "n_iter"}
        assert params["lambda"] in out["lambdas"]
    assert tracker.metrics["lambda.hamming"] == out["selected"]["hamming"]["lambda"]
    assert tracker.metrics["val.hamming"] == out["selected"]["hamming"]["value"]


@pytest.mark.parametrize(
    ("dataset", "overrides"),
    [("iris", ["task=label_ranking"]), ("ERA", ["task=ordinal", "set=unit_cube"])],
)
def test_warm_start_gives_the_cold_results(prepared, dataset: str, overrides: list) -> None:
    cfg = run_config(prepared, [*overrides, f"dataset={dataset}", "lambdas.num=5"])
    data = load_prepared(dataset, cfg)
    warm = tune.run(RunConfig.from_config({**cfg, "warm_start": True}), data)
    cold = tune.run(RunConfig.from_config({**cfg, "warm_start": False}), data)
    assert warm["warm_start"] and not cold["warm_start"]
    assert warm["metrics"] == cold["metrics"]
    assert warm["selected"] == cold["selected"]


def test_per_metric_selection(prepared) -> None:
    cfg = run_config(
        prepared, ["task=multilabel", "dataset=emotions", "set=unit_cube", "lambdas.num=3"]
    )
    out = tune.run(RunConfig.from_config(cfg), load_prepared("emotions", cfg))
    assert out["select_by"] == ["accuracy", "f1_micro", "f1_macro", "f1_samples"]
    for name, sel in out["selected"].items():
        assert sel["value"] == max(out["metrics"][name])
        assert out["greater_is_better"][name]


def test_baselines(prepared) -> None:
    cfg = run_config(prepared, ["task=ordinal", "model=median", "lambdas.num=3"])
    out = tune.run(RunConfig.from_config(cfg), load_prepared("ERA", cfg))
    assert out["lambdas"] == [None] and out["selected"]["mae"]["lambda"] is None
    assert out["n_iter"] == [None]
    cfg = run_config(prepared, ["task=ordinal", "set=reals", "decoder=round", "lambdas.num=3"])
    out = tune.run(RunConfig.from_config(cfg), load_prepared("ERA", cfg))
    assert len(out["lambdas"]) == 3 and out["warm_start"] is False


def test_non_convergence_is_counted_not_printed(prepared, caplog) -> None:
    # one iteration of L-BFGS, then one of the Newton method that finishes it (a single
    # Newton step can reach 1e-12 at lambda = 1e4, where the problem is nearly quadratic)
    overrides = ["task=label_ranking", "lambdas.num=2", "model.max_iter=1", "model.tol=1e-300"]
    cfg = run_config(prepared, overrides)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = tune.run(RunConfig.from_config(cfg), load_prepared("iris", cfg))
    assert out["converged"] == [False, False]
    assert not [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert "2 of 2 fits stopped before convergence" in caplog.text


def _without_fit_times(calls: list) -> list:
    """Recorded tracker calls, the times (fit and tune seconds) left out."""
    out = []
    for method, args, kwargs in calls:
        if method == "log_tuning":
            tuning = {k: v for k, v in args[0].items() if k not in ("fit_seconds", "seconds")}
            args = (tuning, *args[1:])
        elif method == "log_metrics":
            args = ({k: v for k, v in args[0].items() if k != "tune_seconds"}, *args[1:])
        out.append((method, args, kwargs))
    return out


def _without_times(tuned: dict) -> dict:
    return {k: v for k, v in tuned.items() if k not in ("fit_seconds", "seconds")}


def test_runs_decoding_differently_are_tuned_once_each_as_alone(prepared, fit_memos) -> None:
    """The stage's group task (:func:`pipeline.runs.sweeps.tune_units`: runs that differ
    only in how they decode) gives each run what its own task gives, to the last bit --
    validation values, selection, iterations, the child runs it logs -- with every fit of
    the grid solved once."""
    from pipeline.runs import parallel, sweeps

    base = ["task=multilabel", "dataset=emotions", "set=unit_cube", "lambdas.num=4"]
    decoders = (
        ["decoder=unit_cube"],
        ["decoder=knapsack"],
        ["decoder=knapsack", "decoder.params.upper=auto_round"],
    )
    runs = [RunConfig.from_config(run_config(prepared, [*base, *d])) for d in decoders]
    keys = {parallel.fit_group_key(run) for run in runs}
    assert len(keys) == 1
    alone = [parallel.tune_recorded_task(run) for run in runs]
    grouped = sweeps.tune_units([(run, True) for run in runs])
    assert [(m.hits, m.misses) for m in fit_memos] == [(8, 4)]
    for (t_alone, calls_alone), (t_group, calls_group) in zip(alone, grouped, strict=True):
        assert _without_times(t_group) == _without_times(t_alone)
        assert _without_fit_times(calls_group) == _without_fit_times(calls_alone)
    # the decoders differ: not every validation curve is the same
    assert len({json.dumps(t["metrics"]) for t, _ in grouped}) > 1
