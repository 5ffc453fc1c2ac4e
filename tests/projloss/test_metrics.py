"""The paper's metrics against direct computations."""

from __future__ import annotations

import numpy as np
import pytest

from projloss.metrics import f1, multilabel_accuracy, ordinal_mae, ranking_hamming_loss


def test_ranking_hamming_loss():
    y = np.array([[0, 1, 2], [2, 1, 0]])
    pred = np.array([[1, 0, 2], [2, 1, 0]])
    # sample 0: two ranks swapped -> 4 of 9 entries differ; sample 1: none
    assert ranking_hamming_loss(y, pred) == pytest.approx(100 * (4 / 9) / 2)
    assert ranking_hamming_loss(y, pred, percent=False) == pytest.approx((4 / 9) / 2)
    # matrices (e.g. cube decoding) are accepted and compared entrywise
    P = np.eye(3, dtype=int)[pred]
    P[1, 0, 0] = 1  # not a permutation matrix any more: one more differing entry
    assert ranking_hamming_loss(y, P) == pytest.approx(100 * (4 / 9 + 1 / 9) / 2)
    assert ranking_hamming_loss(y, pred, sample_weight=[1, 0]) == pytest.approx(400 / 9)
    with pytest.raises(ValueError, match="different shapes"):
        ranking_hamming_loss(y, np.array([[0, 1], [1, 0]]))
    with pytest.raises(ValueError, match="not a permutation"):
        ranking_hamming_loss(y, np.array([[0, 0, 2], [2, 1, 0]]))
    with pytest.raises(ValueError, match="0/1 matrices"):
        ranking_hamming_loss(y, 2 * P)


def test_multilabel_metrics():
    Y = np.array([[1, 0, 1, 0], [0, 1, 0, 0], [1, 1, 1, 1]])
    P = np.array([[1, 0, 0, 0], [0, 1, 1, 0], [1, 1, 1, 1]])
    assert multilabel_accuracy(Y, P) == pytest.approx(100 * (1 - 2 / 12))
    # micro F1: tp = 6, fp = 1, fn = 1
    assert f1(Y, P, average="micro") == pytest.approx(100 * 2 * 6 / (2 * 6 + 1 + 1))
    per_sample = [2 * 1 / (2 * 1 + 1), 2 * 1 / (2 * 1 + 1), 1.0]
    assert f1(Y, P, average="samples") == pytest.approx(100 * np.mean(per_sample))
    per_label = [1.0, 1.0, 2 * 1 / (2 * 1 + 1 + 1), 1.0]
    assert f1(Y, P, average="macro") == pytest.approx(100 * np.mean(per_label))
    with pytest.raises(ValueError, match="unknown F1 average"):
        f1(Y, P, average="weighted")


def test_ordinal_mae():
    assert ordinal_mae([1, 2, 3, 5], [1, 3, 3, 2]) == pytest.approx((0 + 1 + 0 + 3) / 4)


@pytest.mark.parametrize("weighted", [False, True])
def test_ordinal_mae_equals_sklearn(weighted):
    """The MAE is computed without scikit-learn's checks, by the same operations: the same
    values as ``sklearn.metrics.mean_absolute_error`` on real-valued and integer labels."""
    from sklearn.metrics import mean_absolute_error

    rng = np.random.default_rng(0)
    for y, p in [
        (rng.standard_normal(1001) * 3, rng.standard_normal(1001)),
        (rng.integers(1, 10, 257), rng.integers(0, 12, 257)),
    ]:
        sw = rng.random(len(y)) if weighted else None
        expected = mean_absolute_error(y, p, sample_weight=sw)
        np.testing.assert_allclose(ordinal_mae(y, p, sample_weight=sw), expected, rtol=1e-15)


def test_metrics_validate_their_inputs():
    with pytest.raises(ValueError, match="y_true must be a 0/1 label indicator matrix"):
        multilabel_accuracy([[0, 2]], [[0, 1]])  # was 50.0
    with pytest.raises(ValueError, match="different shapes"):
        f1([[0, 1, 1]], [[0, 1]])
    with pytest.raises(ValueError, match="y_pred must hold permutations"):
        ranking_hamming_loss([[0, 1, 2]], [[0, 0, 2]])
    with pytest.raises(ValueError, match="sample_weight must have shape"):
        ranking_hamming_loss([[0, 1, 2]], [[0, 1, 2]], sample_weight=[1.0, 1.0])
    with pytest.raises(ValueError, match="finite numeric ordinal labels"):
        ordinal_mae([1, np.inf], [1, 2])
