"""Section "pending": the parts of issue 7 that need the estimators and the pipeline.

Phase 2 of issue 7 replaces this section with measured ones (suggested modules:
``benchmarks/fits.py`` -- the time of one ``fit`` per paper experiment family --,
``benchmarks/table1.py`` -- the (Birkhoff, Birkhoff) Euclidean column of Table 1 on the
six datasets, lambda search and refit included -- and ``benchmarks/repro.py`` -- the wall
time of ``make repro``), each registered with ``@section`` and listed in
``registry.SECTION_MODULES``, and removes the corresponding placeholders below.
"""

from __future__ import annotations

from .registry import Check, Context, SectionResult, section


@section("pending", "Not measured yet (phase 2)", order=90)
def run(ctx: Context) -> SectionResult:
    """Placeholders for the acceptance checks that need estimators and the pipeline."""
    checks = [
        Check(
            "Table 1 (Birkhoff, Birkhoff) Euclidean column, six datasets, lambda search "
            "and refit included: wall time",
            None,
            60.0,
            higher_is_better=False,
            unit=" s",
        ),
        Check("make repro (all tables): wall time", None, 900.0, higher_is_better=False, unit=" s"),
    ]
    md = (
        "Fit timings per paper experiment family, the Table 1 timing and the wall time of "
        "`make repro` need the estimators and the pipeline (phase 2 of issue 7)."
    )
    return SectionResult(md, checks, {})
