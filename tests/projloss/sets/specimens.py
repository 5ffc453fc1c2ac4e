"""The sets under test: one entry per (set, parameters), with the sizes to test them at.

Adding a set to projloss means adding a specimen here; the generic tests in
``test_common.py`` then cover it (reference solver, optimality conditions, MAP by brute
force, encode/decode, batching, property-based tests, bad input).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from projloss.sets import (
    Birkhoff,
    ConvexSet,
    Knapsack,
    MatrixCube,
    NonNegative,
    OrderSimplex,
    Permutahedron,
    Reals,
    RowSimplex,
    Simplex,
    UnitCube,
)


def _weights(k: int) -> list[float]:
    """An unsorted positive w of length k with ties (for k >= 3) and spread-out values."""
    return [0.3, 2.5, 0.3, 4.0, 2.5][:k]


@dataclass(frozen=True)
class Specimen:
    """A set family under test.

    ``make(k)`` builds the set for size ``k`` (``k`` as in ``ConvexSet.vertices``);
    ``sizes`` are small sizes at which vertices can be enumerated; ``tol`` is the accuracy
    the projection is held to (1e-6 against the reference, tol**(4/3) on the optimality gap).
    """

    id: str
    make: Callable[[int], ConvexSet]
    sizes: tuple[int, ...]
    bounded: bool = True
    tol: float = 1e-6

    def __str__(self) -> str:
        return self.id


SPECIMENS: list[Specimen] = [
    Specimen("reals", lambda k: Reals(), (1, 3), bounded=False),
    Specimen("nonneg", lambda k: NonNegative(), (1, 3), bounded=False),
    Specimen("unit_cube", lambda k: UnitCube(), (1, 2, 4)),
    Specimen("cube", lambda k: MatrixCube(), (1, 2)),
    Specimen("simplex", lambda k: Simplex(), (1, 2, 3, 5)),
    Specimen("row_simplex", lambda k: RowSimplex(), (1, 2, 3)),
    # Knapsack: l = 0 (upper only), 0 < l < u, l = u, the whole cube, and the degenerate
    # single-vertex sets {0} and {1}.
    Specimen("knapsack-0-1", lambda k: Knapsack(0, 1), (1, 2, 4)),
    Specimen("knapsack-1-2", lambda k: Knapsack(1, 2), (2, 3, 5)),
    Specimen("knapsack-2-2", lambda k: Knapsack(2, 2), (2, 3, 5)),
    Specimen("knapsack-2-4", lambda k: Knapsack(2, 4), (4, 6)),
    Specimen("knapsack-0-k", lambda k: Knapsack(0, k), (1, 3, 5)),
    Specimen("knapsack-0-none", lambda k: Knapsack(), (2, 4)),
    Specimen("knapsack-0-0", lambda k: Knapsack(0, 0), (1, 3)),
    Specimen("knapsack-k-k", lambda k: Knapsack(k, k), (1, 3)),
    # Default w = (k, ..., 1), built for the size of theta.
    Specimen("permutahedron", lambda k: Permutahedron(), (1, 2, 3, 5)),
    # A given w: unsorted, with ties, positive (so both geometries apply).
    Specimen("permutahedron_w", lambda k: Permutahedron(_weights(k)), (1, 2, 4, 5)),
    # Sizes are numbers of classes k (points in R^{k-1}).
    Specimen("order_simplex", lambda k: OrderSimplex(), (2, 3, 5, 8)),
    Specimen("birkhoff", lambda k: Birkhoff(), (1, 2, 3, 4)),
]

BOUNDED = [s for s in SPECIMENS if s.bounded]
