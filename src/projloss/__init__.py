"""projloss: structured prediction with projection oracles (Blondel, NeurIPS 2019).

The engine: convex sets with Euclidean and KL projection oracles and MAP oracles
(:mod:`projloss.sets`, also as batched functions: :func:`project_simplex`,
:func:`softmax`, :func:`project_capped_simplex`, :func:`kl_project_capped_simplex`,
:func:`isotonic_regression`, :func:`isotonic_kl`), Fenchel-Young projection losses
(:mod:`projloss.losses`), calibrated decoding (:mod:`projloss.decoding`), target losses
(:mod:`projloss.target_losses`), the paper's metrics (:mod:`projloss.metrics`) and
scikit-learn compatible estimators (:mod:`projloss.estimators`).

It depends on numpy, scipy and scikit-learn, and on numba, which compiles the per-row
kernels of the projections (:mod:`projloss._numba`).

Examples
--------
>>> import numpy as np
>>> import projloss
>>> print(np.round(projloss.get_set("simplex").project(np.array([0.5, 1.2, -1.0])), 6))
[0.15 0.85 0.  ]
>>> print(np.round(projloss.softmax(np.array([0.0, np.log(3.0)])), 6))
[0.25 0.75]
"""

from .isotonic import isotonic_kl, isotonic_regression
from .sets import (
    SETS,
    ConvexSet,
    get_set,
    kl_project_capped_simplex,
    project_capped_simplex,
    project_simplex,
    register_set,
    softmax,
)

__version__ = "0.1.0"

__all__ = [
    "SETS",
    "ConvexSet",
    "__version__",
    "get_set",
    "isotonic_kl",
    "isotonic_regression",
    "kl_project_capped_simplex",
    "project_capped_simplex",
    "project_simplex",
    "register_set",
    "softmax",
]
