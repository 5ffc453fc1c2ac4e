"""conf/: the Hydra composition of every valid combination, task defaults, the sweep."""

from __future__ import annotations

import itertools

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from pipeline.config.composition import DATASET_TASKS, CompositionError, validate
from pipeline.data.registry import list_specs
from pipeline.runs.callbacks import count_jobs

from .conftest import ROOT
from .conftest import compose as compose_one
from .test_composition import TASKS, config, expected, load, options

CONF = str(ROOT / "conf")


@pytest.mark.parametrize("task", TASKS)
def test_compose_every_valid_combination(task: str) -> None:
    """Hydra composes every valid (set, geometry, decoder) of the task (linear model) into
    a config whose composition validates to what the groups say; each other model option
    composes too (a model does not interact with the rest but median/round)."""
    combos = [
        c
        for c in itertools.product(options("set"), options("geometry"), options("decoder"))
        if expected(task, *c, "linear") is not None
    ]
    extra_models = [m for m in options("model") if m != "linear" and expected(task, *combos[0], m)]
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        for (set_, geometry, decoder), model in [
            *((c, "linear") for c in combos),
            *((combos[0], m) for m in extra_models),
        ]:
            cfg = compose(
                "config",
                overrides=[
                    f"task={task}",
                    f"set={set_}",
                    f"geometry={geometry}",
                    f"decoder={decoder}",
                    f"model={model}",
                ],
            )
            assert (cfg.task.name, cfg.set.name, cfg.geometry.name) == (task, set_, geometry)
            assert (cfg.decoder.name, cfg.model.name) == (decoder, model)
            comp = validate(OmegaConf.to_container(cfg, resolve=True))
            assert (comp.set, comp.geometry, comp.decoder) == expected(
                task, set_, geometry, decoder, model
            )


def test_compose_invalid_combinations_fail_validation() -> None:
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        for overrides, message in [
            (["set=reals", "geometry=kl"], "valid geometries"),
            (["task=ordinal", "set=birkhoff"], "valid projection sets"),
            (["task=multilabel", "decoder=birkhoff"], "valid decoding sets"),
            (["model=median"], "ordinal task only"),
            (["task=multilabel", "dataset=iris"], "valid datasets for multilabel"),
        ]:
            cfg = compose("config", overrides=overrides)
            with pytest.raises(CompositionError, match=message):
                validate(cfg)


def test_defaults_and_task_overrides() -> None:
    cfg = compose_one()
    assert (cfg.task.name, cfg.set.name, cfg.decoder.name, cfg.dataset.name) == (
        "label_ranking",
        "birkhoff",
        "same",
        "iris",
    )
    assert (cfg.geometry.name, cfg.model.name) == ("euclidean", "linear")
    assert dict(cfg.lambdas) == {"low": 1e-4, "high": 1e4, "num": 10, "ties": "smallest"}
    assert cfg.data.seed == cfg.seed == 0
    assert compose_one(["seed=3"]).data.seed == 3
    # a task sets its own default dataset and set...
    cfg = compose_one(["task=multilabel"])
    assert (cfg.dataset.name, cfg.set.name) == ("emotions", "knapsack")
    # ...but the command line wins
    cfg = compose_one(["task=multilabel", "set=unit_cube", "dataset=scene"])
    assert (cfg.dataset.name, cfg.set.name) == ("scene", "unit_cube")
    assert compose_one(["task=ordinal"]).dataset.name == "ERA"


