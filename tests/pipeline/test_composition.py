"""Validation of every composition of the groups, and the estimators they build.

The oracle is independent of :mod:`pipeline.config.composition`: the engine's own list of valid
(projection set, geometry, decoding set) per task (:func:`projloss.tasks.valid_compositions`)
plus the pipeline's rules written out here (``decoder: same``, the two ordinal baselines,
datasets of the task).
"""

from __future__ import annotations

import copy
import functools
import itertools
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from pipeline.config.composition import CompositionError, lambda_grid, make_estimator, validate
from pipeline.config.settings import check_run_config
from pipeline.errors import ConfigError
from projloss import estimators as E
from projloss.sets import Birkhoff
from projloss.tasks import get_task, valid_compositions

from .conftest import ROOT

CONF = ROOT / "conf"
TASKS = ["label_ranking", "ordinal", "multilabel", "multiclass"]
DATASET_OF = {"label_ranking": "iris", "ordinal": "ERA", "multilabel": "emotions"}


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def load(group: str, name: str) -> dict[str, Any]:
    return copy.deepcopy(_load(group, name))


@functools.cache
def _load(group: str, name: str) -> dict[str, Any]:
    with open(CONF / group / f"{name}.yaml", encoding="utf-8") as f:
        data = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if group == "task":  # @package _global_: the task node and a defaults list
        return data["task"]
    return data


def config(
    task: str, set_: str, geometry: str, decoder: str, model: str, dataset: str = ""
) -> dict:
    ds = dataset or DATASET_OF.get(task, "car")
    return {
        "task": load("task", task),
        "set": load("set", set_),
        "geometry": load("geometry", geometry),
        "decoder": load("decoder", decoder),
        "model": load("model", model),
        "dataset": load("dataset", ds),
        "lambdas": {"low": 1e-4, "high": 1e4, "num": 10},
    }


def expected(task: str, set_: str, geometry: str, decoder: str, model: str) -> tuple | None:
    """The oracle: (set, geometry, decoder) resolved, or None when invalid."""
    if model == "median":
        return ("none", "none", "median") if task == "ordinal" else None
    if decoder == "round":
        ok = (task, set_, geometry, model) == ("ordinal", "reals", "euclidean", "linear")
        return (set_, geometry, "round") if ok else None
    valid = {(p, g, d) for p, g, d, _ in valid_compositions(task)}
    if decoder == "same":
        decoder = set_ if set_ in get_task(task).decoders else load("task", task)["decoder"]
    return (set_, geometry, decoder) if (set_, geometry, decoder) in valid else None


def test_groups_name_themselves() -> None:
    """Every option's ``name`` is its file name (code never needs Hydra's choices)."""
    for group in ("set", "geometry", "decoder", "model"):
        for name in options(group):
            assert load(group, name)["name"] == name, (group, name)
    for name in options("task"):
        assert load("task", name)["name"] == name
    assert options("set") == sorted(
        [
            "reals",
            "nonneg",
            "unit_cube",
            "simplex",
            "knapsack",
            "row_simplex",
            "cube",
            "birkhoff",
            "permutahedron",
            "order_simplex",
        ]
    )


@pytest.mark.parametrize("task", TASKS)
def test_every_combination(task: str) -> None:
    """Each (set, geometry, decoder, model) is accepted exactly when the oracle says so;
    a rejected one raises CompositionError naming the valid choices."""
    n_valid = 0
    for set_, geometry, decoder, model in itertools.product(
        options("set"), options("geometry"), options("decoder"), options("model")
    ):
        cfg = config(task, set_, geometry, decoder, model)
        want = expected(task, set_, geometry, decoder, model)
        if want is None:
            with pytest.raises(CompositionError, match="valid"):
                validate(cfg)
            continue
        comp = validate(cfg)
        n_valid += 1
        assert (comp.set, comp.geometry, comp.decoder) == want
        assert (comp.task, comp.model) == (task, model)
        assert comp.tags()["dataset"] == cfg["dataset"]["name"]
    assert n_valid > 0


