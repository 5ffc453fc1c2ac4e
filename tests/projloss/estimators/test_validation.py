"""The shortcut of ``validate_features`` behaves as scikit-learn's ``validate_data`` on
every input: the same array (the same object when scikit-learn returns ``X`` itself), the
same ``n_features_in_`` / ``feature_names_in_``, the same errors and warnings."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import validate_data

from projloss.estimators import (
    MedianOrdinalRegressor,
    ProjectionMultilabelClassifier,
    ProjectionOrdinalRegressor,
)
from projloss.estimators._validation import _fast, validate_features


class _Est(BaseEstimator):
    pass


def _reference(est: Any, X: Any, reset: bool) -> Any:
    return validate_data(
        est, X, accept_sparse="csr", dtype=np.float64, reset=reset, ensure_min_samples=1
    )


def _outcome(fn: Any, est: Any, X: Any, reset: bool) -> tuple[Any, ...]:
    """(result or exception, warnings, n_features_in_, feature names) of one call."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out: Any = fn(est, X, reset=reset)
        except Exception as exc:  # the same type and message expected
            out = (type(exc), str(exc))
    names = getattr(est, "feature_names_in_", None)
    return (
        out,
        [(w.category, str(w.message)) for w in caught],
        getattr(est, "n_features_in_", None),
        None if names is None else list(names),
    )


def _same(X: Any, fitted_on: Any = None, reset: bool = True) -> None:
    ests = [_Est(), _Est()]
    if fitted_on is not None:
        for est in ests:
            _reference(est, fitted_on, reset=True)
    got = _outcome(validate_features, ests[0], X, reset)
    want = _outcome(_reference, ests[1], X, reset)
    assert got[1:] == want[1:]
    if isinstance(want[0], tuple):
        assert got[0] == want[0]
        return
    if sp.issparse(want[0]):
        assert sp.issparse(got[0]) and (got[0] != want[0]).nnz == 0
        return
    assert type(got[0]) is type(want[0]) and got[0].dtype == want[0].dtype
    np.testing.assert_array_equal(got[0], want[0])
    # the same object back exactly when scikit-learn gives X itself
    assert (got[0] is X) == (want[0] is X)


X = np.arange(12, dtype=np.float64).reshape(4, 3)
INPUTS = {
    "float64": X,
    "float64 Fortran": np.asfortranarray(X),
    "float64 strided view": X[::2, ::2],
    "float32": X.astype(np.float32),
    "int": X.astype(np.int64),
    "list": X.tolist(),
    "1-D": X[0],
    "3-D": X[None],
    "no rows": np.empty((0, 3)),
    "no columns": np.empty((4, 0)),
    "NaN": np.where(X == 5.0, np.nan, X),
    "inf": np.where(X == 5.0, np.inf, X),
    "-inf": np.where(X == 5.0, -np.inf, X),
    "sum overflows": np.full((2, 3), 1e308),
    "matrix": np.asmatrix(X),
    "dataframe": pd.DataFrame(X, columns=["a", "b", "c"]),
    "csr": sp.csr_matrix(X),
    "object": X.astype(object),
    "complex": X.astype(complex),
}


@pytest.mark.parametrize("name", list(INPUTS))
@pytest.mark.parametrize("reset", [True, False])
def test_every_input_as_scikit_learn(name: str, reset: bool) -> None:
    fitted = [None, X, np.ones((2, 5)), pd.DataFrame(X, columns=["a", "b", "c"])]
    for fitted_on in fitted:
        _same(INPUTS[name], fitted_on=fitted_on, reset=reset)


def test_the_shortcut_is_taken_for_finite_float64_arrays_only() -> None:
    est = _Est()
    assert _fast(est, X, reset=True)
    assert _fast(est, np.asfortranarray(X), reset=True)
    for name in ("float32", "list", "NaN", "inf", "sum overflows", "matrix", "no rows", "csr"):
        assert not _fast(est, INPUTS[name], reset=True), name
    _reference(est, X, reset=True)
    assert _fast(est, X, reset=False)
    assert not _fast(est, np.ones((2, 5)), reset=False)  # the wrong number of columns
    named = _Est()
    _reference(named, INPUTS["dataframe"], reset=True)
    assert not _fast(named, X, reset=False)  # scikit-learn warns: no feature names


@settings(max_examples=200, deadline=None)
@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=4),
        elements=st.floats(allow_nan=True, allow_infinity=True, width=64),
    ),
    st.booleans(),
)
def test_any_float64_array_as_scikit_learn(A: np.ndarray, reset: bool) -> None:
    _same(A, fitted_on=None if reset else np.ones((1, A.shape[1] or 1)), reset=reset)


def test_estimators_predict_the_same_through_the_shortcut() -> None:
    """A fit and its predictions from a float64 array and from the same values as a list
    (scikit-learn's conversion) agree to the last bit."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((40, 3))
    y = (A @ [1.0, -1.0, 0.5] > 0).astype(int) + (A[:, 0] > 1)
    est_a = ProjectionOrdinalRegressor(alpha=0.1).fit(A, y)
    est_l = ProjectionOrdinalRegressor(alpha=0.1).fit(A.tolist(), y)
    np.testing.assert_array_equal(est_a.coef_, est_l.coef_)
    np.testing.assert_array_equal(est_a.predict(A), est_l.predict(A.tolist()))
    Y = (rng.random((40, 4)) < 0.4).astype(int)
    ml_a = ProjectionMultilabelClassifier(alpha=0.1).fit(A, Y)
    with pytest.raises(ValueError, match="X has 2 features, but ProjectionMultilabelClassifier"):
        ml_a.predict(A[:, :2])
    with pytest.raises(ValueError, match="Input X contains NaN"):
        ml_a.predict(np.where(A == A[0, 0], np.nan, A))
    med = MedianOrdinalRegressor().fit(A, y)
    np.testing.assert_array_equal(med.predict(A), med.predict(A.tolist()))
