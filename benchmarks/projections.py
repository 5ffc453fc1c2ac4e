"""Section "projections": projections per second for every (set, geometry), beside baselines.

Grid (issue 7): vector sets at k in {3, 10, 30, 100} and batch sizes n in {1, 1000,
100000}; k x k sets at k in {3, 5, 11, 20}, with n in {1, 1000, 100000} for the cube and
the row-stochastic matrices except at k = 20, where n = 30000 (so that a batch holds at
most ~1.2e7 numbers, ~100 MB), and n in {1, 100, 1000} for the Birkhoff polytope (an
iterative solver; n = 1000, k = 11 is the acceptance setting of issue 7).

Inputs: theta ~ N(0, 1) (Birkhoff: N(0, 2^2), the acceptance setting), seed fixed.
Knapsack: l = u = m with m = max(1, round(k / 5)), so that *every* sample takes the
capped-simplex branch of Proposition 3 (the worst case; with l < u part of a batch stops
at the clipped point, which costs one np.clip). Permutahedron: the default
w = (k, ..., 1). Order simplex: k is the length of theta (k + 1 classes).

Every projloss figure is the public ``ConvexSet.project`` call (input validation
included) timed interleaved with its baselines (see :mod:`benchmarks.timing`); library
solvers that loop over samples are timed on a subsample (at most ~0.3 s of work) and
their rate extrapolated, which is exact for a loop whose cost is linear in n.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from projloss.sets import (
    Birkhoff,
    ConvexSet,
    Knapsack,
    MatrixCube,
    NonNegative,
    OrderSimplex,
    Permutahedron,
    Reals,
    RowSimplex,
    Simplex,
    UnitCube,
)

from . import baselines as bl
from .registry import Check, Context, SectionResult, section
from .report import rate, ratio, table
from .timing import compare

VECTOR_K = (3, 10, 30, 100)
MATRIX_K = (3, 5, 11, 20)
BATCHES = (1, 1000, 100000)
#: Largest number of entries of a k x k batch (n * k * k) in the grid.
MAX_ENTRIES = 12_100_000
#: Seconds of work a per-sample library loop is given (its rate is extrapolated).
LOOP_SECONDS = 0.3
#: The acceptance criterion for cheap sets: time(projloss) <= 3 x time(primitive).
CHEAP_GOAL = 3.0
CHEAP_N = 100000


def knapsack_budget(k: int) -> int:
    return max(1, round(k / 5))


@dataclass(frozen=True)
class Case:
    """One (set, geometry) row family of the grid."""

    set_name: str
    geometry: str
    make: Callable[[int], ConvexSet]
    baselines: tuple[bl.Baseline, ...]
    matrix: bool = False
    std: float = 1.0
    #: the numpy primitive the set is built from (a baseline label), if any
    primitive: str | None = None
    #: one of issue 7's cheap sets (cube, simplex, knapsack, row-stochastic): <= 3x check
    cheap: bool = False
    note: str = ""

    @property
    def key(self) -> str:
        return f"{self.set_name}/{self.geometry}"

    def sizes(self, quick: bool) -> tuple[int, ...]:
        ks = MATRIX_K if self.matrix else VECTOR_K
        return ks[:2] if quick else ks

    def batches(self, k: int, quick: bool) -> tuple[int, ...]:
        if self.set_name == "birkhoff":
            ns = (1, 100, 1000)
        elif self.matrix:
            ns = tuple(min(n, MAX_ENTRIES // (k * k) // 10000 * 10000 or n) for n in BATCHES)
        else:
            ns = BATCHES
        return ns[:2] if quick else ns


#: Why each (set, geometry) is compared to its baseline(s).
WHY = {
    "reals/euclidean": "the identity: projloss returns a copy, like np.copy.",
    "nonneg/euclidean": "clip at 0: one np.maximum.",
    "nonneg/kl": "e^(theta - 1): one np.exp.",
    "cube": "Euclidean: one np.clip to [0, 1]; KL: min(1, e^(theta - 1)), one np.exp.",
    "simplex/euclidean": "sparsemax is sort-based: one np.sort of each row, then a scan of "
    "the sorted row for the threshold.",
    "simplex/kl": "the KL projection onto the simplex *is* the softmax; the baseline is the "
    "textbook numpy softmax (max-subtracted exp, sum, divide).",
    "knapsack/euclidean": "the capped-simplex projection sorts each row (np.sort), then "
    "scans its 2k breakpoints; l = u = m puts every sample on that branch.",
    "knapsack/kl": "the constrained softmax: one exponential per entry and a few normalizing "
    "sums per row, no sort (since issue 7), so it is built from the same operations as the "
    "softmax, its primitive for the <= 3x check; np.sort is shown as well (the yardstick of "
    "the former sort-based version).",
    "permutahedron": "argsort + isotonic regression (PAV) per row; the library baseline is the "
    "same projection with scikit-learn's isotonic_regression called once per sample; "
    "np.sort for scale.",
    "order_simplex": "isotonic regression (PAV) per row, then clipping; the library baseline "
    "calls scikit-learn's isotonic_regression once per sample; np.sort for scale.",
    "row_simplex/euclidean": "k sparsemaxes per sample: np.sort of every row.",
    "row_simplex/kl": "k softmaxes per sample: the textbook numpy softmax of every row.",
    "birkhoff": "POT solves one sample per call; Euclidean: smooth_ot_semi_dual with l2 "
    "regularization (stopThr=1e-14, the loosest that reaches marginals to 1e-6), KL: "
    "sinkhorn_log (stopThr=1e-6); cost M = -theta, reg = 1, the same problems.",
}


def cases() -> list[Case]:
    e, kl = "euclidean", "kl"
    perm_note = "sklearn has no KL isotonic regression: the loop computes the Euclidean one"
    m = knapsack_budget
    return [
        Case("reals", e, lambda k: Reals(), (bl.COPY,), primitive="np.copy"),
        Case("nonneg", e, lambda k: NonNegative(), (bl.MAXIMUM,), primitive="np.maximum"),
        Case("nonneg", kl, lambda k: NonNegative(), (bl.EXP,), primitive="np.exp"),
        Case("unit_cube", e, lambda k: UnitCube(), (bl.CLIP,), primitive="np.clip", cheap=True),
        Case("unit_cube", kl, lambda k: UnitCube(), (bl.EXP,), primitive="np.exp", cheap=True),
        Case("simplex", e, lambda k: Simplex(), (bl.SORT,), primitive="np.sort", cheap=True),
        Case("simplex", kl, lambda k: Simplex(), (bl.SOFTMAX,), primitive="softmax", cheap=True),
        Case(
            "knapsack",
            e,
            lambda k: Knapsack(m(k), m(k)),
            (bl.SORT,),
            primitive="np.sort",
            cheap=True,
        ),
        Case(
            "knapsack",
            kl,
            lambda k: Knapsack(m(k), m(k)),
            (bl.SOFTMAX, bl.SORT),
            primitive="softmax",
            cheap=True,
        ),
        Case("permutahedron", e, lambda k: Permutahedron(), (bl.SKLEARN_PERM, bl.SORT)),
        Case(
            "permutahedron",
            kl,
            lambda k: Permutahedron(),
            (bl.SKLEARN_PERM, bl.SORT),
            note=perm_note,
        ),
        Case("order_simplex", e, lambda k: OrderSimplex(), (bl.sklearn_order(e), bl.SORT)),
        Case("order_simplex", kl, lambda k: OrderSimplex(), (bl.sklearn_order(kl), bl.SORT)),
        Case("cube", e, lambda k: MatrixCube(), (bl.CLIP,), True, primitive="np.clip", cheap=True),
        Case("cube", kl, lambda k: MatrixCube(), (bl.EXP,), True, primitive="np.exp", cheap=True),
        Case(
            "row_simplex",
            e,
            lambda k: RowSimplex(),
            (bl.SORT,),
            True,
            primitive="np.sort",
            cheap=True,
        ),
        Case(
            "row_simplex",
            kl,
            lambda k: RowSimplex(),
            (bl.SOFTMAX,),
            True,
            primitive="softmax",
            cheap=True,
        ),
        Case("birkhoff", e, lambda k: Birkhoff(), (bl.pot(e, 1e-14),), True, std=2.0),
        Case("birkhoff", kl, lambda k: Birkhoff(), (bl.pot(kl, 1e-6),), True, std=2.0),
    ]


def why(case: Case) -> str:
    return WHY.get(case.key) or WHY.get(case.set_name, "")


@dataclass
class Row:
    k: int
    n: int
    projloss: float  #: best seconds per call (whole batch)
    median: float
    base: dict[str, float]  #: label -> seconds for the whole batch (extrapolated if a loop)
    sub: dict[str, int]  #: label -> samples actually timed (loops)
    diff: float | None  #: max |projloss - library solver| on the timed subsample
    load: float


def theta_for(case: Case, k: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, k, n])
    shape = (n, k, k) if case.matrix else (n, k)
    return case.std * rng.standard_normal(shape)


def measure(ctx: Context, case: Case, k: int, n: int) -> Row:
    """Time one grid point (memoized in ``ctx.cache`` for the other sections)."""
    key = ("projection", case.key, k, n)
    if key in ctx.cache:
        return ctx.cache[key]
    theta = theta_for(case, k, n, ctx.seed)
    S = case.make(k)
    fns: dict[str, Callable[[], object]] = {"projloss": lambda: S.project(theta, case.geometry)}
    sub: dict[str, int] = {}
    diff = None
    for b in case.baselines:
        if b.per_sample:
            t0 = time.perf_counter()
            b.fn(theta[:1])
            one = max(time.perf_counter() - t0, 1e-6)
            m = int(min(n, max(1, LOOP_SECONDS // one)))
            part = theta[:m]
            sub[b.label] = m
            fns[b.label] = lambda b=b, part=part: b.fn(part)
            ref = b.fn(part)
            if case.set_name != "permutahedron" or case.geometry == "euclidean":
                d = float(np.abs(S.project(part, case.geometry) - ref).max())
                diff = d if diff is None else max(diff, d)
        else:
            fns[b.label] = lambda b=b: b.fn(theta)
    budget = 4.0 if ctx.quick else 20.0
    t = compare(fns, repeat=2 if ctx.quick else ctx.repeat, min_time=ctx.min_time, budget=budget)
    base = {}
    for b in case.baselines:
        scale = n / sub[b.label] if b.label in sub else 1.0
        base[b.label] = t[b.label].best * scale
    row = Row(k, n, t["projloss"].best, t["projloss"].median, base, sub, diff, ctx.load()[0])
    ctx.cache[key] = row
    return row


def _row_cells(case: Case, row: Row, before: dict) -> list[str]:
    cells = [str(row.k), str(row.n), rate(row.projloss, row.n)]
    cells.append(ratio(row.median / row.projloss, 2))
    if before:
        old = before.get(f"projections/{case.key}/k={row.k}/n={row.n}")
        cells += [rate(old, row.n), ratio(old / row.projloss if old else None, 3)]
    for b in case.baselines:
        tb = row.base[b.label]
        cells.append(rate(tb, row.n) + ("*" if b.label in row.sub else ""))
        cells.append(ratio(tb / row.projloss if b.kind == "solver" else row.projloss / tb))
    if any(b.kind == "solver" for b in case.baselines):
        cells.append("-" if row.diff is None else f"{row.diff:.0e}")
    cells.append(f"{row.load:.1f}")
    return cells


def _header(case: Case, before: dict) -> list[str]:
    h = ["k", "n", "projloss (proj/s)", "median/best"]
    if before:
        h += ["before (proj/s)", "gain"]
    for b in case.baselines:
        h.append(f"{b.label} (proj/s)")
        h.append("speed-up" if b.kind == "solver" else f"× {b.label}")
    if any(b.kind == "solver" for b in case.baselines):
        h.append("max diff")
    h.append("load")
    return h


@section("projections", "Projections per second", order=20)
def run(ctx: Context) -> SectionResult:
    """The (set, geometry) grid with its baselines."""
    parts = [(__doc__ or "").split("\n\n", 1)[1].strip(), _legend(bool(ctx.before))]
    checks: list[Check] = []
    data: dict[str, float] = {}
    summary: list[list[str]] = []
    for case in cases():
        if ctx.only_sets and case.set_name not in ctx.only_sets:
            continue
        rows = []
        for k in case.sizes(ctx.quick):
            for n in case.batches(k, ctx.quick):
                row = measure(ctx, case, k, n)
                rows.append(row)
                data[f"projections/{case.key}/k={k}/n={n}"] = row.projloss
                for label, tb in row.base.items():
                    data[f"projections/{case.key}/k={k}/n={n}/{label}"] = tb
                ctx.log(
                    f"  {case.key:<24} k={k:<3} n={n:<6} {rate(row.projloss, n):>9} proj/s  "
                    + "  ".join(_summary(b, row) for b in case.baselines)
                    + f"  (load {row.load:.1f})"
                )
        title = f"### {case.set_name}, {case.geometry}"
        note = f"\n\nBaseline: {why(case)}" + (f" ({case.note}.)" if case.note else "")
        parts.append(
            title
            + note
            + "\n\n"
            + table(_header(case, ctx.before), [_row_cells(case, r, ctx.before) for r in rows])
        )
        if case.cheap:
            checks.append(_cheap_check(case, rows))
        if ctx.before:
            summary += _before_after(case, rows, ctx.before)
    if summary:
        parts.insert(
            2,
            _SUMMARY_HEAD
            + table(
                [
                    "set",
                    "geometry",
                    "k",
                    "n",
                    "before (proj/s)",
                    "now (proj/s)",
                    "gain",
                    "baseline",
                    "before: ratio",
                    "now: ratio",
                ],
                summary,
                "lllrrrrlrr",
            ),
        )
    return SectionResult("\n\n".join(parts), checks, data)


_SUMMARY_HEAD = (
    "**Before / after** (the `--compare` run against this one), at the largest batch of "
    "each k: *gain* = time before / time now; *ratio* = time(projloss) / time(baseline) "
    "for a numpy primitive, time(library) / time(projloss) (speed-up) for a library loop, "
    "each measured within its own run. The ratios are the robust comparison: *gain* "
    "compares absolute times taken in two runs under different loads of the shared "
    "machine (the unchanged sets -- reals, nonneg, unit_cube -- show that noise, "
    "0.5-1.2).\n\n"
)


def _before_after(case: Case, rows: list[Row], before: dict) -> list[list[str]]:
    out = []
    b = next((x for x in case.baselines if x.label == case.primitive), case.baselines[0])
    for r in rows:
        if r.n != max(x.n for x in rows if x.k == r.k):
            continue
        key = f"projections/{case.key}/k={r.k}/n={r.n}"
        old, old_b = before.get(key), before.get(f"{key}/{b.label}")
        if old is None:
            continue

        def rat(t: float | None, tb: float | None) -> str:
            if t is None or tb is None:
                return "-"
            return f"{(tb / t if b.kind == 'solver' else t / tb):.3g}"

        out.append(
            [
                case.set_name,
                case.geometry,
                str(r.k),
                str(r.n),
                rate(old, r.n),
                rate(r.projloss, r.n),
                f"{old / r.projloss:.3g}",
                b.label,
                rat(old, old_b),
                rat(r.projloss, r.base[b.label]),
            ]
        )
    return out


def _summary(b: bl.Baseline, row: Row) -> str:
    tb = row.base[b.label]
    if b.kind == "solver":
        return f"{tb / row.projloss:.3g}x faster than {b.label}"
    return f"{row.projloss / tb:.3g}x {b.label}"


def _cheap_check(case: Case, rows: list[Row]) -> Check:
    big = [r for r in rows if r.n == max(x.n for x in rows if x.k == r.k)]
    worst = max(big, key=lambda r: r.projloss / r.base[case.primitive])
    ns = sorted({r.n for r in big})
    value = worst.projloss / worst.base[case.primitive] if big else None
    at_n = CHEAP_N if ns == [CHEAP_N] else "/".join(map(str, ns))
    return Check(
        name=f"cheap set {case.set_name} ({case.geometry}), n={at_n}, "
        f"k in {{{', '.join(str(r.k) for r in big)}}}: time / time({case.primitive})",
        value=value,
        goal=CHEAP_GOAL,
        higher_is_better=False,
        detail=f"worst at k={worst.k}",
    )


def _legend(before: bool) -> str:
    lines = [
        "Columns: *proj/s* = projections per second (batch size / best time of the batch);",
        "*median/best* = spread of projloss' timed rounds (1.0 = steady machine);",
        "*× primitive* = time(projloss) / time(numpy primitive) (lower is better, <= 3 is",
        "the goal for the cheap sets); *speed-up* = time(library loop) / time(projloss);",
        "\\* = per-sample library loop timed on a subsample, rate extrapolated;",
        "*max diff* = largest |projloss - library| entry on that subsample;",
        "*load* = 1-minute load average after the measurement.",
    ]
    if before:
        lines.append("*before* = the same figure in the `--compare` run; *gain* = before / now.")
    return " ".join(lines)
