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
