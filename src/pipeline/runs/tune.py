"""Tune stage: fit the lambda grid on train, score on validation, choose lambda per metric.

For one composition (a run config), every lambda of the grid (``lambdas``) is fitted on
the training split and scored on the validation split with every metric of the task
(``task.metrics``); lambda is then chosen separately for each metric of
``task.select_by`` (paper §6 / Appendix B: "we select the best hyperparameter on the
validation set"; an accuracy table and an F1 table may pick different lambdas). Ties go to
the smallest lambda unless ``lambdas.ties: largest`` (:func:`pipeline.config.scoring.best_index`).

With ``warm_start: true`` the grid is fitted from the largest lambda to the smallest, each
fit starting from the previous solution: the problems are strongly convex, so the optimum
is the same, reached in fewer L-BFGS iterations. The baselines have no grid to warm-start
(ridge is solved in closed form) or no lambda at all (the median: one fit).

The composition's parent run gets the whole grid (validation metrics, fit seconds,
L-BFGS iterations, convergence of every fit: metric histories ``tuning/*``, one step per
lambda, and the table ``tuning/grid.json``), the best lambdas as child runs
(``tracking.child_runs``, :mod:`pipeline.runs.tuning_log`), the chosen lambdas
(``lambda.<metric>``) and their validation values (``val.<metric>``).
"""

from __future__ import annotations

import logging
import time
import warnings
from typing import Any

from sklearn.exceptions import ConvergenceWarning

from ..config.composition import Composition, make_estimator
from ..config.run import RunConfig
from ..config.scoring import best_index, run_metrics, score
from ..errors import ConfigError
from .tracking import Tracker

log = logging.getLogger(__name__)


def fit_quietly(estimator: Any, X: Any, y: Any) -> tuple[float, bool]:
    """Fit; return (seconds, converged). Convergence warnings are counted, not printed
    (the stage reports them); other warnings pass through. A network whose training
    diverged (NaN loss) is a :class:`~pipeline.errors.ConfigError` (one line: lambda and
    the remedy), never a result."""
    from projloss.estimators.neural import TrainingDivergedError

    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        try:
            estimator.fit(X, y)
        except TrainingDivergedError as exc:
            raise ConfigError(f"{exc} (model.learning_rate, lambdas.low)") from None
    seconds = time.perf_counter() - start
    converged = True
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            converged = False
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return seconds, converged


def convergence_warning(
    comp: Composition, lambdas: list[float | None], n_fits: int, stage: str = "tune"
) -> str:
    """The warning line for fits that stopped before convergence (L-BFGS reached
    ``model.max_iter``): which lambdas, and the remedy (more iterations).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> comp = SimpleNamespace(dataset="iris", label="cube->cube", model_params={"max_iter": 500})
    >>> print(convergence_warning(comp, [1e-4, 1e-3], 10))  # doctest: +NORMALIZE_WHITESPACE
    warning: iris cube->cube: tune: 2 of 10 fits stopped before convergence (lambda=0.0001,
    0.001; model.max_iter=500); raise it, e.g. model.max_iter=1000, or start the grid higher
    (lambdas.low)
    """
    max_iter = comp.model_params.get("max_iter")
    lams = ", ".join("none" if lam is None else f"{lam:.3g}" for lam in lambdas)
    more = f"e.g. model.max_iter={2 * int(max_iter)}" if max_iter else "e.g. model.max_iter=1000"
    return (
        f"warning: {comp.dataset} {comp.label}: {stage}: {len(lambdas)} of {n_fits} fits "
        f"stopped before convergence (lambda={lams}; model.max_iter={max_iter}); "
        f"raise it, {more}, or start the grid higher (lambdas.low)"
    )


def run(run: RunConfig, data: Any, tracker: Tracker | None = None) -> dict[str, Any]:
    """Tune lambda for the composition of ``run`` on ``data`` (a ``PreparedData``).

    Returns a JSON-able dict: ``lambdas`` (ascending; ``[None]`` for the median), the
    validation ``metrics`` (name -> values aligned with ``lambdas``), ``fit_seconds``,
    ``n_iter``, ``converged``, ``selected`` (metric -> ``{index, lambda, value}``),
    ``select_by``, ``greater_is_better`` and ``seconds``.
    """
    comp = run.composition
    tracker = tracker or Tracker()
    metrics, select_by = run_metrics(run), list(run.select_by)
    (X, y), (X_val, y_val) = data.train, data.val
    grid = run.grid
    warm = run.warm
    order = sorted(range(len(grid)), key=lambda i: -(grid[i] or 0.0)) if warm else range(len(grid))
    estimator = make_estimator(comp, alpha=grid[-1], warm_start=warm)
    n = len(grid)
    values: dict[str, list[float]] = {m.name: [float("nan")] * n for m in metrics}
    fit_seconds: list[float] = [0.0] * n
    n_iter: list[int | None] = [None] * n
    converged: list[bool] = [True] * n

    start = time.perf_counter()
    steps: Any = order
    if run.progress and n > 1:
        from tqdm.auto import tqdm

        # disable=None: no bar when stderr is not a terminal (logs of DVC or a cluster)
        steps = tqdm(
            order, desc=f"{comp.dataset} {comp.label}", unit="fit", leave=False, disable=None
        )
    for i in steps:
        lam = grid[i]
        if lam is not None:
            estimator.set_params(alpha=lam)
        fit_seconds[i], converged[i] = fit_quietly(estimator, X, y)
        n_iter[i] = getattr(estimator, "n_iter_", None)
        scores = score(metrics, y_val, estimator.predict(X_val))
        for name, v in scores.items():
            values[name][i] = v

    ties = run.ties
    selected = {}
    for name in select_by:
        greater = next(m.greater_is_better for m in metrics if m.name == name)
        i = best_index(grid, values[name], greater, ties=ties)
        selected[name] = {"index": i, "lambda": grid[i], "value": values[name][i]}
    bad = sorted(grid[i] or 0.0 for i in range(n) if not converged[i])
    if bad:
        log.warning("%s", convergence_warning(comp, list(bad), n))
    summary: dict[str, float] = {}
    for name, sel in selected.items():
        summary[f"val.{name}"] = sel["value"]
        if sel["lambda"] is not None:
            summary[f"lambda.{name}"] = sel["lambda"]
    summary["tune_seconds"] = time.perf_counter() - start
    result = {
        "lambdas": grid,
        "metrics": values,
        "greater_is_better": {m.name: m.greater_is_better for m in metrics},
        "select_by": select_by,
        "selected": selected,
        "fit_seconds": fit_seconds,
        "n_iter": n_iter,
        "converged": converged,
        "warm_start": warm,
        "seconds": summary["tune_seconds"],
    }
    tracker.log_tuning(result, ties=ties)
    tracker.log_metrics(summary)
    return result
