"""Section "repro": the wall time of ``make repro`` (all the paper's tables), measured apart.

``make repro`` takes minutes, too long for every benchmark run, so it is measured by its
own command, which records the figures in ``benchmarks/history/repro-<commit>.json``;
the section reports the newest such record (and says when and at which commit it was
taken), or *not measured* when there is none::

    python -m benchmarks.repro                   # measure the committed HEAD (minutes)
    python -m benchmarks.repro --compare ed7960b # ed7960b, then HEAD, back to back
    python -m benchmarks.repro --compare ed7960b --rounds 2   # interleaved: A B A B
    python -m benchmarks.repro --commit ed7960b  # another commit (repeatable: in order)
    python -m benchmarks.repro --dry-run         # print the plan only
    python -m benchmarks.repro experiments=smoke 'datasets=[iris]'   # a tiny setting

The command clones the repository at the commit (uncommitted changes are not measured)
into a temporary directory beside a symlink ``shared -> <shared dir>`` (so that the
default mirror ``../shared/datasets`` resolves as on a fresh machine), then, as a new
user would, runs ``make venv`` (the virtual environment and ``pip install -e .[dev]``,
timed apart) and ``make repro`` (``dvc repro``: fetch, preprocess and every experiment of
``params.yaml``, from an empty numba kernel cache). Hydra overrides given on the command
line regenerate the clone's ``params.yaml`` (``python -m pipeline.params <overrides>``)
before ``make repro``; such a *partial* record is named ``repro-<commit>-<overrides>.json``
and never counts for the acceptance check. MLflow logs to the clone's own store
(``MLFLOW_TRACKING_URI`` is unset for the run).

**Several commits** (``--compare REV``: REV then HEAD; or ``--commit`` repeated) are
measured back to back on the same machine, each in its own clone: every clone and venv is
made first, then each commit's ``make repro`` runs in turn, ``--rounds`` times (A B A B
...), in its clone cleaned back to a fresh one but for its venv (``git clean -xdff``: no
outputs, MLflow store or numba cache of an earlier round). Each commit's best
round is its ``repro-<commit>.json``; the comparison is ``compare-<A>-<B>.json`` with
every round, and the section shows the newest full one, stage by stage (the acceptance
check of issue 14: HEAD at least 2x faster than the first commit).

**Per stage.** The output of ``make repro`` is read line by line and time-stamped (the
log, ``<workdir>/<commit>/repro.log``, keeps the stamps): a stage runs from DVC's
``Running stage '<name>':`` line to the next one; its command from the ``> <command>``
line DVC prints when it starts it to the command's last output line before DVC's
``Updating lock file``. The breakdown sums the command times per stage type (``fetch``,
``preprocess``, ``tune``, ``refit``, ``evaluate``, ``report``: one process each, imports
and start-up included) and puts the rest of the wall time under ``dvc`` (DVC's start,
dependency checks, output hashing, lock file updates; a process's exit after its last
line).
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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .registry import Check, Context, SectionResult, section
from .report import ROOT, machine, table

HISTORY = ROOT / "benchmarks" / "history"
GOAL = 900.0
#: issue 14: HEAD at least this many times faster than the commit it is compared with
SPEEDUP_GOAL = 2.0
#: issue 34: commits HEAD must not be slower than (speed-up at least this, back to back);
#: a comparison with one of them is checked against this goal, not issue 14's
PARITY_BASES = ("4d6ee0c",)
PARITY_GOAL = 0.95
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
    """(the successful full measurement of the newest commit measured -- by its commit
    date, then the measurement's --, the newest record of any kind).

    By commit first: a back-to-back comparison keeps each commit's best round, and the
    older commit's may have been measured last; the figure checked is the code's as it
    stands."""
    recs = records(history)
    full = [r for r in recs if r.get("status") == "ok" and not r.get("overrides")]
    newest = max(full, key=lambda r: (str(r.get("commit_date") or ""), r["date"]), default=None)
    return newest, (recs[0] if recs else None)


def _describe(rec: dict[str, Any]) -> str:
    m = rec.get("machine", {})
    what = "full" if not rec.get("overrides") else "partial: " + " ".join(rec["overrides"])
    return (
        f"`{rec['file']}`: commit {rec.get('short', '?')} ({what}), measured {rec['date']} on "
        f"{m.get('cores', '?')} cores ({m.get('cpu', '?')}), status {rec.get('status')}"
    )


def comparisons(history: Path | None = None) -> list[dict[str, Any]]:
    """Every readable ``compare-*.json`` record in ``history``, newest first."""
    history = HISTORY if history is None else history
    out = []
    for path in sorted(history.glob("compare-*.json")):
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(rec, dict) and isinstance(rec.get("date"), str) and rec.get("commits"):
            rec["file"] = path.name
            out.append(rec)
    return sorted(out, key=lambda r: r["date"], reverse=True)


def _seconds(value: Any) -> str:
    return "-" if value is None else f"{value:.0f}"


def stage_table(recs: Sequence[dict[str, Any]]) -> str:
    """Seconds per stage type (processes in parentheses), one column per record, and the
    ratio first / last when there are several."""
    kinds = [k for k in (*STAGE_TYPES, "dvc") if any(k in (r.get("breakdown") or {}) for r in recs)]
    kinds += sorted({k for r in recs for k in r.get("breakdown") or {}} - set(kinds))
    rows = []
    for kind in [*kinds, "total"]:
        row: list[str] = [f"`{kind}`" if kind != "total" else "**total** (`make repro`)"]
        values = []
        for r in recs:
            v = r.get("repro_seconds") if kind == "total" else (r.get("breakdown") or {}).get(kind)
            n = (r.get("processes") or {}).get(kind)
            values.append(v)
            row.append(_seconds(v) + (f" ({n})" if n else ""))
        if len(recs) > 1:
            first, last = values[0], values[-1]
            row.append(f"{first / last:.2f}x" if first and last else "-")
        rows.append(row)
    header = ["stage (processes)", *[f"{r['short']} (s)" for r in recs]]
    if len(recs) > 1:
        header.append(f"{recs[0]['short']} / {recs[-1]['short']}")
    return table(header, rows)


def _compare_markdown(comp: dict[str, Any]) -> str:
    by = {s: best([m for m in comp["measurements"] if m["short"] == s]) for s in comp["commits"]}
    rounds = "; ".join(
        f"{m['short']} {_seconds(m.get('repro_seconds'))} s (load {m.get('load_start', '?')})"
        for m in comp["measurements"]
    )
    speed = comp.get("speedup")
    return (
        f"Back to back (`{comp['file']}`, {comp['date']}, {comp['status']}): "
        f"{' then '.join(comp['commits'])}; rounds in order: {rounds}. Each commit's best "
        "round, per stage type (the command times, imports included; `dvc`: the rest):\n\n"
        + stage_table([by[s] for s in comp["commits"]])
        + (f"\n\nSpeed-up: **{speed:.2f}x**." if speed else "")
    )


def _other_comparisons(comp: dict[str, Any], comps: Sequence[dict[str, Any]]) -> str:
    """The other back-to-back measurements of ``comp``'s commits (the machine drifts
    between them: each is a result, the newest is not the only one), newest first."""
    same = [
        c
        for c in comps
        if c is not comp
        and c.get("commits") == comp["commits"]
        and not c.get("overrides")
        and c.get("speedup")
    ]
    if not same:
        return ""
    items = "; ".join(
        f"`{c['file']}` ({c['date']}): "
        + ", ".join(f"{s} {_seconds((c.get('best_seconds') or {}).get(s))} s" for s in c["commits"])
        + f", **{c['speedup']:.2f}x**"
        for c in same
    )
    return f"\n\nOther back-to-back measurements of the same commits: {items}."


@section("repro", "make repro (all the paper's tables)", order=90)
def run(ctx: Context) -> SectionResult:
    """The newest ``make repro`` measurement of ``benchmarks/history/`` (not re-measured)
    and the newest back-to-back comparison of commits."""
    full, newest = latest()
    comps = comparisons()
    full_comps = [c for c in comps if not c.get("overrides") and c.get("speedup")]
    comp = next((c for c in full_comps if c["commits"][0] not in PARITY_BASES), None)
    parity_comp = next((c for c in full_comps if c["commits"][0] in PARITY_BASES), None)
    how = (
        "Measured apart by `python -m benchmarks.repro` (a fresh clone: `make venv`, then "
        "`make repro`; `--compare REV`: REV and HEAD back to back), not in this run; see "
        "`benchmarks/README.md`."
    )
    check = Check(
        "make repro (all tables): wall time of dvc repro",
        None if full is None else float(full["repro_seconds"]),
        GOAL,
        higher_is_better=False,
        unit=" s",
        detail="" if full is None else f"commit {full['short']}, {full['date']}",
    )
    speedup = Check(
        "make repro: speed-up over the first commit, back to back",
        None if comp is None else float(comp["speedup"]),
        SPEEDUP_GOAL,
        detail="" if comp is None else f"{comp['commits'][-1]} over {comp['commits'][0]}",
    )
    parity = Check(
        "make repro: not slower than before the one-path refactor (within 5 %), back to back",
        None if parity_comp is None else float(parity_comp["speedup"]),
        PARITY_GOAL,
        detail=""
        if parity_comp is None
        else f"{parity_comp['commits'][-1]} over {parity_comp['commits'][0]}",
    )
    if full is None:
        md = how + "\n\n**Not measured**: `benchmarks/history/` has no full measurement."
        if newest is not None:
            md += f" Newest record: {_describe(newest)}."
        if comps:
            md += "\n\n" + _compare_markdown(comps[0])
        return SectionResult(md, [check, speedup, parity], {"repro/seconds": None})
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
    if full.get("breakdown"):
        md += "\n\nPer stage type:\n\n" + stage_table([full])
    if newest is not None and newest is not full:
        md += f"\n\nA newer record exists: {_describe(newest)}."
    if comp is not None:
        md += "\n\n" + _compare_markdown(comp)
        md += _other_comparisons(comp, comps)
    elif comps:
        md += "\n\nNo full back-to-back comparison; newest: " + _compare_markdown(comps[0])
    if parity_comp is not None:
        md += "\n\nAgainst the commit before the one-path refactor: " + _compare_markdown(
            parity_comp
        )
        md += _other_comparisons(parity_comp, comps)
    data = {"repro/seconds": full["repro_seconds"], "repro/commit": full["short"]}
    if comp is not None:
        data["repro/speedup"] = comp["speedup"]
    if parity_comp is not None:
        data["repro/parity"] = parity_comp["speedup"]
    return SectionResult(md, [check, speedup, parity], data)


# --------------------------------------------------------------------------- per stage
#: the stage types of dvc.yaml, in pipeline order (the breakdown's rows; ``dvc``: the rest)
STAGE_TYPES = ("fetch", "preprocess", "tune", "refit", "evaluate", "collect", "report")
_RUNNING = re.compile(r"^Running stage '([^']+)':")
_LOCK = re.compile(r"^(Updating|Generating) lock file")


def stage_type(name: str) -> str:
    """``tune@lr`` -> ``tune`` (a foreach stage's type), ``report`` -> ``report``."""
    return name.split("@", 1)[0]


def breakdown(lines: Sequence[tuple[float, str]], total: float) -> dict[str, Any]:
    """Stage times from the time-stamped output of ``dvc repro`` (``(seconds since the
    start, line)``; see the module docstring).

    Returns ``stages`` (per stage run: ``name``, ``start``, ``seconds`` to the next stage
    or the end, ``command_seconds``), ``by_type`` (command seconds summed per stage type,
    ``dvc``: the rest of ``total``) and ``processes`` (stage commands per type).

    Examples
    --------
    >>> out = [(0.5, "Running stage 'tune@a':"), (0.6, "> python -m pipeline.stage tune a"),
    ...        (3.6, "stage tune@a done"), (4.0, "Updating lock file 'dvc.lock'"),
    ...        (4.2, "Running stage 'report':"), (4.3, "> python -m pipeline.report"),
    ...        (6.3, "done"), (6.5, "Updating lock file 'dvc.lock'")]
    >>> b = breakdown(out, 7.0)
    >>> b["by_type"]
    {'tune': 3.0, 'report': 2.0, 'dvc': 2.0}
    >>> [(s["name"], s["seconds"]) for s in b["stages"]]
    [('tune@a', 3.7), ('report', 2.8)]

    A stage whose outputs come out as its lock entry says (no ``Updating lock file``
    line) ends at its command's last line, not at DVC's blank line after it:

    >>> out = [(0.5, "Running stage 'tune@a':"), (0.6, "> python -m pipeline.stage tune a"),
    ...        (3.6, "stage tune@a done"), (5.6, ""), (6.0, "Running stage 'report':")]
    >>> breakdown(out, 6.5)["by_type"]
    {'tune': 3.0, 'report': 0.0, 'dvc': 3.5}
    """
    stages: list[dict[str, Any]] = []
    cmd: list[list[float]] = []  # per stage: [command start, last output line]
    closed: list[bool] = []
    for t, raw in lines:
        text = raw.strip()
        m = _RUNNING.match(text)
        if m:
            stages.append({"name": m.group(1), "start": t})
            cmd.append([])
            closed.append(False)
        elif stages and not closed[-1]:
            if not cmd[-1]:
                if text.startswith("> "):
                    cmd[-1] = [t, t]
            elif _LOCK.match(text):
                closed[-1] = True
            elif text:  # DVC's blank line after a stage whose lock entry did not change
                cmd[-1][1] = t
    by_type: dict[str, float] = {}
    processes: dict[str, int] = {}
    for n, stage in enumerate(stages):
        end = stages[n + 1]["start"] if n + 1 < len(stages) else total
        stage["seconds"] = round(end - stage["start"], 3)
        stage["command_seconds"] = round(cmd[n][1] - cmd[n][0], 3) if cmd[n] else 0.0
        kind = stage_type(stage["name"])
        by_type[kind] = by_type.get(kind, 0.0) + stage["command_seconds"]
        processes[kind] = processes.get(kind, 0) + 1
        stage["start"] = round(stage["start"], 3)
    by_type = {k: round(v, 3) for k, v in by_type.items()}
    by_type["dvc"] = round(total - sum(by_type.values()), 3)
    return {"stages": stages, "by_type": by_type, "processes": processes}


def run_stamped(
    cmd: Sequence[str], cwd: Path, env: Mapping[str, str], log: Path
) -> tuple[int, float, list[tuple[float, str]]]:
    """Run ``cmd`` (stderr into stdout), time-stamping each output line as it arrives:
    (exit status, wall seconds, [(seconds since the start, line)]); the log gets
    ``[   12.34] line``."""
    lines: list[tuple[float, str]] = []
    t0 = time.perf_counter()
    with open(log, "w", encoding="utf-8") as f:
        proc = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            bufsize=1,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            t = time.perf_counter() - t0
            text = line.rstrip("\n")
            lines.append((t, text))
            f.write(f"[{t:9.2f}] {text}\n")
            f.flush()
        code = proc.wait()
    return code, time.perf_counter() - t0, lines


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
    another venv, source tree, project root or tracking store (and unbuffered output, so
    that each line is time-stamped when it is printed)."""
    env = {
        k: v for k, v in os.environ.items() if k not in DROP_ENV and not k.startswith(DROP_PREFIX)
    }
    if mirror is not None:
        env["PROJLOSS_MIRROR"] = str(mirror)
    env["PYTHONUNBUFFERED"] = "1"
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
    p.add_argument(
        "--commit",
        action="append",
        default=[],
        help="a commit to measure (default HEAD); repeat it to measure several back to back",
    )
    p.add_argument("--compare", metavar="REV", help="measure REV, then HEAD, back to back")
    p.add_argument("--rounds", type=int, default=1, help="measurements of each commit, in turn")
    p.add_argument("--shared", type=Path, help="the shared dir holding datasets/ (symlinked)")
    p.add_argument("--mirror", type=Path, help="PROJLOSS_MIRROR for the run (default: inherit)")
    p.add_argument("--python", help="the Python that creates the venv (make's PYTHON)")
    p.add_argument("--workdir", type=Path, help="where to clone (default: a new temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the clones (and their venvs)")
    p.add_argument("--output", type=Path, help="the record of a single commit (default: history)")
    p.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error("--rounds must be >= 1")
    if args.compare and args.commit:
        p.error("--compare REV measures REV and HEAD: give it without --commit")
    return args


def _commits(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(full hash, short hash) of each commit to measure, in order, without repeats."""
    revs = [args.compare, "HEAD"] if args.compare else (args.commit or ["HEAD"])
    out: list[tuple[str, str]] = []
    for rev in revs:
        try:
            full = _git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
        except subprocess.CalledProcessError:
            raise SystemExit(
                f"error: no commit {rev!r} in {ROOT}; give a commit of this repository"
            ) from None
        if full not in (c for c, _ in out):
            out.append((full, _git("rev-parse", "--short", full)))
    return out


def _prepare(
    commit: str, short: str, base: Path, shared: Path, args: argparse.Namespace, env: dict
) -> float | None:
    """Clone ``commit`` into ``base/projloss`` and build its venv (``make venv``): its
    seconds, or None when it failed (the log's end is printed)."""
    repo = base / "projloss"
    base.mkdir(parents=True, exist_ok=True)
    (base / "shared").symlink_to(shared, target_is_directory=True)
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(repo)], check=True)
    _git("checkout", "--quiet", "--detach", commit, cwd=repo)
    (_, cmd), log = plan(repo, [], args.python)[0], base / "venv.log"
    print(f"[{short} venv] {' '.join(cmd)} (log: {log})", flush=True)
    code, seconds, lines = run_stamped(cmd, repo, env, log)
    print(f"[{short} venv] {seconds:.1f} s, exit status {code}", flush=True)
    if code != 0:
        print("\n".join(text for _, text in lines[-40:]))
        return None
    return seconds


