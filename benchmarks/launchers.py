"""The same 8-job sweep through Hydra's joblib launcher and through Ray (issue 15).

``python -m benchmarks.launchers`` runs ``python -m pipeline.train --multirun`` on iris
(label ranking, two lambdas, eight jobs: two sets x four grid ends) twice on this
machine, two jobs at a time each: ``hydra/launcher=joblib hydra.launcher.n_jobs=2`` and
``hydra/launcher=ray_cluster`` on a Ray head started for it (``ray start --head
--num-cpus 2``, :func:`pipeline.cluster.services.ray_head`, its start-up timed apart).
Tracking goes to a fresh SQLite store per sweep. The record goes to
``benchmarks/history/launchers-<commit>.json``; the ``launchers`` section of RESULTS.md
shows the newest one (not re-measured by ``make bench``).

Overhead per job of Ray = (wall(Ray) - wall(joblib)) / 8: the same jobs, the same
parallelism, so the difference is what Ray adds (task submission, worker start, the
job's pickled config and the result's way back). Goal: < 1 s per job.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .registry import Check, Context, SectionResult, section
from .report import table

ROOT = Path(__file__).resolve().parents[1]
HISTORY = Path(__file__).resolve().parent / "history"
GOAL = 1.0  # seconds of Ray overhead per job
N_JOBS = 8
GRID = ["set=birkhoff,permutahedron", "lambdas.high=1e2,1e3,1e4,1e5"]
LAUNCHERS = {
    "joblib": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
    "ray": ["hydra/launcher=ray_cluster"],
}


def sweep_command(launcher: str, workdir: Path, data: list[str]) -> list[str]:
    """The 8-job sweep through ``launcher`` (``joblib`` or ``ray``)."""
    return [
        sys.executable, "-m", "pipeline.train", "task=label_ranking", "dataset=iris",
        "lambdas.num=2", "--multirun", *LAUNCHERS[launcher], *GRID,
        f"tracking.uri=sqlite:///{workdir / launcher / 'mlflow.db'}",
        f"hydra.sweep.dir={workdir / launcher / 'sweep'}", "progress=false", *data,
    ]  # fmt: skip


def _prepare(workdir: Path, mirror: str | None) -> list[str]:
    from pipeline.data import fetch
    from pipeline.data import prepare as preprocess

    data = {
        "mirror": mirror
        or os.environ.get("PROJLOSS_MIRROR")
        or str(ROOT.parent / "shared/datasets"),
        "raw_dir": str(workdir / "raw"),
        "prepared_dir": str(workdir / "prepared"),
        "reports_dir": str(workdir / "reports"),
        "progress": False,
    }
    fetch.run({"datasets": ["iris"], "data": data})
    preprocess.run({"datasets": ["iris"], "data": data, "report": False})
    return [f"data.{k}={v}" for k, v in data.items()]


def _timed(cmd: list[str], env: dict[str, str], log: Path) -> float:
    t0 = time.perf_counter()
    with open(log, "w") as f:
        done = subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, cwd=log.parent)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} failed (exit {done.returncode}); see {log}")
    return seconds


def measure(workdir: Path, repeat: int = 1, mirror: str | None = None) -> dict[str, Any]:
    """Wall times of the sweep per launcher (best of ``repeat``) and the Ray head start."""
    from pipeline.cluster.services import ray_head

    data = _prepare(workdir, mirror)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MLFLOW_DISABLE_TELEMETRY": "true"}
    env.pop("MLFLOW_TRACKING_URI", None)
    walls: dict[str, list[float]] = {"joblib": [], "ray": []}
    load_start = os.getloadavg()
    t0 = time.perf_counter()
    with ray_head(num_cpus=2) as head:
        head_seconds = time.perf_counter() - t0
        ray_env = {**env, "RAY_ADDRESS": head.address}
        for _ in range(repeat):
            for name, run_env in (("joblib", env), ("ray", ray_env)):
                (workdir / name).mkdir(parents=True, exist_ok=True)
                log = workdir / name / "sweep.log"
                walls[name].append(_timed(sweep_command(name, workdir, data), run_env, log))
    best = {k: min(v) for k, v in walls.items()}
    return {
        "jobs": N_JOBS,
        "walls": walls,
        "best": best,
        "overhead_per_job": (best["ray"] - best["joblib"]) / N_JOBS,
        "ray_head_seconds": head_seconds,
        "load_start": [round(x, 2) for x in load_start],
        "load_end": [round(x, 2) for x in os.getloadavg()],
    }


def _records() -> list[dict[str, Any]]:
    out = []
    for path in sorted(HISTORY.glob("launchers-*.json")):
        rec = json.loads(path.read_text())
        rec["file"] = path.name
        out.append(rec)
    return sorted(out, key=lambda r: r["date"], reverse=True)


@section("launchers", "Sweep launchers: joblib vs Ray (8 jobs)", order=95)
def run(ctx: Context) -> SectionResult:
    """The newest ``python -m benchmarks.launchers`` record (not re-measured here)."""
    recs = _records()
    how = (
        "Measured apart by `python -m benchmarks.launchers` (see its docstring), not in this "
        "run: the same 8-job sweep (iris, label ranking, 2 lambdas, 2 sets x 4 grid ends) "
        "through `hydra/launcher=joblib hydra.launcher.n_jobs=2` and "
        "`hydra/launcher=ray_cluster` on a local `ray start --head --num-cpus 2`, two jobs "
        "at a time each; overhead per job = (wall(Ray) - wall(joblib)) / 8."
    )
    if not recs:
        check = Check("Ray launcher overhead per job", None, GOAL, False, " s")
        return SectionResult(how + "\n\n**Not measured.**", [check], {})
    rec = recs[0]
    m = rec["result"]
    check = Check(
        "Ray launcher overhead per job (8-job sweep vs joblib)",
        float(m["overhead_per_job"]),
        GOAL,
        higher_is_better=False,
        unit=" s",
        detail=f"commit {rec['short']}, {rec['date']}",
    )
    rows = [
        [name, " / ".join(f"{w:.1f}" for w in m["walls"][name]), f"{m['best'][name]:.1f}",
         f"{m['best'][name] / m['jobs']:.2f}"]
        for name in ("joblib", "ray")
    ]  # fmt: skip
    md = (
        f"{how}\n\nRecord `{rec['file']}`: commit {rec['short']}, measured {rec['date']} on "
        f"{rec['cores']} cores, load average {m['load_start']} -> {m['load_end']}.\n\n"
        + table(["launcher", "wall time per repeat (s)", "best (s)", "best / job (s)"], rows)
        + f"\n\nRay overhead per job: **{m['overhead_per_job']:.2f} s** (goal < {GOAL:g} s: "
        f"{check.status}); starting the Ray head (`ray start --head`, not in the sweep "
        f"times): {m['ray_head_seconds']:.1f} s."
    )
    return SectionResult(md, [check], {"launchers/overhead_per_job": m["overhead_per_job"]})


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.launchers", description=__doc__)
    p.add_argument("--repeat", type=int, default=2, help="sweeps per launcher (best is kept)")
    p.add_argument("--mirror", help="the dataset mirror (default: $PROJLOSS_MIRROR or ../shared)")
    p.add_argument("--output", type=Path, help="the record (default: history/launchers-<commit>)")
    args = p.parse_args(argv)
    short = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="bench-launchers-") as tmp:
        result = measure(Path(tmp), args.repeat, args.mirror)
    rec = {
        "short": short,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cores": os.cpu_count(),
        "result": result,
    }
    output = args.output or HISTORY / f"launchers-{short}.json"
    output.write_text(json.dumps(rec, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"record -> {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
