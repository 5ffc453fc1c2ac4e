"""Run the benchmark suite and write ``benchmarks/RESULTS.md``.

Usage (from the repository root, projloss importable, e.g. ``make bench``)::

    python -m benchmarks                      # everything -> benchmarks/RESULTS.md
    python -m benchmarks --quick              # smoke test: small grid, few repeats
    python -m benchmarks --sections projections --sets simplex,knapsack
    python -m benchmarks --json out.json      # also save the raw figures
    python -m benchmarks --compare out.json   # add "before" columns from a saved run
    python -m benchmarks --list               # the registered sections

    python -m benchmarks --sections repro,fits --update benchmarks/RESULTS.json

A partial run (``--sections`` or ``--sets``) prints its Markdown instead of overwriting
RESULTS.md, unless ``--output`` is given. ``--update RECORD.json`` re-runs the chosen
sections and renders RESULTS.md from RECORD's other sections and the new ones (each
section keeps the commit, date and load it was measured at; the record is rewritten with
the new sections). The acceptance checks (issues 7 and 14) are printed as PASS/FAIL lines
at the end and summarized at the top of the Markdown.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path

from .registry import SECTION_MODULES, SECTIONS, Check, Context, SectionResult
from .report import machine, table
from .timing import wait_for_load

DEFAULT_OUTPUT = Path(__file__).resolve().parent / "RESULTS.md"
#: The per-section record RESULTS.md is rendered from (``--update`` builds on it).
DEFAULT_RECORD = DEFAULT_OUTPUT.with_suffix(".json")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    p.add_argument("--sections", help="comma-separated section names (default: all)")
    p.add_argument("--sets", help="comma-separated set names for the projection grid")
    p.add_argument("--quick", action="store_true", help="small grid, few repeats")
    p.add_argument("--repeat", type=int, default=5, help="timed rounds per figure")
    p.add_argument("--min-time", type=float, default=0.05, help="seconds per timed round")
    p.add_argument("--output", type=Path, help=f"Markdown output (default {DEFAULT_OUTPUT})")
    p.add_argument("--json", type=Path, help="also write the raw figures to this JSON file")
    p.add_argument("--compare", type=Path, help="JSON of an earlier run: adds 'before' columns")
    p.add_argument(
        "--update",
        type=Path,
        metavar="RECORD",
        help="JSON record of a full run (--json): re-run --sections, keep its other sections, "
        "write RESULTS.md and RECORD",
    )
    p.add_argument(
        "--max-load",
        type=float,
        default=None,
        help="before each section, wait until the 1-min load average is below this",
    )
    p.add_argument("--wait", type=float, default=600.0, help="longest wait for --max-load (s)")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="BLAS/OpenMP threads (threadpoolctl); default 1: single-threaded comparisons",
    )
    p.add_argument("--list", action="store_true", help="list the sections and exit")
    return p.parse_args(argv)


def _load_sections() -> list:
    for mod in SECTION_MODULES:
        importlib.import_module(mod)
    return sorted(SECTIONS.values(), key=lambda s: s.order)


def _preload() -> None:
    """Import every library the sections use, so that the thread limit reaches all the
    BLAS / OpenMP runtimes they load (scipy and POT bring their own OpenBLAS and libgomp,
    loaded on first import: a limit set before that would miss them)."""
    for mod in ("numpy", "scipy.optimize", "scipy.linalg", "sklearn.isotonic", "ot", "numba"):
        try:
            importlib.import_module(mod)
        except ImportError:
            pass


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    from .jax_baselines import one_core_env

    one_core_env()  # before _preload: POT imports JAX when it is installed
    _preload()
    _load_sections()
    # One BLAS thread by default: every figure is single-threaded, and OpenBLAS' threads
    # on tiny problems (POT's L-BFGS, batched k x k solves) spin against the other
    # processes of a loaded 2-core machine (measured: up to 40x slower per call).
    from threadpoolctl import threadpool_info, threadpool_limits

    with threadpool_limits(limits=args.threads):
        args.pools = sorted({f"{i['internal_api']} x{i['num_threads']}" for i in threadpool_info()})
        return _main(args)


def _main(args: argparse.Namespace) -> int:
    sections = _load_sections()
    if args.list:
        for s in sections:
            print(f"{s.name:<12} {s.title}: {s.doc.splitlines()[0] if s.doc else ''}")
        return 0
    if args.sections:
        wanted = [x.strip() for x in args.sections.split(",") if x.strip()]
        unknown = sorted(set(wanted) - set(SECTIONS))
        if unknown:
            print(f"unknown sections {unknown}; valid: {sorted(SECTIONS)}", file=sys.stderr)
            return 2
        sections = [s for s in sections if s.name in wanted]
    base = None
    if args.update:
        if not args.sections:
            print("error: --update needs --sections (the sections to re-run)", file=sys.stderr)
            return 2
        base = _read_record(args.update)
        if base is None:
            return 2
    before = {}
    if args.compare:
        before = json.loads(args.compare.read_text())["data"]
    ctx = Context(
        quick=args.quick,
        repeat=args.repeat,
        min_time=args.min_time,
        only_sets=tuple(x.strip() for x in (args.sets or "").split(",") if x.strip()),
        before=before,
        log=lambda msg: print(msg, flush=True),
    )
    info = machine()
    info["threads"] = args.threads
    info["pools"] = ", ".join(args.pools)
    if args.compare:
        info["compare"] = str(args.compare)
    load_start = os.getloadavg()
    t_start = time.perf_counter()
    results: list[tuple] = []
    for s in sections:
        if args.max_load is not None:
            wait_for_load(args.max_load, args.wait, ctx.log)
        l0 = os.getloadavg()[0]
        print(f"== {s.name}: {s.title} (load {l0:.2f})", flush=True)
        t0 = time.perf_counter()
        try:
            res = s.run(ctx)
        except Exception:  # report the failure, keep the other sections
            tb = traceback.format_exc()
            print(tb, file=sys.stderr)
            res = SectionResult(f"**This section failed:**\n\n```\n{tb}\n```")
        results.append((s, res, l0, os.getloadavg()[0], time.perf_counter() - t0))
    total = time.perf_counter() - t_start
    load_end = os.getloadavg()

    record = {
        "machine": info,
        "load": [list(load_start), list(load_end)],
        "seconds": total,
        "sections": [_section_record(s, r, l0, l1, dt, info) for s, r, l0, l1, dt in results],
    }
    if base is not None:
        record = _merge(base, record, order={s.name: s.order for s in _load_sections()})
    record["data"] = {k: v for sec in record["sections"] for k, v in sec["data"].items()}
    record["checks"] = [c for sec in record["sections"] for c in sec["checks"]]
    checks = [Check(**c) for c in record["checks"]]
    md = _markdown(record)
    partial = bool(args.sections or args.sets) and base is None
    out = args.output or (None if partial else DEFAULT_OUTPUT)
    if out is None:
        print(md)
    else:
        _write(out, md)
        print(f"wrote {out}")
    targets = {args.json, args.update}
    if out is not None and out.resolve() == DEFAULT_OUTPUT:
        targets.add(DEFAULT_RECORD)  # the record RESULTS.md is rendered from
    for path in sorted(t for t in targets if t is not None):
        _write(path, json.dumps(record, indent=1))
        print(f"wrote {path}")
    print("\nAcceptance checks (issues 7 and 14):")
    for c in checks:
        print("  " + c.line())
    return 1 if any(c.status == "FAIL" for c in checks) else 0


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a partial file never replaces a good one)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _section_record(s, res: SectionResult, l0: float, l1: float, dt: float, info) -> dict:
    return {
        "name": s.name,
        "title": s.title,
        "markdown": res.markdown,
        "checks": [c.__dict__ for c in res.checks],
        "data": res.data,
        "load": [l0, l1],
        "seconds": dt,
        "date": info["date"],
        "commit": info["commit"],
    }


def _read_record(path: Path) -> dict | None:
    """The full-run record ``--update`` builds on, or None after a one-line error."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        print(
            f"error: cannot read the benchmark record {path} ({exc}); give the --json "
            "file of a full run (make bench BENCH_ARGS='--json FILE')",
            file=sys.stderr,
        )
        return None
    if not isinstance(record, dict) or "sections" not in record:
        print(
            f"error: {path} has no per-section record (written before --update existed); "
            "run the full suite once with --json FILE",
            file=sys.stderr,
        )
        return None
    return record


