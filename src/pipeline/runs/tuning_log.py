"""What a tuned run's lambda grid becomes in MLflow (``tracking.child_runs``).

MLflow's convention for tuning (``mlflow.sklearn.autolog``'s ``max_tuning_runs``, 5 by
default) logs a few child runs, the best candidates, and the rest as data of the parent
run. Here the whole grid goes to the parent run as metric histories, one step per lambda
index in ascending lambda order (:func:`grid_steps`: ``tuning/lambda``,
``tuning/val.<metric>``, ``tuning/fit_seconds``, ``tuning/n_iter``, ``tuning/converged``:
the UI draws them in a ``tuning`` section of the run's charts, against the step or, chosen
as the x-axis, ``tuning/lambda``) plus one table artifact, ``tuning/grid.json``
(:func:`grid_table`, written as ``mlflow.log_table`` writes it, :func:`table_text`
and :func:`logged_artifacts_tag`: the artifact view shows it as a table); the lambdas
:func:`child_indices` picks are child runs too (:func:`child_run`: params ``lambda``,
metrics ``val.<metric>``, ``fit_seconds``, ``converged``, ``n_iter``), named
``lambda=<value>``.

``tracking.child_runs``: ``best-<k>`` (default ``best-3``) the k best lambdas by the run's
selection metric (the first of ``task.select_by``), ties broken as the selection breaks
them (``lambdas.ties``: the smaller lambda first, or the larger) and NaN last; ``all``
every lambda; ``none`` no child run. Three, not MLflow's five: each child run is three
store calls (``create_run``, ``log_batch``, ``set_terminated``), about 1,000 child runs
in the paper's list at five; the chosen lambda and its two runners-up show whether the
choice was close, and the grid table has the rest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: the prefix of the parent run's grid metrics and table (the UI's chart section)
PREFIX = "tuning"
#: the table artifact of the grid
TABLE = f"{PREFIX}/grid.json"
#: the metric history of the grid's lambdas (a run that has it has the grid)
GRID_METRIC = f"{PREFIX}/lambda"
#: the run tag that lists a run's tables (what ``MlflowClient.log_table`` sets: the UI
#: shows the artifacts it names as tables, and ``load_table`` finds them)
LOGGED_ARTIFACTS = "mlflow.loggedArtifacts"


def lambda_name(lam: float | None) -> str:
    """A child run's name.

    Examples
    --------
    >>> lambda_name(0.000123), lambda_name(None)
    ('lambda=0.000123', 'lambda=none')
    """
    return "lambda=none" if lam is None else f"lambda={lam:.3g}"


def _number(v: Any) -> float:
    return float("nan") if v is None else float(v)


def child_indices(tuning: Mapping[str, Any], setting: str, ties: str = "smallest") -> list[int]:
    """The grid indices logged as child runs for ``setting`` (``best-<k>``, ``all``,
    ``none``; see the module docstring), in ascending index order.

    Examples
    --------
    >>> t = {"lambdas": [0.1, 1.0, 10.0, 100.0], "select_by": ["acc"],
    ...      "greater_is_better": {"acc": True}, "metrics": {"acc": [0.5, 0.9, 0.9, 0.1]}}
    >>> child_indices(t, "best-2"), child_indices(t, "best-2", ties="largest")
    ([1, 2], [1, 2])
    >>> child_indices(t, "best-1"), child_indices(t, "best-1", ties="largest")
    ([1], [2])
    >>> child_indices(t, "all"), child_indices(t, "none")
    ([0, 1, 2, 3], [])
    """
    n = len(tuning["lambdas"])
    if setting == "all":
        return list(range(n))
    if setting == "none" or not tuning.get("select_by"):
        return []
    k = int(setting.removeprefix("best-"))
    metric = tuning["select_by"][0]
    greater = bool(tuning["greater_is_better"][metric])
    values = [_number(v) for v in tuning["metrics"][metric]]
    lams = [-math.inf if lam is None else float(lam) for lam in tuning["lambdas"]]

    def key(i: int) -> tuple[bool, float, float]:
        v = values[i]
        bad = math.isnan(v)
        return (
            bad,
            0.0 if bad else (-v if greater else v),
            lams[i] if ties == "smallest" else -lams[i],
        )

    return sorted(sorted(range(n), key=key)[:k])


def _columns(tuning: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The grid's columns: lambda, ``val.<metric>`` for each metric, the fits' data."""
    n = len(tuning["lambdas"])
    cols: dict[str, list[Any]] = {"lambda": list(tuning["lambdas"])}
    for name, values in tuning["metrics"].items():
        cols[f"val.{name}"] = list(values)
    cols["fit_seconds"] = list(tuning.get("fit_seconds") or [None] * n)
    cols["n_iter"] = list(tuning.get("n_iter") or [None] * n)
    cols["converged"] = [float(c) for c in tuning.get("converged") or [True] * n]
    return cols


