"""``python -m pipeline.train [group=option ...] [--multirun]``: one composition end to end.

Composes ``conf/train.yaml`` (``conf/config.yaml``: set, geometry, decoder, model, task,
dataset and the global settings, without the DVC pipeline's experiment list), then:
validate the composition (before any work) -> load the prepared dataset (fetching and
preprocessing it when missing) -> tune lambda on validation -> refit on train +
validation -> evaluate on test, all logged to one MLflow parent run; a progress bar over
the lambda grid and one summary line at the end (ending with the MLflow run id, and the
run's URL on a tracking server)::

    python -m pipeline.train                                  # birkhoff on iris
    python -m pipeline.train task=multilabel set=unit_cube dataset=scene
    python -m pipeline.train set=knapsack task=multilabel --multirun    # every dataset
    python -m pipeline.train task=ordinal set=reals,order_simplex --multirun \\
        hydra/launcher=joblib                                 # jobs in parallel

``--multirun`` sweeps the task's datasets unless the command line names some
(``hydra.sweeper.params`` in ``conf/config.yaml``); the runs of one sweep share a
``group`` tag (the sweep directory). A job that fails (e.g. an invalid composition of
the sweep) is reported on one line and skipped; the sweep ends with ``error: k of N jobs
failed: ...`` and exit status 1. Errors are one line ``error: ...`` on stderr (exit 1);
SIGINT / SIGTERM mark the MLflow runs KILLED (exit 130 / 143); see
:mod:`pipeline.lifecycle`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from typing import Any

import hydra
from omegaconf import DictConfig

from ._hydra import config_path, entry, run_or_exit
from .argv import normalize_sys_argv
from .config.run import RunConfig
from .data.registry import register_resolver
from .plain import to_plain

log = logging.getLogger("pipeline.train")

# ``${registry_datasets:...}`` of conf/config.yaml (the default sweep of ``--multirun``,
# resolved by Hydra's sweeper in this process): from the registry
register_resolver()


def run(cfg: Mapping[str, Any], *, group: str | None = None) -> dict[str, Any]:
    """Run one composition (a composed config, plain or DictConfig); return the test
    results of :func:`pipeline.runs.evaluate.run` plus ``tune`` (the validation curves),
    ``refitted`` (the estimators), ``run_id`` (MLflow) and ``composition``."""
    from .data.api import load_prepared
    from .runs import evaluate, refit, tune
    from .runs.evaluate import summary_line
    from .runs.mlflow_tracker import make_tracker
    from .runs.mlflow_view import cell_params, run_name

    start = time.perf_counter()
    plain = to_plain(cfg)  # the composed config: logged as config.yaml, read by nothing else
    plain.pop("experiments", None)
    run_cfg = RunConfig.from_config(plain)  # before any work: keys, values, composition
    if _use_registry_name(plain, run_cfg):  # a user's override: its runs carry its own name
        run_cfg = RunConfig.from_config(plain)
    comp = run_cfg.composition
    settings = run_cfg.tracking
    if group and not settings.group:
        settings = dataclasses.replace(settings, group=group)
    tracker = make_tracker(settings)  # probes a tracking server
    data = load_prepared(comp.dataset, run_cfg.data)
    with tracker.parent_run(
        task=comp.task,
        name=run_name(comp, run_cfg),
        tags={**comp.tags(), "entry_point": "pipeline.train"},
        params=cell_params(run_cfg),
        metrics=run_cfg.metrics,
    ) as run_id:
        tracker.log_dict(plain, "config.yaml")
        tuned = tune.run(run_cfg, data, tracker)
        refitted = refit.run(run_cfg, data, tuned)
        result = evaluate.run(run_cfg, data, tuned, refitted, tracker)
        seconds = time.perf_counter() - start
        tracker.log_metrics({"total_seconds": seconds})
    link = tracker.run_link(comp.task, run_id)  # run <id> [<url of the run's page>]
    log.info("%s", summary_line(comp, result, seconds) + (f" | {link}" if link else ""))
    return {**result, "tune": tuned, "refitted": refitted, "run_id": run_id, "composition": comp}


def _use_registry_name(plain: dict[str, Any], run: RunConfig) -> bool:
    """Give ``plain["dataset"]`` the name of the dataset :func:`load_prepared` will load
    when it differs from the composed one: ``dataset=iris`` with a user's ``iris.yaml``
    that says ``override: true`` (:mod:`pipeline.data.registry`) loads ``user-iris``, and
    its MLflow run, tags and params must say so, not the project's ``iris``. The node
    becomes the user's YAML (the composition, done once more on it, reads the dataset from
    it). True when it changed."""
    from .data.registry import get_spec, load_mapping

    name = run.composition.dataset
    spec = get_spec(name, run.data.dataset_dirs)
    if spec.name == name or spec.source is None:
        return False
    plain["dataset"] = {**load_mapping(spec.source), "name": spec.name}
    return True


def _sweep_group() -> str | None:
    """The sweep directory of a ``--multirun`` job (its runs' group tag), else None."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized():
        return None
    hc = HydraConfig.get()
    return str(hc.sweep.dir) if hc.mode == RunMode.MULTIRUN else None


@hydra.main(config_path=config_path(), config_name="train", version_base="1.3")
def hydra_main(cfg: DictConfig) -> None:
    """Train, tune and evaluate one composition."""
    run_or_exit(lambda c: run(c, group=_sweep_group()), cfg)


def main() -> None:
    """``projloss-train`` (``python -m pipeline.train``): :func:`hydra_main`, with Hydra's own
    errors (an unknown option, key or override) as one line ``error: ...``."""
    entry(hydra_main)


if __name__ == "__main__":
    normalize_sys_argv()  # Hydra flags may follow the overrides
    main()
