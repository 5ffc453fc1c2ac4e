"""Refit table cells with the pipeline's own stage cores and print their test values.

``python tests/pipeline/refit_cells.py CONFIGS.json N_JOBS`` (run by
``test_reproducible_cells.py`` under different thread counts, CPU dispatch and
``n_jobs``): ``CONFIGS.json`` maps a cell name to ``{"cfg": run config, "lambda": ...,
"metric": ...}`` (the metric defaults to the ranking ``hamming`` loss of Table 3);
each cell is refitted on the training + dev data at its lambda (``pipeline.runs.refit``)
and scored on the test data (``pipeline.runs.evaluate``, no tracking), the cells spread
over ``N_JOBS`` joblib worker processes as the pipeline's stages do. Prints one JSON line:
cell -> ``{"value", "converged", "n_iter"}``.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def refit_cell(cell: dict[str, Any]) -> dict[str, Any]:
    from pipeline.config.run import RunConfig
    from pipeline.data.api import load_prepared
    from pipeline.runs import evaluate, refit

    cfg, lam, metric = cell["cfg"], float(cell["lambda"]), cell.get("metric", "hamming")
    run = RunConfig.from_config(cfg)
    data = load_prepared(cfg["dataset"]["name"], cfg)
    tuned = {"lambdas": [lam], "selected": {metric: {"index": 0, "lambda": lam}}}
    refitted = refit.run(run, data, tuned)
    out = evaluate.run(run, data, tuned, refitted)
    fit = refitted.fits[0]
    return {
        "value": out["headline"][metric],
        "converged": bool(fit["converged"]),
        "n_iter": fit["n_iter"],
    }


def main() -> None:
    from joblib import Parallel, delayed

    with open(sys.argv[1], encoding="utf-8") as fh:
        cells = json.load(fh)
    n_jobs = int(sys.argv[2])
    names = sorted(cells)
    results = Parallel(n_jobs=n_jobs)(delayed(refit_cell)(cells[n]) for n in names)
    print(json.dumps(dict(zip(names, results, strict=True))))


if __name__ == "__main__":
    main()
