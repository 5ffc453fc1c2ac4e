"""scikit-learn compatible estimators with projection losses and calibrated decoding.

One module per task: :mod:`.label_ranking`, :mod:`.ordinal` (and the ordinal
:mod:`.baselines`), :mod:`.multilabel`, :mod:`.multiclass`; :mod:`.neural`: their
multilayer perceptrons (PyTorch, imported at fit time). The shared fit (L-BFGS on the
regularized projection loss) is in :mod:`._solver`, the shared API in :mod:`._base`;
:func:`memoized_fits` (:mod:`._fit_memo`) reuses the fits that compositions decoding
differently share.
"""

from ._fit_memo import memoized_fits
from .baselines import MedianOrdinalRegressor, RidgeRoundingOrdinalRegressor
from .label_ranking import ProjectionLabelRanker
from .multiclass import ProjectionClassifier
from .multilabel import ProjectionMultilabelClassifier
from .neural import (
    ProjectionMLPClassifier,
    ProjectionMLPLabelRanker,
    ProjectionMLPMultilabelClassifier,
    ProjectionMLPOrdinalRegressor,
)
from .ordinal import ProjectionOrdinalRegressor

__all__ = [
    "MedianOrdinalRegressor",
    "ProjectionClassifier",
    "ProjectionLabelRanker",
    "ProjectionMLPClassifier",
    "ProjectionMLPLabelRanker",
    "ProjectionMLPMultilabelClassifier",
    "ProjectionMLPOrdinalRegressor",
    "ProjectionMultilabelClassifier",
    "ProjectionOrdinalRegressor",
    "RidgeRoundingOrdinalRegressor",
    "memoized_fits",
]
