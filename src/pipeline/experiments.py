"""The experiments of the DVC pipeline: ``params.yaml`` -> one run config per composition.

``params.yaml`` is the composition of ``conf/config.yaml`` (see :mod:`pipeline.params`);
its ``experiments`` node (the Hydra group ``conf/experiments/``) maps an experiment key to
one dataset and a list of compositions::

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
preprocess stage prepares them): an experiment may not override ``data.*``.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .composition import CompositionError
from .paths import conf_dir, project_root

#: settings taken from params.yaml for every run (not from the experiment's composition)
GLOBAL_KEYS = ("lambdas", "seed", "warm_start", "progress", "data", "tracking")
#: the mirror of conf/data/default.yaml when PROJLOSS_MIRROR is unset
DEFAULT_MIRROR = "../shared/datasets"
MIRROR_ENV = "PROJLOSS_MIRROR"


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
    """The validated experiment ``key`` of params.yaml."""
    experiments = params.get("experiments") or {}
    if key not in experiments:
        raise CompositionError(
            f"unknown experiment {key!r}; the experiments of params.yaml are {sorted(experiments)}"
        )
    item = experiments[key]
    where = f"experiment {key!r}"
    if not isinstance(item, Mapping):
        raise CompositionError(f"{where} must be a mapping with dataset, overrides and runs")
    unknown = sorted(set(item) - {"dataset", "overrides", "config", "runs"})
    if unknown:
        raise CompositionError(
            f"{where}: unknown key(s) {unknown}; valid: config, dataset, overrides, runs"
        )
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
            "params.yaml, e.g. `dvc exp run -S data.drop_empty=true`"
        )
    return {
        "dataset": item["dataset"],
        "overrides": list(overrides),
        "config": dict(config),
        "runs": {str(r): list(e or []) for r, e in runs.items()},
    }


def _strings(value: Any) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and all(isinstance(v, str) for v in value)
    )


def compose_runs(params: Mapping[str, Any], key: str) -> dict[str, dict[str, Any]]:
    """Run id -> the run's config (plain, resolved, without ``experiments``)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    item = get_experiment(params, key)
    parser = OverridesParser.create()
    out: dict[str, dict[str, Any]] = {}
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        for rid, extra in item["runs"].items():
            overrides = [*item["overrides"], *extra]
            try:
                cfg = compose("config", overrides=overrides)
            except HydraException as exc:
                raise CompositionError(
                    f"experiment {key!r}, run {rid!r}: cannot compose {overrides}: {exc}"
                ) from None
            plain = OmegaConf.to_container(cfg, resolve=True)
            plain.pop("experiments", None)
            for node, value in item["config"].items():
                plain[node] = copy.deepcopy(value)
            for g in GLOBAL_KEYS:
                if g in params:
                    plain[g] = data_node(params) if g == "data" else copy.deepcopy(params[g])
            for o in parser.parse_overrides(overrides):  # the experiment's own globals win
                name = o.key_or_group
                if name.split(".", 1)[0] in GLOBAL_KEYS and not o.is_delete():
                    _set(plain, name, o.value())
            if plain.get("dataset", {}).get("name") != item["dataset"]:
                raise CompositionError(
                    f"experiment {key!r}, run {rid!r} composes dataset "
                    f"{plain.get('dataset', {}).get('name')!r} but declares dataset "
                    f"{item['dataset']!r}; add dataset={item['dataset']} to its overrides"
                )
            out[rid] = plain
    return out


def _set(node: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value
