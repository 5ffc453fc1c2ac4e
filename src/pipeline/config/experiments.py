"""The experiments of the DVC pipeline: ``params.yaml`` -> one run config per composition.

``params.yaml`` is the composition of ``conf/config.yaml`` (see :mod:`pipeline.params`);
its ``experiments`` node (the Hydra group ``conf/experiments/``) maps an experiment key to
a dataset (or several) and a list of compositions::

    t1-iris:
      dataset: iris
      overrides: [task=label_ranking, dataset=iris, geometry=euclidean, model=linear]
      config: {...}             # optional: nodes replacing the composed ones
      runs:
        cube-cube: [set=cube, decoder=cube]
        birkhoff-birkhoff: [set=birkhoff, decoder=birkhoff]

A run's config is composed by Hydra from ``conf/`` with ``overrides`` + the run's own
overrides; the nodes of ``config`` then replace the composed ones (the ``current``
experiment snapshots the top level of params.yaml this way); then the global settings
(:data:`GLOBAL_KEYS`) are taken from params.yaml, so ``dvc exp run -S seed=1`` reaches
every experiment; an override of a global key in the experiment itself (e.g.
``lambdas.num=3``) still wins. Data settings are global in the DVC pipeline (the
preprocess stage prepares them): an experiment may not override ``data.*`` in its
overrides, only choose a prepared variant with its own keys:

- ``data: {drop_empty: true}`` or ``data: {ordinal_split: 3}``: the variant of its
  datasets (:data:`EXPERIMENT_DATA_KEYS`; the preprocess stage prepares all of them);
  ``data: {seed: 3}``: the split seed of its runs (repeated splits,
  ``conf/experiments/paper-repeated.yaml``): split in memory (:mod:`pipeline.data.resplit`);
- ``datasets: [ERA, ESL, ...]``: the runs x these datasets in one experiment (one process
  per stage instead of one per dataset); run ids become ``<dataset>/<run>``;
- ``splits: all`` (or a list of split indices): every run on each orreview split of its
  ordinal dataset; the stages then track one parent run per composition and dataset with
  the per-split values as metric steps, and the test metrics as mean and std over splits.

``dataset`` is the directory under ``data/prepared/`` the stages depend on (``dvc.yaml``):
the dataset's name (its default variant, which the preprocess stage rebuilds with the
others), the exact variant directory (``birds+drop_empty``), or ``.`` (all prepared data:
required with ``datasets`` or ``splits``).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import CompositionError
from ..paths import conf_dir, project_root

#: settings taken from params.yaml for every run (not from the experiment's composition)
GLOBAL_KEYS = ("lambdas", "seed", "warm_start", "progress", "data", "tracking")
#: data settings an experiment may set (its ``data`` key): they choose a prepared variant
EXPERIMENT_DATA_KEYS = ("drop_empty", "ordinal_split", "seed")
#: the keys of an experiment item
ITEM_KEYS = ("config", "data", "dataset", "datasets", "overrides", "runs", "splits")
#: the ``dataset`` of an experiment that depends on all prepared data
ALL_PREPARED = "."
#: the mirror of conf/data/default.yaml when PROJLOSS_MIRROR is unset
DEFAULT_MIRROR = "../shared/datasets"
MIRROR_ENV = "PROJLOSS_MIRROR"


def compose_params(overrides: Sequence[str] = ()) -> str:
    """The YAML text of params.yaml for these Hydra overrides (as DVC composes it)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    saved = os.environ.pop(MIRROR_ENV, None)
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
            cfg = compose(config_name="config", overrides=list(overrides))
        OmegaConf.resolve(cfg)
    finally:
        if saved is not None:
            os.environ[MIRROR_ENV] = saved
    return OmegaConf.to_yaml(cfg)


def params_path() -> Path:
    return project_root() / "params.yaml"


def load_params(path: Path | None = None) -> dict[str, Any]:
    """``params.yaml`` as a plain dict."""
    import yaml

    path = Path(path) if path is not None else params_path()
    if not path.is_file():
        raise CompositionError(f"no {path}; generate it with `python -m pipeline.params`")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path, encoding="utf-8") as f:
        params = yaml.load(f, Loader=loader) or {}
    if not isinstance(params, dict):
        raise CompositionError(f"{path} must hold a mapping")
    return params


