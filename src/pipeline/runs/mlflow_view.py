"""What a run looks like in the MLflow UI: its name, params, dataset input, model, flags.

A researcher browses the runs in ``mlflow ui``; this module decides what they see there
(:mod:`pipeline.runs.tracking` does the logging):

- **run name** (:func:`run_name`): the dataset first, then the composition in the
  paper's notation, ``iris · birkhoff/birkhoff · euclidean`` (projection set / decoding
  set · geometry), the model when it is not linear (``poly3``), the target loss when it is
  not the encoding's default (``hamming_ranking``, the paper's cube column), the split
  when it is not the protocol's default;
- **params** (:func:`cell_params`): the choices that define a cell of the paper's tables,
  at most :data:`MAX_PARAMS` (task, dataset, set, geometry, decoder, model, degree, target
  loss, the λ grid, the split seed or index, and the λ each metric chose,
  :func:`lambda_params`); the whole resolved config is the run's ``config.yaml`` artifact;
- **dataset input** (:func:`dataset_input`): ``mlflow.log_input`` of the dataset (its name,
  digest = sha256 of its raw files, source URL, split sizes), which fills the runs table's
  *Dataset* column;
- **model** (:func:`raw_pipeline`): a scikit-learn ``Pipeline`` of the fitted scaler
  (``data/prepared/<dataset>/scaler.npz``) and the estimator, which predicts from raw
  features, named after the composition (:func:`model_name`);
- **flags** (:mod:`pipeline.runs.structure_flags`): test predictions that are all the
  same structure, or are not valid structures (an all-zero "permutation"), are named in a
  warning and the run's ``structure`` tag;
- **experiment** (:func:`experiment_tags`): the experiment kind of MLflow 3's UI (model
  training, not GenAI), the primary metric of the chart view, a description, and a saved
  runs view (*Views* → ``projloss``: dataset, composition and the test metric as columns,
  sorted by it).

Examples
--------
>>> from pipeline.config.composition import Composition
>>> comp = Composition("label_ranking", "iris", "cube", "euclidean", "cube", "linear",
...                    "projection", target_loss="hamming_ranking")
>>> run_name(comp)
'iris · cube/cube · euclidean · hamming_ranking'
>>> model_name(comp)
'iris-cube-cube-euclidean-hamming_ranking'
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..config.composition import Composition, LambdaGrid
from ..config.run import RunConfig
from .structure_flags import structure_remedy

log = logging.getLogger(__name__)

#: separator of the parts of a run name
SEP = " · "
#: the most params a parent run gets (the runs table and the compare view stay readable)
MAX_PARAMS = 15
#: the saved runs view of each experiment (``mlflow.sharedViewState.<key>``)
VIEW_KEY = "projloss"
#: experiment tags of MLflow's UI
KIND_TAG = "mlflow.experimentKind"
PRIMARY_METRIC_TAG = "mlflow.experiment.primaryMetric.name"
NOTE_TAG = "mlflow.note.content"
VIEW_TAG_PREFIX = "mlflow.sharedViewState."


# --- names -------------------------------------------------------------------------


def default_target_loss(comp: Composition) -> str | None:
    """The target loss the encoding of ``comp`` uses when ``task.target_loss`` is null
    (None for the baselines, which have none)."""
    if comp.kind != "projection":
        return None
    from projloss.tasks import check_composition

    return check_composition(comp.task, comp.set, comp.geometry, comp.decoder).target_loss


def _parts(comp: Composition, run: RunConfig | None) -> list[str]:
    """The composition's parts after the dataset (see :func:`run_name`)."""
    if comp.kind == "median":
        parts = ["median"]
    elif comp.kind == "round":
        parts = ["ridge+round"]
    else:
        parts = [f"{comp.set}/{comp.decoder}", comp.geometry]
    if comp.model == "poly":
        parts.append(f"poly{comp.model_params.get('degree', 2)}")
    elif comp.model == "mlp":
        parts.append("mlp")
    if comp.target_loss is not None and comp.target_loss != default_target_loss(comp):
        parts.append(comp.target_loss)
    parts += _split_parts(run)
    return parts


def _split_parts(run: RunConfig | None) -> list[str]:
    """``seed 3`` / ``split 7`` / ``splits 0-29`` when not the protocol's default."""
    if run is None:
        return []
    data = run.data
    out = []
    if data.seed != 0:
        out.append(f"seed {data.seed}")
    if run.splits is not None:
        out.append(f"splits {_span(run.splits)}")
    elif run.indexed_splits and data.ordinal_split != 0:
        out.append(f"split {_split(data.ordinal_split)}")
    if data.drop_empty and run.composition.task == "multilabel":
        out.append("drop_empty")
    return out


