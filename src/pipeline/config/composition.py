"""A run's composition: validated from the config, turned into an estimator.

A composition is set x geometry x decoder x task x dataset x model (the Hydra groups of
``conf/``). :func:`validate` checks it before any work, with the pipeline's rules on top of
:func:`projloss.tasks.check_composition` (which validates (projection set, geometry,
decoding set, target loss) for a task):

- the dataset's labels fit the task (label ranking, ordinal and multilabel datasets for
  their tasks; multiclass runs on the ordinal datasets' classes, their order ignored);
- ``decoder: same`` is the projection set when it can decode the task's outputs, else the
  task's decoder (``task.decoder``; e.g. ``set=reals`` decodes with the Birkhoff polytope);
- ``decoder: round`` (ridge regression + rounding) only with ``set=reals``, the Euclidean
  geometry and the linear model, for the ordinal task (paper Table 4, "Round");
- ``model: median`` (predict the training median; paper Table 4, "Baseline") only for the
  ordinal task; it ignores the set, geometry and decoder;
- ``model: mlp`` (a multilayer perceptron, :mod:`projloss.estimators.neural`) needs
  PyTorch (one line naming ``pip install 'projloss[torch]'`` without it) and, with
  ``model.device: cuda``, a GPU PyTorch can see.

Each error is a :class:`CompositionError` (a ``ValueError``) naming the problem and the
valid choices. :func:`make_estimator` builds the scikit-learn estimator of a composition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data.registry import DATASET_TASKS, task_datasets
from ..errors import CompositionError
from ..plain import to_plain
from .settings import TIES, LambdaGrid  # noqa: F401 (importable from here: older imports)

#: the models of the pipeline's baselines (the projection models are the engine's)
BASELINE_MODELS = ("median",)
#: the neural models (the engine's :mod:`projloss.estimators.neural`, PyTorch)
NEURAL_MODELS = ("mlp",)
BASELINE_DECODERS = ("same", "round")


@dataclass(frozen=True)
class Composition:
    """A validated composition (names resolved, parameters kept).

    ``kind`` is ``"projection"`` (a projection-loss estimator), ``"round"`` (ridge +
    rounding) or ``"median"`` (training median).
    """

    task: str
    dataset: str
    set: str
    geometry: str
    decoder: str
    model: str
    kind: str
    target_loss: str | None = None
    set_params: dict[str, Any] = field(default_factory=dict)
    decoder_params: dict[str, Any] = field(default_factory=dict)
    model_params: dict[str, Any] = field(default_factory=dict)

    @property
    def has_lambda(self) -> bool:
        """Whether the estimator has a regularization ``alpha`` to tune (not the median)."""
        return self.kind != "median"

    @property
    def label(self) -> str:
        """A short human name, e.g. ``cube->birkhoff``, ``birkhoff->birkhoff kl poly3``."""
        if self.kind == "median":
            return "median"
        if self.kind == "round":
            return "ridge+round"
        out = f"{self.set}->{self.decoder}"
        if self.geometry != "euclidean":
            out += f" {self.geometry}"
        if self.model == "poly":
            out += f" poly{self.model_params.get('degree', 2)}"
        elif self.model in NEURAL_MODELS:
            out += f" {self.model}"
        return out

    def tags(self) -> dict[str, str]:
        """The composition as MLflow tags."""
        return {
            "task": self.task,
            "dataset": self.dataset,
            "set": self.set,
            "geometry": self.geometry,
            "decoder": self.decoder,
            "model": self.model,
            "composition": self.label,
        }


def _node(cfg: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = cfg.get(key)
    if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
        raise CompositionError(
            f"the config has no valid {key!r} group (a mapping with a 'name'); choose one "
            f"with {key}=<option> (the options are the files of conf/{key}/)"
        )
    return dict(value)


def _task_decoders(task: str) -> tuple[str, ...]:
    from projloss.tasks import get_task

    return get_task(task).decoders


def validate(cfg: Mapping[str, Any]) -> Composition:
    """Check a run config (a composed ``conf/config.yaml``) and resolve its composition."""
    from projloss._validation import GEOMETRIES
    from projloss.estimators._base import MODELS as PROJECTION_MODELS
    from projloss.tasks import TASKS, check_composition

    models = (*PROJECTION_MODELS, *NEURAL_MODELS, *BASELINE_MODELS)

    cfg = to_plain(cfg)
    task_node = _node(cfg, "task")
    task = task_node["name"]
    if task not in TASKS or task not in DATASET_TASKS:
        raise CompositionError(f"unknown task {task!r}; valid tasks are {sorted(DATASET_TASKS)}")
    dataset = _node(cfg, "dataset")
    ds_task = dataset.get("task")
    registry_tasks = sorted({t for ts in DATASET_TASKS.values() for t in ts})
    if ds_task not in registry_tasks:
        raise CompositionError(
            f"dataset {dataset['name']!r} (conf/dataset/{dataset['name']}.yaml) has task "
            f"{ds_task!r}, which is not a dataset task; write one of {', '.join(registry_tasks)}"
        )
    if ds_task not in DATASET_TASKS[task]:
        dirs = (cfg.get("data") or {}).get("dataset_dirs")
        valid = ", ".join(task_datasets(task, dirs)) or "none available offline"
        raise CompositionError(
            f"dataset {dataset['name']!r} has {ds_task} labels, which the {task} task cannot "
            f"use; valid datasets for {task} are {valid} (or any "
            f"{'/'.join(DATASET_TASKS[task])} dataset of the registry)"
        )
    model_node = _node(cfg, "model")
    model = model_node["name"]
    if model not in models:
        raise CompositionError(f"unknown model {model!r}; valid models are {list(models)}")
    model_params = {k: v for k, v in model_node.items() if k != "name"}
    geometry = _node(cfg, "geometry")["name"]
    if geometry not in GEOMETRIES:
        raise CompositionError(f"unknown geometry {geometry!r}; valid geometries: {GEOMETRIES}")
    set_node = _node(cfg, "set")
    dec_node = _node(cfg, "decoder")
    register_class(set_node)
    set_name, decoder = set_node["name"], dec_node["name"]
    set_params = dict(set_node.get("params") or {})
    decoder_params = dict(dec_node.get("params") or {})
    target_loss = task_node.get("target_loss")
    common = {"task": task, "dataset": dataset["name"], "model_params": model_params}

    if model == "median":
        if task != "ordinal":
            raise CompositionError(
                f"model=median (the training-median baseline) is for the ordinal task only, "
                f"not {task}; valid models for {task} are ['linear', 'poly', 'mlp']"
            )
        return Composition(
            set="none", geometry="none", decoder="median", model=model, kind="median", **common
        )
    if decoder == "round":
        problems = []
        if task != "ordinal":
            problems.append(f"task=ordinal (got {task})")
        if set_name != "reals":
            problems.append(f"set=reals (got {set_name})")
        if geometry != "euclidean":
            problems.append(f"geometry=euclidean (got {geometry})")
        if model != "linear":
            problems.append(f"model=linear (got {model})")
        if problems:
            valid = _task_decoders(task) if task in TASKS else ()
            raise CompositionError(
                "decoder=round (ridge regression rounded to the nearest class) needs "
                + ", ".join(problems)
                + f"; valid decoders for the {task} task are {['same', *valid]}"
            )
        return Composition(
            set=set_name,
            geometry=geometry,
            decoder="round",
            model=model,
            kind="round",
            decoder_params=decoder_params,
            **common,
        )

    decoders = _task_decoders(task)
    if decoder == "same":
        decoder = set_name if set_name in decoders else task_node.get("decoder")
        if decoder is None:
            raise CompositionError(
                f"decoder=same: the set {set_name!r} cannot decode {task} outputs and the task "
                f"config has no 'decoder'; give decoder=<one of {list(decoders)}>"
            )
    try:
        comp = check_composition(task, set_name, geometry, decoder, target_loss)
    except ValueError as exc:
        raise CompositionError(
            f"invalid composition (task={task}, set={set_name}, geometry={geometry}, "
            f"decoder={dec_node['name']}): {exc}"
        ) from None
    if dec_node["name"] != "same" and comp.projection_set == comp.decoding_set:
        # the parameters the estimators take as their own (the knapsack's bounds): one value
        if _lifted(set_name, set_params) != _lifted(set_name, decoder_params):
            raise CompositionError(
                f"set={set_name} and decoder={set_name} must have the same "
                f"{'/'.join(_estimator_params(set_name))} (the estimator takes one value), got "
                f"set.params={set_params} and decoder.params={decoder_params}"
            )
    if model in NEURAL_MODELS:
        check_torch(model_params.get("device", "auto"))
    return Composition(
        set=comp.projection_set,
        geometry=comp.geometry,
        decoder=comp.decoding_set,
        model=model,
        kind="projection",
        target_loss=comp.target_loss,
        set_params=set_params,
        decoder_params=decoder_params,
        **common,
    )


def check_torch(device: str = "auto") -> None:
    """``model=mlp`` needs PyTorch, and ``device: cuda`` a GPU it sees: else a one-line
    :class:`CompositionError` with the remedy (PyTorch is imported only for ``cuda``)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise CompositionError(
            "model=mlp needs PyTorch, which is not installed: pip install 'projloss[torch]'"
        )
    if device == "cuda":
        from projloss.estimators.neural import resolve_device

        try:
            resolve_device("cuda")
        except (ImportError, ValueError) as exc:
            raise CompositionError(f"model.device=cuda: {exc}") from None