def data_node(params: Mapping[str, Any]) -> dict[str, Any]:
    """The global ``data`` settings of params.yaml; ``$PROJLOSS_MIRROR`` replaces the
    default mirror (params.yaml records the default resolved, whatever the machine)."""
    data = copy.deepcopy(dict(params.get("data") or {}))
    env = os.environ.get(MIRROR_ENV)
    if env and data.get("mirror") == DEFAULT_MIRROR:
        data["mirror"] = env
    return data


def get_experiment(params: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The validated experiment ``key`` of params.yaml (``splits`` as given: ``None``,
    ``"all"`` or a list of split indices)."""
    experiments = params.get("experiments") or {}
    if key not in experiments:
        raise CompositionError(
            f"unknown experiment {key!r}; the experiments of params.yaml are {sorted(experiments)}"
        )
    item = experiments[key]
    where = f"experiment {key!r}"
    if not isinstance(item, Mapping):
        raise CompositionError(f"{where} must be a mapping with dataset, overrides and runs")
    unknown = sorted(set(item) - set(ITEM_KEYS))
    if unknown:
        raise CompositionError(f"{where}: unknown key(s) {unknown}; valid: {', '.join(ITEM_KEYS)}")
    if not isinstance(item.get("dataset"), str):
        raise CompositionError(f"{where} needs a 'dataset' (the dataset its runs use)")
    overrides = item.get("overrides") or []
    runs = item.get("runs")
    if not _strings(overrides):
        raise CompositionError(f"{where}: 'overrides' must be a list of Hydra overrides")
    if not isinstance(runs, Mapping) or not runs:
        raise CompositionError(f"{where} needs 'runs': run id -> list of Hydra overrides")
    for rid, extra in runs.items():
        if not _strings(extra or []):
            raise CompositionError(f"{where}, run {rid!r}: overrides must be a list of strings")
    config = item.get("config") or {}
    if not isinstance(config, Mapping):
        raise CompositionError(f"{where}: 'config' must be a mapping of config nodes")
    data_overrides = [
        o
        for o in [*overrides, *(x for e in runs.values() for x in (e or []))]
        if o.lstrip("+~").split("=", 1)[0].split(".", 1)[0] in ("data", "datasets")
    ]
    if data_overrides or "data" in config:
        raise CompositionError(
            f"{where} overrides data settings ({data_overrides or 'config.data'}); in the DVC "
            "pipeline they are global (the preprocess stage prepares them): set them in "
            "params.yaml, e.g. `dvc exp run -S data.drop_empty=true`, or choose a prepared "
            f"variant with the experiment's own `data` key ({', '.join(EXPERIMENT_DATA_KEYS)})"
        )
    data = dict(item.get("data") or {})
    bad = sorted(set(data) - set(EXPERIMENT_DATA_KEYS))
    if bad:
        raise CompositionError(
            f"{where}: 'data' may set {list(EXPERIMENT_DATA_KEYS)} only (they choose a "
            f"prepared variant), not {bad}: the other data settings are global (params.yaml)"
        )
    datasets = item.get("datasets")
    if datasets is not None and (not _strings(datasets) or not datasets):
        raise CompositionError(f"{where}: 'datasets' must be a non-empty list of dataset names")
    splits = _splits(item.get("splits"), where)
    if splits is not None and "ordinal_split" in data:
        raise CompositionError(f"{where}: give either 'splits' or data.ordinal_split, not both")
    if (datasets is not None or splits is not None) and item["dataset"] != ALL_PREPARED:
        raise CompositionError(
            f"{where} runs on several prepared directories ('datasets' or 'splits'): its "
            f"'dataset' (the DVC dependency under data/prepared/) must be {ALL_PREPARED!r}"
        )
    if datasets is None and item["dataset"] == ALL_PREPARED:
        raise CompositionError(f"{where}: dataset {ALL_PREPARED!r} needs a 'datasets' list")
    return {
        "dataset": item["dataset"],
        "datasets": None if datasets is None else list(datasets),
        "overrides": list(overrides),
        "config": dict(config),
        "data": data,
        "splits": splits,
        "runs": {str(r): list(e or []) for r, e in runs.items()},
    }


def _splits(value: Any, where: str) -> str | list[int] | None:
    if value is None or value == "all":
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    ok = _ints(value) and len(value) > 0 and min(value) >= 0
    if not ok:
        raise CompositionError(f"{where}: 'splits' must be 'all' or a list of split indices >= 0")
    return list(value)


def _ints(value: Any) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    )


def _strings(value: Any) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and all(isinstance(v, str) for v in value)
    )


def compose_runs(params: Mapping[str, Any], key: str) -> dict[str, dict[str, Any]]:
    """Run id -> the run's config (plain, resolved, without ``experiments``).

    With ``datasets``, every run on every dataset (ids ``<dataset>/<run>``); with
    ``splits``, each config carries the split indices of its dataset as ``splits``
    (:func:`iter_compose_runs`, all at once)."""
    return dict(iter_compose_runs(params, key))


def iter_compose_runs(
    params: Mapping[str, Any], key: str, run_order: Sequence[str] | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The ``(run id, config)`` items of :func:`compose_runs`, each yielded as soon as it
    is composed (a composition costs 0.05-0.15 s of Hydra: the tune stage's workers start
    on the first runs while the next ones are composed); ``run_order``: the experiment's
    run names in the order to compose them (each run on every dataset in turn), by default
    the list's."""
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    item = get_experiment(params, key)
    if run_order is not None:
        if sorted(run_order) != sorted(item["runs"]):
            raise ValueError(f"run_order {list(run_order)} is not an order of {list(item['runs'])}")
        item = {**item, "runs": {name: item["runs"][name] for name in run_order}}
    parser = OverridesParser.create()

    def finish(rid: str, plain: dict[str, Any]) -> dict[str, Any]:
        overrides = _overrides_of(item, rid)
        plain.pop("experiments", None)
        plain.pop("report", None)  # where the list's report goes: not part of a run
        for node, value in item["config"].items():
            plain[node] = copy.deepcopy(value)
        for g in GLOBAL_KEYS:
            if g in params:
                plain[g] = data_node(params) if g == "data" else copy.deepcopy(params[g])
        plain.setdefault("data", {}).update(item["data"])
        for o in parser.parse_overrides(overrides):  # the experiment's own globals win
            name = o.key_or_group
            if name.split(".", 1)[0] in GLOBAL_KEYS and not o.is_delete():
                _set(plain, name, o.value())
        _check_dataset(plain, item, key, rid)
        if item["splits"] is not None:
            plain["splits"] = _split_list(plain, item["splits"], key, rid)
        return plain

    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):

        def compose_one(rid: str, overrides: list[str]) -> dict[str, Any]:
            try:
                # ~experiments: the experiment list is not part of a run (and not parsing
                # it again for every run saves time)
                cfg = compose("config", overrides=[*overrides, "~experiments"])
            except HydraException as exc:
                raise CompositionError(
                    f"experiment {key!r}, run {rid!r}: cannot compose {overrides}: {exc}"
                ) from None
            return OmegaConf.to_container(cfg, resolve=True)

        if item["datasets"] is None:
            composed: Iterator[tuple[str, dict[str, Any]]] = (
                (rid, compose_one(rid, [*item["overrides"], *extra]))
                for rid, extra in item["runs"].items()
            )
        else:
            composed = _compose_datasets(item, compose_one)
        for rid, plain in composed:
            yield rid, finish(rid, plain)


