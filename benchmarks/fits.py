"""Section "fits": the time of one ``fit`` per paper experiment family, on real data.

Each composition is composed by Hydra from ``conf/`` with the overrides of its paper
table (as the DVC experiments are, see ``benchmarks/compose.py``), its estimator built by
the pipeline's ``make_estimator`` and fitted on the training split of the prepared
dataset (ordinal: split 0), like one step of the tune stage. *One fit*: lambda = the
geometric middle of the configured grid (1.0 for 1e-4..1e4), cold start, best (and
median) of a few fits; *its* = L-BFGS iterations, *ms/it* = seconds per iteration (one
batched projection and gradient per function evaluation, usually one or two evaluations
per iteration). *Grid*: the tune stage's core (``pipeline.runs.tune.run``) on the
whole lambda grid, warm-started as configured (``warm_start``), once: the fit seconds and
iterations summed over the grid, then the whole stage (validation predictions included).
"""

from __future__ import annotations

import contextlib
import statistics
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

from .compose import Run, load
from .registry import Check, Context, SectionResult, section
from .report import table

LR = ("task=label_ranking", "geometry=euclidean", "model=linear")
ORD = ("task=ordinal", "geometry=euclidean", "model=linear")
ML = ("task=multilabel", "geometry=euclidean", "model=linear")


def _lr(dataset: str, sets: str, decoder: str, *extra: str) -> tuple[str, ...]:
    return (*LR, f"dataset={dataset}", f"set={sets}", f"decoder={decoder}", *extra)


#: (paper table, Hydra overrides) of every measured composition
FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    *(
        ("Table 1", _lr(ds, s, d))
        for ds in ("vehicle", "vowel")
        for s, d in (
            ("cube", "cube"),
            ("row_simplex", "row_simplex"),
            ("reals", "birkhoff"),
            ("birkhoff", "birkhoff"),
        )
    ),
    ("Table 2 (KL)", _lr("vehicle", "row_simplex", "row_simplex", "geometry=kl")),
    ("Table 2 (KL)", _lr("vehicle", "birkhoff", "birkhoff", "geometry=kl")),
    ("Table 3", _lr("vehicle", "permutahedron", "permutahedron")),
    ("Table 3", _lr("vehicle", "permutahedron", "permutahedron", "model=poly", "model.degree=2")),
    ("Table 3", _lr("vehicle", "permutahedron", "permutahedron", "model=poly", "model.degree=3")),
    *(
        ("Table 4", (*ORD, "dataset=ERA", f"set={s}", f"decoder={d}"))
        for s, d in (
            ("order_simplex", "order_simplex"),
            ("unit_cube", "order_simplex"),
            ("reals", "order_simplex"),
            ("reals", "round"),
        )
    ),
    *(
        ("Tables 6-7", (*ML, f"dataset={ds}", f"set={s}", f"decoder={s}"))
        for ds in ("yeast", "tmc2007_500")
        for s in ("unit_cube", "knapsack")
    ),
)
#: the sparse-X check: this dataset's fit must keep X sparse
SPARSE_DATASET = "tmc2007_500"
#: L-BFGS iterations of the instrumented (sparse-check) fit
SPARSE_CHECK_ITERS = 5


def _fit(run: Run, alpha: float) -> tuple[float, bool, Any]:
    """One cold fit at ``alpha`` through the pipeline's own helpers;
    (seconds, converged, estimator)."""
    from pipeline.config.composition import make_estimator
    from pipeline.runs.tune import fit_quietly

    est = make_estimator(run.comp, alpha=alpha)
    X, y = run.data.train
    seconds, converged = fit_quietly(est, X, y)
    return seconds, converged, est


def _time_fit(run: Run, alpha: float, repeat: int, budget: float) -> dict[str, Any]:
    """Best and median of up to ``repeat`` fits (at least 2, the first one also warms up
    the compiled kernels), stopping once ``budget`` seconds are spent."""
    times: list[float] = []
    est, converged = None, True
    spent = 0.0
    while len(times) < max(2, repeat) and (len(times) < 2 or spent < budget):
        seconds, converged, est = _fit(run, alpha)
        times.append(seconds)
        spent += seconds
    n_iter = getattr(est, "n_iter_", None)
    best = min(times)
    return {
        "best": best,
        "median": statistics.median(times[1:]),
        "fits": len(times),
        "n_iter": n_iter,
        "converged": converged,
        "per_iter": best / n_iter if n_iter else None,
    }


@contextlib.contextmanager
def _sparse_spy() -> Iterator[list[bool]]:
    """Record, for every matrix product of the L-BFGS objective, whether it was computed
    with a sparse operand (the solver multiplies the features by ``safe_sparse_dot``), and
    for every product of the Newton method with the features (``_BasisProblem.features``
    and ``features_t``), whether the features were kept sparse."""
    import scipy.sparse as sp

    import projloss.estimators._newton as newton
    import projloss.estimators._solver as solver

    calls: list[bool] = []
    original = solver.safe_sparse_dot
    problem = newton._BasisProblem
    methods = {name: getattr(problem, name) for name in ("features", "features_t")}

    def spy(a: Any, b: Any, **kwargs: Any) -> Any:
        calls.append(sp.issparse(a) or sp.issparse(b))
        return original(a, b, **kwargs)

    def newton_spy(method: Any) -> Any:
        def wrapped(self: Any, T: Any) -> Any:
            calls.append(bool(self.sparse))
            return method(self, T)

        return wrapped

    solver.safe_sparse_dot = spy
    for name, method in methods.items():
        setattr(problem, name, newton_spy(method))
    try:
        yield calls
    finally:
        solver.safe_sparse_dot = original
        for name, method in methods.items():
            setattr(problem, name, method)


