"""Evaluate stage: test metrics of the refitted models, predictions, model and figures.

For each metric ``s`` of ``task.select_by``, the model refitted with the lambda ``s`` chose
is scored on the test split with every task metric: ``test.<m>.by_<s>``. The headline
value of a metric (``test.<m>``, the paper's table cell) uses the lambda chosen by that
metric when it is in ``select_by``, else by the first one.

Logged to the parent run: the test metrics, the refit times, what the MLflow UI shows of
the run (:mod:`pipeline.runs.mlflow_view`: the chosen lambdas as params, the validation
curve as metric steps, the dataset input, the ``structure`` tag of degenerate predictions,
a description), each distinct refitted estimator as a raw-feature ``Pipeline`` (scaler +
estimator, ``mlflow.sklearn.log_model``, named after the composition; ``-by_<metric>`` for
another metric's lambda), the test predictions (``predictions.npz``: the test
rows' ids, ``y_true`` and ``y_pred.<metric>``) and the figures (``validation_curve.png``;
for label ranking, ``soft_permutations.png``, the soft outputs ``project(X)`` of a few test
samples, paper Figure 3). The same files are written to ``out_dir`` when given (the DVC
stage's outputs), with ``results.json``: the test scores under every selection, the
composition, the refit and tuning records (validation curves), for reports built from
the DVC outputs alone.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..config.composition import Composition
from ..config.run import RunConfig
from ..config.scoring import run_metrics, score
from ..fileio import atomic_path, make_dir
from . import mlflow_view, structure_flags
from .index import write_json  # run id and times: in the index, not the output
from .refit import Refitted
from .tracking import Tracker

PREDICTIONS = "predictions.npz"
RESULTS = "results.json"


def summary_line(comp: Composition, result: Mapping[str, Any], seconds: float) -> str:
    """``dataset | task composition | lambda | test metrics | seconds`` on one line."""
    lambdas = result["lambda"]
    if "n_splits" in result:
        lam = f"lambda per split, {result['n_splits']} splits"
        std = result.get("std", {})
        test = " ".join(
            f"{k}={v:.3f}+-{std.get(k, 0.0):.3f}" for k, v in result["headline"].items()
        )
        return f"{comp.dataset} | {comp.task} {comp.label} | {lam} | test {test} | {seconds:.1f} s"
    if all(v is None for v in lambdas.values()):
        lam = "no lambda"
    elif len(set(lambdas.values())) == 1:
        lam = f"lambda={next(iter(lambdas.values())):.3g}"
    else:
        lam = "lambda " + ", ".join(f"{k}={v:.3g}" for k, v in lambdas.items())
    test = " ".join(f"{k}={v:.2f}" for k, v in result["headline"].items())
    return f"{comp.dataset} | {comp.task} {comp.label} | {lam} | test {test} | {seconds:.1f} s"


def n_refit_rows(data: Any) -> int:
    """Rows of the refit set, train + validation (the paper's "training set")."""
    return int(np.asarray(data.train[1]).shape[0] + np.asarray(data.val[1]).shape[0])


def headline(test: Mapping[str, Mapping[str, float]], select_by: list[str]) -> dict[str, float]:
    """``test.<m>``: metric ``m`` under its own lambda (or the first selection's)."""
    first = test[select_by[0]]
    return {m: (test[m][m] if m in test else v) for m, v in first.items()}


def model_names(refitted: Refitted, select_by: list[str], base: str = "model") -> dict[int, str]:
    """The MLflow model name of each distinct refitted estimator: ``base`` for the first
    selection metric's, ``<base>-by_<metric>`` for another metric's lambda."""
    names: dict[int, str] = {}
    for s in select_by:
        i = refitted.selection[s]
        if i not in names:
            names[i] = base if not names else f"{base}-by_{s}"
    return names


def run(
    run: RunConfig,
    data: Any,
    tuned: Mapping[str, Any],
    refitted: Refitted,
    tracker: Tracker | None = None,
    *,
    out_dir: Path | None = None,
    record: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Score ``refitted`` on ``data.test``, log it; return the JSON-able test results:
    ``test`` (selection metric -> metric -> value), ``headline``, ``lambda`` (selection
    metric -> lambda) and ``seconds``. ``record``: extra entries of ``results.json``
    (e.g. the MLflow run id, the experiment and run keys)."""
    start = time.perf_counter()
    comp = run.composition
    tracker = tracker or Tracker()
    metrics, select_by = run_metrics(run), list(run.select_by)
    X, y = data.test
    predictions = {i: model.predict(X) for i, model in refitted.models.items()}
    scores = {i: score(metrics, y, p) for i, p in predictions.items()}
    test = {s: scores[refitted.selection[s]] for s in select_by}
    best = headline(test, select_by)
    lambdas = {s: refitted.lambdas[refitted.selection[s]] for s in select_by}

    logged: dict[str, float] = {f"test.{m}": v for m, v in best.items()}
    for s, values in test.items():
        logged.update({f"test.{m}.by_{s}": v for m, v in values.items()})
    for i, fit in refitted.fits.items():
        suffix = "" if i == refitted.selection[select_by[0]] else f".lambda_{i}"
        logged[f"refit_seconds{suffix}"] = fit.get("fit_seconds", float("nan"))
        if "converged" in fit:
            logged[f"refit_converged{suffix}"] = float(bool(fit["converged"]))
        if fit.get("n_iter") is not None:
            logged[f"refit_n_iter{suffix}"] = float(fit["n_iter"])
    # every fit of the run (the lambda grid, whose child runs log theirs, and the refits)
    flags = [bool(c) for c in tuned.get("converged") or []]
    flags += [bool(f.get("converged", True)) for f in refitted.fits.values()]
    logged["non_converged_fits"] = float(sum(not c for c in flags))
    tracker.log_metrics(logged)
    tracker.set_tags({"converged": str(all(flags)).lower()})
    mlflow_view.log_run_page(tracker, run, comp, data, tuned)
    if comp.model == "mlp":  # the networks' per-epoch curves, device and torch version
        names = model_names(refitted, select_by, base="")
        curves = {name: refitted.models[i] for i, name in names.items()}
        mlflow_view.log_training_curves(tracker, curves)
    headline_pred = predictions[refitted.selection[select_by[0]]]
    problem = structure_flags.flag_structures(tracker, comp, headline_pred)
    mlflow_view.describe_run(tracker, comp, best, lambdas, problem)

    result = {
        "test": test,
        "headline": best,
        "lambda": lambdas,
        "composition": comp.tags(),
        "refit": {str(i): fit for i, fit in refitted.fits.items()},
        "n_test": int(X.shape[0]),
        # the refit set (train + validation): the corrected resampled t-test's n_train
        "n_train": n_refit_rows(data),
        "y_shape": list(np.asarray(y).shape[1:]),  # per sample: (k,) rankings/labels, ()
    }
    settings = tracker.settings
    with contextlib.ExitStack() as stack:
        directory = out_dir
        if directory is None and tracker.enabled:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="projloss-")))
        if directory is not None:
            directory = make_dir(Path(directory))
            pred_path = directory / PREDICTIONS
            arrays = {"index": data.index["test"], "y_true": np.asarray(y)}
            arrays.update({f"y_pred.{s}": predictions[refitted.selection[s]] for s in select_by})
            with atomic_path(pred_path) as tmp, open(tmp, "wb") as f:
                np.savez_compressed(f, **arrays)
            tracker.log_artifact(pred_path)
            if out_dir is not None:  # every number of the run, for reports built offline
                write_json(directory / RESULTS, {**(record or {}), **result, "tune": dict(tuned)})
            if settings.figures:
                n_heat = settings.heatmap_samples
                for path in _figures(comp, data, tuned, refitted, select_by, directory, n_heat):
                    tracker.log_artifact(path, "figures")
        if tracker.enabled and settings.log_models:
            names = model_names(refitted, select_by, base="")
            models = {name: refitted.models[i] for i, name in names.items()}
            mlflow_view.log_models(tracker, run, comp, data, models)
    result["seconds"] = time.perf_counter() - start
    return result


def _figures(
    comp: Composition,
    data: Any,
    tuned: Mapping[str, Any],
    refitted: Refitted,
    select_by: list[str],
    directory: Path,
    n: int,
) -> list[Path]:
    from . import figures

    paths = []
    title = f"{comp.dataset}: {comp.label}"
    if comp.has_lambda and len(tuned["lambdas"]) > 1:
        path = directory / "validation_curve.png"
        paths.append(figures.save_validation_curve(tuned, title, path))
    if comp.task == "label_ranking" and comp.kind == "projection" and n > 0:
        X, y = data.test
        U = refitted.model_for(select_by[0]).project(X[:n])
        truth = None
        if U.ndim == 3:  # permutation matrices [rank, label]; else permutahedron vectors
            from projloss.target_losses import permutation_matrix

            truth = permutation_matrix(np.asarray(y[:n]))
        path = directory / "soft_permutations.png"
        paths.append(figures.save_soft_permutations(U, truth, f"{title} (soft outputs)", path))
    return paths
