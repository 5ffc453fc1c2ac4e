"""params.yaml experiments -> run configs (what the DVC stages run)."""

from __future__ import annotations

import copy

import pytest
import yaml

from pipeline.composition import CompositionError, validate
from pipeline.experiments import compose_runs, data_node, get_experiment
from pipeline.params import compose_params


@pytest.fixture(scope="module")
def params() -> dict:
    return yaml.safe_load(compose_params(["task=multilabel", "set=unit_cube", "model=poly"]))


def test_table_row_runs(params: dict) -> None:
    runs = compose_runs(params, "t1-iris")
    assert list(runs) == [
        "cube-cube",
        "row_simplex-row_simplex",
        "reals-birkhoff",
        "cube-birkhoff",
        "row_simplex-birkhoff",
        "birkhoff-birkhoff",
    ]
    for rid, cfg in runs.items():
        comp = validate(cfg)
        assert f"{comp.set}-{comp.decoder}" == rid
        assert (comp.task, comp.dataset, comp.geometry, comp.model) == (
            "label_ranking",
            "iris",
            "euclidean",
            "linear",
        )
        assert "experiments" not in cfg
        for key in ("lambdas", "seed", "warm_start", "data", "tracking"):
            assert cfg[key] == params[key], key


def test_current_is_the_top_level_composition(params: dict) -> None:
    (cfg,) = compose_runs(params, "current").values()
    for node in ("task", "set", "geometry", "decoder", "model"):
        assert cfg[node] == params[node], node
    assert cfg["dataset"]["name"] == params["dataset"]["name"] == "emotions"
    comp = validate(cfg)
    assert (comp.set, comp.model, comp.model_params["degree"]) == ("unit_cube", "poly", 2)


def test_globals_come_from_params_unless_the_experiment_pins_them(params: dict) -> None:
    p = copy.deepcopy(params)
    p["lambdas"]["num"] = 4
    p["seed"] = 7
    p["data"]["seed"] = 7
    p["experiments"]["t1-iris"]["runs"]["cube-cube"].append("lambdas.num=2")
    runs = compose_runs(p, "t1-iris")
    assert runs["cube-cube"]["lambdas"] == {"low": 1e-4, "high": 1e4, "num": 2}
    assert runs["birkhoff-birkhoff"]["lambdas"]["num"] == 4
    assert runs["birkhoff-birkhoff"]["seed"] == runs["birkhoff-birkhoff"]["data"]["seed"] == 7


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda e: e.pop("dataset"), "needs a 'dataset'"),
        (lambda e: e.update(runs={}), "needs 'runs'"),
        (lambda e: e.update(overrides="set=cube"), "list of Hydra overrides"),
        (lambda e: e.update(extra=1), "unknown key"),
        (lambda e: e["overrides"].append("data.drop_empty=true"), "global"),
        (lambda e: e["runs"]["cube-cube"].append("datasets=all"), "global"),
    ],
)
def test_invalid_experiments(params: dict, change, message: str) -> None:
    p = copy.deepcopy(params)
    change(p["experiments"]["t1-iris"])
    with pytest.raises(CompositionError, match=message):
        get_experiment(p, "t1-iris")


def test_composition_errors(params: dict) -> None:
    with pytest.raises(CompositionError, match=r"unknown experiment 'nope'.*current"):
        get_experiment(params, "nope")
    p = copy.deepcopy(params)
    p["experiments"]["t1-iris"]["dataset"] = "wine"
    with pytest.raises(CompositionError, match="declares dataset 'wine'"):
        compose_runs(p, "t1-iris")
    p = copy.deepcopy(params)
    p["experiments"]["t1-iris"]["runs"]["cube-cube"] = ["set=no_such_set"]
    with pytest.raises(CompositionError, match="cannot compose"):
        compose_runs(p, "t1-iris")


def test_mirror_variable(params: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROJLOSS_MIRROR", "/mirror")
    assert data_node(params)["mirror"] == "/mirror"
    p = copy.deepcopy(params)
    p["data"]["mirror"] = "/explicit"
    assert data_node(p)["mirror"] == "/explicit"  # an explicit setting wins
    monkeypatch.delenv("PROJLOSS_MIRROR")
    assert data_node(params)["mirror"] == "../shared/datasets"