def _merge(base: dict, new: dict, order: dict[str, int]) -> dict:
    """``base``'s sections with those of ``new`` in their place (registry order)."""
    fresh = {sec["name"]: sec for sec in new["sections"]}
    kept = [sec for sec in base["sections"] if sec["name"] not in fresh]
    sections = sorted([*kept, *fresh.values()], key=lambda sec: order.get(sec["name"], 99))
    updates = [
        *base.get("updates", []),
        {
            "date": new["machine"]["date"],
            "commit": new["machine"]["commit"],
            "command": new["machine"]["command"],
            "sections": sorted(fresh),
        },
    ]
    return {**base, "sections": sections, "updates": updates}


def _markdown(record: dict) -> str:
    info = record["machine"]
    load_start, load_end = record["load"]
    total = record["seconds"]
    checks = [Check(**c) for c in record["checks"]]
    v = info["versions"]
    lines = [
        "# projloss benchmarks",
        "",
        "Generated by `make bench` (`python -m benchmarks`; see `benchmarks/README.md`). "
        "Do not edit by hand.",
        "",
        f"- date: {info['date']}; total run time {total / 60:.1f} min",
        f"- machine: {info['cpu']}, {info['cores']} cores, {info['memory']}, {info['os']}",
        "- versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
        f"- code: branch `{info['branch']}`, commit {info['commit']}",
        f"- command: `{info['command']}`; BLAS/OpenMP threads: {info['threads']} "
        f"(thread pools: {info['pools']})",
        f"- load average (1, 5, 15 min): start {_la(load_start)}, end {_la(load_end)} "
        "(the machine is shared: figures taken under load are slower; ratios are measured "
        "interleaved, see each table's load column)",
    ]
    if "compare" in info:
        lines.append(f"- *before* columns: `{info['compare']}`")
    lines += ["", *_measured_at(record)]
    lines += [
        "",
        "## Acceptance checks (issues 7 and 14)",
        "",
        table(
            ["status", "check", "measured", "goal"],
            [
                [
                    c.status,
                    c.name + (f" ({c.detail})" if c.detail else ""),
                    "-" if c.value is None else f"{c.value:.3g}{c.unit}",
                    f"{'>=' if c.higher_is_better else '<='} {c.goal:g}{c.unit}",
                ]
                for c in checks
            ],
            "llrr",
        ),
    ]
    for sec in record["sections"]:
        l0, l1 = sec["load"]
        lines += [
            "",
            f"## {sec['title']}",
            "",
            f"*Section `{sec['name']}`: {sec['seconds']:.0f} s, load average {l0:.2f} -> "
            f"{l1:.2f}; commit {sec['commit']}, {sec['date']}.*",
            "",
            sec["markdown"],
        ]
    return "\n".join(lines) + "\n"