def _split(selector: int | str | tuple[int, ...]) -> int | str | list[int]:
    """A run's ``data.ordinal_split`` as its config wrote it (a list, not a tuple)."""
    return list(selector) if isinstance(selector, tuple) else selector


def _span(splits: Any) -> str:
    if isinstance(splits, Sequence) and not isinstance(splits, str) and splits:
        values = sorted(int(s) for s in splits)
        if values == list(range(values[0], values[-1] + 1)) and len(values) > 2:
            return f"{values[0]}-{values[-1]}"
        return ",".join(str(v) for v in values)
    return str(splits)


def run_name(comp: Composition, run: RunConfig | None = None) -> str:
    """The parent run's name: the dataset, then the composition in the paper's notation,
    then the run's split seed and split (``run``; none given: the protocol's defaults).

    Examples
    --------
    >>> from pipeline.config.composition import Composition
    >>> run_name(Composition("label_ranking", "iris", "birkhoff", "kl", "birkhoff", "poly",
    ...                      "projection", "hamming", model_params={"degree": 3}))
    'iris · birkhoff/birkhoff · kl · poly3'
    >>> run_name(Composition("ordinal", "ERA", "none", "none", "median", "median", "median"))
    'ERA · median'
    >>> from pipeline.config.settings import TrackingSettings
    >>> from pipeline.data.settings import data_settings
    >>> rr = Composition("ordinal", "ERA", "reals", "euclidean", "round", "linear", "round")
    >>> run_name(rr, RunConfig(rr, None, ("mae",), ("mae",), True, False,
    ...                        data_settings(seed=3), TrackingSettings()))
    'ERA · ridge+round · seed 3'
    """
    return SEP.join([comp.dataset, *_parts(comp, run)])


def model_name(comp: Composition, run: RunConfig | None = None) -> str:
    """The logged (and registered) model's name: the run name as an identifier
    (MLflow's logged-model names cannot hold ``/ : . % " '``)."""
    words = [comp.dataset, *_parts(comp, run)]
    text = "-".join(w.replace("/", "-").replace("+", "_").replace(" ", "") for w in words)
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)


def registered_name(comp: Composition, run: RunConfig | None = None) -> str:
    """The Model Registry's name of a composition: ``<task>-<model name>``."""
    return f"{comp.task}-{model_name(comp, run)}"


# --- params --------------------------------------------------------------------------


def _lambda_grid(grid: LambdaGrid) -> str:
    if grid.num == 1:
        return f"{grid.low:g}"
    return f"{grid.low:g}..{grid.high:g} x{grid.num}"


def cell_params(run: RunConfig) -> dict[str, str]:
    """The params of a parent run: the choices that define the cell (at most
    :data:`MAX_PARAMS` with :func:`lambda_params`; the full config is an artifact).

    Examples
    --------
    >>> from pipeline.config.composition import Composition, LambdaGrid
    >>> from pipeline.config.settings import TrackingSettings
    >>> from pipeline.data.settings import data_settings
    >>> comp = Composition("label_ranking", "iris", "birkhoff", "euclidean", "birkhoff",
    ...                    "linear", "projection", "hamming")
    >>> run = RunConfig(comp, LambdaGrid(1e-4, 1e4, 10), ("hamming",), ("hamming",), True,
    ...                 False, data_settings(seed=0), TrackingSettings())
    >>> cell_params(run)  # doctest: +NORMALIZE_WHITESPACE
    {'task': 'label_ranking', 'dataset': 'iris', 'set': 'birkhoff', 'geometry': 'euclidean',
     'decoder': 'birkhoff', 'model': 'linear', 'target_loss': 'hamming',
     'lambdas': '0.0001..10000 x10', 'seed': '0'}
    """
    comp, data = run.composition, run.data
    out: dict[str, Any] = {
        "task": comp.task,
        "dataset": comp.dataset,
        "set": comp.set,
        "geometry": comp.geometry,
        "decoder": comp.decoder,
        "model": comp.model,
    }
    if comp.model == "poly":
        out["degree"] = comp.model_params.get("degree", 2)
    elif comp.model == "mlp":
        mp = comp.model_params
        out["hidden_layer_sizes"] = list(mp.get("hidden_layer_sizes", [100]))
        out["device"] = mp.get("device", "auto")
    if comp.target_loss is not None:
        out["target_loss"] = comp.target_loss
    if run.lambdas is not None:
        out["lambdas"] = _lambda_grid(run.lambdas)
    out["seed"] = data.seed
    if run.splits is not None:
        out["split"] = _span(run.splits)
    elif run.indexed_splits:
        out["split"] = _split(data.ordinal_split)
    if comp.task == "multilabel":
        out["drop_empty"] = data.drop_empty
    out.update(_set_run_params(comp))
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in out.items()}


