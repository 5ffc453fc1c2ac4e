"""Refit stage: one fit on train + validation per distinct selected lambda."""

from __future__ import annotations

import json
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from pipeline.config.composition import make_estimator, validate
from pipeline.config.run import RunConfig
from pipeline.data.api import load_prepared
from pipeline.runs import refit, tune

from ..conftest import run_config


def test_refit_each_distinct_lambda_on_train_val(prepared, tmp_path) -> None:
    cfg = run_config(
        prepared, ["task=multilabel", "dataset=emotions", "set=unit_cube", "lambdas.num=3"]
    )
    data = load_prepared("emotions", cfg)
    run = RunConfig.from_config(cfg)
    tuned = tune.run(run, data)
    # make two metrics choose different lambdas, whatever the data say
    tuned["selected"]["f1_macro"] = {"index": 0, "lambda": tuned["lambdas"][0], "value": 0.0}
    tuned["selected"]["accuracy"] = {"index": 2, "lambda": tuned["lambdas"][2], "value": 0.0}
    out = refit.run(run, data, tuned)
    distinct = {s["index"] for s in tuned["selected"].values()}
    assert set(out.models) == distinct
    assert out.selection == {k: v["index"] for k, v in tuned["selected"].items()}
    X, y = data.train_val
    assert X.shape[0] == data.train[0].shape[0] + data.val[0].shape[0]
    Xt = data.test[0]
    for i, model in out.models.items():
        assert model.alpha == tuned["lambdas"][i] == out.lambdas[i]
        ref = make_estimator(validate(cfg), alpha=tuned["lambdas"][i])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ref.fit(X, y)
        np.testing.assert_array_equal(model.predict(Xt), ref.predict(Xt))
        assert out.fits[i]["n_iter"] == model.n_iter_
    # save / load round trip
    paths = refit.save(out, tmp_path / "models")
    assert sorted(p.name for p in paths) == sorted(f"lambda-{i:02d}.joblib" for i in distinct)
    index = json.loads((tmp_path / "models" / refit.INDEX).read_text())
    assert index["selection"] == out.selection
    back = refit.load(tmp_path / "models")
    assert back.selection == out.selection and back.lambdas == out.lambdas
    for i in distinct:
        np.testing.assert_array_equal(back.models[i].predict(Xt), out.models[i].predict(Xt))
    assert not [p for p in (tmp_path / "models").iterdir() if p.name.endswith(".part")]


def test_runs_decoding_differently_are_refitted_once_each_as_alone(
    prepared, tmp_path, fit_memos
) -> None:
    """The refit stage's group task (:func:`pipeline.runs.sweeps.refit_runs`: runs that fit
    the same models) saves for each run the
    models its own task saves, with a refit at the same lambda solved once."""
    from pipeline.runs import parallel, sweeps

    base = ["task=multilabel", "dataset=emotions", "set=unit_cube", "lambdas.num=3"]
    runs = [
        RunConfig.from_config(run_config(prepared, [*base, f"decoder={d}"]))
        for d in ("unit_cube", "knapsack")
    ]
    assert len(parallel.group_by_fit({str(i): run for i, run in enumerate(runs)})) == 1
    data = load_prepared("emotions", runs[0].data)
    tuned = [tune.run(run, data) for run in runs]
    for i, (run, t) in enumerate(zip(runs, tuned, strict=True)):
        parallel.refit_task(run, t, tmp_path / f"alone{i}")
    pairs = enumerate(zip(runs, tuned, strict=True))
    sweeps.refit_runs([(run, t, tmp_path / f"group{i}") for i, (run, t) in pairs])
    shared = {s["index"] for s in tuned[0]["selected"].values()} & {
        s["index"] for s in tuned[1]["selected"].values()
    }
    assert fit_memos[0].hits >= len(shared) >= 1
    Xt = data.test[0]
    for i in range(2):
        alone, grouped = refit.load(tmp_path / f"alone{i}"), refit.load(tmp_path / f"group{i}")
        assert alone.selection == grouped.selection
        for j, model in alone.models.items():
            np.testing.assert_array_equal(grouped.models[j].coef_, model.coef_)
            np.testing.assert_array_equal(grouped.models[j].predict(Xt), model.predict(Xt))
