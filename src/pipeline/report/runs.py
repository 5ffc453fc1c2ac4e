"""``runs.csv`` beside the report: the MLflow runs its tables cite, readable without MLflow.

Every cell of the report's CSV files names the DVC experiment and run its number comes
from (``experiment``, ``run``: ``data/eval/<experiment>/<run>/``), not an MLflow run id:
the committed files are a function of the code and the data, and a run id is new on
every run. ``runs.csv`` maps them to the MLflow runs that produced them: written by the
report stage beside the tables from the uncommitted index of the run ids
(:mod:`pipeline.runs.index`), git-ignored and not a DVC output (it differs on every run;
a clone restored by ``dvc pull`` has no run ids: its ``mlflow_run_id`` column is empty).
One row per run the tables cite, with what the store said about it when the report was
built:

- ``mlflow_run_id``, ``mlflow_run_name``, ``mlflow_experiment``, ``status`` (from the
  tracking store of ``params.yaml`` when it is there; empty otherwise);
- ``experiment``, ``run`` (the DVC experiment and run: ``data/eval/<experiment>/<run>/``),
  ``tables`` (the report tables citing it), ``dataset``, ``task``, ``composition``,
  ``set``, ``geometry``, ``decoder``, ``model``, ``target_loss`` (the tracked results and
  the tuning file: the run's composed config);
- ``lambda.<metric>`` (the chosen lambda) and ``test.<metric>`` (the test value, lambda
  chosen by that metric) for every metric of the cited runs.

Join it to a table's CSV on ``experiment`` and ``run``.

Examples:
    >>> rows = [{"mlflow_run_id": "ab12", "run": "iris/t1-cube-cube", "test.hamming": 27.8}]
    >>> runs_csv(rows).splitlines()[1]
    'ab12,,,,,iris/t1-cube-cube,,,,,,,,,,27.8'
"""

from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..paths import EVAL_DIR, TUNING_DIR
from .results import RESULTS, RunResult
from .tables import Table

log = logging.getLogger(__name__)

RUNS_FILE = "runs.csv"
FIELDS = (
    "mlflow_run_id", "mlflow_run_name", "mlflow_experiment", "status", "experiment", "run",
    "tables", "dataset", "task", "composition", "set", "geometry", "decoder", "model",
    "target_loss",
)  # fmt: skip


def cited_runs(tables: Mapping[str, Table]) -> dict[tuple[str, str], tuple[RunResult, list[str]]]:
    """Every run a cell of ``tables`` cites (it has a result), with the tables citing it,
    in table order."""
    cited: dict[tuple[str, str], tuple[RunResult, list[str]]] = {}
    for key, table in tables.items():
        for cell in table.cells.values():
            res = cell.result
            if res is None:
                continue
            _, where = cited.setdefault((res.experiment, res.run), (res, []))
            if key not in where:
                where.append(key)
    return cited


def run_rows(
    tables: Mapping[str, Table], root: Path, store: Mapping[str, dict[str, str]] | None = None
) -> list[dict[str, Any]]:
    """The rows of ``runs.csv``: the cited runs' tracked results (``root``: the project),
    with ``store`` (run id -> ``mlflow_run_name``, ``mlflow_experiment``, ``status``)."""
    configs: dict[str, dict[str, Any]] = {}
    rows = []
    for (experiment, run), (res, where) in cited_runs(tables).items():
        if experiment not in configs:
            configs[experiment] = _tuning_configs(root / TUNING_DIR / f"{experiment}.json")
        comp = _composition(root, res)
        task = (configs[experiment].get(run) or {}).get("task") or {}
        row: dict[str, Any] = {
            "mlflow_run_id": res.run_id or "",
            **(store or {}).get(res.run_id or "", {}),
            "experiment": experiment,
            "run": run,
            "tables": " ".join(where),
            **{k: comp.get(k, "") for k in ("dataset", "task", "set", "geometry", "decoder")},
            "composition": comp.get("composition", ""),
            "model": comp.get("model", ""),
            "target_loss": task.get("target_loss") or "",
        }
        for metric, value in res.lambdas.items():
            row[f"lambda.{metric}"] = value
        for metric, value in res.headline.items():
            row[f"test.{metric}"] = value
        rows.append(row)
    return rows


def runs_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """CSV text of ``rows``: :data:`FIELDS`, then the ``lambda.*`` and ``test.*`` columns
    of any row (sorted); missing values empty."""
    extra = sorted({k for r in rows for k in r if k not in FIELDS})
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=[*FIELDS, *extra], restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def store_info(uri: str | bool | None, run_ids: Iterable[str]) -> dict[str, dict[str, str]]:
    """Run name, experiment name and status of ``run_ids`` in the tracking store ``uri``
    (resolved as the pipeline does); empty when tracking is off or the store is not there
    (a fresh clone has no ``mlflow.db``: none is created). A run the store lacks: status
    ``not in store``."""
    from ..errors import TrackingError
    from ..runs.store import probe, resolve_uri, sqlite_path

    ids = sorted({i for i in run_ids if i})
    if uri is False or not ids:
        return {}
    uri = resolve_uri(uri or None)
    path = sqlite_path(uri)
    if uri.startswith("file:"):
        path = Path(uri[len("file://") :] if uri.startswith("file://") else uri[len("file:") :])
    if path is not None and not path.exists():
        log.info("runs.csv: no tracking store at %s (run names and statuses left empty)", path)
        return {}
    try:
        probe(uri, timeout=5.0)  # a server: fail in seconds, not after MLflow's retries
        return _from_store(uri, ids)
    except (TrackingError, OSError) as exc:  # the tracked results are enough for the rest
        log.warning("warning: runs.csv: tracking store %s: %s; run names left empty", uri, exc)
        return {}


def _from_store(uri: str, ids: Sequence[str]) -> dict[str, dict[str, str]]:
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    info: dict[str, dict[str, str]] = {}
    names: dict[str, str] = {}
    for run_id in ids:
        try:
            run = client.get_run(run_id)
        except MlflowException:
            info[run_id] = {"status": "not in store"}
            continue
        exp_id = run.info.experiment_id
        if exp_id not in names:
            names[exp_id] = client.get_experiment(exp_id).name
        info[run_id] = {
            "mlflow_run_name": run.info.run_name or "",
            "mlflow_experiment": names[exp_id],
            "status": run.info.status,
        }
    return info


def write_runs(
    tables: Mapping[str, Table], out_dir: Path, root: Path, tracking_uri: str | bool | None
) -> Path:
    """Write ``<out_dir>/runs.csv`` (``tracking_uri``: ``params.yaml`` ``tracking.uri``,
    None for the default store, False for none)."""
    from ..fileio import write_text

    rows = run_rows(tables, root)
    store = store_info(tracking_uri, (r["mlflow_run_id"] for r in rows))
    for row in rows:
        row.update(store.get(row["mlflow_run_id"], {}))
    path = Path(out_dir) / RUNS_FILE
    write_text(path, runs_csv(rows))
    return path


def _composition(root: Path, res: RunResult) -> dict[str, Any]:
    path = root / EVAL_DIR / res.experiment / res.run / RESULTS
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return dict(data.get("composition") or {})


def _tuning_configs(path: Path) -> dict[str, dict[str, Any]]:
    """run -> its composed config, from a tuning file (empty when there is none)."""
    if not path.is_file():
        return {}
    tuning = json.loads(path.read_text(encoding="utf-8"))
    return {run: entry.get("config") or {} for run, entry in (tuning.get("runs") or {}).items()}