def grid_steps(tuning: Mapping[str, Any]) -> list[tuple[dict[str, float], int]]:
    """The grid as ``(metrics, step)`` pairs of the parent run: step ``i`` holds lambda
    ``i`` of the ascending grid (``None`` and non-finite values left out).

    Examples
    --------
    >>> t = {"lambdas": [0.1, 1.0], "metrics": {"acc": [0.5, 0.9]},
    ...      "fit_seconds": [0.2, 0.1], "n_iter": [7, None], "converged": [True, False]}
    >>> metrics, step = grid_steps(t)[1]
    >>> step, sorted(metrics)  # no n_iter: None at that step
    (1, ['tuning/converged', 'tuning/fit_seconds', 'tuning/lambda', 'tuning/val.acc'])
    """
    cols = _columns(tuning)
    steps = []
    for i in range(len(tuning["lambdas"])):
        row = {f"{PREFIX}/{k}": v[i] for k, v in cols.items()}
        steps.append(({k: float(v) for k, v in row.items() if _finite(v)}, i))
    return steps


def grid_table(tuning: Mapping[str, Any], children: list[int] | None = None) -> dict[str, list]:
    """The grid as the columns of ``tuning/grid.json`` (``mlflow.log_table``): ``step``
    (the metric step of the row), the grid's columns, ``child_run`` (whether that lambda
    is a child run too) and ``selected_by`` (the metrics whose chosen lambda it is)."""
    cols = _columns(tuning)
    n = len(tuning["lambdas"])
    chosen = children or []
    selected: list[list[str]] = [[] for _ in range(n)]
    for metric, sel in (tuning.get("selected") or {}).items():
        selected[int(sel["index"])].append(metric)
    return {
        "step": list(range(n)),
        **{k: [v if _finite(v) or v is None else None for v in col] for k, col in cols.items()},
        "child_run": [i in chosen for i in range(n)],
        "selected_by": [" ".join(s) for s in selected],
    }


def table_text(table: Mapping[str, list[Any]]) -> str:
    """The JSON of a table of columns as ``MlflowClient.log_table`` writes it (pandas'
    ``orient="split"`` without the index: ``columns`` and ``data`` rows; ``None`` is
    ``null``), with every float at full precision (pandas keeps 10 digits).

    ``log_table`` itself costs four store calls a run (it lists the run's artifacts to
    append to an earlier table, reads the run, sets a tag); the tune stage writes this
    text with one artifact call and the tag with the run's batch (:func:`logged_artifacts_tag`).

    Examples
    --------
    >>> table_text({"lambda": [0.1, 1.0], "val.acc": [0.5, None]})
    '{"columns": ["lambda", "val.acc"], "data": [[0.1, 0.5], [1.0, null]]}'
    """
    import json

    columns = list(table)
    rows = [list(row) for row in zip(*(table[c] for c in columns), strict=True)]
    return json.dumps({"columns": columns, "data": rows}, allow_nan=False)


def logged_artifacts_tag(current: str | None, path: str = TABLE) -> str:
    """The value of the run tag :data:`LOGGED_ARTIFACTS` once the table ``path`` is
    logged, given its ``current`` value (``None``: no table yet): ``log_table``'s rule
    (each path listed once, as a ``table``).

    Examples
    --------
    >>> logged_artifacts_tag(None)
    '[{"path": "tuning/grid.json", "type": "table"}]'
    >>> logged_artifacts_tag(logged_artifacts_tag(None)) == logged_artifacts_tag(None)
    True
    """
    import json

    value = json.loads(current or "[]")
    entry = {"path": path, "type": "table"}
    if entry not in value:
        value.append(entry)
    return json.dumps(value)


def child_run(tuning: Mapping[str, Any], i: int) -> tuple[str, dict[str, Any], dict[str, float]]:
    """``(name, params, metrics)`` of the child run of lambda ``i``."""
    metrics = {f"val.{name}": _number(values[i]) for name, values in tuning["metrics"].items()}
    if tuning.get("fit_seconds"):
        metrics["fit_seconds"] = float(tuning["fit_seconds"][i])
    if tuning.get("converged"):
        metrics["converged"] = float(tuning["converged"][i])
    n_iter = (tuning.get("n_iter") or [None] * (i + 1))[i]
    if n_iter is not None:
        metrics["n_iter"] = float(n_iter)
    lam = tuning["lambdas"][i]
    return lambda_name(lam), {"lambda": lam}, metrics


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
