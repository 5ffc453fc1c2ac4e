"""``dvc repro`` on a tiny experiment list in a temporary copy of the repository.

One test (the steps depend on each other, and DVC runs are the slow part): the first
``dvc repro`` runs all five stages, writing outputs that are a function of the code and
the data (no MLflow run id, no time: a forced re-run leaves ``git status`` clean, the
lock included), the second does nothing; ``dvc push`` to the default
remote, then a fresh clone's ``dvc pull`` restores every output (``dvc status`` clean,
``dvc repro`` does nothing); a change of one experiment's params re-runs only that
experiment's stages; the guide's (dvc.md) ``dvc exp run -S key=value`` (DVC's Hydra composition of
params.yaml) and ``dvc exp show --only-changed``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml

from docs_pages import page
from pipeline.params import compose_params
from pipeline.runs import index

from .conftest import ROOT
from .test_dvc_views import stale_stages

#: what a fresh clone holds that the pipeline needs (data, models, stores excluded)
COPY = [
    "pyproject.toml",
    ".gitignore",
    "dvc.yaml",
    ".dvcignore",
    ".dvc/config",
    ".dvc/.gitignore",
    ".dvc/plots",
    "conf",
    "src",
    "reports",
]


#: an MLflow run id
RUN_ID = re.compile(r"\b[0-9a-f]{32}\b")


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{args}:\n{done.stdout}\n{done.stderr}"
    return done


def _ran(output: str) -> set[str]:
    return {line.split("'")[1] for line in output.splitlines() if line.startswith("Running stage")}


def dvc_env(repo: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of DVC commands in ``repo``: the venv's bin first on PATH, the
    copy's ``src`` on PYTHONPATH, no analytics or telemetry, a git identity; from ``base``
    (default: this process's environment without MLFLOW_*/PROJLOSS_* variables)."""
    if base is None:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "PROJLOSS_"))}
    env = dict(base)
    env.update(
        PATH=str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""),
        PYTHONPATH=str(repo / "src"),
        DVC_NO_ANALYTICS="1",
        MLFLOW_DISABLE_TELEMETRY="true",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
    )
    return env


def _not_numba_cache(directory: str, names: list[str]) -> set[str]:
    """What :func:`copy_project` leaves out: Python's bytecode and pytest's, not numba's
    cache of compiled kernels (``__pycache__/*.nbi``, ``*.nbc``)."""
    if os.path.basename(directory) != "__pycache__":
        return set()
    return {name for name in names if not name.endswith((".nbi", ".nbc"))}


def copy_project(root: Path) -> None:
    """Copy the project's files a DVC run needs (:data:`COPY`) into ``root``, with the
    numba kernels this checkout has cached: numba keys its cache on each source file's
    modification time and size, which the copy keeps, so the copy's stages load them
    instead of compiling them again (10-20 s of CPU per copy; compiling on a fresh clone
    is tested in test_preload.py). Kernels not cached yet are compiled as usual."""
    for item in COPY:
        src, dst = ROOT / item, root / item
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=_not_numba_cache)
        else:
            shutil.copy2(src, dst)


