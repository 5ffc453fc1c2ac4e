r"""A set that projloss does not ship, in one module: the :math:`\ell_\infty` ball
:math:`[-1, 1]^p` (the tests of "a new set is one module": ``test_new_set.py`` and
``tests/pipeline/test_new_set.py``).

It is registered the documented way, by its user, not on import (pytest's doctest
collection imports every module of ``tests/``, and a set registered then would join every
test parametrized over :data:`projloss.sets.SETS`): ``register_set(LinfBall)`` in the
engine's test, the pipeline from the ``class:`` of its conf file. It says what the rest
of projloss asks of a set: the label encodings it contains (0/1 labels and permutation
matrices lie in :math:`[-1, 1]^p`: a projection set for the label ranking (as
permutation matrices), ordinal, multilabel and multiclass tasks; its vertices
:math:`\{-1, 1\}^p` are no task's outputs, so it decodes nothing), its Jacobians for the
Newton solver (the diagonal :math:`1[|\theta_j| \le 1]`, closed at the kinks: the
largest-rank element) and its array-API oracles.
"""

from __future__ import annotations

import itertools
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from projloss.sets import ConvexSet


class LinfBall(ConvexSet):
    r""":math:`[-1, 1]^p` (Euclidean geometry only: the KL one needs :math:`u \ge 0`)."""

    name: ClassVar[str] = "linf_ball"
    geometries: ClassVar[tuple[str, ...]] = ("euclidean",)
    separable: ClassVar[bool] = True
    encodings: ClassVar[tuple[str, ...]] = (
        "permutation_matrix",
        "cumulative",
        "indicator",
        "one_hot",
    )

    def _project_euclidean(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.clip(theta, -1.0, 1.0)

    def _argmax(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.where(theta > 0, 1.0, -1.0)

    def projection_jacobians(
        self,
        theta: NDArray[np.float64],
        u: NDArray[np.float64],
        geometry: str,
        event_shape: tuple[int, ...],
    ) -> NDArray[np.float64]:
        return (np.abs(theta) <= 1.0).astype(np.float64)

    def _xp_project(self, theta: Any, geometry: str, xp: Any) -> Any:
        return xp.clip(theta, -1.0, 1.0)

    def _xp_project_jvp(self, theta: Any, u: Any, tangent: Any, geometry: str, xp: Any) -> Any:
        return xp.where(xp.abs(theta) <= 1.0, tangent, xp.zeros_like(tangent))

    def _xp_argmax(self, theta: Any, xp: Any) -> Any:
        one = xp.ones_like(theta)
        return xp.where(theta > 0, one, -one)

    def _xp_decode(self, v: Any, xp: Any) -> Any:
        return xp.astype(v, xp.int64)

    def encode(self, y: ArrayLike, k: int | None = None) -> NDArray[np.float64]:
        arr = np.asarray(y, dtype=np.float64)
        if not np.all(np.abs(arr) == 1.0):
            raise ValueError("the structures of the l-infinity ball are -1/+1 vectors")
        return arr

    def decode(self, v: ArrayLike) -> NDArray[np.int64]:
        return np.asarray(v).astype(np.int64)

    def vertices(self, k: int) -> NDArray[np.float64]:
        return np.array(list(itertools.product([-1.0, 1.0], repeat=k)))

    def _contains(self, u: NDArray[np.float64], atol: float) -> NDArray[np.bool_]:
        return np.all(np.abs(u) <= 1.0 + atol, axis=-1)