def _measured_at(record: dict) -> list[str]:
    """One line per section: the commit, date and load average it was measured at (the
    first full run's, or the ``--update`` that last re-ran it: the record's ``updates``
    keep the history, the page shows where each figure comes from)."""
    n = len(record.get("updates", []))
    lines = [
        "Where each section was measured"
        + (f" (after {n} runs of `--update` since the first full run)" if n else "")
        + ":",
        "",
    ]
    for sec in record["sections"]:
        l0, l1 = sec["load"]
        where = f"commit {sec['commit']}, {sec['date']}, load average {l0:.2f} -> {l1:.2f}"
        apart = _RECORD.search(sec["markdown"])
        if apart:  # a record measured apart (repro, launchers): its own commit and date
            where = (
                f"commit {apart['commit']}, {apart['date']} (measured apart; the section's "
                f"*Record* line gives the load), rendered at {where}"
            )
        lines.append(f"- [`{sec['name']}`](#{_anchor(sec['title'])}): {where}")
    return lines


#: the line of a section that renders a record measured apart (``benchmarks.repro``, ...)
_RECORD = re.compile(
    r"^Record `[^`]+`: commit (?P<commit>\w+).*?measured (?P<date>[\d-]+ [\d:]+ UTC)", re.M
)


def _anchor(title: str) -> str:
    """GitHub's anchor of a heading ``## title``."""
    text = title.strip().lower().replace("`", "").replace(" ", "-")
    return "".join(c for c in text if c.isalnum() or c in "-_")


def _la(load: tuple[float, float, float]) -> str:
    return ", ".join(f"{x:.2f}" for x in load)


if __name__ == "__main__":
    sys.exit(main())
