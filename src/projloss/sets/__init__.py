r"""Convex sets with Euclidean/KL projection oracles and MAP oracles (paper §4).

Use :func:`get_set` to build a set from its registry name (the names of the Hydra
``conf/set/`` group). The batched projections behind the set oracles are also available
as functions, on any axis and without input validation:

- :func:`project_simplex` (sparsemax) and :func:`softmax`: the Euclidean and KL
  projections onto the simplex;
- :func:`project_capped_simplex` and :func:`kl_project_capped_simplex`: the Euclidean and
  KL projections onto :math:`\{\mu \in [0,1]^k : \langle\mu, 1\rangle = m\}` (the
  knapsack faces);
- :func:`projloss.isotonic.isotonic_regression` and :func:`projloss.isotonic.isotonic_kl`:
  the isotonic problems behind the permutahedron and the order simplex.

Adding a set
------------
A set is one module: a subclass of :class:`ConvexSet` (its oracles, and what the rest of
projloss asks of it: the label encodings it serves, its Jacobians for the Newton solver,
its array-API oracles for :mod:`projloss.torch`; see :mod:`projloss.sets.base`),
registered under its :attr:`~ConvexSet.name` with :func:`register_set` (in :data:`SETS`,
so that :func:`get_set`, the estimators and :func:`projloss.tasks.check_composition` know
it). The pipeline adds its conf file ``conf/set/<name>.yaml`` with ``name`` and ``class``
(the class's import path: the pipeline imports it and registers the class) and ``params``.

Examples
--------
>>> import numpy as np
>>> s = get_set("knapsack", lower=1, upper=2)
>>> theta = np.array([0.9, 0.8, 0.7, 0.1])  # clip(theta, 0, 1) sums to 2.5 > 2
>>> print(np.round(s.project(theta), 6))
[0.766667 0.666667 0.566667 0.      ]
>>> print(s.argmax(theta))
[1. 1. 0. 0.]
"""

from __future__ import annotations

from typing import Any

from .base import ConvexSet
from .birkhoff import Birkhoff
from .knapsack import Knapsack, kl_project_capped_simplex, project_capped_simplex
from .nonneg import NonNegative
from .order_simplex import OrderSimplex
from .permutahedron import Permutahedron
from .reals import Reals
from .row_simplex import RowSimplex
from .simplex import Simplex, project_simplex, softmax
from .unit_cube import MatrixCube, UnitCube

#: Registry: name -> class (:func:`register_set` adds to it).
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


def register_set(set_class: type[ConvexSet], name: str | None = None) -> type[ConvexSet]:
    """Register the set class ``set_class`` under ``name`` (default: its ``name`` attribute) in
    :data:`SETS`; returns ``set_class`` (usable as a class decorator). Registering the same class
    again is a no-op; another class under a taken name is an error.

    Parameters
    ----------
    set_class : type
        The set class, a subclass of :class:`ConvexSet`.
    name : str or None, default=None
        The registry name; ``None``: ``set_class.name``. Must equal ``set_class.name`` (the name is
        also the set's identity in :func:`get_set`, the configs and the task validation).

    Returns
    -------
    type
        ``set_class`` itself, registered.

    Raises
    ------
    TypeError
        If ``set_class`` is not a subclass of :class:`ConvexSet`.
    ValueError
        If the name is empty or not a string, differs from ``set_class.name``, or is taken by
        another class.

    Examples
    --------
    >>> class Box(UnitCube):
    ...     name = "my_box"
    >>> register_set(Box) is Box and SETS["my_box"] is Box
    True
    >>> del SETS["my_box"]
    """
    if not (isinstance(set_class, type) and issubclass(set_class, ConvexSet)):
        raise TypeError(f"a set must be a subclass of ConvexSet, got {set_class!r}")
    key = set_class.name if name is None else name
    if not isinstance(key, str) or not key:
        raise ValueError(f"a set needs a non-empty name, got {key!r}")
    if key != set_class.name:
        raise ValueError(
            f"the set {set_class.__qualname__} is named {set_class.name!r}, not {key!r}"
        )
    known = SETS.get(key)
    if known is not None and known is not set_class:
        raise ValueError(
            f"the set name {key!r} is taken by {known.__module__}.{known.__qualname__}"
        )
    SETS[key] = set_class
    return set_class


def get_set(name: str, **params: Any) -> ConvexSet:
    """Instantiate the set registered as ``name`` with constructor ``params``.

    Parameters
    ----------
    name : str
        A registry name, a key of :data:`SETS` (e.g. ``"simplex"``, ``"knapsack"``,
        ``"birkhoff"``).
    **params
        The constructor parameters of the set class (e.g. ``lower=1, upper=2`` for the
        knapsack polytope).

    Returns
    -------
    ConvexSet
        A new instance of the registered class.

    Raises
    ------
    ValueError
        If no set is registered as ``name``.

    Examples
    --------
    >>> get_set("knapsack", lower=1, upper=2)
    Knapsack(lower=1, upper=2)
    """
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
    "kl_project_capped_simplex",
    "project_capped_simplex",
    "project_simplex",
    "register_set",
    "softmax",
]
