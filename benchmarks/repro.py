"""Section "repro": the wall time of ``make repro`` (all the paper's tables), measured apart.

``make repro`` takes minutes, too long for every benchmark run, so it is measured by its
own command, which records the figures in ``benchmarks/history/repro-<commit>.json``;
the section reports the newest such record (and says when and at which commit it was
taken), or *not measured* when there is none::

    python -m benchmarks.repro                   # measure the committed HEAD (minutes)
    python -m benchmarks.repro --dry-run         # print the plan only
    python -m benchmarks.repro experiments=smoke 'datasets=[iris]'   # a tiny setting

The command clones the repository at the current commit (uncommitted changes are not
measured) into a temporary directory beside a symlink ``shared -> <shared dir>`` (so that
the default mirror ``../shared/datasets`` resolves as on a fresh machine), then, as a
new user would, runs ``make venv`` (the virtual environment and ``pip install -e
.[dev]``, timed apart) and ``make repro`` (``dvc repro``: fetch, preprocess and every
experiment of ``params.yaml``, from an empty numba kernel cache). Hydra overrides given
on the command line regenerate the clone's ``params.yaml`` (``python -m pipeline.params
<overrides>``) before ``make repro``; such a *partial* record is named
``repro-<commit>-<overrides>.json`` and never counts for the acceptance check. MLflow logs
to the clone's own store (``MLFLOW_TRACKING_URI`` is unset for the run).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .registry import Check, Context, SectionResult, section
from .report import ROOT, machine, table

HISTORY = ROOT / "benchmarks" / "history"
GOAL = 900.0
#: environment variables a measured run must not inherit (they would point it elsewhere)
DROP_ENV = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PROJLOSS_ROOT", "NUMBA_CACHE_DIR")
DROP_PREFIX = ("MLFLOW_",)


# --------------------------------------------------------------------------- records
def records(history: Path | None = None) -> list[dict[str, Any]]:
    """Every readable ``repro-*.json`` record in ``history``, newest first (by its date)."""
    history = HISTORY if history is None else history
    out = []
    for path in sorted(history.glob("repro-*.json")):
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(rec, dict) and isinstance(rec.get("date"), str):
            rec["file"] = path.name
            out.append(rec)
    return sorted(out, key=lambda r: r["date"], reverse=True)


def latest(history: Path | None = None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the newest successful full measurement, the newest record of any kind)."""
    recs = records(history)
    full = next((r for r in recs if r.get("status") == "ok" and not r.get("overrides")), None)
    return full, (recs[0] if recs else None)


def _describe(rec: dict[str, Any]) -> str:
    m = rec.get("machine", {})
    what = "full" if not rec.get("overrides") else "partial: " + " ".join(rec["overrides"])
    return (
        f"`{rec['file']}`: commit {rec.get('short', '?')} ({what}), measured {rec['date']} on "
        f"{m.get('cores', '?')} cores ({m.get('cpu', '?')}), status {rec.get('status')}"
    )


@section("repro", "make repro (all the paper's tables)", order=90)
def run(ctx: Context) -> SectionResult:
    """The newest ``make repro`` measurement of ``benchmarks/history/`` (not re-measured)."""
    full, newest = latest()
    how = (
        "Measured apart by `python -m benchmarks.repro` (a fresh clone: `make venv`, then "
        "`make repro`), not in this run; see `benchmarks/README.md`."
    )
    check = Check(
        "make repro (all tables): wall time of dvc repro",
        None if full is None else float(full["repro_seconds"]),
        GOAL,
        higher_is_better=False,
        unit=" s",
        detail="" if full is None else f"commit {full['short']}, {full['date']}",
    )
    if full is None:
        md = how + "\n\n**Not measured**: `benchmarks/history/` has no full measurement."
        if newest is not None:
            md += f" Newest record: {_describe(newest)}."
        return SectionResult(md, [check], {"repro/seconds": None})
    rows = [
        ["`make venv` (venv + `pip install -e .[dev]`)", f"{full['venv_seconds']:.0f}"],
        ["`make repro` (`dvc repro`)", f"{full['repro_seconds']:.0f}"],
        ["total", f"{full['venv_seconds'] + full['repro_seconds']:.0f}"],
    ]
    md = (
        how + f"\n\nRecord {_describe(full)}: {full.get('experiments', '?')} experiments, "
        f"{full.get('runs', '?')} compositions (load average at the start "
        f"{full.get('load_start', '?')}).\n\n" + table(["step", "wall time (s)"], rows)
    )
    if newest is not None and newest is not full:
        md += f"\n\nA newer record exists: {_describe(newest)}."
    data = {"repro/seconds": full["repro_seconds"], "repro/commit": full["short"]}
    return SectionResult(md, [check], data)


# --------------------------------------------------------------------------- command
def _git(*args: str, cwd: Path = ROOT) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _slug(overrides: Sequence[str]) -> str:
    text = "_".join(overrides)
    return re.sub(r"[^A-Za-z0-9.=,+-]+", "_", text).strip("_")[:60] or "custom"


def _shared_dir(given: Path | None) -> Path:
    if given is not None:
        shared = given
    elif os.environ.get("PROJLOSS_MIRROR"):
        shared = Path(os.environ["PROJLOSS_MIRROR"]).parent
    else:
        shared = ROOT.parent / "shared"
    shared = shared.expanduser().resolve()
    if not (shared / "datasets").is_dir():
        raise SystemExit(
            f"no datasets mirror in {shared}: pass --shared DIR (the directory holding "
            "datasets/) or set PROJLOSS_MIRROR"
        )
    return shared


