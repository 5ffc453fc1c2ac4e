"""Convex sets with Euclidean/KL projection oracles and MAP oracles (paper §4).

Use :func:`get_set` to build a set from its registry name (the names of the Hydra
``conf/set/`` group).
"""

from __future__ import annotations

from typing import Any

from .base import ConvexSet
from .birkhoff import Birkhoff
from .knapsack import Knapsack
from .nonneg import NonNegative
from .order_simplex import OrderSimplex
from .permutahedron import Permutahedron
from .reals import Reals
from .row_simplex import RowSimplex
from .simplex import Simplex
from .unit_cube import MatrixCube, UnitCube

#: Registry: name -> class. Extended by each set module as it lands.
SETS: dict[str, type[ConvexSet]] = {
    cls.name: cls
    for cls in (
        Reals,
        NonNegative,
        UnitCube,
        MatrixCube,
        Simplex,
        Knapsack,
        RowSimplex,
        Permutahedron,
        OrderSimplex,
        Birkhoff,
    )
}


def get_set(name: str, **params: Any) -> ConvexSet:
    """Instantiate the set registered as ``name`` with constructor ``params``."""
    try:
        cls = SETS[name]
    except KeyError:
        raise ValueError(f"unknown set {name!r}; valid sets are {sorted(SETS)}") from None
    return cls(**params)


__all__ = [
    "SETS",
    "Birkhoff",
    "ConvexSet",
    "Knapsack",
    "MatrixCube",
    "NonNegative",
    "OrderSimplex",
    "Permutahedron",
    "Reals",
    "RowSimplex",
    "Simplex",
    "UnitCube",
    "get_set",
]
