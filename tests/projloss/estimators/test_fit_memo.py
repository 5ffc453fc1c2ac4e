"""The fit memo (``memoized_fits``): a hit is the result a fresh fit gives, to the last
bit; anything that changes the fit misses; nothing is memoized outside the block."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from projloss.estimators import (
    ProjectionLabelRanker,
    ProjectionMultilabelClassifier,
    _fit_memo,
    memoized_fits,
)
from projloss.sets import get_set


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 4))
    Y = (X[:, :3] + 0.3 * rng.standard_normal((40, 3)) > 0).astype(int)
    return X, Y


def _fitted(est, X, Y):
    return est.fit(X, Y)


def _same_fit(a, b):
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    assert (a.n_iter_, a.converged_, a.objective_) == (b.n_iter_, b.converged_, b.objective_)


def test_compositions_decoding_differently_share_the_fit_a_fresh_fit_gives(data):
    X, Y = data
    fresh = ProjectionMultilabelClassifier(alpha=0.01).fit(X, Y)
    with memoized_fits() as memo:
        first = ProjectionMultilabelClassifier(alpha=0.01, decoding_set="unit_cube").fit(X, Y)
        second = ProjectionMultilabelClassifier(alpha=0.01, decoding_set="knapsack").fit(X, Y)
    assert (memo.hits, memo.misses) == (1, 1)
    _same_fit(first, fresh)
    _same_fit(second, fresh)
    # each keeps its own decoder
    assert type(second.decoding_set_).__name__ == "Knapsack"
    np.testing.assert_array_equal(
        second.predict(X), fresh.set_params(decoding_set="knapsack").fit(X, Y).predict(X)
    )


@pytest.mark.parametrize(
    "change",
    [
        "alpha",
        "X",
        "Y",
        "tol",
        "max_iter",
        "geometry",
        "penalize_intercept",
        "fit_intercept",
        "sparse",
        "set_params",
    ],
)
def test_anything_that_changes_the_fit_misses(data, change):
    X, Y = data
    base = dict(alpha=0.01, projection_set="knapsack", decoding_set="knapsack")
    other, X2, Y2 = dict(base), X, Y
    if change == "alpha":
        other["alpha"] = 0.02
    elif change == "X":
        X2 = X.copy()
        X2[3, 1] = np.nextafter(X2[3, 1], np.inf)  # one bit of one entry
    elif change == "Y":
        Y2 = Y.copy()
        Y2[0, 0] = 1 - Y2[0, 0]
    elif change == "tol":
        other["tol"] = 1e-7
    elif change == "max_iter":
        other["max_iter"] = 400
    elif change == "geometry":
        other.update(projection_set="unit_cube", decoding_set="unit_cube", geometry="kl")
        base.update(projection_set="unit_cube", decoding_set="unit_cube")
    elif change == "penalize_intercept":
        other["penalize_intercept"] = True
    elif change == "fit_intercept":
        other["fit_intercept"] = False
    elif change == "sparse":
        X2 = sp.csr_matrix(X)
    elif change == "set_params":
        other["knapsack_upper"] = 1  # the knapsack polytope's bound
    with memoized_fits() as memo:
        a = ProjectionMultilabelClassifier(**base).fit(X, Y)
        b = ProjectionMultilabelClassifier(**other).fit(X2, Y2)
    assert (memo.hits, memo.misses) == (0, 2), change
    fresh = ProjectionMultilabelClassifier(**other).fit(X2, Y2)
    _same_fit(b, fresh)
    assert a is not b


def test_a_warm_started_grid_is_reused_step_by_step(data):
    """Two runs of the same lambda grid, each warm-started from its previous lambda (the
    tune stage): the second is all hits, with the first's iterations."""
    X, Y = data
    grid = [10.0, 1.0, 0.1, 0.01, 0.001]

    def run():
        est = ProjectionMultilabelClassifier(warm_start=True)
        out = []
        for lam in grid:
            est.set_params(alpha=lam).fit(X, Y)
            out.append((est.coef_.copy(), est.n_iter_))
        return out

    plain = run()
    with memoized_fits() as memo:
        first, second = run(), run()
    assert (memo.hits, memo.misses) == (len(grid), len(grid))
    for (c0, n0), (c1, n1), (c2, n2) in zip(plain, first, second, strict=True):
        np.testing.assert_array_equal(c0, c1)
        np.testing.assert_array_equal(c1, c2)
        assert n0 == n1 == n2


def test_never_outside_the_block_nor_for_a_set_instance(data):
    X, Y = data
    assert _fit_memo.active_memo() is None
    ProjectionMultilabelClassifier(alpha=0.01).fit(X, Y)
    with memoized_fits() as memo:
        with memoized_fits() as inner:  # nested blocks share the memo
            assert inner is memo
        s = get_set("unit_cube")
        ProjectionMultilabelClassifier(alpha=0.01, projection_set=s).fit(X, Y)
        ProjectionMultilabelClassifier(alpha=0.01, projection_set=s).fit(X, Y)
    assert (memo.hits, memo.misses) == (0, 0)
    assert _fit_memo.active_memo() is None


def test_a_changed_coef_does_not_change_the_memo(data):
    X, Y = data
    with memoized_fits() as memo:
        a = ProjectionMultilabelClassifier(alpha=0.01).fit(X, Y)
        kept = a.coef_.copy()
        a.coef_[:] = 0.0
        b = ProjectionMultilabelClassifier(alpha=0.01).fit(X, Y)
    assert memo.hits == 1
    np.testing.assert_array_equal(b.coef_, kept)


def test_the_memo_is_bounded(data, monkeypatch):
    X, Y = data
    monkeypatch.setattr(_fit_memo, "MAX_ENTRIES", 2)
    with memoized_fits() as memo:
        for lam in (1.0, 0.1, 0.01):
            ProjectionMultilabelClassifier(alpha=lam).fit(X, Y)
        assert len(memo.results) == 2
        ProjectionMultilabelClassifier(alpha=1.0).fit(X, Y)  # evicted: fitted again
        ProjectionMultilabelClassifier(alpha=0.01).fit(X, Y)  # kept
    assert (memo.hits, memo.misses) == (1, 4)


def test_label_ranking_decoders_share_the_birkhoff_fit():
    """Table 1's cube decoded three ways: one fit (kernel model too)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 3))
    Y = np.argsort(X @ rng.standard_normal((3, 4)), axis=1)
    with memoized_fits() as memo:
        fits = [
            ProjectionLabelRanker(alpha=0.1, projection_set="cube", decoding_set=d).fit(X, Y)
            for d in ("cube", "birkhoff")
        ]
        ProjectionLabelRanker(alpha=0.1, projection_set="cube", model="poly").fit(X, Y)
        ProjectionLabelRanker(alpha=0.1, projection_set="cube", model="poly").fit(X, Y)
    assert (memo.hits, memo.misses) == (2, 2)
    _same_fit(*fits)
