"""Run configs and data for the pipeline benchmarks, built the way the pipeline builds them.

A run config is composed by Hydra from ``conf/`` (``conf/config.yaml`` and the groups
``task``, ``set``, ``geometry``, ``decoder``, ``model``, ``dataset``) with the overrides of
a paper experiment, exactly as :func:`pipeline.config.experiments.compose_runs` does for the DVC
stages: every protocol setting (the lambda grid, warm start, the model's tolerance, the
sets' parameters, the lambda tie rule in the stage cores...) therefore follows ``conf/``
and the pipeline's code, never this module. Only what does not change a figure of the
fit is forced: MLflow tracking off, no progress bars.

Datasets are loaded with :func:`pipeline.data.load_prepared` from the project's prepared
data directory (``data.prepared_dir``, ``data/prepared/`` by default), which prepares
missing datasets from the mirror (``data.mirror`` / ``$PROJLOSS_MIRROR``) with the
pipeline's own fetch and preprocess cores: the first run of a section may therefore
spend a few seconds preparing data, outside every timed figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: overrides that keep the runs quiet and untracked (no figure depends on them)
QUIET = ("tracking.enabled=false", "progress=false", "data.progress=false")


def compose(overrides: Sequence[str]) -> dict[str, Any]:
    """The plain, resolved run config of ``conf/config.yaml`` with ``overrides``."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    from pipeline.paths import conf_dir

    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        cfg = hydra_compose("config", overrides=[*overrides, *QUIET])
    plain = OmegaConf.to_container(cfg, resolve=True)
    plain.pop("experiments", None)  # the DVC experiment list is not a setting of a run
    return plain


@dataclass
class Run:
    """A composed run: its config, validated composition and prepared data."""

    cfg: dict[str, Any]
    comp: Any  #: pipeline.config.composition.Composition
    data: Any  #: pipeline.data.PreparedData

    @property
    def run(self) -> Any:
        """The typed run config the stage cores take (pipeline.config.run.RunConfig)."""
        from pipeline.config.run import RunConfig

        return RunConfig.from_config(self.cfg)

    @property
    def n_train(self) -> int:
        return int(self.data.train[0].shape[0])

    @property
    def n_features(self) -> int:
        return int(self.data.train[0].shape[1])

    @property
    def k(self) -> int:
        """The size of the outputs: labels (ranking, multilabel) or classes (ordinal)."""
        y = np.asarray(self.data.train[1])
        if self.comp.task in ("label_ranking", "multilabel"):
            return int(y.shape[1])
        return int(self.data.stats.get("n_classes") or len(np.unique(y)))

    def lambda_mid(self) -> float:
        """The geometric middle of the configured lambda grid (1.0 for 1e-4..1e4)."""
        from pipeline.config.composition import lambda_grid

        grid = lambda_grid(self.cfg)
        return float(np.sqrt(grid[0] * grid[-1]))


_DATA: dict[str, Any] = {}


def load(overrides: Sequence[str]) -> Run:
    """Compose, validate and load the data of one run (datasets cached per process)."""
    import json

    from pipeline.config.composition import validate
    from pipeline.data.api import load_prepared

    cfg = compose(overrides)
    comp = validate(cfg)
    key = json.dumps([comp.dataset, cfg.get("data")], sort_keys=True, default=str)
    if key not in _DATA:
        _DATA[key] = load_prepared(comp.dataset, cfg)
    return Run(cfg, comp, _DATA[key])