def test_task_sweep_is_derived_from_the_registry() -> None:
    """A bare ``--multirun`` sweeps every registry dataset the task can use that needs no
    download (mirror copy or local ``path:``), from the ``task:`` of each YAML: the paper's
    mirrored datasets, and a user's own (see tests/reliability/test_data_registry.py)."""
    specs = list_specs([ROOT / "conf" / "dataset"])
    for task in TASKS:
        cfg = compose_one([f"task={task}"], return_hydra_config=True)
        sweep = OmegaConf.to_container(cfg.hydra.sweeper.params, resolve=True)["dataset"]
        want = [
            n
            for n, s in specs.items()
            if s.task in DATASET_TASKS[task] and all(f.mirror or f.path for f in s.files)
        ]
        assert sweep.split(",") == want, task
        paper = [n for n in want if specs[n].mirrored]
        assert len(paper) == {"label_ranking": 6, "multilabel": 6}.get(task, 16), task
        assert set(cfg.task.select_by) <= set(cfg.task.metrics)


def test_every_dataset_fits_its_task() -> None:
    """Every registry dataset (a ``dataset=<name>`` option) validates with its task, and
    with no other task but multiclass on ordinal data (no Hydra: the registry files are
    the group's options, see test_registry)."""
    specs = list_specs([ROOT / "conf" / "dataset"])
    for name, spec in specs.items():
        for task in TASKS:
            cfg = config(
                task, load("task", task)["decoder"], "euclidean", "same", "linear", dataset=name
            )
            if spec.task in DATASET_TASKS[task]:
                assert validate(cfg).dataset == name
            else:
                with pytest.raises(CompositionError, match="valid datasets"):
                    validate(cfg)


def test_multirun_sweeps_the_task_datasets() -> None:
    cfg = compose_one(["task=multilabel", "set=knapsack"], return_hydra_config=True)
    params = OmegaConf.to_container(cfg.hydra.sweeper.params, resolve=True)
    assert params == {"dataset": "birds,cal500,emotions,scene,tmc2007_500,yeast"}
    assert count_jobs(params, []) == 6
    assert count_jobs(params, ["dataset=iris,wine"]) == 2  # the command line wins
    assert count_jobs(params, ["set=unit_cube,knapsack"]) == 12
    assert count_jobs(params, ["set=unit_cube", "geometry=euclidean,kl"]) == 12
    assert count_jobs({}, []) == 1
    assert count_jobs(params, ["dataset=glob(*)"]) is None
    # Hydra's own outputs stay out of the repository
    assert cfg.hydra.run.dir == "." and cfg.hydra.output_subdir is None
    assert cfg.hydra.job.chdir is False
    assert str(cfg.hydra.sweep.dir).startswith("multirun/")


def test_experiments_group() -> None:
    cfg = compose_one(["task=multilabel", "set=unit_cube", "model=poly", "experiments=default"])
    exps = OmegaConf.to_container(cfg.experiments, resolve=True)
    assert set(exps) == {"current", "t1-iris"}
    current = exps["current"]
    assert current["dataset"] == "emotions"
    assert current["overrides"] == ["task=multilabel", "dataset=emotions"]
    for node in ("task", "set", "geometry", "decoder", "model"):
        assert current["config"][node] == OmegaConf.to_container(cfg[node], resolve=True)
    t1 = exps["t1-iris"]
    assert t1["dataset"] == "iris" and len(t1["runs"]) == 6
    smoke = OmegaConf.to_container(compose_one(["experiments=smoke"]).experiments)
    assert set(smoke) == {"smoke-cube", "smoke-birkhoff"}
    # the default list: the paper's tables (conf/experiments/paper.yaml), `current` included
    paper = OmegaConf.to_container(compose_one([]).experiments, resolve=True)
    assert (
        paper["current"]
        == OmegaConf.to_container(compose_one(["experiments=default"]).experiments, resolve=True)[
            "current"
        ]
    )
    assert paper["lr"]["dataset"] == "." and len(paper["lr"]["datasets"]) == 6
    assert len(paper["lr"]["runs"]) == 15
    assert paper["ord"]["dataset"] == "." and len(paper["ord"]["datasets"]) == 16
    assert paper["ord-splits"]["splits"] == "all"
    assert paper["ml"]["data"] == {"drop_empty": True} and "birds" in paper["ml"]["datasets"]
