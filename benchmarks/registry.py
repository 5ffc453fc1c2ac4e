"""The registry of benchmark sections and the records they produce.

A *section* is one part of ``benchmarks/RESULTS.md`` (e.g. the projection grid, the
Birkhoff study, the fit timings per experiment family, the Table 1 column or the wall
time of ``make repro``). It is a function ``run(ctx) -> SectionResult``
registered with :func:`section`; :mod:`benchmarks.run` imports the modules listed in
``SECTION_MODULES`` (which registers their sections) and runs them in ``order``.

To add a section: write a module with a function decorated by ``@section(...)`` and add
the module to ``SECTION_MODULES``. A section returns its Markdown, the acceptance checks
it measured (:class:`Check`, printed as PASS/FAIL lines and summarized at the top of the
results) and raw figures (saved to the JSON file, used by ``--compare``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Modules whose import registers sections.
SECTION_MODULES = (
    "benchmarks.startup",
    "benchmarks.projections",
    "benchmarks.isotonic",
    "benchmarks.birkhoff",
    "benchmarks.jax_baselines",
    "benchmarks.torch_backend",
    "benchmarks.gpu",
    "benchmarks.fits",
    "benchmarks.solver",
    "benchmarks.handwritten",
    "benchmarks.scaling",
    "benchmarks.table1",
    "benchmarks.repro",
    "benchmarks.launchers",
)


@dataclass
class Check:
    """One acceptance criterion of issue 7, with the measured figure."""

    name: str  #: what is checked, with its setting
    value: float | None  #: the measured figure (None: not measured)
    goal: float  #: the threshold
    higher_is_better: bool = True  #: True: pass when value >= goal; False: value <= goal
    unit: str = "x"
    detail: str = ""  #: what the figure is (e.g. "time(projloss) / time(np.sort)")

    @property
    def status(self) -> str:
        if self.value is None:
            return "NOT MEASURED"
        ok = self.value >= self.goal if self.higher_is_better else self.value <= self.goal
        return "PASS" if ok else "FAIL"

    def line(self) -> str:
        op = ">=" if self.higher_is_better else "<="
        got = "-" if self.value is None else f"{self.value:.3g}{self.unit}"
        tail = f" ({self.detail})" if self.detail else ""
        return f"{self.status:<12} {self.name}: {got} (goal {op} {self.goal:g}{self.unit}){tail}"


@dataclass
class SectionResult:
    """What a section hands back to the runner."""

    markdown: str
    checks: list[Check] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Context:
    """Run-wide settings and shared state, passed to every section."""

    quick: bool = False  #: smaller grids and fewer repeats (smoke test of the suite)
    repeat: int = 5  #: timed rounds per measurement (best and median are reported)
    min_time: float = 0.05  #: seconds per timed round (calls are batched up to it)
    seed: int = 0
    only_sets: tuple[str, ...] = ()  #: restrict the projection grid to these sets
    before: dict[str, Any] = field(default_factory=dict)  #: figures of a previous run
    cache: dict[Any, Any] = field(default_factory=dict)  #: measurements shared by sections
    log: Callable[[str], None] = print

    def load(self) -> tuple[float, float, float]:
        return os.getloadavg()


@dataclass(frozen=True)
class Section:
    name: str
    title: str
    order: int
    run: Callable[[Context], SectionResult]
    doc: str


SECTIONS: dict[str, Section] = {}


def section(name: str, title: str, order: int) -> Callable:
    """Register ``run(ctx) -> SectionResult`` as the section ``name``."""

    def wrap(fn: Callable[[Context], SectionResult]) -> Callable[[Context], SectionResult]:
        if name in SECTIONS:
            raise ValueError(f"benchmark section {name!r} registered twice")
        SECTIONS[name] = Section(name, title, order, fn, (fn.__doc__ or "").strip())
        return fn

    return wrap
