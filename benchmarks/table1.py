"""Section "table1": the paper's Table 1 (Birkhoff, Birkhoff) Euclidean column, end to end.

The column the issue compares with the paper's reference implementation (about 4 minutes
for vehicle alone on this kind of machine): label ranking, Euclidean projection onto the
Birkhoff polytope and Birkhoff decoding, on the six label-ranking datasets. Each dataset
runs the pipeline's stage cores in one process, as ``python -m pipeline.train`` does
(MLflow tracking off): *tune* (``pipeline.runs.tune.run``: the lambda grid fitted on
train, warm-started as configured, scored on validation), *refit* (``refit.run``: train
+ validation at the chosen lambda) and *evaluate* (``evaluate.run``: the test Hamming
loss, in percent; the paper's Table 1 cell). Every setting (grid, warm start, tie rule,
tolerances) comes from ``conf/``. Data preparation is not timed (the preprocess stage).
The column runs a few times; each dataset's best round is reported, and the *total* is
the best complete round (goal: under 60 s).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from .compose import load
from .registry import Check, Context, SectionResult, section
from .report import table

DATASETS = ("authorship", "glass", "iris", "vehicle", "vowel", "wine")
OVERRIDES = (
    "task=label_ranking",
    "geometry=euclidean",
    "model=linear",
    "set=birkhoff",
    "decoder=birkhoff",
)
GOAL = 60.0
#: the paper's Table 1, (Birkhoff, Birkhoff) column (test Hamming loss, %), for context
PAPER = {
    "authorship": 5.10,
    "glass": 4.65,
    "iris": 2.96,
    "vehicle": 5.88,
    "vowel": 8.76,
    "wine": 1.85,
}


def run_dataset(dataset: str) -> dict[str, Any]:
    """Tune, refit and evaluate (Birkhoff, Birkhoff) on ``dataset``; seconds per stage."""
    from pipeline.runs import evaluate, refit, tune

    r = load((*OVERRIDES, f"dataset={dataset}"))
    run = r.run
    t0 = time.perf_counter()
    tuned = tune.run(run, r.data)
    t1 = time.perf_counter()
    refitted = refit.run(run, r.data, tuned)
    t2 = time.perf_counter()
    result = evaluate.run(run, r.data, tuned, refitted)
    t3 = time.perf_counter()
    select = tuned["select_by"][0]
    its = [i for i in tuned["n_iter"] if i is not None]
    return {
        "dataset": dataset,
        "n": r.n_train,
        "k": r.k,
        "tune": t1 - t0,
        "refit": t2 - t1,
        "evaluate": t3 - t2,
        "total": t3 - t0,
        "hamming": result["headline"]["hamming"],
        "lambda": tuned["selected"][select]["lambda"],
        "grid_iter": sum(its),
        "not_converged": sum(not c for c in tuned["converged"]),
    }


@section("table1", "Table 1, (Birkhoff, Birkhoff) Euclidean column", order=60)
def run(ctx: Context) -> SectionResult:
    """Tune + refit + evaluate of (Birkhoff, Birkhoff) on the six label-ranking datasets."""
    rounds = 1 if ctx.quick else min(ctx.repeat, 3)
    for ds in DATASETS:  # prepare the data (and load the kernels) before any timing
        load((*OVERRIDES, f"dataset={ds}"))
    runs: list[list[dict[str, Any]]] = []
    for i in range(rounds):
        runs.append([run_dataset(ds) for ds in DATASETS])
        ctx.log(f"  round {i + 1}/{rounds}: {sum(x['total'] for x in runs[-1]):.1f} s")
    totals = [sum(x["total"] for x in rnd) for rnd in runs]
    best_round = min(totals)
    rows, data = [], {}
    for j, ds in enumerate(DATASETS):
        best = min((rnd[j] for rnd in runs), key=lambda x: x["total"])
        rows.append(
            [
                ds,
                best["n"],
                best["k"],
                f"{best['tune']:.2f}",
                f"{best['refit']:.2f}",
                f"{best['evaluate']:.3f}",
                f"{best['total']:.2f}",
                f"{best['lambda']:.3g}",
                f"{best['grid_iter']}"
                + (f" ({best['not_converged']} at max_iter)" if best["not_converged"] else ""),
                f"{best['hamming']:.2f}",
                f"{PAPER[ds]:.2f}",
            ]
        )
        data[f"table1/{ds}"] = best["total"]
        data[f"table1/{ds}/hamming"] = best["hamming"]
    stage = {
        s: sum(min(rnd[j][s] for rnd in runs) for j in range(len(DATASETS)))
        for s in ("tune", "refit", "evaluate", "total")
    }
    rows.append(
        [
            "**sum of the best**",
            "",
            "",
            f"{stage['tune']:.2f}",
            f"{stage['refit']:.2f}",
            f"{stage['evaluate']:.3f}",
            f"{stage['total']:.2f}",
            "",
            "",
            "",
            "",
        ]
    )
    data["table1/total"] = best_round
    ctx.log(f"  Table 1 column: {best_round:.1f} s (best of {rounds} rounds)")
    check = Check(
        "Table 1 (Birkhoff, Birkhoff) Euclidean column, six datasets, lambda search "
        "and refit included: wall time",
        best_round,
        GOAL,
        higher_is_better=False,
        unit=" s",
        detail=f"best of {rounds} rounds, tune + refit + evaluate",
    )
    spread = (
        f" (rounds: {', '.join(f'{t:.1f}' for t in totals)} s; median "
        f"{statistics.median(totals):.1f} s)"
        if rounds > 1
        else ""
    )
    md = (
        (__doc__ or "").split("\n\n", 1)[1].strip()
        + f"\n\n**Total, best of {rounds} rounds: {best_round:.1f} s**{spread}.\n\n"
        + table(
            [
                "dataset",
                "n (train)",
                "k",
                "tune (s)",
                "refit (s)",
                "evaluate (s)",
                "total (s)",
                "lambda",
                "grid its",
                "test Hamming (%)",
                "paper (%)",
            ],
            rows,
        )
    )
    return SectionResult(md, [check], data)
