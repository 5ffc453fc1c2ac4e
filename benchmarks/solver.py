"""Solver convergence on the paper's lambda grids: L-BFGS vs the estimators' solvers.

``python -m benchmarks.solver`` fits, for each paper family (label ranking: every set of
Tables 1-2 linear, the permutahedron linear and with the polynomial kernels of Table 3;
ordinal, Table 4; multilabel, Tables 6-7), the whole lambda grid on the real prepared
training data (``pipeline.data.api.load_prepared``, prepared from the mirror if
missing), warm-started from the largest lambda as the tune stage does, with two of the
solvers of :func:`use_solver` (``--solvers lbfgs,default``: the estimators before issue 14,
L-BFGS only, against their defaults since: semismooth Newton for the kernel models, L-BFGS
finished by Newton for the linear ones; ``newton``: Newton for every model). Per
fit it records the iterations, the seconds, whether the solver met its tolerance, the
objective and the test predictions; per family it prints the iterations and seconds
summed over the grid, the fits that did not converge, the largest objective difference
between the solvers (relative) and the fraction of test predictions on which they agree.

The estimators are built by the pipeline's ``make_estimator`` from ``conf/`` (same
lambda grid, ``max_iter``, ``tol``, penalized intercept, warm start); only the solver is
switched. The output is Markdown (``--output FILE`` to write it) and every fit's figures as
JSON (``--json FILE``). The section ``solver`` of ``benchmarks/RESULTS.md`` (``python -m
benchmarks --sections solver --update benchmarks/RESULTS.json``) runs every family with
``lbfgs,default`` plus Table 3's slowest refit (vehicle, poly3, lambda = 1e-4, cold), and
checks that the estimators' solvers converge on every fit. Times are CPU seconds of the
process (the fits run on one thread): on a shared, loaded machine the wall-clock seconds
(also in the JSON) measure the other users more than the solver.

``--refit LAMBDA``: instead of the grid, one fit from scratch on train + validation at
``LAMBDA`` per (family, dataset, solver), as the refit stage fits the chosen lambda (no
warm start: the kernel models' Newton method then follows its continuation path).

Examples: ``PYTHONPATH=src:. python -m benchmarks.solver --families t3``;
``PYTHONPATH=src:. python -m benchmarks.solver --datasets vehicle,glass,iris``;
``PYTHONPATH=src:. python -m benchmarks.solver --families t3-poly3 --datasets vehicle
--solvers default,newton --refit 1e-4`` (Table 3's slowest refit).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import time
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from .compose import load
from .registry import Check, Context, SectionResult, section
from .report import table

LR = ("task=label_ranking", "geometry=euclidean", "task.target_loss=hamming_ranking")
T3 = ("set=permutahedron", "decoder=permutahedron", "task.target_loss=null")
#: Table 3's datasets (all six for the kernel families)
T3_DATASETS = ("authorship", "glass", "iris", "vehicle", "vowel", "wine")

#: family name -> (paper table, overrides without the dataset, default datasets)
FAMILIES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "t1-cube": ("Table 1", (*LR, "set=cube", "decoder=cube"), ("vehicle",)),
    "t1-row_simplex": ("Table 1", (*LR, "set=row_simplex", "decoder=row_simplex"), ("vehicle",)),
    "t1-reals-birkhoff": ("Table 1", (*LR, "set=reals", "decoder=birkhoff"), ("vehicle",)),
    "t1-birkhoff": ("Table 1", (*LR, "set=birkhoff", "decoder=birkhoff"), ("vehicle",)),
    "t2-row_simplex-kl": (
        "Table 2",
        (*LR, "geometry=kl", "set=row_simplex", "decoder=row_simplex"),
        ("vehicle",),
    ),
    "t3-linear": ("Table 3", (*LR, *T3, "model=linear"), ("vehicle", "glass", "iris")),
    "t3-poly2": ("Table 3", (*LR, *T3, "model=poly", "model.degree=2"), T3_DATASETS),
    "t3-poly3": ("Table 3", (*LR, *T3, "model=poly", "model.degree=3"), T3_DATASETS),
    "t4-order_simplex": (
        "Table 4",
        ("task=ordinal", "set=order_simplex", "decoder=order_simplex"),
        ("ERA",),
    ),
    "t4-unit_cube": (
        "Table 4",
        ("task=ordinal", "set=unit_cube", "decoder=order_simplex"),
        ("ERA",),
    ),
    "t6-unit_cube": (
        "Tables 6-7",
        ("task=multilabel", "set=unit_cube", "decoder=unit_cube"),
        ("yeast",),
    ),
    "t6-knapsack": (
        "Tables 6-7",
        ("task=multilabel", "set=knapsack", "decoder=knapsack"),
        ("yeast",),
    ),
}


#: ``--solvers`` names: the old default (L-BFGS only), the estimators' defaults, Newton
SOLVER_NAMES = ("lbfgs", "default", "newton")


@contextlib.contextmanager
def use_solver(name: str) -> Iterator[None]:
    """Make the estimators fit with ``name``: ``lbfgs``, L-BFGS for every model and no
    Newton fallback (the estimators before issue 14); ``default``, the estimators' own
    choice (semismooth Newton for the kernel models, L-BFGS finished by Newton when it
    stops early for the linear ones); ``newton``, the Newton method for every model."""
    import projloss.estimators._base as base

    if name not in SOLVER_NAMES:
        raise ValueError(f"unknown solver {name!r}; valid: {list(SOLVER_NAMES)}")
    solvers, fit = dict(base.SOLVERS), base.fit_projection_model
    if name != "default":
        base.SOLVERS.update({model: name for model in base.SOLVERS})
    if name == "lbfgs":
        base.fit_projection_model = functools.partial(fit, newton_fallback=False)
    try:
        yield
    finally:
        base.SOLVERS.update(solvers)
        base.fit_projection_model = fit


def grid_fits(
    overrides: tuple[str, ...], solver: str, refit: float | None = None
) -> list[dict[str, Any]]:
    """Fit the configured lambda grid, largest lambda first, warm-started as configured;
    with ``refit``, one cold fit on train + validation at that lambda."""
    from sklearn.exceptions import ConvergenceWarning

    from pipeline.config.composition import lambda_grid, make_estimator

    run = load(overrides)
    X, y = run.data.train_val if refit is not None else run.data.train
    X_test = run.data.test[0]
    warm = bool(run.cfg.get("warm_start", True)) and refit is None
    grid = sorted((float(v) for v in lambda_grid(run.cfg)), reverse=True)
    if refit is not None:
        grid = [float(refit)]
    est = make_estimator(run.comp, alpha=grid[0], warm_start=warm)
    fits = []
    with use_solver(solver):
        for lam in grid:
            est.set_params(alpha=lam)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                start, cpu = time.perf_counter(), time.process_time()
                est.fit(X, y)
                seconds = time.perf_counter() - start
                cpu_seconds = time.process_time() - cpu
            fits.append(
                {
                    "lambda": lam,
                    "n_iter": int(est.n_iter_),
                    "seconds": seconds,
                    "cpu_seconds": cpu_seconds,
                    "converged": bool(est.converged_),
                    "objective": float(est.objective_),
                    "predictions": np.asarray(est.predict(X_test)),
                }
            )
    return fits


def compare(
    names: list[str],
    datasets: list[str] | None,
    solvers: list[str],
    records: list[dict[str, Any]] | None = None,
    refit: float | None = None,
) -> str:
    """Run every (family, dataset, solver) and return the Markdown table; ``records``
    receives one entry per fit (family, dataset, solver, lambda, n_iter, seconds,
    converged, objective)."""
    rows = []
    for name in names:
        paper, overrides, default = FAMILIES[name]
        for ds in datasets or default:
            result = {s: grid_fits((*overrides, f"dataset={ds}"), s, refit) for s in solvers}
            if records is not None:
                for s, fits in result.items():
                    records += [
                        {"family": name, "dataset": ds, "solver": s}
                        | {k: v for k, v in f.items() if k != "predictions"}
                        for f in fits
                    ]
            row = [paper, name, ds]
            for s in solvers:
                fits = result[s]
                bad = [f"{f['lambda']:.0e}" for f in fits if not f["converged"]]
                row += [
                    str(sum(f["n_iter"] for f in fits)),
                    f"{sum(f['cpu_seconds'] for f in fits):.2f}",
                    f"{len(bad)}" + (f" ({', '.join(bad)})" if bad else ""),
                ]
                print(f"{name} {ds} {s}: " + ", ".join(row[-3:]), flush=True)
            if len(solvers) == 2:
                a, b = (result[s] for s in solvers)
                rel = max(
                    abs(fa["objective"] - fb["objective"]) / max(abs(fb["objective"]), 1e-300)
                    for fa, fb in zip(a, b, strict=True)
                )
                obj_ab = max(
                    (fa["objective"] - fb["objective"]) / max(abs(fb["objective"]), 1e-300)
                    for fa, fb in zip(a, b, strict=True)
                )
                agree = np.mean(
                    [
                        np.mean(
                            np.all(
                                fa["predictions"].reshape(len(fa["predictions"]), -1)
                                == fb["predictions"].reshape(len(fb["predictions"]), -1),
                                axis=1,
                            )
                        )
                        for fa, fb in zip(a, b, strict=True)
                    ]
                )
                row += [f"{rel:.1e}", f"{obj_ab:+.1e}", f"{agree:.3f}"]
            rows.append(row)
    head = ["table", "family", "dataset"]
    for s in solvers:
        head += [f"{s}: its", f"{s}: CPU s", f"{s}: not converged (lambda)"]
    if len(solvers) == 2:
        head += [
            "max rel. objective diff.",
            f"max ({solvers[0]} - {solvers[1]}) / abs(obj)",
            "test predictions equal",
        ]
    load_avg = os.getloadavg()
    return (
        table(head, rows, "lll" + "r" * (len(head) - 3))
        + f"\n\nLoad average at the end: {load_avg[0]:.1f} {load_avg[1]:.1f} {load_avg[2]:.1f}"
        f" ({os.cpu_count()} CPUs)."
    )


#: Table 3's slowest refit: (family, dataset, lambda), fitted cold on train + validation
SLOWEST_REFIT = ("t3-poly3", "vehicle", 1e-4)


@section("solver", "Solver convergence on the paper's lambda grids (issue 14, part 1)", order=52)
def run(ctx: Context) -> SectionResult:
    """L-BFGS vs the estimators' solvers on every paper family's lambda grid, real data."""
    names = ["t3-poly3"] if ctx.quick else list(FAMILIES)
    datasets = ["iris"] if ctx.quick else None
    solvers = ["lbfgs", "default"]
    grid: list[dict[str, Any]] = []
    md_grid = compare(names, datasets, solvers, grid)
    family, dataset, lam = SLOWEST_REFIT
    refit: list[dict[str, Any]] = []
    md_refit = compare([family], [dataset], solvers, refit, refit=lam)
    data: dict[str, Any] = {}
    for s in solvers:
        fits = [f for f in grid if f["solver"] == s]
        data[f"solver/{s}/fits"] = len(fits)
        data[f"solver/{s}/not_converged"] = sum(not f["converged"] for f in fits)
        data[f"solver/{s}/n_iter"] = sum(f["n_iter"] for f in fits)
        data[f"solver/{s}/cpu_seconds"] = sum(f["cpu_seconds"] for f in fits)
        (r,) = (f for f in refit if f["solver"] == s)
        data[f"solver/{s}/refit_cpu_seconds"] = r["cpu_seconds"]
        data[f"solver/{s}/refit_converged"] = r["converged"]
        data[f"solver/{s}/refit_objective"] = r["objective"]
    bad = data["solver/default/not_converged"] + (not data["solver/default/refit_converged"])
    checks = [
        Check(
            "estimators' solvers: fits not converged on the paper's lambda grids and "
            "Table 3's slowest refit",
            float(bad),
            0.0,
            higher_is_better=False,
            unit="",
            detail=f"{data['solver/default/fits'] + 1} fits; L-BFGS alone: "
            f"{data['solver/lbfgs/not_converged']} of the grids' fits not converged",
        )
    ]
    md = "\n".join(
        [
            "Every paper family's lambda grid on the real prepared training data, fitted as "
            "the tune stage does (largest lambda first, warm-started), with L-BFGS alone "
            "(*lbfgs*: the estimators before issue 14) and with the estimators' solvers "
            "(*default*: semismooth Newton for the kernel models, L-BFGS finished by the "
            "matrix-free Newton method for the linear ones). *its*: iterations summed over "
            "the grid; *CPU s*: process CPU seconds (one thread); *not converged*: the fits "
            "whose solver stopped before its tolerance (their lambdas); the objective "
            "difference compares the two solvers' optima (positive: L-BFGS stopped above).",
            "",
            md_grid,
            "",
            f"Table 3's slowest refit: {family}, {dataset}, lambda = {lam:g}, one cold fit on "
            "train + validation (the kernel model's Newton method follows its continuation "
            "path in lambda):",
            "",
            md_refit,
        ]
    )
    return SectionResult(md, checks, data)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", default=",".join(FAMILIES), help="comma list, or prefixes")
    ap.add_argument("--datasets", default=None, help="comma list (default: per family)")
    ap.add_argument("--solvers", default="lbfgs,default", help=f"two of {SOLVER_NAMES}")
    ap.add_argument("--output", default=None)
    ap.add_argument("--json", default=None, help="write every fit's figures to this file")
    ap.add_argument(
        "--refit", type=float, default=None, help="one cold fit on train + val at this lambda"
    )
    args = ap.parse_args(argv)
    wanted = args.families.split(",")
    names = [n for n in FAMILIES if any(n == w or n.startswith(w) for w in wanted)]
    records: list[dict[str, Any]] = []
    md = compare(
        names,
        args.datasets.split(",") if args.datasets else None,
        args.solvers.split(","),
        records,
        args.refit,
    )
    print(md)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"load_average": os.getloadavg(), "fits": records}, fh, indent=1)
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(md + "\n")


if __name__ == "__main__":
    main()