def _set_run_params(comp: Composition) -> dict[str, str]:
    """The parameters the projection and decoding sets show in a run
    (:meth:`projloss.sets.base.ConvexSet.run_params`, e.g. ``knapsack: 0..auto``), the
    projection set's over the decoding set's."""
    from projloss.sets import SETS

    out: dict[str, str] = {}
    for name, params in ((comp.decoder, comp.decoder_params), (comp.set, comp.set_params)):
        cls = SETS.get(name)
        if cls is not None:
            out.update(cls.run_params(dict(params)))
    return out


def lambda_params(tuned: Mapping[str, Any]) -> dict[str, str]:
    """``lambda.<metric>``: the λ each selection metric chose (``per split`` for a split
    sweep, whose λ are metric steps); none for the median baseline."""
    if "splits" in tuned:
        first = next(iter(tuned["splits"].values()), {})
        return {f"lambda.{m}": "per split" for m in first.get("selected", {})}
    return {
        f"lambda.{m}": f"{sel['lambda']:.4g}"
        for m, sel in tuned.get("selected", {}).items()
        if sel.get("lambda") is not None
    }


def raw_digest(raw_files: Mapping[str, str]) -> str:
    """The dataset's digest: sha256 of its ``SHA256SUMS`` lines (``<sha256>  <file>``,
    sorted by file), 16 hex digits (MLflow stores at most 36 characters). For one file,
    the file's own sha256 is in the dataset's profile.

    Examples
    --------
    >>> sums = {"iris.txt": "ab" * 32}   # = `sha256sum data/raw/iris/SHA256SUMS | cut -c1-16`
    >>> raw_digest(sums) == hashlib.sha256(("ab" * 32 + "  iris.txt\\n").encode()).hexdigest()[:16]
    True
    """
    text = "".join(f"{raw_files[n]}  {n}\n" for n in sorted(raw_files))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _source_url(spec: Any, raw_dir: Path) -> str:
    """The dataset's public address: its only file's URL, else its homepage, else the
    raw directory."""
    urls = [u for f in spec.files for u in f.urls]
    if len(spec.files) == 1 and urls:
        return urls[0]
    if spec.homepage:
        return spec.homepage
    if urls:
        return urls[0]
    return (raw_dir / spec.name).resolve().as_uri()


def dataset_input(data: Any, run: RunConfig) -> tuple[Any, dict[str, str]]:
    """The MLflow dataset of a run's prepared data and its input tags: name (the
    prepared variant, e.g. ``iris`` or ``ERA+split3``), digest (:func:`raw_digest`),
    source (:func:`_source_url`), profile (split sizes, features, raw files' sha256);
    the ``mlflow.data.context`` tag gives the split sizes (shown in the runs table)."""
    from ..data.registry import get_spec

    settings = run.data
    spec = get_spec(run.composition.dataset, settings.dataset_dirs)
    stats = dict(getattr(data, "stats", None) or {})
    raw_files = stats.get("raw_files") or {f.name: f.sha256 or "" for f in spec.files}
    sizes = {s: int(_rows(getattr(data, s)[0])) for s in ("train", "val", "test")}
    profile = {
        "n_samples": sizes,
        "n_features": int(data.train[0].shape[1]),
        "raw_files": raw_files,
        "variant": getattr(data, "variant", spec.name),
    }

    url = _source_url(spec, settings.raw_dir)
    dataset = profiled_dataset(url, profile, raw_digest(raw_files))
    context = "train/val/test " + "/".join(str(sizes[s]) for s in ("train", "val", "test"))
    return dataset, {"mlflow.data.context": context}


