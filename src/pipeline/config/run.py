"""The typed run config: one run, built once at the edge from the Hydra config.

A run is a composition (the set with its parameters, geometry, decoder, task, dataset and
model: :class:`~pipeline.config.composition.Composition`) with its lambda grid (values
and tie rule), warm start, metrics, data settings and tracking settings. The commands
(``pipeline.train``, the DVC stages) build it with :meth:`RunConfig.from_config`, which
checks the config's keys and values (:func:`~pipeline.config.settings.check_run_config`)
and the composition (:func:`~pipeline.config.composition.validate`) once; the stage cores
(:mod:`pipeline.runs`) take it, never the raw config: it keeps no plain config (what is
logged as ``config.yaml`` and written to the tuning JSON is the command's own composed
config), and every consumer reads its typed fields (the data settings load the data, the
MLflow view names the run from them)::

    run = RunConfig.from_config(cfg)
    tuned = tune.run(run, data, tracker)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..data.settings import DataSettings, data_settings
from ..plain import to_plain
from .composition import Composition, LambdaGrid, validate
from .scoring import task_metrics
from .settings import TrackingSettings, check_run_config


@dataclass(frozen=True)
class RunConfig:
    """One run, checked: see the module docstring.

    ``lambdas`` is None for a composition without regularization (the median baseline);
    ``splits``: the orreview splits of a split sweep (None: one run);
    ``indexed_splits``: whether the dataset ships indexed train/test splits (orreview:
    a run names its split, :func:`pipeline.runs.mlflow_view.run_name`).
    """

    composition: Composition
    lambdas: LambdaGrid | None
    metrics: tuple[str, ...]
    select_by: tuple[str, ...]
    warm_start: bool
    progress: bool
    data: DataSettings
    tracking: TrackingSettings
    splits: tuple[int, ...] | None = None
    indexed_splits: bool = False

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> RunConfig:
        """Check a run config (a composed ``conf/config.yaml``, plain or DictConfig) once
        and type it."""
        plain = to_plain(cfg)
        check_run_config(plain)  # unknown keys, bad values: each setting's one validator
        comp = validate(plain)  # the composition
        metrics, select_by = task_metrics(plain["task"])
        lambdas = LambdaGrid.from_config(plain.get("lambdas")) if comp.has_lambda else None
        splits = plain.get("splits")
        return cls(
            composition=comp,
            lambdas=lambdas,
            metrics=tuple(m.name for m in metrics),
            select_by=tuple(select_by),
            warm_start=bool(plain.get("warm_start", True)),
            progress=bool(plain.get("progress", True)),
            data=data_settings(plain),
            tracking=TrackingSettings.from_config(plain.get("tracking")),
            splits=None if splits is None else tuple(int(s) for s in splits),
            indexed_splits=_indexed_splits(plain.get("dataset")),
        )

    @property
    def grid(self) -> list[float | None]:
        """The lambdas to fit (``[None]``: one fit without lambda)."""
        return [None] if self.lambdas is None else self.lambdas.values

    @property
    def ties(self) -> str:
        return "smallest" if self.lambdas is None else self.lambdas.ties

    @property
    def warm(self) -> bool:
        """Whether the grid is fitted warm-started (projection estimators only)."""
        return self.warm_start and self.composition.kind == "projection"

    def for_split(self, split: int) -> RunConfig:
        """The run of one split of a split sweep (``data.ordinal_split = split``)."""
        return dataclasses.replace(
            self, splits=None, data=self.data.replace(ordinal_split=int(split))
        )


def _indexed_splits(dataset: Any) -> bool:
    """Whether a dataset node (``conf/dataset/<name>.yaml``) ships indexed (orreview)
    splits: a part path with ``{split}``, or ``n_splits``."""
    if not isinstance(dataset, Mapping):
        return False
    parts = dataset.get("parts") or {}
    return any("{split" in str(v) for v in parts.values()) or dataset.get("n_splits") is not None