def child_env(mirror: Path | None = None) -> dict[str, str]:
    """The environment of the measured run: this one, without what would point it at
    another venv, source tree, project root or tracking store."""
    env = {
        k: v for k, v in os.environ.items() if k not in DROP_ENV and not k.startswith(DROP_PREFIX)
    }
    if mirror is not None:
        env["PROJLOSS_MIRROR"] = str(mirror)
    return env


def plan(repo: Path, overrides: Sequence[str], python: str | None) -> list[tuple[str, list[str]]]:
    """The steps of a measurement: (name, command), run in ``repo``."""
    make_vars = [f"PYTHON={python}"] if python else []
    steps = [("venv", ["make", "venv", *make_vars])]
    if overrides:
        steps.append(("params", [".venv/bin/python", "-m", "pipeline.params", *overrides]))
    steps.append(("repro", ["make", "repro", *make_vars]))
    return steps


def _count(repo: Path) -> tuple[int | None, int | None]:
    """(experiments, compositions) of the clone's params.yaml."""
    try:
        import yaml

        params = yaml.safe_load((repo / "params.yaml").read_text(encoding="utf-8"))
        exps = params.get("experiments") or {}
        return len(exps), sum(len(e.get("runs") or {}) for e in exps.values())
    except Exception:
        return None, None


VERSIONS = (
    "import json, platform\n"
    "from importlib import metadata\n"
    "out = {'python': platform.python_version()}\n"
    "for p in ('numpy', 'scipy', 'scikit-learn', 'numba', 'dvc', 'mlflow', 'hydra-core'):\n"
    "    try:\n"
    "        out[p] = metadata.version(p)\n"
    "    except metadata.PackageNotFoundError:\n"
    "        out[p] = None\n"
    "print(json.dumps(out))\n"
)


def _versions(repo: Path) -> dict[str, Any]:
    """The library versions of the clone's venv (what the measured run used)."""
    python = repo / ".venv" / "bin" / "python"
    try:
        done = subprocess.run(
            [str(python), "-c", VERSIONS], capture_output=True, text=True, check=True
        )
        return json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        return {}


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.repro",
        description="Measure `make repro` in a fresh clone; record it in benchmarks/history/.",
    )
    p.add_argument("overrides", nargs="*", help="Hydra overrides of params.yaml (partial run)")
    p.add_argument("--shared", type=Path, help="the shared dir holding datasets/ (symlinked)")
    p.add_argument("--mirror", type=Path, help="PROJLOSS_MIRROR for the run (default: inherit)")
    p.add_argument("--python", help="the Python that creates the venv (make's PYTHON)")
    p.add_argument("--workdir", type=Path, help="where to clone (default: a new temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the clone (and its venv)")
    p.add_argument("--output", type=Path, help=f"the record (default: {HISTORY}/repro-...)")
    p.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    commit = _git("rev-parse", "HEAD")
    short = _git("rev-parse", "--short", "HEAD")
    if _git("status", "--porcelain", "--untracked-files=no"):
        print(f"note: uncommitted changes are not measured (the clone is {short})")
    shared = _shared_dir(args.shared)
    overrides = list(args.overrides)
    name = f"repro-{short}" + (f"-{_slug(overrides)}" if overrides else "") + ".json"
    output = args.output or HISTORY / name
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="projloss-repro-"))
    repo = workdir / "projloss"
    steps = plan(repo, overrides, args.python)
    print(f"clone {ROOT} @ {short} -> {repo}; {workdir / 'shared'} -> {shared}")
    for step, cmd in steps:
        print(f"  [{step}] (cd {repo} && {' '.join(cmd)})")
    print(f"record -> {output}")
    if args.dry_run:
        if args.workdir is None:
            workdir.rmdir()
        return 0

    env = child_env(args.mirror)
    seconds: dict[str, float] = {}
    status, returncode = "ok", 0
    n_exp = n_runs = None
    versions: dict[str, Any] = {}
    load_start = os.getloadavg()
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "shared").symlink_to(shared, target_is_directory=True)
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(repo)], check=True)
        _git("checkout", "--quiet", "--detach", commit, cwd=repo)
        for step, cmd in steps:
            log = workdir / f"{step}.log"
            print(f"[{step}] {' '.join(cmd)} (log: {log})", flush=True)
            t0 = time.perf_counter()
            with open(log, "w") as f:
                done = subprocess.run(cmd, cwd=repo, env=env, stdout=f, stderr=subprocess.STDOUT)
            seconds[step] = time.perf_counter() - t0
            print(f"[{step}] {seconds[step]:.1f} s, exit status {done.returncode}", flush=True)
            if done.returncode != 0:
                status, returncode = f"failed at {step}", done.returncode
                print("".join(log.read_text(errors="replace").splitlines(True)[-40:]))
                break
        n_exp, n_runs = _count(repo)
        versions = _versions(repo)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    info = machine()
    record = {
        "commit": commit,
        "short": short,
        "commit_date": _git("log", "-1", "--format=%cI", commit),
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "status": status,
        "returncode": returncode,
        "overrides": overrides,
        "experiments": n_exp,
        "runs": n_runs,
        "venv_seconds": seconds.get("venv"),
        "params_seconds": seconds.get("params"),
        "repro_seconds": seconds.get("repro"),
        "load_start": [round(x, 2) for x in load_start],
        "load_end": [round(x, 2) for x in os.getloadavg()],
        "machine": {k: info[k] for k in ("cpu", "cores", "memory", "os")},
        "versions": versions,
        "mirror": env.get("PROJLOSS_MIRROR") or "../shared/datasets",
        "shared": str(shared),
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {output}")
    if status == "ok":
        total = seconds["venv"] + seconds["repro"]
        print(
            f"make venv {seconds['venv']:.0f} s, make repro {seconds['repro']:.0f} s ({total:.0f})"
        )
    return returncode or (0 if status == "ok" else 1)


if __name__ == "__main__":
    sys.exit(main())
