"""Task metrics against hand-computed values, and the choice of lambda."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.config.composition import CompositionError
from pipeline.config.scoring import best_index, metrics_of, score, task_metrics


def test_label_ranking_hamming_by_hand() -> None:
    (m,) = task_metrics({"name": "label_ranking", "metrics": ["hamming"]})[0]
    y = np.array([[0, 1, 2], [2, 1, 0]])
    pred = np.array([[0, 1, 2], [1, 2, 0]])  # second: 4 of 9 entries differ
    assert m(y, pred) == pytest.approx(100 * (0 + 4 / 9) / 2)
    assert not m.greater_is_better
    # 0/1 matrices (cube decoders) are scored the same way
    assert m(y, np.eye(3)[pred]) == pytest.approx(m(y, pred))


def test_multilabel_metrics_by_hand() -> None:
    metrics, select_by = task_metrics(
        {"name": "multilabel", "metrics": ["accuracy", "f1_micro", "f1_macro", "f1_samples"]}
    )
    assert select_by == ["accuracy"]  # default: the first metric
    Y = np.array([[1, 0, 1], [0, 1, 0]])
    P = np.array([[1, 1, 1], [0, 0, 0]])
    s = score(metrics, Y, P)
    assert s["accuracy"] == pytest.approx(100 * (1 - 2 / 6))
    tp, fp, fn = 2, 1, 1
    assert s["f1_micro"] == pytest.approx(100 * 2 * tp / (2 * tp + fp + fn))
    per_label = [1.0, 0.0, 1.0]  # label 1: tp=0 -> 0 (zero_division=0)
    assert s["f1_macro"] == pytest.approx(100 * np.mean(per_label))
    assert s["f1_samples"] == pytest.approx(100 * np.mean([2 * 2 / (2 * 2 + 1), 0.0]))
    assert all(m.greater_is_better for m in metrics)


def test_ordinal_and_multiclass() -> None:
    (mae,) = task_metrics({"name": "ordinal", "metrics": ["mae"]})[0]
    assert mae([1, 2, 3], [1, 3, 1]) == pytest.approx(1.0)
    (acc,) = task_metrics({"name": "multiclass", "metrics": ["accuracy"]})[0]
    assert acc([1, 2, 3, 4], [1, 2, 0, 0]) == pytest.approx(50.0)


def test_task_metrics_validation() -> None:
    with pytest.raises(CompositionError, match=r"unknown metric 'f1_micro'.*\['hamming'\]"):
        task_metrics({"name": "label_ranking", "metrics": ["f1_micro"]})
    with pytest.raises(CompositionError, match="must also be in task.metrics"):
        task_metrics({"name": "multilabel", "metrics": ["accuracy"], "select_by": ["f1_micro"]})
    with pytest.raises(CompositionError, match="empty"):
        task_metrics({"name": "ordinal", "metrics": []})
    assert set(metrics_of("multilabel")) == {"accuracy", "f1_micro", "f1_macro", "f1_samples"}


def test_best_index() -> None:
    lams = [1e-2, 1e-1, 1.0, 10.0]
    assert best_index(lams, [3.0, 1.0, 2.0, 5.0], greater=False) == 1
    assert best_index(lams, [3.0, 1.0, 2.0, 5.0], greater=True) == 3
    # ties go to the smallest lambda (the first of the grid) by default, NaN never wins
    assert best_index(lams, [1.0, 2.0, 1.0, np.nan], greater=False) == 0
    assert best_index(lams, [np.nan, 2.0, 2.0, 1.0], greater=True) == 1
    assert best_index(lams[::-1], [1.0, 2.0, 1.0, np.nan], greater=False) == 2  # by value
    # ties="largest": the most regularized model
    assert best_index(lams, [1.0, 2.0, 1.0, np.nan], greater=False, ties="largest") == 2
    assert best_index(lams, [np.nan, 2.0, 2.0, 1.0], greater=True, ties="largest") == 2
    with pytest.raises(ValueError, match="lambdas.ties must be one of"):
        best_index(lams, [1.0] * 4, greater=True, ties="middle")
    assert best_index([None], [4.0], greater=False) == 0
    with pytest.raises(ValueError, match="no finite"):
        best_index(lams, [np.nan] * 4, greater=True)
