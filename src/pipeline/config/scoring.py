"""The metrics of each task (``task.metrics``) and the choice of lambda (``task.select_by``).

Metrics are in the paper's units (:mod:`projloss.metrics`):

- label ranking: ``hamming``, the Hamming loss between the true and predicted k x k
  permutation (or 0/1) matrices, in percent (lower is better; Tables 1-3);
- ordinal: ``mae``, the mean absolute error (lower is better; Table 4);
- multilabel: ``accuracy`` = 100 (1 - Hamming loss), and ``f1_micro``, ``f1_macro``,
  ``f1_samples`` in percent (higher is better; Tables 6-7);
- multiclass: ``accuracy``, the percentage of correct classes.

:func:`best_index` chooses lambda on the validation curve of one metric; ties go to the
smallest lambda (``ties="smallest"``: the first best value of the ascending grid, as
``np.argmin`` over the paper's grid and scikit-learn's ``GridSearchCV`` over an ascending
grid choose; the paper's numbers show this rule, see ``reports/README.md``) or to the
largest (``ties="largest"``: the more regularized model).

It is part of the run config (:class:`~pipeline.config.run.RunConfig` checks
``task.metrics`` / ``task.select_by`` against it); the cores of :mod:`pipeline.runs` score
with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ..errors import CompositionError
from .settings import TIES


@dataclass(frozen=True)
class Metric:
    """A test/validation metric: ``fn(y_true, y_pred) -> float``."""

    name: str
    greater_is_better: bool
    fn: Callable[[Any, Any], float]
    description: str

    def __call__(self, y_true: Any, y_pred: Any) -> float:
        return float(self.fn(y_true, y_pred))


def _class_accuracy(y_true: Any, y_pred: Any) -> float:
    return 100.0 * float(np.mean(np.asarray(y_true).ravel() == np.asarray(y_pred).ravel()))


def _registry() -> dict[str, dict[str, Metric]]:
    from projloss.metrics import f1, multilabel_accuracy, ordinal_mae, ranking_hamming_loss

    f1s = {
        f"f1_{avg}": Metric(
            f"f1_{avg}", True, partial(f1, average=avg), f"F1 score ({avg} average), percent"
        )
        for avg in ("micro", "macro", "samples")
    }
    return {
        "label_ranking": {
            "hamming": Metric(
                "hamming",
                False,
                ranking_hamming_loss,
                "Hamming loss between permutation matrices, percent",
            )
        },
        "ordinal": {"mae": Metric("mae", False, ordinal_mae, "mean absolute error")},
        "multilabel": {
            "accuracy": Metric(
                "accuracy", True, multilabel_accuracy, "100 (1 - Hamming loss), percent"
            ),
            **f1s,
        },
        "multiclass": {
            "accuracy": Metric("accuracy", True, _class_accuracy, "correct classes, percent")
        },
    }


_METRICS: dict[str, dict[str, Metric]] | None = None


def metrics_of(task: str) -> dict[str, Metric]:
    """Every metric defined for ``task``, by name."""
    global _METRICS
    if _METRICS is None:
        _METRICS = _registry()
    if task not in _METRICS:
        raise CompositionError(f"unknown task {task!r}; valid tasks are {sorted(_METRICS)}")
    return _METRICS[task]


def task_metrics(task_node: Mapping[str, Any]) -> tuple[list[Metric], list[str]]:
    """The validated ``task.metrics`` (as :class:`Metric`) and ``task.select_by`` names."""
    task = task_node["name"]
    valid = metrics_of(task)
    names = list(task_node.get("metrics") or [])
    select_by = list(task_node.get("select_by") or names[:1])
    if not names:
        raise CompositionError(f"task.metrics is empty; valid metrics for {task}: {list(valid)}")
    for name in [*names, *select_by]:
        if name not in valid:
            raise CompositionError(
                f"unknown metric {name!r} for the {task} task; valid metrics: {list(valid)}"
            )
    missing = [s for s in select_by if s not in names]
    if missing:
        raise CompositionError(f"task.select_by {missing} must also be in task.metrics {names}")
    return [valid[n] for n in names], select_by


def run_metrics(run: Any) -> list[Metric]:
    """The metrics of a :class:`~pipeline.config.run.RunConfig` (names checked there)."""
    valid = metrics_of(run.composition.task)
    return [valid[name] for name in run.metrics]


def score(metrics: Sequence[Metric], y_true: Any, y_pred: Any) -> dict[str, float]:
    """Every metric of ``metrics`` on one prediction."""
    return {m.name: m(y_true, y_pred) for m in metrics}


def best_index(
    lambdas: Sequence[float | None],
    values: Sequence[float],
    greater: bool,
    ties: str = "smallest",
) -> int:
    """Index of the best value (NaN never wins); ties go to the ``ties`` lambda."""
    if ties not in TIES:
        raise CompositionError(f"lambdas.ties must be one of {list(TIES)}, got {ties!r}")
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0 or np.all(np.isnan(v)):
        raise ValueError("no finite validation score to choose lambda from")
    key = np.where(np.isnan(v), -np.inf if greater else np.inf, v)
    target = key.max() if greater else key.min()
    tied = np.flatnonzero(key == target)
    lam = np.array([-np.inf if x is None else x for x in lambdas], dtype=np.float64)
    pick = np.argmin if ties == "smallest" else np.argmax
    return int(tied[pick(lam[tied])])
