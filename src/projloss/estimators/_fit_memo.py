"""A memo of the solver's results, keyed by the content of everything they depend on.

Compositions that differ only by how they decode -- the decoding set, its parameters, the
target loss -- fit the same model: ``unit_cube -> unit_cube``, ``unit_cube -> knapsack``
and its rounded-bound variant in the paper's multilabel tables, the cube decoded three
ways in Table 1, the row-stochastic projection decoded two ways in Tables 1 and 2. Within
:func:`memoized_fits` an estimator's fit reuses the result of an earlier fit of this process
with the same inputs instead of solving again: the features, the encoded targets, the
projection set (its type and parameters), the geometry, every solver setting and the warm
start, all compared by content (a SHA-256 digest of the arrays' bytes, shapes and types).
The solver is deterministic, so the result is the one solving again would give, to the
last bit (``n_iter_``, ``converged_`` included); only the time differs.

Off by default (a library call never returns a result it did not compute unless asked):
the pipeline's tune and refit tasks turn it on for their fits. Fits with a projection set
given as an instance (it may hold state its parameters do not show) are never memoized;
the memo keeps the last :data:`MAX_ENTRIES` results (copies: a caller that changes its
``coef_`` does not change the memo).

Examples
--------
>>> import numpy as np
>>> from projloss.estimators import ProjectionMultilabelClassifier as Clf, memoized_fits
>>> X = np.random.default_rng(0).standard_normal((30, 3))
>>> Y = (X[:, :2] > 0).astype(int)
>>> with memoized_fits() as memo:
...     a = Clf(decoding_set="unit_cube").fit(X, Y)
...     b = Clf(decoding_set="knapsack").fit(X, Y)  # the same model, decoded otherwise
>>> memo.hits, memo.misses, bool(np.array_equal(a.coef_, b.coef_))
(1, 1, True)
"""

from __future__ import annotations

import contextlib
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

#: results kept (each a few coefficient matrices)
MAX_ENTRIES = 64


@dataclass
class FitMemo:
    """The results of this process's memoized fits, most recent last.

    Parameters
    ----------
    results : OrderedDict of str to object, default=empty
        The kept solver results by key (:func:`fit_key`), most recent last.
    hits : int, default=0
        Number of fits served from the memo.
    misses : int, default=0
        Number of fits solved (then kept).
    """

    results: OrderedDict[str, Any] = field(default_factory=OrderedDict)
    hits: int = 0
    misses: int = 0

    def solve(self, key: str, compute: Callable[[], Any]) -> Any:
        """The result for ``key``: the memo's copy, else ``compute()`` (then kept).

        Parameters
        ----------
        key : str
            The digest of everything the result depends on (:func:`fit_key`).
        compute : callable
            Computes the result (a solver result with ``coef`` and ``intercept``) when the
            memo does not hold it.

        Returns
        -------
        result : object
            A copy of the kept result, or the computed one.
        """
        found = self.results.get(key)
        if found is not None:
            self.results.move_to_end(key)
            self.hits += 1
            return _copy(found)
        self.misses += 1
        result = compute()
        self.results[key] = _copy(result)
        while len(self.results) > MAX_ENTRIES:
            self.results.popitem(last=False)
        return result


_ACTIVE: FitMemo | None = None


@contextlib.contextmanager
def memoized_fits() -> Iterator[FitMemo]:
    """Memoize the estimators' fits in this block (see the module docstring).

    Nested blocks share the outer memo.

    Yields
    ------
    memo : FitMemo
        The active memo (its ``hits`` and ``misses`` count the fits it served and solved).

    Examples
    --------
    >>> from projloss.estimators import memoized_fits
    >>> with memoized_fits() as memo, memoized_fits() as inner:
    ...     print(inner is memo, memo.hits, memo.misses)
    True 0 0
    """
    global _ACTIVE
    if _ACTIVE is not None:
        yield _ACTIVE
        return
    _ACTIVE = FitMemo()
    try:
        yield _ACTIVE
    finally:
        _ACTIVE = None


def active_memo() -> FitMemo | None:
    """The memo of the enclosing :func:`memoized_fits` block, if any.

    Returns
    -------
    memo : FitMemo or None
        The active memo, or None outside a :func:`memoized_fits` block.
    """
    return _ACTIVE


def fit_key(arrays: tuple[Any, ...], settings: tuple[Any, ...]) -> str:
    """The SHA-256 digest of ``arrays`` and ``settings``, the key of a memoized fit.

    Arrays (dense, sparse -- by :func:`._newton.content_key` -- or None) by shape, type and
    bytes, read in place; ``settings`` by their ``repr`` (plain values only). SHA-256, as
    ``content_key`` (the CPU's SHA instructions).

    Parameters
    ----------
    arrays : tuple
        Dense arrays, sparse matrices or None.
    settings : tuple
        Plain values (numbers, strings, tuples, lists).

    Returns
    -------
    key : str
        The hexadecimal digest.
    """
    from ._newton import content_key

    h = hashlib.sha256()
    for a in arrays:
        if a is None:
            h.update(b"<none>")
        elif sp.issparse(a):
            h.update(content_key(sp.csr_matrix(a)).encode())
        else:
            a = np.ascontiguousarray(a)
            h.update(repr((a.shape, a.dtype.str)).encode())
            h.update(memoryview(a).cast("B"))
    h.update(repr(settings).encode())
    return h.hexdigest()


def _copy(result: Any) -> Any:
    return replace(result, coef=result.coef.copy(), intercept=np.array(result.intercept))


__all__ = ["FitMemo", "active_memo", "fit_key", "memoized_fits"]
