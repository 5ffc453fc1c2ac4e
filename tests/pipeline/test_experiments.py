"""params.yaml experiments -> run configs (what the DVC stages run)."""

from __future__ import annotations

import copy

import pytest
import yaml

from pipeline.config.composition import CompositionError, validate
from pipeline.config.experiments import compose_runs, data_node, get_experiment
from pipeline.params import compose_params

from .conftest import PAPER_RUNS, PaperRuns


@pytest.fixture(scope="module")
def params() -> dict:
    return yaml.safe_load(
        compose_params(["task=multilabel", "set=unit_cube", "model=poly", "experiments=default"])
    )


def test_table_row_runs(params: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROJLOSS_MIRROR", raising=False)  # data.mirror as params.yaml says
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
    assert runs["cube-cube"]["lambdas"] == {"low": 1e-4, "high": 1e4, "num": 2, "ties": "smallest"}
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


@PAPER_RUNS
def test_runs_are_yielded_as_they_are_composed(paper_runs: PaperRuns) -> None:
    """iter_compose_runs yields each run when it is composed (the tune stage starts its
    fit then): the first before the last is composed, and the same runs in the same
    order as compose_runs."""
    from pipeline.config import experiments

    calls = []
    original = experiments._overrides_of

    def counting(item, rid):
        calls.append(rid)
        return original(item, rid)

    runs = experiments.iter_compose_runs(paper_runs.params(), "ml")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(experiments, "_overrides_of", counting)
        first = next(runs)
        composed_before_first = len(calls)
        rest = list(runs)
    assert composed_before_first < len(calls)
    expected = paper_runs.runs("ml")  # compose_runs(params, "ml")
    assert dict([first, *rest]) == expected
    assert [rid for rid, _ in [first, *rest]] == list(expected)


def test_mirror_variable(params: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROJLOSS_MIRROR", "/mirror")
    assert data_node(params)["mirror"] == "/mirror"
    p = copy.deepcopy(params)
    p["data"]["mirror"] = "/explicit"
    assert data_node(p)["mirror"] == "/explicit"  # an explicit setting wins
    monkeypatch.delenv("PROJLOSS_MIRROR")
    assert data_node(params)["mirror"] == "../shared/datasets"


@pytest.fixture(scope="module")
def paper_params() -> dict:
    params = yaml.safe_load(compose_params([]))
    # a one-dataset experiment on a prepared variant
    params["experiments"]["ml-birds"] = {
        "dataset": "birds+drop_empty",
        "data": {"drop_empty": True},
        "overrides": ["task=multilabel", "dataset=birds"],
        "runs": {"k": ["set=knapsack"]},
    }
    return params


def test_multi_dataset_experiment(paper_params: dict) -> None:
    """`datasets`: every run on every dataset (ids <dataset>/<run>); the configs reusing
    the first dataset's composition equal Hydra's own composition of each dataset."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from pipeline.paths import conf_dir

    p = copy.deepcopy(paper_params)
    item = p["experiments"]["ord"]
    assert len(item["datasets"]) == 16 and len(item["runs"]) == 5
    item["datasets"] = ["car", "ERA", "tae", "winequality-red"]
    item["runs"] = {k: item["runs"][k] for k in ("ridge-round", "order_simplex-order_simplex")}
    runs = compose_runs(p, "ord")
    assert len(runs) == 4 * 2
    assert list(runs)[:2] == ["car/ridge-round", "ERA/ridge-round"]
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        for rid in ("tae/ridge-round", "winequality-red/order_simplex-order_simplex"):
            dataset, run = rid.split("/")
            overrides = [*item["overrides"], f"dataset={dataset}", *item["runs"][run]]
            direct = OmegaConf.to_container(compose("config", overrides=overrides), resolve=True)
            for key in ("experiments", "report", "lambdas", "seed", "warm_start", "progress"):
                direct.pop(key, None)
            direct.pop("data", None)
            ours = {k: v for k, v in runs[rid].items() if k in direct}
            assert ours == direct, rid
    comp = validate(runs["tae/ridge-round"])
    assert (comp.dataset, comp.kind, comp.decoder_params) == ("tae", "round", {"clip": False})
    assert all("splits" not in cfg for cfg in runs.values())


def test_splits_and_data_variants(paper_params: dict) -> None:
    p = copy.deepcopy(paper_params)
    exps = p["experiments"]
    exps["ord-splits"].update(datasets=["car", "tae"], runs={"median": ["model=median"]})
    runs = compose_runs(p, "ord-splits")
    assert list(runs) == ["car/median", "tae/median"]
    assert runs["car/median"]["splits"] == list(range(30))
    exps["ord-splits"]["splits"] = [3, 5]
    assert compose_runs(p, "ord-splits")["tae/median"]["splits"] == [3, 5]
    exps["ord-splits"]["splits"] = [30]
    with pytest.raises(CompositionError, match=r"splits 0..29, not \[30\]"):
        compose_runs(p, "ord-splits")
    (cfg,) = compose_runs(p, "ml-birds").values()
    assert cfg["data"]["drop_empty"] is True and cfg["data"]["seed"] == p["data"]["seed"]
    exps["ml-birds"]["dataset"] = "birds"  # the dataset's name is accepted too
    compose_runs(p, "ml-birds")
    exps["ml-birds"]["dataset"] = "birds+split1"
    with pytest.raises(CompositionError, match=r"prepared as 'birds\+drop_empty'"):
        compose_runs(p, "ml-birds")
    exps["lr"].update(splits="all", datasets=["iris"], runs={"a": []})
    with pytest.raises(CompositionError, match="ships indexed splits"):
        compose_runs(p, "lr")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # data.seed is allowed (repeated splits: paper-repeated); the other data settings
        # are global
        (lambda e: e.update(data={"test_size": 0.3}), "may set .*seed.*not \\['test_size'\\]"),
        (lambda e: e.update(splits="some"), "'splits' must be 'all' or a list"),
        (lambda e: e.update(splits=[0, -1]), "'splits' must be 'all' or a list"),
        (lambda e: e.update(datasets=[]), "'datasets' must be a non-empty list"),
        (lambda e: e.update(datasets=["ERA"]), "must be '\\.'"),
        (lambda e: e.update(dataset="."), "needs a 'datasets' list"),
        (lambda e: e.update(splits="all"), "must be '\\.'"),
        (
            lambda e: e.update(splits="all", data={"ordinal_split": 2}),
            "either 'splits' or data.ordinal_split",
        ),
    ],
)
def test_invalid_variant_keys(paper_params: dict, change, message: str) -> None:
    p = copy.deepcopy(paper_params)
    change(p["experiments"]["ml-birds"])
    with pytest.raises(CompositionError, match=message):
        get_experiment(p, "ml-birds")


@PAPER_RUNS
def test_fit_groups_of_the_overrides_are_those_of_the_composed_configs(
    paper_runs: PaperRuns,
) -> None:
    """The tune stage groups the runs that fit the same models by their overrides, before
    composing them (pipeline.runs.parallel.fit_group_order); for every experiment of the
    paper's list that is the grouping of their composed configs (fit_group_key), and the
    runs are composed in that order without changing a config."""
    from pipeline.config.experiments import iter_compose_runs, run_ids
    from pipeline.config.run import RunConfig
    from pipeline.runs.parallel import fit_group_key, fit_group_order

    p = paper_runs.params()
    shared = 0
    for key, item in p["experiments"].items():
        if item.get("splits") is not None:
            continue
        item = get_experiment(p, key)
        order, group = fit_group_order(item["runs"])
        composed = paper_runs.runs(key)  # every dataset of the list: composed once anyway
        assert list(composed) == run_ids(item)  # the default order
        by_key: dict[tuple, set[int]] = {}
        keys = {rid: fit_group_key(RunConfig.from_config(cfg)) for rid, cfg in composed.items()}
        for rid, fits in keys.items():
            dataset, name = rid.split("/", 1) if "/" in rid else (None, rid)
            by_key.setdefault((dataset, fits), set()).add(group[name])
        assert all(len(groups) == 1 for groups in by_key.values()), key
        sizes = {g: list(group.values()).count(g) for g in group.values()}
        n_keys = len(set(keys.values()))
        n_data = len(item["datasets"]) if item["datasets"] is not None else 1
        assert len(sizes) * n_data == n_keys, key  # no group split in two either
        shared += sum(size - 1 for size in sizes.values())
    assert shared >= 5  # lr: cube x3, row simplex x2 twice; ml: unit cube x3, reals x2 ...
    # Composed in the groups' order: the same configs, each run on every dataset in turn.
    # On one list (ml: several datasets, an order that is not the list's): a run's
    # composition depends on its overrides, not on the order, so composing every list
    # twice (40 s) checked nothing more.
    item = get_experiment(p, "ml")
    order, _ = fit_group_order(item["runs"])
    assert order != list(item["runs"])
    composed = dict(iter_compose_runs(p, "ml", run_order=order))
    assert composed == paper_runs.runs("ml")
    assert list(composed) == [f"{d}/{run}" for run in order for d in item["datasets"]]
    with pytest.raises(ValueError, match="is not an order of"):
        list(iter_compose_runs(p, "lr", run_order=["t1-cube-cube"]))
