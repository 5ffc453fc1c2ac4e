"""projloss: structured prediction with projection oracles (Blondel, NeurIPS 2019).

The engine: convex sets with Euclidean and KL projection oracles and MAP oracles
(:mod:`projloss.sets`), Fenchel-Young projection losses, calibrated decoding and
scikit-learn compatible estimators. It depends only on numpy, scipy and scikit-learn.
"""

from .sets import SETS, ConvexSet, get_set

__version__ = "0.1.0"

__all__ = ["SETS", "ConvexSet", "__version__", "get_set"]
