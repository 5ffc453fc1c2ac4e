"""Section "isotonic": the acceptance setting of issue 7 for the PAV-based sets.

Permutahedron (w = (k, ..., 1)) and order simplex, n = 10000 samples of k = 10,
theta ~ N(0, 1): projloss' batched projection against scikit-learn's
``isotonic_regression`` looped over all 10000 samples (no subsampling), both geometries
(for the permutahedron in KL the loop computes the Euclidean projection: scikit-learn has
no KL isotonic regression, and the Euclidean one is its cheapest counterpart). Goal:
at least 20x faster.
"""

from __future__ import annotations

import numpy as np

from projloss.sets import OrderSimplex, Permutahedron

from . import baselines as bl
from .registry import Check, Context, SectionResult, section
from .report import rate, table
from .timing import compare

N, K, GOAL = 10000, 10, 20.0


@section("isotonic", "Isotonic sets at the acceptance setting", order=30)
def run(ctx: Context) -> SectionResult:
    """Permutahedron and order simplex vs looping scikit-learn, n = 10000, k = 10."""
    n = 1000 if ctx.quick else N
    theta = np.random.default_rng([ctx.seed, 7]).standard_normal((n, K))
    rows, checks, data = [], [], {}
    for name, S in (("permutahedron", Permutahedron()), ("order_simplex", OrderSimplex())):
        for geometry in ("euclidean", "kl"):
            if name == "permutahedron":
                loop = bl.sklearn_permutahedron
            else:
                loop = lambda t, g=geometry: bl.sklearn_order_simplex(t, g)  # noqa: E731
            t = compare(
                {
                    "projloss": lambda S=S, g=geometry: S.project(theta, g),
                    "sklearn": lambda loop=loop: loop(theta),
                },
                repeat=2 if ctx.quick else 3,
                min_time=ctx.min_time,
                budget=30.0,
            )
            same = name == "order_simplex" or geometry == "euclidean"
            diff = np.abs(S.project(theta, geometry) - loop(theta)).max() if same else None
            speed = t["sklearn"].best / t["projloss"].best
            load = ctx.load()[0]
            rows.append(
                [
                    name,
                    geometry,
                    rate(t["projloss"].best, n),
                    rate(t["sklearn"].best, n),
                    f"{speed:.0f}x",
                    "-" if diff is None else f"{diff:.0e}",
                    f"{load:.1f}",
                ]
            )
            data[f"isotonic/{name}/{geometry}"] = t["projloss"].best
            data[f"isotonic/{name}/{geometry}/sklearn"] = t["sklearn"].best
            ctx.log(f"  {name} {geometry}: {speed:.0f}x faster than the sklearn loop")
            checks.append(
                Check(
                    f"{name} ({geometry}), n={n}, k={K}: speed-up over looping "
                    "sklearn isotonic_regression",
                    speed,
                    GOAL,
                )
            )
    md = (
        (__doc__ or "").split("\n\n", 1)[1].strip()
        + "\n\n"
        + table(
            [
                "set",
                "geometry",
                "projloss (proj/s)",
                "sklearn loop (proj/s)",
                "speed-up",
                "max diff",
                "load",
            ],
            rows,
            "llrrrrr",
        )
    )
    return SectionResult(md, checks, data)
