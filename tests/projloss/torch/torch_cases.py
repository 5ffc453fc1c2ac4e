"""The (set, geometry) pairs under test, input generators, tolerances, and the one
temporary skip of oracles not implemented yet.

Every pair of :data:`projloss.SETS` (each set's ``geometries``) is a case: a test
parametrized over :data:`PAIRS` covers every set and geometry, and a set added to the
registry without a case here fails :func:`test_every_set_has_a_case` (test_oracles.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from projloss import SETS
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


@dataclass(frozen=True)
class SetCase:
    """How to test one set: ``make()`` builds it (a non-trivial instance), ``k`` is the
    trailing size of theta (p for vectors, k for k x k matrices), ``large`` the large
    |theta| scale of the tests, ``tol64`` the float64 accuracy against the engine."""

    make: Callable[[], ConvexSet]
    k: int
    large: float = 1e6
    large_kl: float = 1e6
    tol64: float = 1e-9
    #: a tight-tolerance instance for gradcheck (iterative solvers)
    make_tight: Callable[[], ConvexSet] | None = None


CASES: dict[str, SetCase] = {
    "reals": SetCase(Reals, 4),
    # e^{theta - 1} overflows float64 beyond ~710.8: the large KL scale stays below it
    "nonneg": SetCase(NonNegative, 4, large_kl=300.0),
    "unit_cube": SetCase(UnitCube, 4),
    "cube": SetCase(MatrixCube, 3),
    "simplex": SetCase(Simplex, 5),
    "knapsack": SetCase(lambda: Knapsack(1, 3), 5),
    "row_simplex": SetCase(RowSimplex, 3),
    "permutahedron": SetCase(Permutahedron, 5),
    "order_simplex": SetCase(OrderSimplex, 4),  # 5 classes: points in R^4
    "birkhoff": SetCase(
        Birkhoff,
        3,
        large=1e3,
        large_kl=1e3,
        tol64=1e-6,
        make_tight=lambda: Birkhoff(tol=1e-12, max_iter=1000),
    ),
}

#: Every (set, geometry) pair of the registry: 19.
PAIRS: list[tuple[str, str]] = [(name, g) for name, cls in SETS.items() for g in cls.geometries]
PAIR_IDS = [f"{n}-{g}" for n, g in PAIRS]


def shape_of(name: str, batch: tuple[int, ...]) -> tuple[int, ...]:
    """theta's shape for the set ``name`` with leading axes ``batch``."""
    case = CASES[name]
    k = case.k
    return (*batch, k, k) if SETS[name].matrix else (*batch, k)


def sample_theta(
    rng: np.random.Generator,
    shape: tuple[int, ...],
    scale: float = 1.0,
    offset: float = 0.0,
    ties: bool = True,
) -> np.ndarray:
    """Normal scores times ``scale`` plus ``offset``; with ``ties``, exact ties inside
    some points (two equal entries, and a constant point) -- the MAP oracles' ties."""
    theta = offset + scale * rng.standard_normal(shape)
    if ties and theta.size:
        flat = theta.reshape(-1, shape[-1])
        if shape[-1] >= 2:
            flat[::2, 1] = flat[::2, 0]
        flat[1::3] = flat[1::3, :1]  # every entry of the point equal
    return theta


def sample_phi(rng: np.random.Generator, cset: ConvexSet, shape: tuple[int, ...]) -> np.ndarray:
    """Encoded targets in the set: vertices (MAP of random scores) for the polytopes, a
    random point for R^p and R^p_+ (with zeros, for 0 log 0)."""
    if isinstance(cset, Reals):
        return rng.standard_normal(shape)
    if isinstance(cset, NonNegative):
        return np.maximum(rng.standard_normal(shape), 0.0)
    return cset.argmax(rng.standard_normal(shape))


def tolerance(dtype: torch.dtype, name: str, *arrays: np.ndarray) -> float:
    """Absolute tolerance against the engine: float64 1e-9 (Birkhoff 1e-6), float32 1e-4,
    relative to the magnitude of the values compared (at least 1)."""
    base = CASES[name].tol64 if dtype == torch.float64 else 1e-4
    mag = max([1.0] + [float(np.abs(a).max()) for a in arrays if np.size(a)])
    return base * mag


def to_torch(x: np.ndarray, dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    return torch.as_tensor(x, dtype=dtype, device=device)


def to_numpy(x: torch.Tensor) -> np.ndarray:
    return x.detach().cpu().double().numpy()
