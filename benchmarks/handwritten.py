"""Hand-written code against the library version it replaces.

Where projloss writes again, for speed, what a library already does, the two are timed
side by side on the sizes the pipeline uses and their results compared:

- :func:`projloss.estimators.baselines.ridge_cholesky` -- scikit-learn's
  :class:`~sklearn.linear_model.Ridge` ("cholesky" solver, its choice for dense X) without
  its per-fit input checks: the ridge + rounding baseline of Table 4 fits it once per
  lambda of the grid per split; shapes of Table 4's datasets (n train x d) and one with
  more features than samples (the dual system);
- :func:`projloss.metrics.ordinal_mae` -- scikit-learn's
  :func:`~sklearn.metrics.mean_absolute_error` without its second validation (Table 4's
  score, computed for every fit of the lambda grids).

*speed-up* = time(library) / time(projloss) (interleaved, best round); *difference*: the
largest absolute difference of the results (coefficients and intercept; the error). The
goals: the same results (<= 1e-12 relative for the solve, identical bits for the mean) and
a speed-up >= 1 (else the library version should be used).
"""

from __future__ import annotations

import numpy as np

from .registry import Check, Context, SectionResult, section
from .report import table
from .timing import compare

#: (n train, d): Table 4's sizes (ERA/LEV, SWD, winequality-red, car one-hot, automobile
#: one-hot with more features than samples)
RIDGE_SHAPES = ((600, 4), (600, 10), (960, 11), (1037, 21), (123, 160))
MAE_SIZES = (100, 1_000, 100_000)
ALPHA = 1.0


def _ridge_rows(ctx: Context) -> tuple[list[list[str]], float, float]:
    from sklearn.linear_model import Ridge

    from projloss.estimators.baselines import ridge_cholesky

    rng = np.random.default_rng(ctx.seed)
    rows, worst_speed, worst_diff = [], np.inf, 0.0
    for n, d in RIDGE_SHAPES:
        X = rng.standard_normal((n, d))
        y = rng.integers(0, 5, n).astype(np.float64)

        def ours(X=X, y=y):
            return ridge_cholesky(X, y, ALPHA, fit_intercept=True)

        def library(X=X, y=y):
            return Ridge(alpha=ALPHA, fit_intercept=True).fit(X, y)

        t = compare(
            {"projloss": ours, "scikit-learn": library},
            repeat=2 if ctx.quick else ctx.repeat,
            min_time=ctx.min_time,
        )
        coef, intercept = ours()
        ref = library()
        scale = max(1.0, float(np.max(np.abs(ref.coef_))), abs(float(ref.intercept_)))
        diff = max(float(np.max(np.abs(coef - ref.coef_))), abs(intercept - float(ref.intercept_)))
        speed = t["scikit-learn"].best / t["projloss"].best
        worst_speed, worst_diff = min(worst_speed, speed), max(worst_diff, diff / scale)
        rows.append(
            [
                f"{n} x {d}",
                f"{t['projloss'].best * 1e3:.3f}",
                f"{t['scikit-learn'].best * 1e3:.3f}",
                f"{speed:.1f}x",
                f"{diff:.0e}",
            ]
        )
        ctx.log(f"  handwritten ridge {n}x{d}: {speed:.1f}x Ridge, diff {diff:.0e}")
    return rows, worst_speed, worst_diff


def _mae_rows(ctx: Context) -> tuple[list[list[str]], float, bool]:
    from sklearn.metrics import mean_absolute_error

    from projloss.metrics import ordinal_mae

    rng = np.random.default_rng(ctx.seed)
    rows, worst_speed, identical = [], np.inf, True
    for n in MAE_SIZES:
        y_true = rng.integers(1, 10, n)
        y_pred = rng.integers(1, 10, n)
        t = compare(
            {
                "projloss": lambda a=y_true, b=y_pred: ordinal_mae(a, b),
                "scikit-learn": lambda a=y_true, b=y_pred: mean_absolute_error(a, b),
            },
            repeat=2 if ctx.quick else ctx.repeat,
            min_time=ctx.min_time,
        )
        ours, ref = ordinal_mae(y_true, y_pred), float(mean_absolute_error(y_true, y_pred))
        identical &= ours == ref
        speed = t["scikit-learn"].best / t["projloss"].best
        worst_speed = min(worst_speed, speed)
        rows.append(
            [
                f"{n:,}",
                f"{t['projloss'].best * 1e6:.1f}",
                f"{t['scikit-learn'].best * 1e6:.1f}",
                f"{speed:.1f}x",
                "identical" if ours == ref else f"{abs(ours - ref):.0e}",
            ]
        )
        ctx.log(f"  handwritten ordinal_mae n={n}: {speed:.1f}x mean_absolute_error")
    return rows, worst_speed, identical


@section("handwritten", "Hand-written code vs the library version", order=53)
def run(ctx: Context) -> SectionResult:
    """ridge_cholesky vs scikit-learn's Ridge; ordinal_mae vs mean_absolute_error."""
    ridge_rows, ridge_speed, ridge_diff = _ridge_rows(ctx)
    mae_rows, mae_speed, identical = _mae_rows(ctx)
    md = [
        (__doc__ or "").split("\n\n", 1)[1].strip(),
        "",
        "**ridge_cholesky vs Ridge(alpha=1).fit** (ms per fit)",
        "",
        table(["n x d", "projloss", "scikit-learn", "speed-up", "difference"], ridge_rows),
        "",
        "**ordinal_mae vs mean_absolute_error** (microseconds per call)",
        "",
        table(["n", "projloss", "scikit-learn", "speed-up", "difference"], mae_rows),
    ]
    checks = [
        Check(
            "ridge_cholesky: the coefficients of scikit-learn's Ridge (largest difference, "
            "relative to the largest coefficient)",
            ridge_diff,
            1e-12,
            higher_is_better=False,
            unit="",
        ),
        Check(
            "ridge_cholesky: speed-up over Ridge.fit (worst shape)",
            ridge_speed,
            1.0,
            detail="time(Ridge.fit) / time(ridge_cholesky)",
        ),
        Check(
            "ordinal_mae: the bits of mean_absolute_error (1: identical at every size)",
            float(identical),
            1.0,
            unit="",
        ),
        Check(
            "ordinal_mae: speed-up over mean_absolute_error (worst size)",
            mae_speed,
            1.0,
            detail="time(mean_absolute_error) / time(ordinal_mae)",
        ),
    ]
    data = {
        "handwritten/ridge/speedup": ridge_speed,
        "handwritten/ridge/diff": ridge_diff,
        "handwritten/mae/speedup": mae_speed,
        "handwritten/mae/identical": identical,
    }
    return SectionResult("\n".join(md), checks, data)
