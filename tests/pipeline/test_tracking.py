"""Tracking: URIs, the fast failure on an unreachable server, MLflow parent/child runs."""

from __future__ import annotations

import contextlib
import http.server
import io
import json
import logging
import socket
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from pipeline.runs.mlflow_tracker import MLflowTracker, make_tracker
from pipeline.runs.store import artifact_location, probe, resolve_uri
from pipeline.runs.tracking import Tracker, TrackingError, TrackingSettings

from .conftest import PAPER_RUNS, ROOT, PaperRuns


def closed_port() -> int:
    """A local TCP port nobody listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_uris(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert resolve_uri(None) == f"sqlite:///{ROOT / 'mlflow.db'}"
    assert resolve_uri("sqlite:///runs/m.db") == f"sqlite:///{ROOT / 'runs' / 'm.db'}"
    assert resolve_uri("sqlite:////abs/m.db?timeout=3") == "sqlite:////abs/m.db?timeout=3"
    assert resolve_uri("mlruns") == (ROOT / "mlruns").as_uri()
    assert resolve_uri("file:mlruns") == (ROOT / "mlruns").as_uri()
    assert resolve_uri("http://host:5000") == "http://host:5000"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracking:5000")
    assert resolve_uri(None) == "http://tracking:5000"
    assert resolve_uri("sqlite:////x.db") == "sqlite:////x.db"  # the config wins
    assert artifact_location("sqlite:////data/m.db") == "file:///data/mlartifacts"
    assert artifact_location("http://h:5000") is None
    assert artifact_location("http://h:5000", "s3://bucket/a") == "s3://bucket/a"
    assert artifact_location("sqlite:////d/m.db", "arts") == (ROOT / "arts").as_uri()


def test_unreachable_server_fails_fast() -> None:
    uri = f"http://127.0.0.1:{closed_port()}"
    start = time.perf_counter()
    with pytest.raises(TrackingError, match=r"unreachable.*unset both to use the local SQLite"):
        make_tracker({"uri": uri, "probe_timeout": 2.0})
    assert time.perf_counter() - start < 5
    with pytest.raises(TrackingError, match=uri):
        probe(uri, 1.0)


def test_a_web_server_that_is_not_mlflow_is_refused() -> None:
    """A 404 (or any answer that is not MLflow's /version) means another service: the
    probe names the URI and the remedy (issue 11, item 6); local stores are not probed."""

    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    uri = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with pytest.raises(TrackingError, match=rf"{uri} answers but is not an MLflow server"):
            probe(uri, 2.0)
    finally:
        server.shutdown()
        server.server_close()
    probe("sqlite:////nowhere/m.db", 0.1)  # local stores are not probed


def test_disabled_tracking_is_a_no_op() -> None:
    tracker = make_tracker({"enabled": False})
    assert type(tracker) is Tracker and not tracker.enabled
    with tracker.parent_run(task="ordinal", name="x") as run_id:
        assert run_id is None
        assert tracker.log_tuning({"lambdas": [1.0], "metrics": {"m": [1.0]}}) is None
    with pytest.raises(ValueError, match="unknown tracking setting"):
        TrackingSettings.from_config({"urii": "x"})


def test_mlflow_parent_child_and_resume(tmp_path: Path, caplog, store_uri: str) -> None:
    import mlflow
    from mlflow.tracking import MlflowClient

    uri = store_uri
    tracker = MLflowTracker(TrackingSettings(uri=uri, group="g1"))
    with tracker.parent_run(
        task="ordinal", name="p", tags={"set": "reals"}, params={"a.b": "1"}
    ) as run_id:
        child = tracker.child_run(
            "lambda=1", {"lambda": 1.0}, {"val.mae": 0.5, "bad": float("nan")}
        )
        tracker.log_metrics({"val.mae": 0.5})
    with tracker.parent_run(task="ordinal", name="p", run_id=run_id) as resumed:
        assert resumed == run_id
        tracker.log_metrics({"test.mae": 0.25})
    client = MlflowClient(uri)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.metrics == {"val.mae": 0.5, "test.mae": 0.25}
    assert run.data.params == {"a.b": "1"}
    assert run.data.tags["group"] == "g1" and run.data.tags["set"] == "reals"
    kid = client.get_run(child)
    assert kid.data.tags["mlflow.parentRunId"] == run_id
    assert kid.data.tags["set"] == "reals"  # composition tags reach the children
    assert kid.data.metrics == {"val.mae": 0.5} and kid.data.params == {"lambda": "1.0"}
    exp = client.get_experiment(run.info.experiment_id)
    assert exp.name == "projloss/ordinal"
    assert exp.artifact_location == (tmp_path / "mlartifacts").as_uri()
    with (
        caplog.at_level(logging.WARNING),
        tracker.parent_run(task="ordinal", name="q", run_id="0" * 32) as other,
    ):
        assert other != run_id
    assert "not found" in caplog.text
    assert mlflow.active_run() is None


def test_replay_logs_metrics_params_and_tags_in_one_batch(tmp_path: Path, store_uri: str) -> None:
    """A recorded run (a dozen metric, param and tag calls: the evaluate stage's) replayed
    into MLflow gives the run the separate calls give -- every metric step of the
    validation curve, the params, the tags; non-finite values skipped, the last value of a
    metric logged twice at a step its latest -- in one ``log_batch`` instead of one write per
    call."""
    from mlflow.tracking import MlflowClient

    from pipeline.runs.tracking import RecordingTracker

    rec = RecordingTracker()
    rec.log_metrics({"test.mae": 0.25, "bad": float("inf")})
    rec.log_params({"lambda.mae": "0.1"})
    for step in range(12):
        rec.log_metrics({"val.mae": 1.0 / (step + 1), "lambda": 10.0**-step}, step=step)
    rec.set_tags({"structure": "ok"})
    rec.log_metrics({"val.mae": 0.5}, step=3)  # again at step 3: the last value counts
    rec.set_tags({"mlflow.note.content": "a note", "structure": "flagged"})
    rec.log_batch([({"split.x": 2.0}, 7)], params={"n": 3}, tags={"t": "1"})
    uri = store_uri
    tracker = MLflowTracker(TrackingSettings(uri=uri))
    writes: list[str] = []
    client_log_batch = tracker.client.log_batch

    def counted(*args, **kwargs):
        writes.append("log_batch")
        return client_log_batch(*args, **kwargs)

    tracker.client.log_batch = counted
    with tracker.parent_run(task="ordinal", name="batched") as batched:
        RecordingTracker.replay(rec.calls, tracker)
    assert writes == ["log_batch"]
    tracker.client.log_batch = client_log_batch
    with tracker.parent_run(task="ordinal", name="one by one") as separate:
        for method, args, kwargs in rec.calls:  # call by call (log_batch: the base's)
            owner = Tracker if method == "log_batch" else MLflowTracker
            getattr(owner, method)(tracker, *args, **kwargs)
    client = MlflowClient(uri)
    runs = [client.get_run(r) for r in (batched, separate)]
    assert runs[0].data.metrics == runs[1].data.metrics
    assert runs[0].data.params == runs[1].data.params == {"lambda.mae": "0.1", "n": "3"}
    user_tags = [{k: v for k, v in r.data.tags.items() if k != "mlflow.runName"} for r in runs]
    assert user_tags[0] == user_tags[1] and user_tags[0]["structure"] == "flagged"
    assert user_tags[0]["mlflow.note.content"] == "a note"
    assert "bad" not in runs[0].data.metrics
    for key in ("val.mae", "lambda", "split.x"):
        history = [
            sorted((m.step, m.value) for m in client.get_metric_history(r, key))
            for r in (batched, separate)
        ]
        assert history[0] == history[1], key
    curve = sorted((m.step, m.value) for m in client.get_metric_history(batched, "val.mae"))
    assert len(curve) == 13 and (3, 0.25) in curve and (3, 0.5) in curve
    assert runs[0].data.metrics["val.mae"] == 1.0 / 12  # the latest: step 11


def _model_files(client, run_id: str, model_id: str, dst: Path) -> dict[str, bytes]:
    """The files of a logged model, by relative path."""
    import mlflow.artifacts

    root = Path(mlflow.artifacts.download_artifacts(f"models:/{model_id}", dst_path=str(dst)))
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _logged_model_rows(db: Path, model_id: str) -> dict[str, list[tuple]]:
    """The rows of a logged model in MLflow's tables (ids and times compared to its run's,
    the registered versions' tag left out)."""
    import sqlite3

    queries = {
        "logged_models": "select experiment_id, name, status, lifecycle_stage, model_type,"
        " artifact_location like '%/models/' || model_id || '/artifacts',"
        " creation_timestamp_ms <= last_updated_timestamp_ms from logged_models"
        " where model_id = :m",
        "logged_model_params": "select experiment_id, param_key, param_value"
        " from logged_model_params where model_id = :m",
        "logged_model_tags": "select experiment_id, tag_key, tag_value from logged_model_tags"
        " where model_id = :m and tag_key != 'mlflow.modelVersions'",
        "logged_model_metrics": "select l.metric_name, l.metric_step, l.metric_value,"
        " l.experiment_id, l.dataset_uuid, l.dataset_name, l.dataset_digest,"
        " l.run_id = o.source_run_id, exists(select 1 from metrics r where"
        " r.run_uuid = l.run_id and r.key = l.metric_name and r.step = l.metric_step and"
        " r.timestamp = l.metric_timestamp_ms and r.value = l.metric_value)"
        " from logged_model_metrics l join logged_models o using (model_id)"
        " where model_id = :m",
        "inputs": "select i.source_type, i.destination_type, i.step,"
        " i.source_id = o.source_run_id from inputs i join logged_models o"
        " on o.model_id = i.destination_id where i.destination_id = :m",
    }
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return {t: sorted(conn.execute(q, {"m": model_id})) for t, q in queries.items()}


@pytest.mark.slow
@pytest.mark.parametrize("how", ["direct", "recorded"])
def test_logged_model_is_mlflow_sklearns_without_the_serving_check(
    prepared,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
    store_uri: str,
) -> None:
    """:meth:`MLflowTracker.log_model` logs what ``mlflow.sklearn.log_model`` logs (the same
    files: MLmodel with its signature and input example, the example, the pinned
    requirements, the skops model; the logged model's params and metrics copied from the
    run; the registered version) without MLflow reloading the model to serve its example
    (a third of the call's time, once per evaluated run); the model still loads and
    predicts from raw rows as an sklearn model and as a pyfunc. ``recorded``: the same
    when a :class:`RecordingTracker` (an evaluate worker) saves the model and records its
    files (not the estimator: the saving is the worker's work), replayed by the stage."""
    import pickle

    import mlflow
    import mlflow.pyfunc
    import mlflow.sklearn
    import yaml
    from mlflow.models import infer_signature
    from mlflow.tracking import MlflowClient

    from pipeline.config.composition import Composition, make_estimator
    from pipeline.config.run import RunConfig
    from pipeline.data import load_prepared
    from pipeline.runs import mlflow_view as view
    from pipeline.runs.model_packaging import requirements, trusted_types

    from .conftest import run_config

    monkeypatch.setenv("MLFLOW_ALLOW_PICKLE_DESERIALIZATION", "true")
    cfg = run_config(prepared, [])
    data = load_prepared("iris", cfg)
    comp = Composition(
        "label_ranking",
        "iris",
        "birkhoff",
        "euclidean",
        "birkhoff",
        "linear",
        "projection",
        "hamming",
    )
    estimator = make_estimator(comp, alpha=1.0).fit(*data.train)
    scaler = view.fitted_scaler(data, RunConfig.from_config(cfg))
    model = view.raw_pipeline(estimator, scaler)
    X = view.raw_rows(data.test[0][:5], scaler)
    uri = store_uri
    tracker = MLflowTracker(TrackingSettings(uri=uri, register=True))
    loads: list[str] = []
    real_load = mlflow.pyfunc.load_model

    def counted_load(model_uri, *args, **kwargs):
        loads.append(str(model_uri))
        return real_load(model_uri, *args, **kwargs)

    monkeypatch.setattr(mlflow.pyfunc, "load_model", counted_load)
    with tracker.parent_run(task="label_ranking", name="ours", params={"p": "1"}) as ours:
        tracker.log_metrics({"val.hamming": 2.5, "lambda.hamming": 1.0})
        tracker.log_metrics({"curve": 4.0}, step=0)  # a curve: its step 0 is linked
        tracker.log_metrics({"curve": 3.0}, step=1)
        if how == "direct":
            tracker.log_model(model, "iris-model", X_example=X, registered_name="reg-ours")
        else:
            from pipeline.runs.tracking import RecordingTracker

            rec = RecordingTracker()
            rec.log_model(model, "iris-model", X_example=X, registered_name="reg-ours")
            assert [c[0] for c in rec.calls] == ["log_model_files"]
            files = rec.calls[0][1][0]
            assert {"MLmodel", "model.skops", "requirements.txt"} <= set(files)
            RecordingTracker.replay(pickle.loads(pickle.dumps(rec.calls)), tracker)
    assert loads == []  # MLflow's serving check reloads the model: once per model before
    monkeypatch.setattr(mlflow.pyfunc, "load_model", real_load)
    with tracker.parent_run(task="label_ranking", name="mlflow's", params={"p": "1"}) as theirs:
        tracker.log_metrics({"val.hamming": 2.5, "lambda.hamming": 1.0})
        tracker.log_metrics({"curve": 4.0}, step=0)  # a curve: its step 0 is linked
        tracker.log_metrics({"curve": 3.0}, step=1)
        tracker.flush()  # kept for the run's end otherwise: MLflow reads them from the store
        mlflow.sklearn.log_model(
            model,
            name="iris-model",
            signature=infer_signature(X, model.predict(X)),
            input_example=X,
            pip_requirements=requirements(),
            skops_trusted_types=trusted_types(model),
            registered_model_name="reg-theirs",
        )
    client = MlflowClient(uri)
    exp_id = client.get_run(ours).info.experiment_id
    logged = {}
    for run_id in (ours, theirs):
        (logged[run_id],) = client.search_logged_models(
            experiment_ids=[exp_id], filter_string=f"source_run_id = '{run_id}'"
        )
    a, b = logged[ours], logged[theirs]
    assert a.name == b.name == "iris-model"
    assert a.params == b.params == {"p": "1"}
    assert sorted((m.key, m.value, m.step) for m in a.metrics) == sorted(
        (m.key, m.value, m.step) for m in b.metrics
    )
    assert {m.key: m.value for m in a.metrics} == {
        "val.hamming": 2.5,
        "lambda.hamming": 1.0,
        "curve": 4.0,
    }
    assert a.status == b.status
    assert json.loads(a.tags.pop("mlflow.modelVersions")) == [{"name": "reg-ours", "version": 1}]
    assert json.loads(b.tags.pop("mlflow.modelVersions"))[0]["name"] == "reg-theirs"
    assert a.tags == b.tags
    # their rows in the database (MLflow's Model.log and our public calls): the same but
    # ids and times
    db = tmp_path / "mlflow.db"
    assert _logged_model_rows(db, a.model_id) == _logged_model_rows(db, b.model_id)
    assert len(_logged_model_rows(db, a.model_id)["logged_model_metrics"]) == 3
    assert [o.model_id for o in client.get_run(ours).outputs.model_outputs] == [a.model_id]
    files = [
        _model_files(client, r, logged[r].model_id, tmp_path / n)
        for n, r in (("a", ours), ("b", theirs))
    ]
    assert sorted(files[0]) == sorted(files[1])
    assert {"MLmodel", "input_example.json", "serving_input_example.json"} <= set(files[0])
    for name in files[0]:
        if name == "model.skops":  # skops names the arrays after their ids: same count
            zips = [zipfile.ZipFile(io.BytesIO(f[name])) for f in files]
            assert len(zips[0].namelist()) == len(zips[1].namelist())
        elif name != "MLmodel":
            assert files[0][name] == files[1][name], name
    mlmodel = [yaml.safe_load(f["MLmodel"]) for f in files]
    # our MLmodel's text is what MLflow's writer writes (Model.save: libyaml emits ours)
    from mlflow.models import Model

    assert files[0]["MLmodel"].decode() == Model.from_dict(mlmodel[0]).to_yaml()
    ids = ("model_uuid", "model_id", "run_id", "utc_time_created", "artifact_path")
    for m in mlmodel:
        for key in ids:
            m.pop(key, None)
    assert mlmodel[0] == mlmodel[1]
    assert "signature" in mlmodel[0] and "saved_input_example_info" in mlmodel[0]
    # registered, loaded, predicting from raw rows
    assert [v.run_id for v in client.search_model_versions("name = 'reg-ours'")] == [ours]
    expected = estimator.predict(data.test[0][:5])
    loaded = mlflow.sklearn.load_model(f"models:/{a.model_id}")
    np.testing.assert_array_equal(loaded.predict(X), expected)
    served = mlflow.pyfunc.load_model(f"models:/{a.model_id}").predict(X)
    np.testing.assert_array_equal(np.asarray(served), expected)


@PAPER_RUNS
def test_log_dict_writes_what_mlflow_log_dict_writes(tmp_path: Path, paper_runs: PaperRuns) -> None:
    """The run configs are logged with libyaml's emitter: the same config.yaml as
    ``mlflow.log_dict`` (PyYAML's pure-Python emitter), for every run of the paper's
    experiments (long registry nodes, floats, nested lists, None, booleans)."""
    import yaml

    from pipeline.runs.mlflow_tracker import dict_text

    if not yaml.__with_libyaml__:
        pytest.skip("PyYAML without libyaml: mlflow.log_dict is used as is")
    configs = [cfg for key in ("ord", "ml", "lr") for cfg in paper_runs.runs(key).values()]
    odd = {"b": None, "a": [True, 1e-300, float("inf"), "", "x: y", {"z": []}], "c": {}}
    for cfg in [*configs, odd]:
        assert dict_text(cfg, "config.yaml") == yaml.dump(cfg, indent=2, default_flow_style=False)
    assert dict_text(odd, "config.json") is None

    tracker = MLflowTracker(TrackingSettings(uri=f"sqlite:///{tmp_path / 'mlflow.db'}"))
    with tracker.parent_run(task="t", name="r") as run_id:
        tracker.log_dict(configs[0], "config.yaml")
    import mlflow

    text = Path(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="config.yaml"))
    assert yaml.safe_load(text.read_text()) == configs[0]