def _measure(
    commit: str,
    short: str,
    base: Path,
    shared: Path,
    overrides: list[str],
    args: argparse.Namespace,
    env: dict[str, str],
    venv_seconds: float | None,
) -> dict[str, Any]:
    """One measurement of ``commit`` in its clone ``base/projloss`` (:func:`_prepare`),
    cleaned back to a fresh clone with its venv (``git clean -xdff``: no outputs, MLflow
    store or numba cache left by an earlier round)."""
    repo = base / "projloss"
    _git("clean", "-xdffq", "-e", ".venv", "-e", "*.egg-info", cwd=repo)
    _git("checkout", "--quiet", "--force", "--detach", commit, cwd=repo)
    steps = [s for s in plan(repo, overrides, args.python) if s[0] != "venv"]
    seconds: dict[str, float] = {} if venv_seconds is None else {"venv": venv_seconds}
    status, returncode = "ok", 0
    stages: dict[str, Any] = {}
    load_start = os.getloadavg()
    for step, cmd in steps:
        log = base / f"{step}.log"
        print(f"[{short} {step}] {' '.join(cmd)} (log: {log})", flush=True)
        code, seconds[step], lines = run_stamped(cmd, repo, env, log)
        print(f"[{short} {step}] {seconds[step]:.1f} s, exit status {code}", flush=True)
        if step == "repro":
            stages = breakdown(lines, seconds[step])
            shown = ", ".join(f"{k} {v:.0f} s" for k, v in stages["by_type"].items())
            print(f"[{short} repro] {shown}", flush=True)
        if code != 0:
            status, returncode = f"failed at {step}", code
            print("\n".join(text for _, text in lines[-40:]))
            break
    load_end = os.getloadavg()
    n_exp, n_runs = _count(repo)
    info = machine()
    return {
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
        "breakdown": stages.get("by_type"),
        "processes": stages.get("processes"),
        "stages": stages.get("stages"),
        "load_start": [round(x, 2) for x in load_start],
        "load_end": [round(x, 2) for x in load_end],
        "machine": {k: info[k] for k in ("cpu", "cores", "memory", "os")},
        "versions": _versions(repo),
        "mirror": env.get("PROJLOSS_MIRROR") or "../shared/datasets",
        "shared": str(shared),
    }