@pytest.mark.parametrize(
    ("task", "set_", "geometry", "decoder", "model", "message"),
    [
        ("label_ranking", "reals", "kl", "birkhoff", "linear", r"'kl' geometry.*valid geometries"),
        ("ordinal", "birkhoff", "euclidean", "same", "linear", r"valid projection sets are \["),
        (
            "multilabel",
            "unit_cube",
            "euclidean",
            "birkhoff",
            "linear",
            r"cannot produce outputs.*valid decoding sets are \['unit_cube', 'knapsack'\]",
        ),
        (
            "label_ranking",
            "birkhoff",
            "euclidean",
            "same",
            "median",
            r"ordinal task only.*valid models for label_ranking are \['linear', 'poly', 'mlp'\]",
        ),
        ("ordinal", "order_simplex", "euclidean", "round", "linear", r"needs set=reals"),
        ("ordinal", "reals", "kl", "round", "linear", r"needs geometry=euclidean"),
        (
            "label_ranking",
            "cube",
            "euclidean",
            "permutahedron",
            "linear",
            r"different spaces.*must be one of",
        ),
    ],
)
def test_errors_name_the_valid_choices(
    task: str, set_: str, geometry: str, decoder: str, model: str, message: str
) -> None:
    with pytest.raises(CompositionError, match=message):
        validate(config(task, set_, geometry, decoder, model))


def test_dataset_must_fit_the_task() -> None:
    cfg = config("multilabel", "knapsack", "euclidean", "same", "linear", dataset="iris")
    with pytest.raises(CompositionError, match=r"iris.*label_ranking labels.*birds, cal500"):
        validate(cfg)
    # multiclass runs on the ordinal datasets' classes
    comp = validate(config("multiclass", "simplex", "kl", "same", "linear", dataset="ERA"))
    assert (comp.dataset, comp.decoder) == ("ERA", "simplex")


def test_missing_group_and_unknown_names() -> None:
    cfg = config("ordinal", "order_simplex", "euclidean", "same", "linear")
    del cfg["model"]
    with pytest.raises(CompositionError, match="model=<option>"):
        validate(cfg)
    cfg = config("ordinal", "order_simplex", "euclidean", "same", "linear")
    cfg["task"] = {**cfg["task"], "name": "regression"}
    with pytest.raises(CompositionError, match="valid tasks"):
        validate(cfg)
    cfg = config("ordinal", "order_simplex", "euclidean", "same", "poly")
    cfg["model"] = {**cfg["model"], "degree": 0}
    with pytest.raises(ConfigError, match="model.degree=0 is invalid"):  # the one check
        check_run_config(cfg)


def test_knapsack_bounds_must_agree() -> None:
    cfg = config("multilabel", "knapsack", "euclidean", "knapsack", "linear")
    cfg["decoder"] = {**cfg["decoder"], "params": {"lower": 0, "upper": 2}}
    with pytest.raises(CompositionError, match="must have the same lower/upper"):
        validate(cfg)
    # decoder=same decodes with the projection set itself: its bounds, nothing to agree on
    cfg = config("multilabel", "knapsack", "euclidean", "same", "linear")
    cfg["set"] = {**cfg["set"], "params": {"lower": 1, "upper": 3}}
    comp = validate(cfg)
    assert (comp.decoder, comp.set_params) == ("knapsack", {"lower": 1, "upper": 3})
    est = make_estimator(comp)
    assert (est.knapsack_lower, est.knapsack_upper, est.decoding_set) == (1, 3, None)


def test_a_set_class_that_cannot_be_imported_is_one_line() -> None:
    cfg = config("multilabel", "unit_cube", "euclidean", "same", "linear")
    cfg["set"] = {**cfg["set"], "class": "no_such_module.Set"}
    with pytest.raises(
        CompositionError, match="set.class='no_such_module.Set'.*cannot be imported"
    ):
        validate(cfg)
    cfg["set"] = {**cfg["set"], "class": "projloss.sets.Simplex"}  # not the unit cube
    with pytest.raises(CompositionError, match="is named 'simplex', not 'unit_cube'"):
        validate(cfg)


# ----------------------------------------------------------------------------- estimators
def _data(task: str, rng: np.random.Generator, n: int = 40) -> tuple[np.ndarray, Any]:
    X = rng.standard_normal((n, 3))
    scores = X @ rng.standard_normal((3, 4)) + 0.5 * rng.standard_normal((n, 4))
    if task == "label_ranking":
        return X, np.argsort(-scores, axis=1)
    if task == "multilabel":
        return X, (scores > 0).astype(np.int64)
    return X, np.digitize(scores[:, 0], [-1.0, 0.0, 1.0]) + 1  # classes 1..4


