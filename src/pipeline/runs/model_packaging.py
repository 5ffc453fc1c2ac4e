"""A fitted estimator as an MLflow model directory, ready to be logged.

:func:`prepare_model` saves a model as ``mlflow.sklearn.log_model`` would before logging
it (the skops file, the MLmodel with its signature, the input example, the pinned
requirements): the costly part of logging a model, which a worker process can do
(:class:`pipeline.runs.tracking.RecordingTracker`). :func:`model_files` copies such a
directory for one logged model, its MLmodel given the logged model's identity; the
tracker then uploads it with ``MlflowClient.log_model_artifacts``
(:meth:`pipeline.runs.mlflow_tracker.MLflowTracker.log_model_files`). Only MLflow's
public API is used (``mlflow.sklearn.save_model``, ``mlflow.models.Model``).
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def trusted_types(model: Any) -> list[str]:
    """The types of ``model`` that skops (MLflow's default sklearn serialization) does not
    trust by default and that this project defines (``projloss.*``) or registered
    (:func:`projloss.sets.register_set`): our estimators, sets and target losses, and a
    user's set. Anything else stays untrusted, so logging fails loudly on it."""
    import skops.io

    from projloss import SETS

    registered = {f"{c.__module__}.{c.__qualname__}" for c in SETS.values()}
    untrusted = skops.io.get_untrusted_types(data=skops.io.dumps(model))
    return [t for t in untrusted if t.startswith("projloss.") or t in registered]


def prepare_model(model: Any, path: Path, X_example: Any = None) -> Path:
    """Save ``model`` to ``path`` (a new folder) as ``mlflow.sklearn.log_model`` would before
    logging it: the skops file (this project's types trusted, :func:`trusted_types`), the
    MLmodel with the signature inferred from ``X_example`` and its predictions, the input
    example, the pinned requirements (:func:`requirements`: explicit, so that MLflow does
    not re-import the model in a subprocess to infer them, seconds per model). The logged
    model's identity is written by :func:`model_files`."""
    import mlflow.sklearn

    signature = None
    if X_example is not None:
        try:
            from mlflow.models import infer_signature

            signature = infer_signature(X_example, model.predict(X_example))
        except Exception as exc:  # a signature is a nicety
            log.debug("no model signature: %s", exc)
    mlflow.sklearn.save_model(
        sk_model=model,
        path=str(path),
        serialization_format=mlflow.sklearn.SERIALIZATION_FORMAT_SKOPS,
        signature=signature,
        input_example=X_example,
        pip_requirements=requirements(),
        skops_trusted_types=trusted_types(model),
    )
    return path


def warm_up(directory: str) -> None:
    """Save a tiny scikit-learn model into the empty folder ``directory`` (the caller
    removes it), as :func:`prepare_model` saves one: MLflow's check of a model's
    requirements scans every installed distribution the first time in a process (0.9 to
    2.5 s). The preload server (:func:`pipeline.preload_server._save_a_model`) calls it
    once it is ready, between two stages, so that the refit and evaluate stages (and
    their workers) forked after that start with the scan done."""
    import mlflow.sklearn
    import numpy as np
    from sklearn.dummy import DummyRegressor

    model = DummyRegressor().fit(np.zeros((2, 1)), np.zeros(2))
    mlflow.sklearn.save_model(
        model,
        os.path.join(directory, "model"),
        serialization_format=mlflow.sklearn.SERIALIZATION_FORMAT_SKOPS,
        pip_requirements=requirements(),
    )


#: the attributes of an MLmodel that name the logged model (the rest: the saved files')
MODEL_IDENTITY = frozenset(
    {"artifact_path", "run_id", "model_uuid", "model_id", "utc_time_created"}
)


def model_files(local: str, prepared: Path, run_id: str, model_id: str, location: str) -> None:
    """The files of logged model ``model_id`` (of run ``run_id``, stored at ``location``) in
    ``local``: a copy of those :func:`prepare_model` saved in ``prepared``, their MLmodel
    given the logged model's identity (logged model id, run, artifact location, creation
    time) as ``Model.log`` writes it.

    The MLmodel is read and written as ``Model.load`` and ``Model.save`` do (``from_dict``
    of its YAML, ``to_dict`` dumped by ``yaml.safe_dump(..., default_flow_style=False)``)
    with libyaml's parser and emitter when PyYAML has them (the same text; the pure-Python
    ones took 20 ms a model, a third of logging it)."""
    import shutil

    import yaml
    from mlflow.models import Model

    identity = Model(artifact_path=location, model_uuid=model_id, run_id=run_id, model_id=model_id)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    with open(os.path.join(prepared, "MLmodel")) as f:
        saved = Model.from_dict(yaml.load(f, Loader=loader))
    shutil.copytree(prepared, local)
    for key, value in vars(saved).items():
        if key not in MODEL_IDENTITY:
            setattr(identity, key, value)
    with open(os.path.join(local, "MLmodel"), "w") as out:
        yaml.dump(identity.to_dict(), out, Dumper=dumper, default_flow_style=False)


def requirements() -> list[str]:
    """The model's pip requirements: this project and its numerical stack, pinned."""
    return list(_pinned_requirements())


@functools.cache
def _pinned_requirements() -> tuple[str, ...]:
    """:func:`requirements`, looked up once per process (the installed versions)."""
    from importlib.metadata import PackageNotFoundError, version

    reqs = []
    for pkg in ("projloss", "numpy", "scipy", "scikit-learn"):
        try:
            reqs.append(f"{pkg}=={version(pkg)}")
        except PackageNotFoundError:
            reqs.append(pkg)
    return tuple(reqs)
