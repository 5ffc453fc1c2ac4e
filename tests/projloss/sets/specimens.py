"""The sets under test: one entry per (set, parameters), with the sizes to test them at.

Adding a set to projloss means adding a specimen here; the generic tests in
``test_common.py`` then cover it (reference solver, optimality conditions, MAP by brute
force, encode/decode, batching, property-based tests, bad input).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from projloss.sets import Birkhoff, ConvexSet, MatrixCube, NonNegative, Reals, UnitCube


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
    Specimen("birkhoff", lambda k: Birkhoff(), (1, 2, 3, 4)),
]

BOUNDED = [s for s in SPECIMENS if s.bounded]
