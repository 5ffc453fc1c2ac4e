"""``model=mlp`` (issue 33): the iris run end to end through ``pipeline.train`` into a
temporary MLflow store (epoch curves, device and torch version, the logged model loaded
with ``mlflow.pyfunc`` predicting from raw features), the same seed giving the same
metrics, the clean failures (PyTorch missing, ``device=cuda`` without a GPU, a diverging
fit), and the DVC stages on a small grid."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from pipeline import train
from pipeline.config.composition import make_estimator, validate
from pipeline.data.api import load_prepared
from pipeline.errors import CompositionError, ConfigError
from pipeline.params import compose_params
from pipeline.runs import index

from .conftest import run_config

torch = pytest.importorskip("torch")

#: a small network and grid: seconds on iris
SMALL = [
    "model=mlp",
    "lambdas.num=2",
    "model.hidden_layer_sizes=[8]",
    "model.max_iter=15",
    "model.learning_rate=0.01",
    "model.device=cpu",
    "progress=false",
]


def _config(prepared, tmp_path: Path, extra: list[str] = ()) -> dict:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    return run_config(prepared, [*SMALL, f"tracking.uri={uri}", "tracking.figures=false", *extra])


def test_mlp_composes_into_the_task_network(prepared) -> None:
    cfg = run_config(prepared, ["model=mlp", "task=ordinal", "set=order_simplex",
                                "dataset=squash-stored"])  # fmt: skip
    comp = validate(cfg)
    assert comp.model == "mlp" and comp.label == "order_simplex->order_simplex mlp"
    est = make_estimator(comp, alpha=0.5, warm_start=True)
    assert type(est).__name__ == "ProjectionMLPOrdinalRegressor"
    params = est.get_params()
    assert params["alpha"] == 0.5 and params["hidden_layer_sizes"] == (100,)
    assert params["warm_start"] is False  # every lambda's fit starts from the seed
    assert params["random_state"] == 0 and params["early_stopping"] is True
    with pytest.raises(ConfigError, match=r"model.dropout=1.5 is invalid"):
        train.run(run_config(prepared, ["model=mlp", "model.dropout=1.5"]))


@pytest.mark.slow
def test_iris_end_to_end_into_a_temporary_store(prepared, tmp_path, monkeypatch) -> None:
    import mlflow
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_PICKLE_DESERIALIZATION", "true")
    cfg = _config(prepared, tmp_path)
    out = train.run(cfg)
    uri = cfg["tracking"]["uri"]
    client = MlflowClient(uri)
    run = client.get_run(out["run_id"])
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "iris · birkhoff/birkhoff · euclidean · mlp"
    tags, params = run.data.tags, run.data.params
    assert tags["model"] == "mlp" and tags["composition"] == "birkhoff->birkhoff mlp"
    assert tags["device"] == "cpu" and tags["torch_version"] == torch.__version__
    assert params["model"] == "mlp" and params["device"] == "cpu"
    assert params["hidden_layer_sizes"] == "[8]" and params["lambdas"] == "0.0001..10000 x2"
    # the refitted network's per-epoch curves: metric histories, step = epoch
    model = out["refitted"].model_for("hamming")
    loss = client.get_metric_history(run.info.run_id, "epoch.loss")
    assert [m.step for m in loss] == list(range(1, model.n_iter_ + 1))
    assert [m.value for m in loss] == pytest.approx(model.history_["loss"])
    val = client.get_metric_history(run.info.run_id, "epoch.val_score")
    assert [m.value for m in val] == pytest.approx(model.history_["val_score"])
    # one child run per lambda (best-3 of a grid of 2), the test metric
    children = client.search_runs(
        [run.info.experiment_id], f"tags.mlflow.parentRunId = '{run.info.run_id}'"
    )
    assert len(children) == 2
    assert run.data.metrics["test.hamming"] == pytest.approx(out["headline"]["hamming"])
    # the logged model: scaler + network, loaded with pyfunc, predicts from raw features
    (logged,) = mlflow.search_logged_models(
        experiment_ids=[run.info.experiment_id],
        filter_string=f"source_run_id = '{run.info.run_id}'",
        output_format="list",
    )
    assert logged.name == "iris-birkhoff-birkhoff-euclidean-mlp"
    pyfunc = mlflow.pyfunc.load_model(logged.model_uri)
    assert pyfunc.metadata.signature is not None
    X_test = load_prepared("iris", cfg).test[0]
    sk = mlflow.sklearn.load_model(logged.model_uri)
    X_raw = sk.named_steps["scaler"].inverse_transform(X_test)
    predicted = np.asarray(pyfunc.predict(X_raw))
    np.testing.assert_array_equal(predicted, model.predict(X_test))
    assert predicted.shape == (len(X_test), 3)  # rankings of iris's 3 labels

    # the same seed, the same metrics bit for bit (CPU)
    again = train.run(_config(prepared, tmp_path / "again"))
    assert again["test"] == out["test"]
    assert again["tune"]["metrics"] == out["tune"]["metrics"]


def test_torch_missing_is_one_line(prepared, monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a, **k: None if name == "torch" else real(name, *a, **k),
    )
    with pytest.raises(CompositionError) as exc:
        validate(run_config(prepared, ["model=mlp"]))
    assert str(exc.value) == (
        "model=mlp needs PyTorch, which is not installed: pip install 'projloss[torch]'"
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_without_gpu_is_one_line(prepared) -> None:
    with pytest.raises(CompositionError, match=r"^model.device=cuda: device='cuda' but") as e:
        validate(run_config(prepared, ["model=mlp", "model.device=cuda"]))
    assert "\n" not in str(e.value)


def test_diverging_fit_is_an_error_not_a_result(prepared, tmp_path) -> None:
    from mlflow.tracking import MlflowClient

    cfg = _config(prepared, tmp_path, ["model.learning_rate=1e30", "model.dtype=float32"])
    with pytest.raises(ConfigError) as exc:
        train.run(cfg)
    msg = str(exc.value)
    assert "\n" not in msg and "alpha (lambda) = 1e+04" in msg
    assert "lower the learning rate" in msg and "model.learning_rate" in msg
    client = MlflowClient(cfg["tracking"]["uri"])
    (exp,) = [e for e in client.search_experiments() if e.name == "projloss/label_ranking"]
    runs = client.search_runs([exp.experiment_id], "tags.model = 'mlp'")
    assert runs and all(r.info.status == "FAILED" for r in runs if not r.data.tags.get(
        "mlflow.parentRunId"))  # fmt: skip
    assert all("test.hamming" not in r.data.metrics for r in runs)


@pytest.mark.slow
def test_command_line_multirun_over_sets_and_datasets(prepared, tmp_path) -> None:
    """``python -m pipeline.train task=label_ranking model=mlp set=birkhoff,permutahedron
    dataset=iris,wine --multirun`` (the small network), as a user types it: exit 0, one
    summary line per job."""
    import re

    from .conftest import data_overrides
    from .test_train import _cli

    args = ["task=label_ranking", "model=mlp", "set=birkhoff,permutahedron",
            "dataset=iris,wine", "--multirun", *SMALL[1:],
            f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}", "tracking.log_models=false",
            "tracking.figures=false", f"hydra.sweep.dir={tmp_path / 'sweep'}",
            *data_overrides(prepared)]  # fmt: skip
    done = _cli(args, tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    jobs = re.findall(r"^(\w+) \| label_ranking (\w+)->\w+ mlp \| lambda=", out, re.M)
    assert sorted(jobs) == sorted(
        (d, s) for d in ("iris", "wine") for s in ("birkhoff", "permutahedron")
    ), out


@pytest.mark.slow
def test_dvc_stages_with_the_mlp(tmp_path, mirror, monkeypatch) -> None:
    """``dvc repro`` of one experiment's evaluate stage (fetch, preprocess, tune, refit,
    evaluate) with the MLP on a small grid, two runs fitted in forked worker processes
    (``n_jobs=2``): results and the MLflow runs as for a linear model, plus the epoch
    curves."""
    import sys

    from mlflow.tracking import MlflowClient

    from .test_dvc import _run, copy_project, dvc_env

    repo = tmp_path / "repo"
    repo.mkdir()
    copy_project(repo)
    monkeypatch.delenv("PROJLOSS_MIRROR", raising=False)
    overrides = ["experiments=smoke", "datasets=[iris]", "lambdas.num=2", f"data.mirror={mirror}",
                 "tracking.figures=false", "n_jobs=2"]  # fmt: skip
    params = yaml.safe_load(compose_params(overrides))
    mlp = [o.replace("model=linear", "model=mlp") for o in
           params["experiments"]["smoke-birkhoff"]["overrides"]]  # fmt: skip
    mlp += [o for o in SMALL if o.startswith("model.")]
    params["experiments"] = {
        "smoke-mlp": {"dataset": "iris", "overrides": mlp,
                      "runs": {"birkhoff-birkhoff": ["set=birkhoff", "decoder=birkhoff"],
                               "reals-birkhoff": ["set=reals", "decoder=birkhoff"]}}
    }  # fmt: skip
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    env = dvc_env(repo)
    for args in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "i"]):
        _run(args, repo, env)
    dvc = str(Path(sys.executable).parent / "dvc")
    _run([dvc, "repro", "evaluate@smoke-mlp"], repo, env)
    key = "smoke-mlp"
    tuning = index.read_json(repo / f"data/tuning/{key}.json", repo)  # with the run ids
    metrics = json.loads((repo / f"metrics/{key}.json").read_text())
    client = MlflowClient(f"sqlite:///{repo / 'mlflow.db'}")
    assert list(tuning["runs"]) == ["birkhoff-birkhoff", "reals-birkhoff"]
    for run in tuning["runs"]:
        assert len(tuning["runs"][run]["tune"]["lambdas"]) == 2
        assert tuning["runs"][run]["config"]["model"]["name"] == "mlp"
        refit = json.loads((repo / f"models/{key}/{run}/refit.json").read_text())
        assert refit["models"]
        assert set(metrics[run]["test"]) == {"hamming"}
        parent = client.get_run(tuning["runs"][run]["run_id"])
        assert parent.info.status == "FINISHED" and parent.data.tags["model"] == "mlp"
        test = metrics[run]["test"]["hamming"]
        assert parent.data.metrics["test.hamming"] == pytest.approx(test)
        assert client.get_metric_history(parent.info.run_id, "epoch.loss")
        assert parent.data.tags["device"] == "cpu"
