"""A run as a sweep over its units (:mod:`pipeline.runs.sweeps`): a plain run is a sweep of
one; the experiment stages (:mod:`pipeline.runs.stages`) take one path for both."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from pipeline.config.run import RunConfig
from pipeline.runs import stages, sweeps

from ..conftest import ROOT, make_settings, run_config


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunConfig, RunConfig]:
    """A plain ordinal run and the same run swept over the orreview splits 0 and 2."""
    settings = make_settings(tmp_path_factory.mktemp("data"), None)
    cfg = run_config(settings, ["task=ordinal", "dataset=ERA", "set=reals"])
    return RunConfig.from_config(cfg), RunConfig.from_config({**cfg, "splits": [0, 2]})


def test_a_plain_run_is_a_sweep_of_one(runs: tuple[RunConfig, RunConfig]) -> None:
    """The units of each shape, and the run's tuning entry: a plain run's is its unit's
    own, a sweep's has every split's and their total time; each unit gets its own back."""
    plain, swept = runs
    assert sweeps.shape_of(plain) is sweeps.ONE and sweeps.shape_of(swept) is sweeps.SPLITS
    assert sweeps.ONE.splits(plain) == (None,) and sweeps.ONE.unit(plain, None) is plain
    assert sweeps.SPLITS.splits(swept) == (0, 2)
    unit = sweeps.SPLITS.unit(swept, 2)
    assert unit.splits is None and unit.data.ordinal_split == 2
    assert dataclasses.replace(unit, splits=swept.splits, data=swept.data) == swept
    for shape, splits in ((sweeps.ONE, (None,)), (sweeps.SPLITS, (0, 2))):
        tuned = {s: {"selected": {}, "seconds": 1.5 + i} for i, s in enumerate(splits)}
        entry = shape.tuning(tuned)
        assert all(shape.unit_tuning(entry, s) == tuned[s] for s in splits)
    assert sweeps.SPLITS.tuning({0: {"seconds": 1.0}, 2: {"seconds": 2.5}}) == {
        "splits": {"0": {"seconds": 1.0}, "2": {"seconds": 2.5}},
        "seconds": 3.5,
    }


def test_unit_results_come_by_run_as_late_as_they_can() -> None:
    """A run's units are taken from the tasks' results in order, the next task waited for
    only when a unit of the run is still missing (the stage logs a run while the workers
    go on with the next ones)."""
    keys = [[("a", None), ("b", None)], [("c", 0)], [("c", 1)], [("d", None)]]
    asked = []

    def results():
        for i, task in enumerate(keys):
            asked.append(i)
            yield [f"{rid}{split}" for rid, split in task]

    pending = stages._UnitResults(keys, results())
    assert pending.take("b", [None]) == {None: "bNone"} and asked == [0]
    assert pending.take("a", [None]) == {None: "aNone"} and asked == [0]
    assert pending.take("c", [0, 1]) == {0: "c0", 1: "c1"} and asked == [0, 1, 2]
    assert pending.take("d", [None]) == {None: "dNone"}


def test_the_stages_never_ask_which_shape_a_run_has() -> None:
    """One path: no test of a run's ``splits`` in the stages (the shape is chosen in one
    place, :func:`pipeline.runs.sweeps.shape_of`); ``pipeline.stage`` is the command only."""
    tree = ast.parse(Path(stages.__file__).read_text(encoding="utf-8"))
    calls = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}  # shape.splits()
    reads = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and n.attr == "splits" and id(n) not in calls
    ]
    assert reads == [], f"runs/stages.py reads .splits at lines {reads}"
    command = (ROOT / "src/pipeline/stage.py").read_text(encoding="utf-8")
    assert len(command.splitlines()) <= 150
    assert "splits" not in command
