"""The constructor-parameter protocol shared by the sets and the target losses.

An object describes itself by :meth:`ParamsMixin.get_params` (its constructor arguments);
``repr``, equality and hashing follow from it, so two instances built with equal
parameters are interchangeable (as dictionary keys, in configs, in logs).

Examples
--------
>>> class Box(ParamsMixin):
...     def __init__(self, side=1.0):
...         self.side = side
...     def get_params(self):
...         return {"side": self.side}
>>> Box(2.0)
Box(side=2.0)
>>> Box(2.0) == Box(2.0), Box(2.0) == Box(3.0), len({Box(2.0), Box(2.0)})
(True, False, 1)
"""

from __future__ import annotations

from typing import Any

import numpy as np


class ParamsMixin:
    """``get_params`` -> ``__repr__``, ``__eq__`` (array-valued parameters compared with
    ``np.array_equal``) and ``__hash__`` (of the repr of the parameters)."""

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters (for reprs, configs and logging).

        Returns
        -------
        dict
            Parameter name -> value, as the constructor takes them (empty here:
            subclasses with parameters override it).
        """
        return {}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        a, b = self.get_params(), other.get_params()  # type: ignore[attr-defined]
        return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self.get_params())))
