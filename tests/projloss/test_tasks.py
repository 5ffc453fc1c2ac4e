"""Validation of (projection set, geometry, decoding set, target loss) compositions."""

# ruff: noqa: E501

from __future__ import annotations

import pytest

from projloss.sets import SETS, UnitCube
from projloss.target_losses import HammingLoss
from projloss.tasks import TASKS, check_composition, get_task, valid_compositions

# The paper's compositions (Tables 1-4, 6-7): all must be valid.
PAPER = [
    ("label_ranking", "cube", "euclidean", "cube"),
    ("label_ranking", "row_simplex", "euclidean", "row_simplex"),
    ("label_ranking", "reals", "euclidean", "birkhoff"),
    ("label_ranking", "cube", "euclidean", "birkhoff"),
    ("label_ranking", "row_simplex", "euclidean", "birkhoff"),
    ("label_ranking", "birkhoff", "euclidean", "birkhoff"),
    ("label_ranking", "row_simplex", "kl", "row_simplex"),
    ("label_ranking", "nonneg", "kl", "birkhoff"),
    ("label_ranking", "cube", "kl", "birkhoff"),
    ("label_ranking", "row_simplex", "kl", "birkhoff"),
    ("label_ranking", "birkhoff", "kl", "birkhoff"),
    ("label_ranking", "permutahedron", "euclidean", "permutahedron"),
    ("ordinal", "reals", "euclidean", "order_simplex"),
    ("ordinal", "unit_cube", "euclidean", "order_simplex"),
    ("ordinal", "order_simplex", "euclidean", "order_simplex"),
    ("multilabel", "unit_cube", "euclidean", "unit_cube"),
    ("multilabel", "reals", "euclidean", "knapsack"),
    ("multilabel", "unit_cube", "euclidean", "knapsack"),
    ("multilabel", "knapsack", "euclidean", "knapsack"),
]


@pytest.mark.parametrize(("task", "proj", "geometry", "dec"), PAPER)
def test_paper_compositions_are_valid(task, proj, geometry, dec):
    comp = check_composition(task, proj, geometry, dec)
    assert (comp.projection_set, comp.decoding_set) == (proj, dec)
    assert comp.target_loss == comp.encoding.target_losses[0]


def test_defaults():
    assert check_composition("label_ranking", "birkhoff").decoding_set == "birkhoff"
    assert check_composition("label_ranking", "birkhoff").target_loss == "hamming"
    assert check_composition("label_ranking", "permutahedron").target_loss == "spearman"
    assert check_composition("ordinal", "reals").decoding_set == "order_simplex"
    assert check_composition("ordinal", "unit_cube").target_loss == "absolute"
    assert check_composition("multiclass", "unit_cube", "kl").decoding_set == "simplex"
    assert check_composition("multilabel", "knapsack").decoding_set == "knapsack"
    # instances are accepted and named
    comp = check_composition("multilabel", UnitCube(), "kl", None, HammingLoss())
    assert (comp.projection_set, comp.decoding_set, comp.target_loss) == (
        "unit_cube",
        "unit_cube",
        "hamming",
    )


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (
            ("label_ranking", "reals", "kl", "birkhoff"),
            r"'kl' geometry is not defined.*'reals'.*nonneg",
        ),
        (
            ("label_ranking", "order_simplex"),
            r"does not contain the encoded labels.*valid projection sets are \['reals'",
        ),
        (("label_ranking", "reals"), r"cannot decode.*give a decoding set, one of \['birkhoff'"),
        (("label_ranking", "nonneg", "euclidean", "permutahedron"), None),
        (
            ("label_ranking", "permutahedron", "euclidean", "birkhoff"),
            r"'permutahedron' and the decoding set 'birkhoff' live in different spaces",
        ),
        (
            ("label_ranking", "birkhoff", "euclidean", "order_simplex"),
            r"cannot produce outputs for the label_ranking task",
        ),
        # the ranking Hamming loss decodes on the cube (V = -I: 1[u > 0], the paper's Table 1)
        (("label_ranking", "birkhoff", "euclidean", "cube", "hamming_ranking"), None),
        (
            ("label_ranking", "permutahedron", "euclidean", "permutahedron", "hamming_ranking"),
            r"'hamming_ranking' does not decompose.*'permutahedron'.*\['spearman'\]",
        ),
        (
            ("label_ranking", "birkhoff", "euclidean", "birkhoff", "absolute"),
            r"does not decompose.*valid target losses are \['hamming', 'hamming_ranking'\]",
        ),
        (
            ("ordinal", "unit_cube", "euclidean", "unit_cube"),
            r"decoding set 'unit_cube' cannot produce outputs for the ordinal task.*\['order_simplex'\]",
        ),
        (("ordinal", "birkhoff"), r"does not contain the encoded labels of the ordinal task"),
        (("multilabel", "reals"), r"cannot decode.*\['unit_cube', 'knapsack'\]"),
        (("multilabel", "spam"), r"unknown projection set 'spam'"),
        (("multilabel", "unit_cube", "euclidean", "spam"), r"unknown decoding set 'spam'"),
        (
            ("multilabel", "unit_cube", "euclidean", "unit_cube", "spam"),
            r"unknown target loss 'spam'.*\['hamming'\]",
        ),
        (("multilabel", "unit_cube", "hellinger"), r"unknown geometry"),
        (("spam", "unit_cube"), r"unknown task 'spam'; valid tasks are"),
    ],
)
def test_invalid_compositions_name_the_problem(args, pattern):
    if pattern is None:
        check_composition(*args)  # valid (e.g. R^k_+ contains the permuted positive weights)
        return
    with pytest.raises(ValueError, match=pattern):
        check_composition(*args)


def test_valid_compositions_enumeration():
    for task in TASKS:
        combos = valid_compositions(task)
        for proj, g, dec, tl in combos:
            assert proj in SETS and dec in SETS
            check_composition(task, proj, g, dec, tl)
        assert all(not (proj == "reals" and g == "kl") for proj, g, _, _ in combos)
    assert ("unit_cube", "euclidean", "unit_cube", "hamming") in valid_compositions("multilabel")
    assert get_task("ordinal").encodings[0].event_shape(5) == (4,)
    assert get_task("label_ranking").encodings[0].event_shape(3) == (3, 3)