@pytest.mark.parametrize("task", TASKS)
def test_every_valid_composition_fits_and_predicts(task: str) -> None:
    """The estimator of each valid composition (linear model) fits and predicts labels of
    the task's form, with the composition it was built from."""
    rng = np.random.default_rng(0)
    X, y = _data(task, rng)
    seen = set()
    for set_, geometry, decoder in itertools.product(
        options("set"), options("geometry"), options("decoder")
    ):
        want = expected(task, set_, geometry, decoder, "linear")
        if want is None or want in seen:
            continue
        seen.add(want)
        comp = validate(config(task, set_, geometry, decoder, "linear"))
        est = make_estimator(comp, alpha=1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        pred = est.predict(X[:5])
        assert len(pred) == 5
        if comp.kind == "projection":
            assert (est.composition_.projection_set, est.composition_.decoding_set) == (
                comp.set,
                comp.decoder,
            )
            assert est.composition_.geometry == comp.geometry
            assert est.alpha == 1.0
    assert seen


def test_estimator_kinds_and_parameters() -> None:
    comp = validate(config("ordinal", "reals", "euclidean", "round", "linear"))
    assert isinstance(make_estimator(comp, alpha=0.5), E.RidgeRoundingOrdinalRegressor)
    comp = validate(config("ordinal", "order_simplex", "euclidean", "same", "median"))
    assert isinstance(make_estimator(comp), E.MedianOrdinalRegressor)
    assert not comp.has_lambda

    comp = validate(config("label_ranking", "birkhoff", "kl", "same", "poly"))
    est = make_estimator(comp, alpha=0.1, warm_start=True)
    assert (est.model, est.degree, est.coef0, est.warm_start) == ("poly", 2, 1.0, True)
    assert est.projection_set == "birkhoff"  # default parameters: by name (warm-started fit)

    cfg = config("label_ranking", "birkhoff", "euclidean", "same", "linear")
    cfg["set"] = {"name": "birkhoff", "params": {"tol": 1e-6, "max_iter": 50}}
    est = make_estimator(validate(cfg))
    assert isinstance(est.projection_set, Birkhoff)
    assert (est.projection_set.tol, est.projection_set.max_iter) == (1e-6, 50)

    cfg = config("multilabel", "reals", "euclidean", "knapsack", "linear")
    cfg["decoder"] = {"name": "knapsack", "params": {"lower": 1, "upper": 3}}
    est = make_estimator(validate(cfg))
    assert (est.knapsack_lower, est.knapsack_upper, est.decoding_set) == (1, 3, "knapsack")

    cfg = config("label_ranking", "permutahedron", "euclidean", "same", "linear")
    cfg["set"] = {"name": "permutahedron", "params": {"w": [3.0, 2.0, 0.0]}}
    est = make_estimator(validate(cfg))
    np.testing.assert_array_equal(est.w, [3.0, 2.0, 0.0])


def test_lambda_grid() -> None:
    np.testing.assert_allclose(
        lambda_grid({"lambdas": {"low": 1e-4, "high": 1e4, "num": 10}}),
        10.0 ** np.linspace(-4, 4, 10),
        rtol=1e-12,
    )
    np.testing.assert_array_equal(lambda_grid({"lambdas": {"low": 2, "high": 2, "num": 1}}), [2.0])
    bad_grids = [
        {"low": 0, "high": 1, "num": 3},
        {"low": 1, "high": 0.5, "num": 3},
        {"low": 1e-3, "high": 1, "num": 0},
        {"low": 1e-3, "high": 1, "num": 2.5},
        {"low": 1e-3, "high": 1, "num": 3, "ties": "first"},
    ]
    for bad in bad_grids:
        with pytest.raises(ConfigError, match="lambdas"):
            lambda_grid({"lambdas": bad})


def test_group_files_exist() -> None:
    for group in ("set", "geometry", "decoder", "model", "task", "experiments"):
        assert Path(CONF / group).is_dir()