def best(recs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The fastest successful record (else the last one)."""
    ok = [r for r in recs if r.get("status") == "ok" and r.get("repro_seconds") is not None]
    return min(ok, key=lambda r: r["repro_seconds"]) if ok else recs[-1]


def comparison(recs: Sequence[dict[str, Any]], shorts: Sequence[str]) -> dict[str, Any]:
    """The record of commits measured back to back: every round, each commit's best
    ``make repro`` time and ``speedup`` = best(first commit) / best(last commit)."""
    by_commit = {s: best([r for r in recs if r["short"] == s]) for s in shorts}
    fastest = {s: r.get("repro_seconds") for s, r in by_commit.items()}
    first, last = fastest[shorts[0]], fastest[shorts[-1]]
    ok = all(r.get("status") == "ok" for r in recs) and len(recs) >= len(shorts)
    return {
        "kind": "compare",
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "status": "ok" if ok else "incomplete",
        "commits": list(shorts),
        "overrides": recs[0].get("overrides", []) if recs else [],
        "order": [r["short"] for r in recs],
        "best_seconds": fastest,
        "speedup": (first / last) if ok and first and last else None,
        "machine": recs[0].get("machine") if recs else None,
        "measurements": list(recs),
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    commits = _commits(args)
    head = _git("rev-parse", "HEAD")
    if head in (c for c, _ in commits) and _git("status", "--porcelain", "--untracked-files=no"):
        print(f"note: uncommitted changes are not measured (the clone is {commits[-1][1]})")
    shared = _shared_dir(args.shared)
    overrides = list(args.overrides)
    suffix = f"-{_slug(overrides)}" if overrides else ""
    shorts = [s for _, s in commits]
    if args.output and len(commits) > 1:
        raise SystemExit("error: --output names one commit's record; several are measured")
    outputs = {s: args.output or HISTORY / f"repro-{s}{suffix}.json" for s in shorts}
    compare_out = HISTORY / f"compare-{'-'.join(shorts)}{suffix}.json"
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="projloss-repro-"))
    order = [c for _ in range(args.rounds) for c in commits]
    for _, short in commits:
        repo = workdir / short / "projloss"
        print(f"clone {ROOT} @ {short} -> {repo}; {workdir / short / 'shared'} -> {shared}")
        for step, cmd in plan(repo, overrides, args.python):
            print(f"  [{step}] (cd {repo} && {' '.join(cmd)})")
    print("order: " + " ".join(s for _, s in order))
    for s in shorts:
        print(f"record -> {outputs[s]}")
    if len(commits) > 1:
        print(f"comparison -> {compare_out}")
    if args.dry_run:
        if args.workdir is None:
            workdir.rmdir()
        return 0

    env = child_env(args.mirror)
    done: list[dict[str, Any]] = []
    venv: dict[str, float | None] = {}
    try:
        # every clone and venv first: then the measurements follow each other closely
        for commit, short in commits:
            venv[short] = _prepare(commit, short, workdir / short, shared, args, env)
            if venv[short] is None:
                return 1
        for commit, short in order:
            rec = _measure(
                commit, short, workdir / short, shared, overrides, args, env, venv.get(short)
            )
            venv[short] = rec["venv_seconds"]
            rec["round"] = sum(r["short"] == short for r in done) + 1
            done.append(rec)
            mine = best([r for r in done if r["short"] == short])
            outputs[short].parent.mkdir(parents=True, exist_ok=True)
            outputs[short].write_text(json.dumps(mine, indent=1) + "\n", encoding="utf-8")
            print(f"wrote {outputs[short]}")
            if rec["status"] != "ok":
                break
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if len(commits) > 1 and done:
        comp = comparison(done, shorts)
        compare_out.write_text(json.dumps(comp, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {compare_out}")
        for s in shorts:
            print(f"{s}: make repro {comp['best_seconds'][s] or float('nan'):.0f} s (best)")
        if comp["speedup"] is not None:
            print(f"speed-up {shorts[-1]} over {shorts[0]}: {comp['speedup']:.2f}x")
    for rec in done:
        if rec["status"] == "ok":
            print(
                f"{rec['short']} round {rec['round']}: make venv {rec['venv_seconds']:.0f} s, "
                f"make repro {rec['repro_seconds']:.0f} s"
            )
    failed = [r for r in done if r["status"] != "ok"]
    return (failed[0]["returncode"] or 1) if failed else 0


if __name__ == "__main__":
    sys.exit(main())