def profiled_dataset(url: str, profile: Mapping[str, Any], digest: str) -> Any:
    """An MLflow ``MetaDataset`` named ``profile["variant"]`` with source ``url``, ``digest``
    and ``profile`` (shown on the run page). It pickles as this call, so that a worker
    process can record it for the stage's process to log
    (:class:`pipeline.runs.tracking.RecordingTracker`)."""
    from mlflow.data.http_dataset_source import HTTPDatasetSource
    from mlflow.data.meta_dataset import MetaDataset

    shown = dict(profile)

    class _Dataset(MetaDataset):
        @property
        def profile(self) -> Any:
            return shown

        def to_dict(self) -> dict[str, str]:
            out = super().to_dict()
            out["profile"] = json.dumps(shown)
            return out

        def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
            return profiled_dataset, (url, shown, digest)

    return _Dataset(HTTPDatasetSource(url), name=shown["variant"], digest=digest)


def _rows(X: Any) -> int:
    return int(X.shape[0])


# --- the model -----------------------------------------------------------------------


def load_fitted_scaler(path: Path) -> Any:
    """The ``StandardScaler`` of a prepared dataset, rebuilt from ``scaler.npz``
    (:func:`pipeline.data.storage.save_scaler`): ``transform`` gives the prepared features."""
    from sklearn.preprocessing import StandardScaler

    from ..data.storage import load_scaler

    z = load_scaler(path)
    centered = bool(z["centered"])
    scaler = StandardScaler(with_mean=centered)
    scaler.mean_ = np.asarray(z["mean"], dtype=np.float64) if centered else None
    scaler.scale_ = np.asarray(z["scale"], dtype=np.float64)
    scaler.var_ = np.asarray(z["var"], dtype=np.float64)
    scaler.n_features_in_ = int(scaler.scale_.shape[0])
    scaler.n_samples_seen_ = 0
    return scaler


def fitted_scaler(data: Any, run: RunConfig) -> Any:
    """The scaler that standardized ``data``: its ``scaler.npz``, or (data split in
    memory, :func:`pipeline.data.resplit.load_resplit`) refitted from the raw files exactly
    as the protocol does."""
    from ..data.storage import SCALER

    stats = getattr(data, "stats", None) or {}
    path = Path(data.directory) / SCALER
    if not stats.get("in_memory") and path.is_file():
        return load_fitted_scaler(path)
    from ..data.protocol import Variant, apply_protocol
    from ..data.readers import load_raw
    from ..data.registry import get_spec

    settings = run.data
    spec = get_spec(run.composition.dataset, settings.dataset_dirs)
    variant = Variant.of(spec, settings)
    _, scaler = apply_protocol(load_raw(spec, settings.raw_dir, variant.split), variant)
    return scaler


def raw_pipeline(estimator: Any, scaler: Any) -> Any:
    """``Pipeline([("scaler", scaler), ("estimator", estimator)])``: the logged model,
    which predicts from raw features (both steps already fitted)."""
    from sklearn.pipeline import Pipeline

    return Pipeline([("scaler", scaler), ("estimator", estimator)])


def raw_rows(X_prepared: Any, scaler: Any) -> Any:
    """Raw feature rows of prepared rows (the scaler's inverse), for input examples."""
    return scaler.inverse_transform(X_prepared)


# --- the experiment ------------------------------------------------------------------


def experiment_view_url(uri: str, experiment_id: str) -> str:
    """The experiment's runs table in the model-training view with the saved view
    :data:`VIEW_KEY` (``mlflow ui`` / server address ``uri``)."""
    return (
        f"{uri.rstrip('/')}/#/experiments/{experiment_id}/runs"
        f"?workflowType=machine_learning&viewStateShareKey={VIEW_KEY}"
    )


def _saved_view(metrics: Sequence[str]) -> str:
    """The saved runs view (the ``mlflow.sharedViewState.<key>`` envelope of MLflow's
    *Views* menu): the parent runs only, sorted by the first test metric, with the
    dataset, the test metrics, the composition and the chosen λ as columns."""
    first = f"metrics.`test.{metrics[0]}`"
    columns = [
        "attributes.`Dataset`",
        *[f"metrics.`test.{m}`" for m in metrics],
        "tags.`structure`",
        *[f"params.`{p}`" for p in ("set", "decoder", "geometry", "target_loss", "model")],
        f"params.`lambda.{metrics[0]}`",
        "attributes.`Models`",
    ]
    order = ["attributes.`Run Name`", *columns, "runDateAndNestInfo", "duration"]
    widths = {"attributes.`Run Name`": 330, "attributes.`Dataset`": 240, first: 130}
    state = {
        "selectedColumns": columns,
        "columnOrder": order,
        "columnWidths": widths,
        "searchFilter": f"{first} >= 0",  # parent runs: the child runs have no test metric
        "orderByKey": first,
        "orderByAsc": True,
    }
    now = int(time.time() * 1000)
    envelope = {
        "name": f"{VIEW_KEY}: test metrics",
        "createdAt": now,
        "updatedAt": now,
        "state": json.dumps(state),
    }
    return json.dumps(envelope)