def register_class(node: Mapping[str, Any]) -> None:
    """Register the set that a ``conf/set/<name>.yaml`` names by its ``class`` (an import
    path, ``package.module.Class``) under its ``name`` (:func:`projloss.sets.register_set`):
    a set defined outside projloss needs only its module and its conf file. A class that
    cannot be imported, or that is not that set, is a :class:`CompositionError`."""
    import importlib

    from projloss.sets import register_set

    path = node.get("class")
    if path is None:
        return
    module, _, attr = str(path).rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise CompositionError(
            f"set.class={path!r} (conf/set/{node['name']}.yaml) cannot be imported: {exc}"
        ) from None
    try:
        register_set(cls, node["name"])
    except (TypeError, ValueError) as exc:
        raise CompositionError(f"set.class={path!r}: {exc}") from None


def _estimator_params(name: str) -> dict[str, tuple[str, Any]]:
    """The set's parameters that the estimators take as their own
    (:attr:`projloss.sets.base.ConvexSet.estimator_params`), none for a name that is not
    a registered set (``round``, ``median``)."""
    from projloss.sets import SETS

    cls = SETS.get(name)
    return dict(cls.estimator_params) if cls is not None else {}


def _lifted(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``{estimator argument: value}`` of the set's :func:`_estimator_params` in
    ``params`` (their defaults when absent)."""
    return {arg: params.get(p, default) for p, (arg, default) in _estimator_params(name).items()}


def _set_argument(name: str, params: Mapping[str, Any]) -> Any:
    """The set by name when ``params`` are its defaults, else an instance.

    By name the estimator fits with a warm-started copy of the set (the Birkhoff solver
    reuses its previous dual variables across L-BFGS iterations), so the name is preferred.
    """
    from projloss.sets import get_set

    if not params:
        return name
    built = get_set(name, **params)
    return name if built.get_params() == get_set(name).get_params() else built


def make_estimator(comp: Composition, alpha: float | None = None, warm_start: bool = False) -> Any:
    """A fresh (unfitted) scikit-learn estimator for ``comp`` with regularization ``alpha``."""
    from projloss import estimators as E

    if comp.kind == "median":
        return E.MedianOrdinalRegressor()
    mp = comp.model_params
    if comp.kind == "round":
        return E.RidgeRoundingOrdinalRegressor(
            alpha=1.0 if alpha is None else float(alpha),
            fit_intercept=bool(mp.get("fit_intercept", True)),
            penalize_intercept=bool(mp.get("penalize_intercept", False)),
            clip=bool(comp.decoder_params.get("clip", True)),
        )
    kwargs: dict[str, Any] = {
        "geometry": comp.geometry,
        "target_loss": comp.target_loss,
        "alpha": 1.0 if alpha is None else float(alpha),
        "fit_intercept": bool(mp.get("fit_intercept", True)),
        "penalize_intercept": bool(mp.get("penalize_intercept", False)),
        "model": comp.model,
        "max_iter": int(mp.get("max_iter", 500)),
        "tol": float(mp.get("tol", 1e-5)),
        "warm_start": bool(warm_start),
    }
    if comp.model in NEURAL_MODELS:
        kwargs = _network_kwargs(comp, alpha)
    elif comp.model == "poly":
        kwargs["degree"] = int(mp.get("degree", 2))
        kwargs["coef0"] = float(mp.get("coef0", 1.0))
    # the sets' parameters that the estimators take as their own (the knapsack's bounds,
    # the permutahedron's w): the projection set's, else the decoding set's
    lifted = {**_lifted(comp.decoder, comp.decoder_params), **_lifted(comp.set, comp.set_params)}
    own = _estimator_params(comp.set)
    set_params = {k: v for k, v in comp.set_params.items() if k not in own}
    w = lifted.get("w")
    projection = _set_argument(comp.set, set_params)
    decoding = None if comp.decoder == comp.set else comp.decoder
    if comp.model in NEURAL_MODELS:
        from projloss.estimators.neural import MLP_ESTIMATORS

        extra: dict[str, Any] = {}
        if comp.task == "label_ranking":
            extra["w"] = None if w is None else np.asarray(w, dtype=np.float64)
        elif comp.task == "multilabel":
            lower = lifted.get("knapsack_lower", 0)
            extra.update(
                knapsack_lower=int(lower), knapsack_upper=lifted.get("knapsack_upper", "auto")
            )
        return MLP_ESTIMATORS[comp.task](
            projection_set=projection, decoding_set=decoding, **extra, **kwargs
        )
    if comp.task == "label_ranking":
        return E.ProjectionLabelRanker(
            projection_set=projection,
            decoding_set=decoding,
            w=None if w is None else np.asarray(w, dtype=np.float64),
            **kwargs,
        )
    if comp.task == "ordinal":
        return E.ProjectionOrdinalRegressor(
            projection_set=projection, decoding_set=decoding, **kwargs
        )
    if comp.task == "multilabel":
        return E.ProjectionMultilabelClassifier(
            projection_set=projection,
            decoding_set=decoding,
            knapsack_lower=int(lifted.get("knapsack_lower", 0)),
            knapsack_upper=lifted.get("knapsack_upper", "auto"),
            **kwargs,
        )
    return E.ProjectionClassifier(projection_set=projection, decoding_set=decoding, **kwargs)


def _network_kwargs(comp: Composition, alpha: float | None) -> dict[str, Any]:
    """The network estimator's parameters from ``conf/model/mlp.yaml``. Every fit starts
    from the seed (no warm start along the lambda grid: the network's optimum depends on
    its start, so a lambda's fit in the tune stage is the one a lone fit would give)."""
    mp = comp.model_params
    batch = mp.get("batch_size", "auto")
    return {
        "geometry": comp.geometry,
        "target_loss": comp.target_loss,
        "alpha": 1.0 if alpha is None else float(alpha),
        "hidden_layer_sizes": tuple(int(s) for s in mp.get("hidden_layer_sizes", [100])),
        "activation": str(mp.get("activation", "relu")),
        "dropout": float(mp.get("dropout", 0.0)),
        "max_iter": int(mp.get("max_iter", 200)),
        "batch_size": batch if batch == "auto" else int(batch),
        "learning_rate": float(mp.get("learning_rate", 1e-3)),
        "early_stopping": bool(mp.get("early_stopping", True)),
        "validation_fraction": float(mp.get("validation_fraction", 0.1)),
        "n_iter_no_change": int(mp.get("n_iter_no_change", 10)),
        "tol": float(mp.get("tol", 1e-4)),
        "device": str(mp.get("device", "auto")),
        "dtype": str(mp.get("dtype", "float64")),
        "random_state": int(mp.get("seed", 0)),
        "warm_start": False,
    }


def lambda_grid(cfg: Mapping[str, Any]) -> np.ndarray:
    """The ascending regularization grid of a config (:class:`LambdaGrid`), as an array."""
    return np.array(LambdaGrid.from_config(to_plain(cfg).get("lambdas")).values)