def _sparse_check(run: Run, alpha: float) -> dict[str, Any]:
    """A short instrumented fit: were all products with X sparse, and how much memory did
    the fit allocate at its peak compared with a dense copy of X?"""
    import scipy.sparse as sp

    from pipeline.config.composition import make_estimator
    from pipeline.runs.tune import fit_quietly

    X, y = run.data.train
    est = make_estimator(run.comp, alpha=alpha)
    est.set_params(max_iter=SPARSE_CHECK_ITERS)
    tracemalloc.start()
    try:
        with _sparse_spy() as calls:
            fit_quietly(est, X, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    dense = X.shape[0] * X.shape[1] * 8
    return {
        "sparse_input": bool(sp.issparse(X)),
        "density": float(X.nnz / (X.shape[0] * X.shape[1])) if sp.issparse(X) else 1.0,
        "products": len(calls),
        "sparse_products": sum(calls),
        "peak_mb": peak / 2**20,
        "dense_mb": dense / 2**20,
    }


def _its(n_iter: int | None, not_converged: int) -> str:
    """Iterations, and how many fits stopped at ``max_iter`` (not converged)."""
    if n_iter is None:
        return "-"
    return f"{n_iter} ({not_converged} at max_iter)" if not_converged else str(n_iter)


@section("fits", "Fit timings per paper experiment family", order=50)
def run(ctx: Context) -> SectionResult:
    """One fit and one warm-started lambda grid per paper experiment family, real data."""
    from pipeline.runs import tune

    repeat = 1 if ctx.quick else min(ctx.repeat, 3)
    rows, data, checks = [], {}, []
    sparse_note = ""
    for family, overrides in FAMILIES:
        t_load = time.perf_counter()
        r = load(overrides)
        t_load = time.perf_counter() - t_load
        comp = r.comp
        lam = r.lambda_mid()
        fit = _time_fit(r, lam, repeat, budget=10.0)
        grid = None
        if not ctx.quick:
            tuned = tune.run(r.run, r.data)
            its = [i for i in tuned["n_iter"] if i is not None]
            grid = {
                "n": len(tuned["lambdas"]),
                "not_converged": sum(not c for c in tuned["converged"]),
                "fit_seconds": sum(tuned["fit_seconds"]),
                "n_iter": sum(its) if its else None,
                "seconds": tuned["seconds"],
                "warm_start": tuned["warm_start"],
            }
        name = f"{comp.dataset}/{comp.label}"
        ctx.log(
            f"  {family} {name}: {fit['best']:.3f} s/fit ({fit['n_iter']} its)"
            + (f", grid {grid['seconds']:.2f} s" if grid else "")
            + (f" [data {t_load:.1f} s]" if t_load > 1 else "")
        )
        rows.append(
            [
                family,
                comp.label,
                comp.dataset,
                r.n_train,
                r.n_features,
                r.k,
                f"{lam:g}",
                f"{fit['best']:.3f}",
                f"{fit['median']:.3f}",
                _its(fit["n_iter"], int(not fit["converged"])),
                "-" if fit["per_iter"] is None else f"{fit['per_iter'] * 1e3:.1f}",
                "-" if grid is None else f"{grid['fit_seconds']:.2f}",
                "-" if grid is None else _its(grid["n_iter"], grid["not_converged"]),
                "-" if grid is None else f"{grid['seconds']:.2f}",
            ]
        )
        data[f"fits/{name}"] = fit["best"]
        data[f"fits/{name}/n_iter"] = fit["n_iter"]
        if grid is not None:
            data[f"fits/{name}/grid"] = grid["seconds"]
        if comp.dataset == SPARSE_DATASET and comp.set == "knapsack":
            sc = _sparse_check(r, lam)
            data[f"fits/{name}/sparse"] = sc
            frac = sc["sparse_products"] / max(sc["products"], 1)
            if not sc["sparse_input"]:
                frac = 0.0
            checks.append(
                Check(
                    f"{SPARSE_DATASET} {comp.label} fit: products with X computed on the "
                    "sparse matrix (fraction)",
                    frac,
                    1.0,
                    unit="",
                    detail=f"{sc['sparse_products']} of {sc['products']} in a "
                    f"{SPARSE_CHECK_ITERS}-iteration fit",
                )
            )
            sparse_note = (
                f"\n\nSparse X ({SPARSE_DATASET}, {r.n_train} x {r.n_features} CSR, density "
                f"{sc['density']:.3f}): {sc['sparse_products']} of the {sc['products']} "
                f"products with X in a {SPARSE_CHECK_ITERS}-iteration {comp.label} fit used "
                f"the sparse matrix; the fit allocated at most {sc['peak_mb']:.1f} MiB "
                f"(tracemalloc peak) where a dense copy of X alone would take "
                f"{sc['dense_mb']:.1f} MiB."
            )
    grid_note = "" if not ctx.quick else "\n\n(`--quick`: one fit each, no lambda grid.)"
    md = (
        (__doc__ or "").split("\n\n", 1)[1].strip()
        + f" Best of {max(2, repeat)} fits (2 once 10 s are spent; the first one also loads "
        "the compiled kernels). *at max_iter*: fits that stopped at the model's `max_iter` "
        "before converging (the tune stage warns about them).\n\n"
        + table(
            [
                "table",
                "composition",
                "dataset",
                "n",
                "d",
                "k",
                "lambda",
                "s/fit",
                "median",
                "its",
                "ms/it",
                "grid: fits (s)",
                "grid: its",
                "grid: tune stage (s)",
            ],
            rows,
            "lllrrrrrrrrrrr",
        )
        + sparse_note
        + grid_note
    )
    return SectionResult(md, checks, data)