def run_ids(item: Mapping[str, Any]) -> list[str]:
    """The run ids of an experiment (:func:`get_experiment`) in the order
    :func:`iter_compose_runs` composes them by default: each run of the list, on each of
    its datasets in turn (ids ``<dataset>/<run>``)."""
    if item["datasets"] is None:
        return list(item["runs"])
    return [f"{dataset}/{run}" for run in item["runs"] for dataset in item["datasets"]]


def _overrides_of(item: Mapping[str, Any], rid: str) -> list[str]:
    """The Hydra overrides of run ``rid`` (``<dataset>/<run>`` with ``datasets``)."""
    if item["datasets"] is None:
        return [*item["overrides"], *item["runs"][rid]]
    dataset, run = rid.split("/", 1)
    return [*item["overrides"], f"dataset={dataset}", *item["runs"][run]]


def _compose_datasets(
    item: Mapping[str, Any], compose_one: Any
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each run on each of ``item["datasets"]`` (ids ``<dataset>/<run>``), in order.

    Composing costs a few tenths of a second (Hydra parses every config file again; the
    ordinal registry files are long), so each run is composed on two datasets only: when
    the two configs differ by their ``dataset`` node alone (nothing else depends on the
    dataset choice), the other datasets reuse the first config with their own
    ``dataset`` node (:func:`dataset_node`); otherwise every dataset is composed.
    """
    names = item["datasets"]
    for run in item["runs"]:
        first = compose_one(f"{names[0]}/{run}", _overrides_of(item, f"{names[0]}/{run}"))
        yield f"{names[0]}/{run}", copy.deepcopy(first)
        swap = len(names) > 1
        for i, name in enumerate(names[1:], 1):
            rid = f"{name}/{run}"
            if swap and i > 1:
                yield rid, {**copy.deepcopy(first), "dataset": dataset_node(name)}
                continue
            composed = compose_one(rid, _overrides_of(item, rid))
            if i == 1:
                reused = {**copy.deepcopy(first), "dataset": dataset_node(name)}
                swap = reused == composed
            yield rid, composed


def dataset_node(name: str) -> dict[str, Any]:
    """The ``dataset`` node Hydra composes for ``dataset=<name>``: the registry file
    ``conf/dataset/<name>.yaml``, read by the registry (:func:`load_mapping`; the
    composition of the first swapped run checks that Hydra reads the same)."""
    from ..data.registry import load_mapping

    path = conf_dir() / "dataset" / f"{name}.yaml"
    if not path.is_file():
        raise CompositionError(f"no dataset {name!r} in {path.parent}")
    node = load_mapping(path)
    if not isinstance(node, dict):
        raise CompositionError(f"{path} must hold a mapping")
    return node


def _check_dataset(cfg: dict[str, Any], item: Mapping[str, Any], key: str, rid: str) -> None:
    """The run's prepared directory must be what the experiment declares (its DVC dep)."""
    name = (cfg.get("dataset") or {}).get("name")
    declared = item["dataset"]
    if item["datasets"] is not None:
        return  # composed from the list
    if declared in (name, ALL_PREPARED):
        return
    from ..data.protocol import Variant
    from ..data.registry import get_spec
    from ..data.settings import data_settings

    settings = data_settings(cfg)
    dirname = None
    if name is not None:
        try:
            dirname = Variant.of(get_spec(name, settings.dataset_dirs), settings).dirname
        except ValueError:
            dirname = None
    if declared != dirname:
        raise CompositionError(
            f"experiment {key!r}, run {rid!r} composes dataset {name!r} (prepared as "
            f"{dirname!r}) but declares dataset {declared!r}; add dataset={declared} to its "
            f"overrides, or declare dataset: {name} (or its variant directory {dirname})"
        )


def _split_list(cfg: Mapping[str, Any], splits: Any, key: str, rid: str) -> list[int]:
    from ..data.registry import get_spec
    from ..data.settings import data_settings

    spec = get_spec(cfg["dataset"]["name"], data_settings(cfg).dataset_dirs)  # the registry reads
    if spec.n_splits is None:
        raise CompositionError(
            f"experiment {key!r}, run {rid!r}: 'splits' needs a dataset that ships indexed "
            f"splits (the ordinal datasets); {spec.name!r} has none"
        )
    if splits == "all":
        return list(range(spec.n_splits))
    bad = [s for s in splits if s >= spec.n_splits]
    if bad:
        raise CompositionError(
            f"experiment {key!r}, run {rid!r}: {spec.name!r} has splits 0..{spec.n_splits - 1}, "
            f"not {bad}"
        )
    return list(splits)


def _set(node: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value
