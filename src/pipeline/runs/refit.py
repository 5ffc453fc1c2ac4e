"""Refit stage: fit on train + validation with each selected lambda.

The protocol (paper Appendix B): once lambda is chosen on the validation split, the model
is refitted on the whole training part (train + validation) and evaluated on test. Each
distinct selected lambda is fitted once (metrics that chose the same lambda share the
model). :func:`save` / :func:`load` store the estimators with joblib, each file written
atomically, with an index ``refit.json``; a split sweep's run (thirty orreview splits)
keeps all its splits in one file, :func:`save_splits` / :func:`load_splits` (DVC hashes,
caches, pushes and pulls every file of ``models/``: 4,800 files for ``ord-splits`` cost
seconds in each stage that reads or writes them, 160 do not).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.composition import make_estimator
from ..config.run import RunConfig
from ..fileio import atomic_path
from .index import read_json, split, write_json
from .tune import convergence_warning, fit_quietly

log = logging.getLogger(__name__)

INDEX = "refit.json"
#: the refitted estimators of every split of a swept run (:func:`save_splits`)
SPLITS_FILE = "splits.joblib"


@dataclass
class Refitted:
    """The refitted estimators: grid index -> estimator, and metric -> grid index."""

    models: dict[int, Any]
    selection: dict[str, int]
    lambdas: dict[int, float | None]
    fits: dict[int, dict[str, Any]] = field(default_factory=dict)

    def model_for(self, metric: str) -> Any:
        return self.models[self.selection[metric]]


def run(run: RunConfig, data: Any, tuned: Mapping[str, Any]) -> Refitted:
    """Refit the composition of ``run`` on ``data.train_val`` for each lambda ``tuned``
    selected (the result of :func:`pipeline.runs.tune.run`)."""
    comp = run.composition
    X, y = data.train_val
    selection = {name: int(sel["index"]) for name, sel in tuned["selected"].items()}
    models: dict[int, Any] = {}
    lambdas: dict[int, float | None] = {}
    fits: dict[int, dict[str, Any]] = {}
    for index in dict.fromkeys(selection.values()):  # distinct, in select_by order
        lam = tuned["lambdas"][index]
        estimator = make_estimator(comp, alpha=lam)
        seconds, converged = fit_quietly(estimator, X, y)
        if not converged:
            log.warning("%s", convergence_warning(comp, [lam], 1, stage="refit"))
        models[index], lambdas[index] = estimator, lam
        fits[index] = {
            "lambda": lam,
            "fit_seconds": seconds,
            "converged": converged,
            "n_iter": getattr(estimator, "n_iter_", None),
        }
    return Refitted(models=models, selection=selection, lambdas=lambdas, fits=fits)


def save(refitted: Refitted, directory: Path) -> list[Path]:
    """Write each estimator to ``directory/lambda-<index>.joblib`` and the index."""
    import joblib

    directory = Path(directory)
    paths = []
    for index, model in refitted.models.items():
        path = directory / f"lambda-{index:02d}.joblib"
        with atomic_path(path) as tmp:
            joblib.dump(model, tmp)
        paths.append(path)
    write_json(directory / INDEX, _index_entry(refitted, files=True))
    return paths


def load(directory: Path) -> Refitted:
    """The estimators :func:`save` wrote to ``directory``."""
    import joblib

    directory = Path(directory)
    index = read_json(directory / INDEX)  # the fit times too, from the index
    models, lambdas, fits = {}, {}, {}
    for key, entry in index["models"].items():
        i = int(key)
        models[i] = joblib.load(directory / entry["file"])
        lambdas[i] = entry.get("lambda")
        fits[i] = {k: v for k, v in entry.items() if k != "file"}
    selection = {name: int(i) for name, i in index["selection"].items()}
    return Refitted(models=models, selection=selection, lambdas=lambdas, fits=fits)


def _index_entry(refitted: Refitted, files: bool = False) -> dict[str, Any]:
    """The index of a run's refitted models: the selection and, per model, its lambda and
    fit record (time, convergence), with its file name when saved one file per model."""

    def entry(i: int) -> dict[str, Any]:
        file = {"file": f"lambda-{i:02d}.joblib"} if files else {}
        return {**file, "lambda": refitted.lambdas.get(i), **refitted.fits.get(i, {})}

    return {
        "selection": refitted.selection,
        "models": {str(i): entry(i) for i in refitted.models},
    }


def save_splits(per_split: Mapping[int, Refitted], directory: Path) -> list[Path]:
    """Write the refitted estimators of every split of a swept run to one file,
    ``directory/splits.joblib`` (split -> the fields of its :class:`Refitted`: the
    estimators, selection, lambdas and fits, in plain containers), and the index
    ``refit.json`` (per split the selection and each fit's lambda, time, convergence).

    Examples
    --------
    >>> import tempfile
    >>> r = Refitted(models={0: "m"}, selection={"mae": 0}, lambdas={0: 0.1})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = save_splits({3: r}, Path(tmp))
    ...     print(load_splits(Path(tmp))[3].model_for("mae"))
    m
    """
    import joblib

    directory = Path(directory)
    path = directory / SPLITS_FILE
    with atomic_path(path) as tmp:  # plain containers: loadable with projloss alone
        packed = {  # the fits without their times: the file is a function of code and data
            int(s): {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}  # no copies
            | {"fits": {i: split(fit)[0] for i, fit in r.fits.items()}}
            for s, r in per_split.items()
        }
        joblib.dump(packed, tmp)
    write_json(
        directory / INDEX,
        {"file": SPLITS_FILE, "splits": {str(s): _index_entry(r) for s, r in per_split.items()}},
    )
    return [path]


def load_splits(directory: Path) -> dict[int, Refitted]:
    """The refitted splits :func:`save_splits` wrote to ``directory`` (split -> models)."""
    import joblib

    packed = joblib.load(Path(directory) / SPLITS_FILE)
    return {int(s): Refitted(**fields) for s, fields in packed.items()}
