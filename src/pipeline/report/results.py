"""The tracked results the report is built from (the evaluate stage's outputs).

Each run of an experiment leaves ``data/eval/<experiment>/<run>/results.json``: the test
scores under every lambda selection, the chosen lambdas, the validation curves, the test
size. Split sweeps (``splits: all``) leave one file per run with every split and the mean
and std. The MLflow run id of each run (``run_id``: what ``runs.csv`` maps a report cell
to) is not in the file -- it differs on every run, the file must not -- but in the
uncommitted index beside it (:mod:`pipeline.runs.index`): ``None`` where the index has
none (a clone restored by ``dvc pull``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..paths import EVAL_DIR
from ..runs.index import read_json

RESULTS = "results.json"


@dataclass(frozen=True)
class RunResult:
    """The test results of one run (one composition on one dataset)."""

    experiment: str
    run: str
    run_id: str | None
    headline: dict[str, float]  # metric -> test value, lambda chosen by that metric
    lambdas: dict[str, float | None]
    n_test: int | None
    y_shape: tuple[int, ...]
    std: dict[str, float] | None = None  # split sweeps: std over the splits
    n_splits: int | None = None
    tune: dict[str, Any] | None = None
    refit: dict[str, Any] | None = None  # index -> {lambda, converged, n_iter, ...}

    def converged(self, metric: str) -> bool | None:
        """Whether the fits behind the cell of ``metric`` converged: the tuning fit at the
        chosen lambda and the refit at it (None: not recorded, e.g. split sweeps)."""
        sel = ((self.tune or {}).get("selected") or {}).get(metric)
        if sel is None:
            return None
        index = int(sel["index"])
        flags = list((self.tune or {}).get("converged") or [])
        ok = bool(flags[index]) if index < len(flags) else True
        fit = (self.refit or {}).get(str(index))
        if fit is not None and "converged" in fit:
            ok = ok and bool(fit["converged"])
        return ok

    def fit_counts(self) -> tuple[int, int]:
        """(fits, non-converged fits) of the run: its lambda grid and its refits."""
        flags = [bool(c) for c in (self.tune or {}).get("converged") or []]
        flags += [bool(f.get("converged", True)) for f in (self.refit or {}).values()]
        return len(flags), sum(not c for c in flags)

    def value(self, metric: str) -> float | None:
        return self.headline.get(metric)

    def ties(self, metric: str) -> int:
        """How many lambdas share the best validation value of ``metric`` (1: no tie)."""
        tune = self.tune or {}
        values = (tune.get("metrics") or {}).get(metric)
        sel = (tune.get("selected") or {}).get(metric)
        if not values or not sel:
            return 1
        return sum(1 for v in values if v == sel["value"])


class Results:
    """Lazy access to ``data/eval/<experiment>/<run>/results.json`` under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._cache: dict[tuple[str, str], RunResult | None] = {}

    def get(self, experiment: str, run: str) -> RunResult | None:
        """The run's results, or None when it has not run."""
        key = (experiment, run)
        if key not in self._cache:
            self._cache[key] = self._load(experiment, run)
        return self._cache[key]

    def _load(self, experiment: str, run: str) -> RunResult | None:
        path = self.root / EVAL_DIR / experiment / run / RESULTS
        if not path.is_file():
            return None
        data = read_json(path, self.root)  # with the index's run id, when it has it
        n_test = data.get("n_test")
        y_shape = tuple(data.get("y_shape") or ())
        if data.get("splits"):
            first = next(iter(data["splits"].values()))
            n_test = first.get("n_test", n_test)
            y_shape = tuple(first.get("y_shape") or ())
        return RunResult(
            experiment=experiment,
            run=run,
            run_id=data.get("run_id"),
            headline={k: float(v) for k, v in (data.get("headline") or {}).items()},
            lambdas=dict(data.get("lambda") or {}),
            n_test=n_test,
            y_shape=y_shape,
            std=data.get("std"),
            n_splits=data.get("n_splits"),
            tune=data.get("tune") if "splits" not in data else None,
            refit=data.get("refit") if "splits" not in data else None,
        )

    def files(self, experiments: Iterable[str] | None = None) -> list[Path]:
        """Every results file under ``data/eval``, of ``experiments`` only when given:
        another list's outputs left beside them (``make repro-repeated``'s seeds) are not
        this report's."""
        base = self.root / EVAL_DIR
        if experiments is None:
            return sorted(base.glob(f"**/{RESULTS}"))
        keys = dict.fromkeys(experiments)
        return sorted(p for key in keys for p in (base / key).glob(f"**/{RESULTS}"))