def experiment_tags(task: str, metrics: Sequence[str]) -> dict[str, str]:
    """Tags of a task's experiment for MLflow 3's UI: the kind (model training, not
    GenAI), the primary metric (the chart view: the first of the task's ``metrics``,
    :attr:`pipeline.config.run.RunConfig.metrics`), a description, the saved runs view
    (none without metrics: an experiment that is not a task's, e.g. ``projloss/report``)."""
    if not metrics:
        return {}
    first = metrics[0]
    return {
        KIND_TAG: "custom_model_development",
        PRIMARY_METRIC_TAG: f"test.{first}",
        NOTE_TAG: (
            f"projloss: {task} runs, one parent run per composition and dataset (name: "
            f"dataset · set/decoder · geometry) with its lambda grid (the tuning/* "
            f"charts, the table tuning/grid.json) and its best lambdas as child runs. Test "
            f"metric: test.{first}. Views -> '{VIEW_KEY}' shows it as a column."
        ),
        f"{VIEW_TAG_PREFIX}{VIEW_KEY}": _saved_view(metrics),
    }


# --- what evaluate logs --------------------------------------------------------------


def log_run_page(
    tracker: Any, run: RunConfig, comp: Composition, data: Any, tuned: Mapping[str, Any]
) -> None:
    """Log what the run page shows beyond the test metrics: the λ each metric chose
    (params) and the dataset input. The validation curve is the tune stage's grid on the
    same run (``tuning/val.<metric>`` over the λ index, ``tuning/lambda``;
    :mod:`pipeline.runs.tuning_log`)."""
    tracker.log_params(lambda_params(tuned))
    if tracker.enabled and data is not None:
        dataset, tags = dataset_input(data, run)
        tracker.log_input(dataset, tags)


def log_training_curves(tracker: Any, models: Mapping[str, Any]) -> None:
    """For networks (an estimator with ``history_``, :mod:`projloss.estimators.neural`):
    the refitted models' per-epoch training objective and validation score as metric
    histories (``epoch.loss``, ``epoch.val_score``, step = epoch, from 1; a suffix per
    model as :func:`log_models`), which MLflow charts, and the device the network trained
    on and the PyTorch version as tags (``device``, ``torch_version``). Nothing for the
    linear models."""
    tags: dict[str, str] = {}
    steps: list[tuple[dict[str, float], int]] = []
    for suffix, model in models.items():
        history = getattr(model, "history_", None)
        if not history:
            continue
        for key, values in history.items():
            steps += [
                ({f"epoch.{key}{suffix}": float(v)}, step) for step, v in enumerate(values, 1)
            ]
        if not tags:
            tags = {"device": str(model.device_), "torch_version": str(model.torch_version_)}
    if steps or tags:
        tracker.log_batch(steps, tags=tags)  # one write, not one per epoch


def describe_run(
    tracker: Any,
    comp: Composition,
    headline: Mapping[str, float],
    lambdas: Mapping[str, float | None],
    problem: str | None = None,
) -> None:
    """The run's description (``mlflow.note.content``, the top of its page): the test
    metrics, the λ each metric chose on validation, and a structure problem if any."""
    tests = ", ".join(f"{m} {v:.2f}" for m, v in headline.items())
    lams = ", ".join(f"{m}: {lam:.3g}" for m, lam in lambdas.items() if lam is not None)
    text = f"{run_name(comp)}: test {tests}"
    text += f" (lambda chosen on validation by {lams})" if lams else ""
    if problem:
        text += f". Warning: {problem}; {structure_remedy(comp)}"
    tracker.set_tags({NOTE_TAG: text + "."})


def log_models(
    tracker: Any,
    run: RunConfig,
    comp: Composition,
    data: Any,
    models: Mapping[str, Any],
) -> None:
    """Log each refitted estimator (``models``: name suffix -> estimator, ``""`` for the
    headline one) as a raw-feature :func:`raw_pipeline` named :func:`model_name` +
    suffix, with a signature and an input example of raw test rows."""
    scaler = fitted_scaler(data, run)
    example = raw_rows(data.test[0][:5], scaler)
    base, registered = model_name(comp, run), registered_name(comp, run)
    for suffix, estimator in models.items():
        tracker.log_model(
            raw_pipeline(estimator, scaler),
            base + suffix,
            X_example=example,
            registered_name=registered + suffix,
        )
