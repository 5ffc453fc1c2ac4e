"""Reliability of the engine at the edges (issue 11, items 12-13).

- Extreme theta: every set x geometry at |theta| in {1e3, 1e10, 1e100, 1e300} (both signs)
  and 1e-300 returns a finite point inside the set -- the right one, checked against a
  reference: the maximizing vertex for huge |theta| (the projection of c theta reaches the
  vertex whose normal cone contains theta), P(0) for tiny |theta|, the closed forms for the
  unbounded sets -- or refuses with a ``ValueError`` naming the float64 limit; a loss is
  never NaN or inf.
- The permutahedron: translation invariance P(theta + c 1) = P(theta) and the sorting
  structure of P(c theta) (weights by rank, ties averaged) up to |theta| = 1e300.
- Validation: the label ranker's ``w`` and every public metric.
- Issue 36: features so large that the fit's products overflow are refused naming their
  scale (not a NaN deep in the solver), a fit far from unit scale names the scale in its
  ``ConvergenceWarning``; NaN in a multilabel ``y`` names ``y`` and the entry; sparse theta is
  refused as sparse.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from sklearn.exceptions import ConvergenceWarning

from projloss.estimators import ProjectionLabelRanker, ProjectionMultilabelClassifier
from projloss.estimators._validation import overflow_limit
from projloss.losses import ProjectionLoss
from projloss.metrics import f1, multilabel_accuracy, ordinal_mae, ranking_hamming_loss
from projloss.sets import Birkhoff, Knapsack, Permutahedron, get_set
from projloss.sets.nonneg import KL_THETA_MAX

BASE = np.array([0.3, -1.2, 2.0, 0.5])  # distinct entries of both signs: unique vertices
MATRIX = np.outer(BASE, [1.0, -0.5, 0.25, 2.0])  # rank one: a unique assignment
HUGE = [1e3, 1e10, 1e100, 1e300, -1e3, -1e10, -1e100, -1e300]
TINY = [1e-300, -1e-300]

SETS = {
    "reals": lambda: get_set("reals"),
    "nonneg": lambda: get_set("nonneg"),
    "unit_cube": lambda: get_set("unit_cube"),
    "cube": lambda: get_set("cube"),
    "simplex": lambda: get_set("simplex"),
    "knapsack": lambda: Knapsack(1, 2),
    "row_simplex": lambda: get_set("row_simplex"),
    "permutahedron": lambda: Permutahedron(),
    "order_simplex": lambda: get_set("order_simplex"),
    "birkhoff": lambda: Birkhoff(),
}
CASES = [(n, g) for n, make in SETS.items() for g in make().geometries]


def _theta(s, mag: float) -> np.ndarray:
    if s.matrix:
        return MATRIX * mag
    return (BASE[:3] if s.name == "order_simplex" else BASE) * mag


def _reference(s, geometry: str, theta: np.ndarray, mag: float) -> np.ndarray | None:
    """The exact projection where it is known, None where the set must refuse."""
    if s.name == "reals":
        return theta
    if s.name == "nonneg":
        if geometry == "euclidean":
            return np.maximum(theta, 0.0)
        return None if theta.max() > KL_THETA_MAX else np.exp(theta - 1.0)
    if abs(mag) < 1:
        return s.project(np.zeros_like(theta), geometry)
    return s.argmax(theta)  # huge |theta|: the maximizing vertex


def _check_projection(s, geometry: str, mag: float) -> None:
    theta = _theta(s, mag)
    ref = _reference(s, geometry, theta, mag)
    if ref is None:
        with pytest.raises(ValueError, match=r"overflows float64 for theta > 710\.78"):
            s.project(theta, geometry)
        return
    u = s.project(theta, geometry)
    assert np.isfinite(u).all()
    scale = max(1.0, float(np.abs(ref).max()))
    assert s.contains(u, atol=1e-9 * scale).all()
    np.testing.assert_allclose(u, ref, rtol=1e-12, atol=1e-9 * scale)


def _check_loss(s, geometry: str, mag: float) -> None:
    theta = _theta(s, mag)
    if s.name in ("reals", "nonneg"):
        phi = np.abs(theta) / max(1.0, abs(mag))
    else:
        phi = s.argmax(-theta)  # the worst vertex: the largest loss
    try:
        values = ProjectionLoss(s, geometry).value(theta, phi)
    except ValueError as exc:
        assert "overflows float64" in str(exc)
        assert s.name in ("reals", "nonneg")  # the polytopes' losses never overflow
        return
    assert np.isfinite(values).all()
    assert values >= -1e-9 * max(1.0, abs(mag))


@pytest.mark.parametrize(("name", "geometry"), CASES, ids=[f"{n}-{g}" for n, g in CASES])
def test_extreme_theta_is_right_or_refused(name, geometry):
    """For every magnitude: the projection is finite, inside the set and equal to the
    reference, or refused with the float64 limit; the loss value is finite, or a
    ValueError says that it overflows float64 -- never a silent NaN/inf."""
    s = SETS[name]()
    failures = []
    for mag in HUGE + TINY:
        for check in (_check_projection, _check_loss):
            try:
                check(s, geometry, mag)
            except (AssertionError, ValueError) as exc:
                failures.append(f"{check.__name__} at {mag:.0e}: {str(exc).strip()[:300]}")
    assert not failures, "\n".join(failures)


def test_kl_nonneg_at_its_limit():
    """Issue 11 item 12: project(1000.) returned [inf] and the loss NaN. Below the limit
    the projection and the loss are finite (the loss was NaN for theta in ~[704, 710.78]:
    <theta, u> and <u, log u> overflowed separately)."""
    s = get_set("nonneg")
    with pytest.raises(ValueError, match=r"overflows float64 for theta > 710\.78.*got max theta"):
        s.project(np.array([1000.0]), "kl")
    theta = np.array([[704.5, 709.0, -3.0, 0.0], [710.7, 1.0, 0.0, -700.0]])
    phi = np.array([[1.0, 0.0, 2.0, 0.5], [2.0, 0.0, 1.0, 0.0]])
    u = s.project(theta, "kl")
    assert np.isfinite(u).all()
    value = ProjectionLoss(s, "kl")(theta, phi)
    # S = sum(u) - <theta, phi> + <phi, log phi> (u = e^{theta - 1}, so theta - log u = 1)
    xlogx = phi * np.log(np.maximum(phi, 1e-300))
    expected = u.sum(-1) - np.sum(theta * phi, -1) + np.sum(xlogx, -1)
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    # Omega*(theta) = <theta, u> - <u, log u> = sum(u) here
    np.testing.assert_allclose(ProjectionLoss(s, "kl").conjugate(theta), u.sum(-1), rtol=1e-12)
    assert np.isfinite(s.project(np.array([KL_THETA_MAX]), "kl")).all()


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
@pytest.mark.parametrize("c", [1e3, 1e8, 1e12, 1e15])
def test_permutahedron_translation_invariance(geometry, c):
    """P(theta + c 1) = P(theta) (the permutahedron lies in a hyperplane <u, 1> = const).
    The old code formed s - w at the size of c: errors ~ ulp(c) (1e-8 at c = 1e8)."""
    rng = np.random.default_rng(0)
    theta = rng.standard_normal((20, 6))
    shifted = theta + c
    exact = shifted - c  # exact (Sterbenz): the input the shifted rows really hold
    s = Permutahedron()
    np.testing.assert_allclose(s.project(shifted, geometry), s.project(exact, geometry), atol=1e-12)


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
@pytest.mark.parametrize("mag", [1e10, 1e100, 1e300, -1e300])
def test_permutahedron_sorting_structure_at_huge_scale(geometry, mag):
    """For huge c, P(c theta) puts the weight of its rank on each entry, and the mean weight
    of their ranks on tied entries (for both geometries); the issue's example
    [.3, -1.2, 2, .5] * 1e10 (KL) was outside the set, the Euclidean one 0 at 1e300."""
    theta = np.array([[0.3, -1.2, 2.0, 0.5, 0.3], [1.0, 1.0, 1.0, -1.0, 0.0]])
    w = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    expected = np.array([[2.5, 1.0, 5.0, 4.0, 2.5], [4.0, 4.0, 4.0, 1.0, 2.0]])
    if mag < 0:
        expected = np.array([[3.5, 5.0, 1.0, 2.0, 3.5], [2.0, 2.0, 2.0, 5.0, 4.0]])
    s = Permutahedron(w)
    u = s.project(theta * mag, geometry)
    np.testing.assert_allclose(u, expected, rtol=1e-12)
    assert s.contains(u, atol=1e-12).all()
    issue = Permutahedron().project(np.array([0.3, -1.2, 2, 0.5]) * abs(mag), geometry)
    np.testing.assert_allclose(issue, [2.0, 1.0, 4.0, 3.0], rtol=1e-12)


# ---------------------------------------------------------------------- validation
def _rankings(n=30, k=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = np.argsort(-(X @ rng.standard_normal((3, k))), axis=1)
    return X, y


@pytest.mark.parametrize("w", [[1, 1, 1, 1], [3, 3, 2, 1], [4, 3, 2, np.nan]])
def test_label_ranker_rejects_weights_that_cannot_encode_rankings(w):
    X, y = _rankings()
    est = ProjectionLabelRanker(projection_set="permutahedron", w=w)
    with pytest.raises(ValueError, match=r"^w (must have 4 distinct entries|contains NaN)"):
        est.fit(X, y)


def test_label_ranker_accepts_distinct_weights():
    X, y = _rankings()
    pred = ProjectionLabelRanker(projection_set="permutahedron", w=[4, 3, 2, 0.5]).fit(X, y)
    assert len({tuple(p) for p in pred.predict(X)}) > 1  # not constant


BAD_METRIC_INPUTS = [
    (multilabel_accuracy, ([[0, 2]], [[0, 1]]), "y_true must be a 0/1 label indicator"),
    (multilabel_accuracy, ([[0, 1]], [[0, 1, 1]]), "different shapes"),
    (multilabel_accuracy, ([0, 1], [0, 1]), "label indicator matrix \\(n_samples"),
    (multilabel_accuracy, ([[0, 1]], [[0.5, 1]]), "y_pred must be a 0/1"),
    (f1, ([[0, 1]], [[0, 3]]), "y_pred must be a 0/1 label indicator"),
    (f1, (np.zeros((0, 2)), np.zeros((0, 2))), "empty"),
    (ranking_hamming_loss, ([[0, 1, 1]], [[0, 1, 2]]), "y_true must hold permutations"),
    (ranking_hamming_loss, ([[0, 1, 2]], [[0, 1, 2], [2, 1, 0]]), "different shapes"),
    (ranking_hamming_loss, ([[0, 1, 2]], [[0, 1, 2]], [1, 2]), "sample_weight must have"),
    (ordinal_mae, ([1, 2, 3], [1, 2]), "different lengths"),
    (ordinal_mae, ([1, np.nan], [1, 2]), "y_true must hold finite numeric"),
    (ordinal_mae, ([[1, 2]], [[1, 2]]), "1-D array"),
    (ordinal_mae, ([1, 2], [1, 2], [-1, 1]), "non-negative"),
]


@pytest.mark.parametrize(
    ("fn", "args", "message"), BAD_METRIC_INPUTS, ids=lambda x: getattr(x, "__name__", "")
)
def test_metrics_reject_invalid_inputs(fn, args, message):
    kwargs = {"sample_weight": args[2]} if len(args) == 3 else {}
    with pytest.raises(ValueError, match=message):
        fn(*args[:2], **kwargs)


def test_metrics_on_valid_inputs_are_unchanged():
    Y, P = np.array([[1, 0, 1], [0, 1, 0]]), np.array([[1, 0, 0], [0, 1, 0]])
    assert multilabel_accuracy(Y, P) == pytest.approx(100 * 5 / 6)
    assert f1(Y, P) == pytest.approx(100 * 2 * 2 / (2 * 2 + 1))
    assert ranking_hamming_loss([[0, 1, 2]], [[1, 0, 2]]) == pytest.approx(100 * 4 / 9)
    assert ordinal_mae([1, 2, 3], [1, 3, 3], sample_weight=[1, 1, 0]) == pytest.approx(0.5)


# --------------------------------------------------------------------------- issue 36
def _multilabel_data(n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 4))
    return X / np.abs(X).max(), (rng.random((n, 3)) < 0.4).astype(float)


@pytest.mark.parametrize("scale", [1e160, 1e300])
@pytest.mark.parametrize("model", ["linear", "poly"])
def test_features_that_overflow_the_fit_are_refused_naming_their_scale(scale, model):
    X, Y = _multilabel_data()
    est = ProjectionMultilabelClassifier(model=model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow RuntimeWarning on the way
        with pytest.raises(ValueError, match=r"entries up to 1\.0e\+\d+ .*standardize the"):
            est.fit(X * scale, Y)


def test_the_overflow_limit_is_where_the_fit_breaks_down():
    """Just below the limit the fit runs to a finite model (a ConvergenceWarning naming the
    scale); the limit is not so low that it refuses fits that work."""
    X, Y = _multilabel_data()
    limit = overflow_limit(*X.shape)
    est = ProjectionMultilabelClassifier()
    with pytest.warns(ConvergenceWarning, match=r"X has entries up to .* far from unit scale"):
        est.fit(X * 0.95 * limit, Y)
    assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(est.intercept_))
    assert ProjectionMultilabelClassifier().fit(X * 1e50, Y).converged_  # far, but fine


def test_unit_scale_features_get_no_scale_hint():
    X, Y = _multilabel_data()
    with pytest.warns(ConvergenceWarning) as record:
        ProjectionMultilabelClassifier(max_iter=1, tol=1e-16).fit(X, Y)
    assert not any("far from unit scale" in str(w.message) for w in record)


def test_nan_in_multilabel_y_names_y_and_the_place():
    X, Y = _multilabel_data(20)
    Y[2, 1] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no cast RuntimeWarning first
        with pytest.raises(ValueError, match=r"^y contains NaN .*row 2, column 1.*drop those"):
            ProjectionMultilabelClassifier().fit(X, Y)


@pytest.mark.parametrize("method", ["project", "argmax"])
def test_sparse_theta_is_refused_as_sparse(method):
    theta = csr_matrix(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"sparse input is not supported.*toarray\(\)"):
        getattr(get_set("simplex"), method)(theta)
    with pytest.raises(ValueError, match="sparse input is not supported"):
        ProjectionLoss(get_set("simplex"))(theta, np.eye(3)[:2])
