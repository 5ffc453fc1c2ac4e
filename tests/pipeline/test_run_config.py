"""The typed run config: built once at the edge, what the stage cores take."""

from __future__ import annotations

import ast
import dataclasses
import typing
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from omegaconf import OmegaConf

from pipeline.config.composition import LambdaGrid, make_estimator
from pipeline.config.run import RunConfig
from pipeline.data.settings import data_settings
from pipeline.errors import CompositionError, ConfigError

from .conftest import ROOT, compose


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
    assert run.splits is None and not run.indexed_splits
    assert run.data == data_settings(cfg["data"])


def test_no_lambda_for_the_median() -> None:
    run = RunConfig.from_config(_plain(["task=ordinal", "dataset=ERA", "model=median"]))
    assert run.lambdas is None and run.grid == [None] and run.ties == "smallest"


def test_one_split_of_a_sweep() -> None:
    cfg = {**_plain(["task=ordinal", "dataset=ERA"]), "splits": [0, 3]}
    run = RunConfig.from_config(cfg)
    assert run.splits == (0, 3)
    one = run.for_split(3)
    assert one.splits is None and one.data.ordinal_split == 3 and run.indexed_splits
    assert one.composition == run.composition
    assert run.data.ordinal_split == 0  # the sweep's own settings unchanged


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


def _plain_types(hint: Any) -> list[Any]:
    """The parts of a type hint that hold a plain config: ``Any``, a dict or a mapping."""
    if hint is Any:
        return [hint]
    origin = typing.get_origin(hint)
    if origin in (dict, Mapping) or hint in (dict, Mapping):
        return [hint]
    return [t for arg in typing.get_args(hint) for t in _plain_types(arg)]


def test_no_plain_config_past_the_edge() -> None:
    """RunConfig all the way down (issue 34): a run keeps no plain config (every field a
    typed setting: no dict, mapping or Any), and no module of ``src/pipeline`` reads a
    ``.config`` attribute (the raw config a run used to carry); the commands log the config
    they composed themselves."""
    hints = typing.get_type_hints(RunConfig)
    assert set(hints) == {f.name for f in dataclasses.fields(RunConfig)}
    assert not {name: hint for name, hint in hints.items() if _plain_types(hint)}
    reads = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / "src" / "pipeline").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and node.attr == "config"
    ]
    assert not reads, reads