def preload_servers(tmp: Path) -> list[int]:
    """PIDs of live preload servers whose socket is under ``tmp``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"pipeline.preload_server" in cmdline and any(str(tmp).encode() in c for c in cmdline):
            found.append(int(proc.name))
    return found


@pytest.fixture
def repo(tmp_path: Path, mirror: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    copy_project(root)
    monkeypatch.delenv("PROJLOSS_MIRROR", raising=False)
    overrides = [
        "experiments=smoke",
        "datasets=[iris]",
        "lambdas.num=2",
        f"data.mirror={mirror}",
        "tracking.log_models=false",
        "tracking.figures=false",
    ]
    params = yaml.safe_load(compose_params(overrides))
    # two runs in one experiment: the tune and refit stages fit them in worker processes
    # (n_jobs) and log them from the stage's process
    params["experiments"]["smoke-birkhoff"]["runs"]["reals-birkhoff"] = [
        "set=reals",
        "decoder=birkhoff",
    ]
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    return root


@pytest.mark.slow
@pytest.mark.long
def test_dvc_repro(repo: Path, mirror: Path, short_tmp: Path) -> None:
    """The DVC workflow of dvc.md on the smoke list: ``make repro``'s command (every stage
    of ``pipeline.stage`` in a fork of the preload server), plain ``dvc repro`` writing the
    same metrics, nothing to do the second time, push, a fresh clone restored by ``dvc
    pull``, a parameter change re-running only its experiment, ``dvc exp run -S``."""
    from mlflow.tracking import MlflowClient

    bindir = str(Path(sys.executable).parent)
    env = dvc_env(repo)
    dvc = [str(Path(bindir) / "dvc")]
    _run(["git", "init", "-q"], repo, env)
    _run(["git", "add", "-A"], repo, env)
    _run(["git", "commit", "-qm", "init"], repo, env)

    # 1. every stage runs, under make repro's launcher: each stage of pipeline.stage in a
    # fork of the preload server (fetch and preprocess in their own process while the
    # server imports, a note each); no server left after it
    preload_env = {**env, "TMPDIR": str(short_tmp)}
    done = _run([sys.executable, "-m", "pipeline.preload", *dvc, "repro"], repo, preload_env)
    first = done.stdout
    experiments = ("smoke-cube", "smoke-birkhoff")
    stages = {"fetch", "preprocess", "report"} | {
        f"{s}@{e}" for s in ("tune", "refit", "evaluate") for e in experiments
    }
    assert _ran(first) == stages
    out = done.stdout + done.stderr
    ends = [x for x in out.splitlines() if x.startswith("stage ") and " done in " in x]
    assert len(ends) == 2 + 3 * 2, out  # fetch, preprocess; tune, refit, evaluate x 2
    forked = [x.endswith("(in the preload server's fork)") for x in ends]
    assert all(forked[2:]), ends
    notes = [x for x in out.splitlines() if x.startswith("note:")]
    assert notes == [
        "note: the preload server is still importing; running the stage in this process"
    ] * forked[:2].count(False), out
    assert preload_servers(short_tmp) == []
    assert (repo / "data/raw/iris/iris.txt").is_file()
    assert (repo / "data/prepared/iris/stats.json").is_file()
    for key, run in (("smoke-cube", "cube-cube"), ("smoke-birkhoff", "birkhoff-birkhoff")):
        tuning = index.read_json(repo / f"data/tuning/{key}.json", repo)  # with the run ids
        assert next(iter(tuning["runs"])) == run
        assert (repo / f"models/{key}/{run}/refit.json").is_file()
        assert (repo / f"data/eval/{key}/{run}/predictions.npz").is_file()
        assert (repo / f"data/eval/{key}/{run}/results.json").is_file()
        metrics = json.loads((repo / f"metrics/{key}.json").read_text())
        assert set(metrics[run]["test"]) == {"hamming"}
        # one MLflow parent run per composition across tune and evaluate
        client = MlflowClient(f"sqlite:///{repo / 'mlflow.db'}")
        parent = client.get_run(tuning["runs"][run]["run_id"])
        assert {"val.hamming", "lambda.hamming", "test.hamming"} <= set(parent.data.metrics)
        assert parent.data.metrics["test.hamming"] == pytest.approx(metrics[run]["test"]["hamming"])
        assert parent.data.tags["group"] == key and parent.info.status == "FINISHED"
    assert (repo / "mlartifacts").is_dir()
    # the runs fitted in worker processes: files and MLflow runs as for one run
    tuning = index.read_json(repo / "data/tuning/smoke-birkhoff.json", repo)
    assert list(tuning["runs"]) == ["birkhoff-birkhoff", "reals-birkhoff"]
    for run in tuning["runs"]:
        assert (repo / f"models/smoke-birkhoff/{run}/refit.json").is_file()
        parent = client.get_run(tuning["runs"][run]["run_id"])
        assert {"val.hamming", "lambda.hamming", "test.hamming"} <= set(parent.data.metrics)
        children = client.search_runs(
            [parent.info.experiment_id],
            filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'",
        )
        assert len(children) == 2  # lambdas.num=2
    # the report stage builds the paper's tables from whatever experiments ran, into the
    # list's own directory (report.dir): the paper's committed reports/ is left alone
    report = repo / "reports/smoke"
    assert (report / "README.md").is_file() and (report / "table1.csv").is_file()
    assert (report / "summary/table1.json").is_file()
    assert (report / "runs.csv").read_text().startswith("mlflow_run_id,mlflow_run_name,")
    assert (report / "plots/validation/smoke-birkhoff.csv").is_file()
    assert (repo / "reports/table1.csv").read_bytes() == (ROOT / "reports/table1.csv").read_bytes()
    # what differs per run is in the uncommitted index (and MLflow), not in the outputs
    # DVC tracks nor the files git does: no run id, no time
    tracked = [*(repo / "data").rglob("*.json"), *(repo / "models").rglob("*.json")]
    tracked += [*(repo / "metrics").glob("*.json"), *report.rglob("*.*")]
    tracked = [p for p in tracked if "runs" not in p.relative_to(repo).parts[:2]]
    assert len(tracked) > 20
    for path in tracked:
        if path.suffix in (".json", ".csv", ".md") and path.name != "runs.csv":
            text = path.read_text(encoding="utf-8")
            assert not RUN_ID.search(text) and "seconds" not in text, path
    assert RUN_ID.search((repo / "data/runs/data/tuning/smoke-cube.json").read_text())
    _run(["git", "add", "-A"], repo, env)
    _run(["git", "commit", "-qm", "results"], repo, env)

    # 1b. plain dvc repro (each stage in its own process) writes the same metrics
    key = "smoke-birkhoff"  # two runs: worker processes forked from the stage
    preloaded = json.loads((repo / "metrics" / f"{key}.json").read_text())
    done = _run([*dvc, "repro", "-f", "--downstream", f"tune@{key}"], repo, env)
    assert _ran(done.stdout) == {f"{s}@{key}" for s in ("tune", "refit", "evaluate")} | {"report"}
    ends = [x for x in done.stdout.splitlines() if x.startswith("stage ") and " done in " in x]
    assert len(ends) == 3 and all(x.endswith("(imports included)") for x in ends), ends
    plain = json.loads((repo / "metrics" / f"{key}.json").read_text())
    assert plain.keys() == preloaded.keys() and len(plain) == 2
    for run, result in plain.items():
        for metric, value in result["test"].items():
            assert preloaded[run]["test"][metric] == pytest.approx(value, rel=1e-12)
    # the outputs are a function of the code and the data: the re-run (new MLflow runs,
    # other times) leaves dvc.lock and every committed file as they were
    changed = _run(["git", "status", "--porcelain"], repo, env).stdout
    assert changed == "", changed

    # 2. nothing changed: nothing runs
    second = _run([*dvc, "repro"], repo, env).stdout
    assert _ran(second) == set() and "Data and pipelines are up to date" in second
    shown = json.loads(_run([*dvc, "metrics", "show", "--json"], repo, env).stdout)
    assert "reports/smoke/summary/table1.json" in json.dumps(shown)
    assert "metrics/smoke-cube.json" not in json.dumps(shown)  # a plain output now

    # 2b. push to the default remote of .dvc/config: a directory beside the checkout
    remote = repo.parent / "projloss-dvc-remote"
    assert not remote.exists()
    _run([*dvc, "push"], repo, env)
    assert (remote / "files/md5").is_dir()

    # 2c. a fresh clone (no data, models or caches): dvc.lock matches the committed code
    # and params (what tests/pipeline/test_dvc_views.py::test_dvc_lock_is_fresh checks);
    # `dvc pull` restores every output: `dvc status` is clean, `dvc repro` runs nothing
    clone = repo.parent / "clone"
    _run(["git", "clone", "-q", str(repo), str(clone)], repo.parent, env)
    assert not (clone / "data/prepared").exists()
    assert stale_stages(clone) == {}
    clone_env = {**env, "PYTHONPATH": str(clone / "src")}
    _run([*dvc, "pull"], clone, clone_env)
    for rel in ("data/raw/iris/iris.txt", "data/prepared/iris/stats.json",
                "models/smoke-cube/cube-cube/refit.json",
                "data/eval/smoke-birkhoff/birkhoff-birkhoff/results.json"):  # fmt: skip
        assert (clone / rel).read_bytes() == (repo / rel).read_bytes(), rel
    status = _run([*dvc, "status"], clone, clone_env).stdout
    assert "Data and pipelines are up to date" in status, status
    again = _run([*dvc, "repro"], clone, clone_env).stdout
    assert _ran(again) == set() and "Data and pipelines are up to date" in again, again

    # 3. one experiment's params change: only its stages run again
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["experiments"]["smoke-cube"]["runs"]["cube-cube"].append("lambdas.num=3")
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    diff = _run([*dvc, "params", "diff"], repo, env).stdout
    assert "experiments.smoke-cube" in diff
    preload = [sys.executable, "-m", "pipeline.preload", *dvc]  # make repro's launcher
    third = _run([*preload, "repro"], repo, preload_env).stdout
    assert _ran(third) == {f"{s}@smoke-cube" for s in ("tune", "refit", "evaluate")} | {"report"}
    tuning = json.loads((repo / "data/tuning/smoke-cube.json").read_text())
    assert len(tuning["runs"]["cube-cube"]["tune"]["lambdas"]) == 3

    # 4. the README's `dvc exp run -S key=value` (params.yaml composed from conf/ by DVC's
    # Hydra integration: the fixture's settings are given again) and `dvc exp show`
    settings = [
        "experiments=smoke",
        "datasets=[iris]",
        "lambdas.num=2",
        "seed=1",
        f"data.mirror={mirror}",
        "tracking.log_models=false",
        "tracking.figures=false",
    ]
    fourth = _run([*preload, "exp", "run", *(f"-S{s}" for s in settings)], repo, preload_env)
    fourth = fourth.stdout
    assert _ran(fourth) == stages - {"fetch"}, fourth  # seed=1: a new split of iris
    assert (repo / "data/prepared/iris+seed1/stats.json").is_file()
    assert yaml.safe_load((repo / "params.yaml").read_text())["seed"] == 1
    (show,) = re.findall(r"^dvc exp show .*?(?=\s+#)", page("dvc.md"), flags=re.M)
    shown = _run([*dvc, *shlex.split(show)[1:]], repo, env).stdout
    assert max(map(len, shown.splitlines())) <= 200, shown
    header = shown.splitlines()[1].split()
    assert {"seed", "data.seed"} <= set(header), shown
    assert not [c for c in header if c.startswith(("experiments.", "data/", "models"))], shown
