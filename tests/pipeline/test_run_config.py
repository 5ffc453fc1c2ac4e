"""The typed run config: built once at the edge, what the stage cores take."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from omegaconf import OmegaConf

from pipeline.config.composition import LambdaGrid, make_estimator
from pipeline.config.run import RunConfig
from pipeline.errors import CompositionError, ConfigError

from .conftest import compose


def _plain(overrides: list[str]) -> dict:
    cfg = OmegaConf.to_container(compose(overrides), resolve=True)
    cfg.pop("experiments")
    return cfg


def test_a_composed_config_typed_once() -> None:
    overrides = [
        "task=multilabel",
        "dataset=emotions",
        "set=knapsack",
        "set.params.upper=3",
        "decoder=unit_cube",
        "lambdas.num=4",
        "lambdas.ties=largest",
        "warm_start=false",
    ]
    cfg = _plain(overrides)
    run = RunConfig.from_config(cfg)
    assert RunConfig.from_config(compose([*overrides, "~experiments"])) == run  # DictConfig
    comp = run.composition
    assert (comp.task, comp.dataset, comp.set, comp.decoder) == (
        "multilabel",
        "emotions",
        "knapsack",
        "unit_cube",
    )
    assert comp.set_params["upper"] == 3  # the set's parameters under the name of conf/set
    assert make_estimator(comp).knapsack_upper == 3
    assert run.lambdas == LambdaGrid(
        low=cfg["lambdas"]["low"], high=cfg["lambdas"]["high"], num=4, ties="largest"
    )
    np.testing.assert_allclose(run.grid, np.logspace(-4, 4, 4))
    assert run.ties == "largest" and not run.warm_start and not run.warm
    assert run.metrics == tuple(cfg["task"]["metrics"])
    assert run.select_by == tuple(cfg["task"]["select_by"])
    assert run.tracking.experiment_prefix == cfg["tracking"]["experiment_prefix"]
    assert run.config == cfg and run.splits is None


def test_no_lambda_for_the_median() -> None:
    run = RunConfig.from_config(_plain(["task=ordinal", "dataset=ERA", "model=median"]))
    assert run.lambdas is None and run.grid == [None] and run.ties == "smallest"


def test_one_split_of_a_sweep() -> None:
    cfg = {**_plain(["task=ordinal", "dataset=ERA"]), "splits": [0, 3]}
    run = RunConfig.from_config(cfg)
    assert run.splits == (0, 3)
    one = run.for_split(3)
    assert one.splits is None and "splits" not in one.config
    assert one.data.ordinal_split == 3 and one.config["data"]["ordinal_split"] == 3
    assert one.composition == run.composition
    assert run.config["data"]["ordinal_split"] == 0  # the sweep's own config unchanged


@pytest.mark.parametrize(
    ("override", "error", "match"),
    [
        ("lambdas.num=0", ConfigError, "lambdas.num"),
        ("+nope=1", ConfigError, "unknown setting"),
        ("geometry=kl", None, None),
        ("task.select_by=[mae]", CompositionError, "unknown metric .mae. for the multilabel"),
    ],
)
def test_checked_at_the_edge(override: str, error: type | None, match: str | None) -> None:
    cfg = _plain(["task=multilabel", "dataset=emotions", "set=unit_cube", override])
    if error is None:
        assert RunConfig.from_config(cfg).composition.geometry == "kl"
        return
    with pytest.raises(error, match=match):
        RunConfig.from_config(cfg)


def test_frozen() -> None:
    run = RunConfig.from_config(_plain(["task=label_ranking", "dataset=iris"]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.warm_start = False  # type: ignore[misc]
